/** The outbox module's public entry: the one writer of domain events and the dispatcher of its consumers. */
export { createOutbox, createOutboxDispatcher, type Outbox, type OutboxConsumer } from './outbox.js';
