/** The outbox module's public entry: what the rest of the app may use of it. */


export { createOutbox, createOutboxDispatcher, type DomainEventInput, type Outbox, type OutboxConsumer } from './outbox.js';
