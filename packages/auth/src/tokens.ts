import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a high-entropy token: what is stored, so a database leak gives no usable token. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A random URL-safe token for one-time links (256 bits). */
export function generateLinkToken(): string {
  return randomBytes(32).toString('base64url');
}

/** A six-digit one-time code. */
export function generateOtp(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/** An opaque id for a server-side session (the JWT's `sid`). */
export function generateSessionId(): string {
  return randomBytes(18).toString('base64url');
}
