import { hash, verify, type Options } from '@node-rs/argon2';

/**
 * The cost of new hashes. `standard`: argon2id (the library's default algorithm) with its
 * recommended memory and time costs (19 MiB, 2 passes: about 17 ms here). `low` (1 MiB, 1 pass:
 * under a millisecond) is for a test suite that creates thousands of accounts; the configuration
 * refuses it in production. A hash records its own cost, so verification reads it from there.
 */
export type PasswordHashCost = 'standard' | 'low';
const COSTS: Record<PasswordHashCost, Options> = { standard: {}, low: { memoryCost: 1024, timeCost: 1 } };
let cost: Options = COSTS.standard;

/** Sets the cost of the hashes made from now on in this process (PASSWORD_HASH_COST). */
export function setPasswordHashCost(level: PasswordHashCost): void {
  cost = COSTS[level];
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, cost);
}

export async function verifyPassword(hashed: string, password: string): Promise<boolean> {
  try {
    return await verify(hashed, password);
  } catch {
    return false;
  }
}

// A real hash to verify against when the e-mail is unknown, so that a failed login takes the
// same time whether or not the account exists.
let decoy: Promise<string> | undefined;
export async function verifyAgainstDecoy(password: string): Promise<false> {
  decoy ??= hash('decoy-password-for-unknown-accounts', cost);
  await verifyPassword(await decoy, password);
  return false;
}
