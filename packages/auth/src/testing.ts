/** Helpers for the apps' tests: a signed-in user without going through the sign-in route. */
import type { SessionStore, TokenClaims } from './plugin.js';

/** What the helpers use of an app with the auth plugin registered. */
export interface AuthenticatedApp {
  auth: { store: SessionStore };
  jwt: { sign(payload: TokenClaims): string };
}

/** A bearer token for a user, from a session opened as sign-in opens one (the password is not checked). */
export async function sessionToken(app: AuthenticatedApp, userId: number, client: { ip?: string; userAgent?: string } = {}): Promise<string> {
  const session = await app.auth.store.create({ userId, ip: client.ip ?? '127.0.0.1', userAgent: client.userAgent ?? 'vitest' });
  return app.jwt.sign({ sub: String(userId), sid: session.id });
}
