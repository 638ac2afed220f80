import { createHmac, randomBytes } from 'node:crypto';

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

function sign(header: object, payload: object, secret: string | Buffer | undefined): string {
  const unsigned = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  if (secret === undefined) return `${unsigned}.`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}

/** The claims of a JWT, read without checking it; `{}` for something that is not one. */
export function readClaims(token: string): Record<string, unknown> {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as unknown;
    return payload && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export interface ForgedToken {
  name: string;
  token: string;
}

/**
 * Bearer tokens that must not authenticate, each naming the same live session as `validToken` so
 * that only the forgery, never a missing session, can explain a 401: signed with another key,
 * signed with the app's key but expired, `alg: none`, and not a JWT at all.
 */
export function forgedTokens(validToken: string, appSecret: string): ForgedToken[] {
  const claims = readClaims(validToken);
  const now = Math.floor(Date.now() / 1000);
  return [
    { name: 'signed with another key', token: sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now }, randomBytes(32)) },
    {
      name: 'expired (signed with the app key)',
      token: sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now - 7200, nbf: now - 7200, exp: now - 3600 }, appSecret),
    },
    { name: 'alg none', token: sign({ alg: 'none', typ: 'JWT' }, { ...claims, iat: now }, undefined) },
    { name: 'not a JWT', token: 'not-a-jwt' },
  ];
}
