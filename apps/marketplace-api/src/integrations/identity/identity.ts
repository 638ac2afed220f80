import { createHash } from 'node:crypto';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';

/**
 * Sign-in with Google and Apple: the app receives the provider's OpenID Connect ID token and checks
 * it against the provider's published signing keys (JWKS). The JWKS URLs are configuration, so a
 * deployment talks to Google and Apple while tests serve their own keys; the code path is the same.
 */

export type IdentityProvider = 'google' | 'apple';

export const PROVIDER_NAMES: Record<IdentityProvider, string> = { google: 'Google', apple: 'Apple' };

/** What a verified ID token tells about the person. */
export interface IdentityClaims {
  provider: IdentityProvider;
  /** The provider's stable id of the person (`sub`). */
  subject: string;
  /** Lower-cased; always verified by the provider. */
  email: string;
  /** An Apple "Hide My Email" relay address. */
  privateRelay: boolean;
  givenName: string | null;
  familyName: string | null;
}

export interface IdentityVerifier {
  readonly provider: IdentityProvider;
  /** False when no client id is configured: the provider's sign-in is off. */
  readonly enabled: boolean;
  /** Throws InvalidIdentityTokenError or IdentityProviderUnavailableError. */
  verify(idToken: string, options?: { nonce?: string }): Promise<IdentityClaims>;
}

/** The token is not one we accept (signature, issuer, audience, expiry, nonce, e-mail). */
export class InvalidIdentityTokenError extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = 'InvalidIdentityTokenError';
  }
}

/** The provider's keys could not be fetched or read: an outage on their side or ours, not a bad token. */
export class IdentityProviderUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IdentityProviderUnavailableError';
  }
}

// Google documents both spellings of its issuer; Apple uses one.
const ISSUERS: Record<IdentityProvider, string[]> = {
  google: ['https://accounts.google.com', 'accounts.google.com'],
  apple: ['https://appleid.apple.com'],
};

const CLOCK_TOLERANCE_SECONDS = 60;

const sha256Hex = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');

/** Providers send `email_verified` as a boolean (Google) or as the string "true" (Apple, at times). */
function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}

function optionalName(value: unknown): string | null {
  return typeof value === 'string' && value.trim() ? value.trim().slice(0, 100) : null;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * Key lookup that tells a missing key (a token signed by someone else: the token's fault) from a key
 * set that could not be fetched or parsed (the provider's fault), so the latter never reads as 401.
 */
function keysFrom(jwksUrl: string): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: 5_000 });
  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
      throw new IdentityProviderUnavailableError('The identity provider keys are unavailable', { cause: error });
    }
  };
}

export function createJwksIdentityVerifier(opts: {
  provider: IdentityProvider;
  clientIds: string[];
  jwksUrl: string;
}): IdentityVerifier {
  const { provider, clientIds } = opts;
  const keys = keysFrom(opts.jwksUrl);

  async function verifiedPayload(idToken: string): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(idToken, keys, {
        issuer: ISSUERS[provider],
        audience: clientIds,
        algorithms: ['RS256'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['exp', 'iat', 'sub'],
      });
      return payload;
    } catch (error) {
      if (error instanceof IdentityProviderUnavailableError) throw error;
      throw new InvalidIdentityTokenError(error instanceof Error ? error.message : 'invalid token', { cause: error });
    }
  }

  return {
    provider,
    enabled: clientIds.length > 0,

    async verify(idToken, options = {}) {
      if (clientIds.length === 0) throw new InvalidIdentityTokenError(`${PROVIDER_NAMES[provider]} sign-in is not configured`);
      const payload = await verifiedPayload(idToken);

      if (options.nonce !== undefined) {
        // iOS apps hand Apple the SHA-256 of the nonce and keep the raw value, so either form matches.
        const claimed = payload.nonce;
        if (typeof claimed !== 'string' || (claimed !== options.nonce && claimed !== sha256Hex(options.nonce))) {
          throw new InvalidIdentityTokenError('nonce mismatch');
        }
      }

      const subject = payload.sub;
      if (typeof subject !== 'string' || subject.length === 0 || subject.length > 255) {
        throw new InvalidIdentityTokenError('missing subject');
      }
      const email = typeof payload.email === 'string' ? payload.email.trim().toLowerCase() : '';
      if (!EMAIL.test(email) || email.length > 254) throw new InvalidIdentityTokenError('missing e-mail');
      if (!isTrue(payload.email_verified)) throw new InvalidIdentityTokenError('e-mail not verified');

      return {
        provider,
        subject,
        email,
        privateRelay: email.endsWith('@privaterelay.appleid.com') || isTrue(payload.is_private_email),
        givenName: optionalName(payload.given_name),
        familyName: optionalName(payload.family_name),
      };
    },
  };
}

export type IdentityVerifiers = Record<IdentityProvider, IdentityVerifier>;

/** One verifier per provider from the app's social sign-in configuration. */
export function createIdentityVerifiers(social: Record<IdentityProvider, { clientIds: string[]; jwksUrl: string }>): IdentityVerifiers {
  return {
    google: createJwksIdentityVerifier({ provider: 'google', ...social.google }),
    apple: createJwksIdentityVerifier({ provider: 'apple', ...social.apple }),
  };
}
