export * from './users.js';
export * from './projects.js';
export * from './logs.js';
