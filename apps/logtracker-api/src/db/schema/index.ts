export * from './pg-schema.js';
export * from './users.js';
export * from './projects.js';
export * from './logs.js';
export * from './ingest-keys.js';
export * from './patterns.js';
export * from './alerts.js';
export * from './fanout.js';
