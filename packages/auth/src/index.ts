export * from './passwords.js';
export * from './tokens.js';
export * from './throttle.js';
export { alongside, authPlugin, MAX_TOKEN_LENGTH, requireActor, whileAuthenticated, type Actor, type Caller, type AuthPluginOptions, type SessionStore, type TokenClaims } from './plugin.js';
// Re-exported so that the declaration files import @fastify/jwt, whose types add `app.jwt`.
export type { JWT } from '@fastify/jwt';
export {
  createSessionStore,
  createSessionsRepository,
  sessionsTable,
  type SessionsRepository,
  type SessionsTable,
  type SessionsTableOptions,
  type SessionUser,
} from './sessions.js';
export * from './counters.js';
