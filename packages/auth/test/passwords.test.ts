import { describe, expect, it } from 'vitest';
import { hashPassword, setPasswordHashCost, verifyAgainstDecoy, verifyPassword } from '../src/index.js';

describe('hashPassword / verifyPassword', () => {
  it('hashes with argon2id in the PHC string format', async () => {
    const hashed = await hashPassword('correct horse battery staple');
    expect(hashed.startsWith('$argon2id$')).toBe(true);
    expect(hashed).toMatch(/^\$argon2id\$v=19\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
    expect(hashed).not.toContain('correct horse');
  });

  it('hashes at the recommended cost by default, and at the lowest when set low; each hash verifies whatever the current cost', async () => {
    const standard = await hashPassword('cost-check');
    expect(standard).toMatch(/\$m=19456,t=2,/);
    setPasswordHashCost('low');
    try {
      const low = await hashPassword('cost-check');
      expect(low).toMatch(/\$m=1024,t=1,/);
      expect(await verifyPassword(standard, 'cost-check')).toBe(true);
      expect(await verifyPassword(low, 'cost-check')).toBe(true);
      expect(await verifyPassword(low, 'wrong')).toBe(false);
    } finally {
      setPasswordHashCost('standard');
    }
  });

  it('salts every hash', async () => {
    const [a, b] = await Promise.all([hashPassword('same-password'), hashPassword('same-password')]);
    expect(a).not.toBe(b);
    expect(await verifyPassword(a, 'same-password')).toBe(true);
    expect(await verifyPassword(b, 'same-password')).toBe(true);
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const hashed = await hashPassword('s3cret-Passw0rd');
    expect(await verifyPassword(hashed, 's3cret-Passw0rd')).toBe(true);
    expect(await verifyPassword(hashed, 's3cret-passw0rd')).toBe(false);
    expect(await verifyPassword(hashed, 's3cret-Passw0rd ')).toBe(false);
    expect(await verifyPassword(hashed, '')).toBe(false);
  });

  it('handles non-ASCII passwords', async () => {
    const hashed = await hashPassword('pässwörd-日本語-🔑');
    expect(await verifyPassword(hashed, 'pässwörd-日本語-🔑')).toBe(true);
    expect(await verifyPassword(hashed, 'passwörd-日本語-🔑')).toBe(false);
  });

  it('answers false, not an exception, for a garbage or foreign hash', async () => {
    expect(await verifyPassword('not-a-hash', 'whatever')).toBe(false);
    expect(await verifyPassword('', 'whatever')).toBe(false);
    expect(await verifyPassword('$argon2id$v=19$m=19456,t=2,p=1$broken', 'whatever')).toBe(false);
    // A bcrypt hash (what an imported account might carry) is not argon2.
    expect(await verifyPassword('$2b$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy', 'whatever')).toBe(false);
  });

  it('refuses a hash whose digest was altered', async () => {
    const hashed = await hashPassword('tamper-me-please');
    const last = hashed.at(-1) === 'A' ? 'B' : 'A';
    expect(await verifyPassword(hashed.slice(0, -1) + last, 'tamper-me-please')).toBe(false);
  });
});

describe('verifyAgainstDecoy', () => {
  it('always answers false, whatever the password', async () => {
    expect(await verifyAgainstDecoy('anything')).toBe(false);
    expect(await verifyAgainstDecoy('decoy-password-for-unknown-accounts')).toBe(false);
  });
});
