import { hash, verify } from '@node-rs/argon2';

/** argon2id (the library's default algorithm) with its recommended memory and time costs. */
export function hashPassword(password: string): Promise<string> {
  return hash(password);
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
  decoy ??= hash('decoy-password-for-unknown-accounts');
  await verifyPassword(await decoy, password);
  return false;
}
