import { createThrottle, generateOtp, hashToken, type CounterSource } from '@repo/auth';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { TokenPurpose, User } from '../../db/schema/index.js';
import { tokenRecords as tokens } from '../user-store/index.js';

/** One-time codes (DESIGN.md §5): valid 10 minutes, 5 attempts, single use, the newest replaces the others. */
export const OTP_TTL_MINUTES = 10;
export const OTP_MAX_ATTEMPTS = 5;

/** E-mails of one kind that one address may be sent per hour. */
export const SENDS_PER_HOUR = 5;

/** Whether an account may be sent codes and links: deleted and suspended or banned accounts get none. */
export function mayReceiveMail(user: User | undefined): user is User {
  return user !== undefined && user.deletedAt === null && user.status === 'active';
}

/** Stores a fresh code (hashed) in place of any earlier one and answers it for the e-mail. */
export async function issueOtp(db: DbTx, userId: number, purpose: TokenPurpose) {
  const code = generateOtp();
  await tokens.issueToken(db, { userId, purpose, tokenHash: hashToken(code), ttlMinutes: OTP_TTL_MINUTES });
  return code;
}

/** True when the code is the user's live one, which is then used up; a wrong code counts an attempt. */
export async function redeemOtp(db: DbTx, userId: number, purpose: TokenPurpose, code: string) {
  const outcome = await tokens.attemptCode(db, { userId, purpose, codeHash: hashToken(code), maxAttempts: OTP_MAX_ATTEMPTS });
  return outcome === 'redeemed';
}

/**
 * Bounds the e-mails sent to one address per purpose. The key is the address as typed (normalised)
 * whether or not an account has it, so that being limited tells nothing about who is registered.
 * The counts live in `counters` when given (shared by every instance), else in this process.
 */
export function createSendLimit(options: { max?: number; windowMs?: number; counters?: CounterSource } = {}) {
  const throttle = createThrottle({
    maxFailures: options.max ?? SENDS_PER_HOUR,
    windowMs: options.windowMs ?? 60 * 60_000,
    counters: options.counters,
    namespace: 'email_send',
  });
  return {
    /** Counts one send; 429 with Retry-After once the address has had its share. */
    async take(purpose: TokenPurpose, email: string) {
      const key = `${purpose}:${email}`;
      try {
        await throttle.check([key]);
      } catch (error) {
        if (error instanceof AppError && error.code === 'rate_limited') {
          throw new AppError('rate_limited', 'Too many e-mails were requested for this address; retry later', { headers: error.headers });
        }
        throw error;
      }
      await throttle.fail([key]);
    },
  };
}

export type SendLimit = ReturnType<typeof createSendLimit>;

export function invalidCode(field = 'otp'): AppError {
  return AppError.validation({ [field]: ['The code is invalid or has expired'] }, 'The code is invalid or has expired');
}

export function invalidLink(field = 'token'): AppError {
  return AppError.validation({ [field]: ['This link is invalid or has expired'] }, 'This link is invalid or has expired');
}
