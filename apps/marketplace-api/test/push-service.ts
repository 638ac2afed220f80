import { execFileSync } from 'node:child_process';
import { createECDH, createPublicKey, hkdfSync, createDecipheriv, randomBytes, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

/** A push message as the local push service received it. */
export interface ReceivedPush {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * A push service on loopback speaking RFC 8030 over TLS (a certificate made by openssl for
 * 127.0.0.1, which `ca` lets the client trust): `/ok/*` accepts a message (201), `/gone/*` answers
 * 410 as a push service does for a subscription that expired.
 */
export async function startPushService() {
  const dir = mkdtempSync(join(tmpdir(), 'push-service-'));
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { stdio: 'ignore' });
  const ca = readFileSync(join(dir, 'cert.pem'));
  const key = readFileSync(join(dir, 'key.pem'));
  rmSync(dir, { recursive: true, force: true });

  const received: ReceivedPush[] = [];
  const server: Server = createServer({ key, cert: ca }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.statusCode = req.url?.startsWith('/gone/') ? 410 : 201;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ca,
    origin: `https://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A browser's side of a subscription: its P-256 key pair and auth secret, and the decryption they allow. */
export function browserKeys() {
  const ecdh = createECDH('prime256v1');
  const publicKey = ecdh.generateKeys();
  const auth = randomBytes(16);
  return {
    keys: { p256dh: publicKey.toString('base64url'), auth: auth.toString('base64url') },
    /** Decrypts an `aes128gcm` push message body (RFC 8188 record, RFC 8291 keys). */
    decrypt(body: Buffer): string {
      const salt = body.subarray(0, 16);
      const idLength = body.readUInt8(20);
      const senderKey = body.subarray(21, 21 + idLength);
      const ciphertext = body.subarray(21 + idLength);
      const shared = ecdh.computeSecret(senderKey);
      const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), publicKey, senderKey]);
      const ikm = Buffer.from(hkdfSync('sha256', shared, auth, keyInfo, 32));
      const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
      const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
      const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
      decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
      const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
      // The last record ends with the delimiter 0x02, then any padding zeros.
      let end = padded.length - 1;
      while (end >= 0 && padded[end] === 0) end--;
      if (padded[end] !== 2) throw new Error('not a last record');
      return padded.subarray(0, end).toString('utf8');
    },
  };
}

/** Checks a `vapid t=…, k=…` Authorization header: the JWT's ES256 signature by `k`, its audience and expiry. */
export function verifyVapid(header: string, expected: { publicKey: string; audience: string }) {
  const match = /^vapid t=([^,]+), k=(.+)$/.exec(header);
  if (!match) throw new Error(`not a VAPID header: ${header}`);
  const [, jwt, k] = match as unknown as [string, string, string];
  if (k !== expected.publicKey) throw new Error('unexpected VAPID public key');
  const raw = Buffer.from(k, 'base64url');
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33, 65).toString('base64url') }, format: 'jwk' });
  const [head, payload, signature] = jwt.split('.') as [string, string, string];
  const ok = verify('sha256', Buffer.from(`${head}.${payload}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  if (!ok) throw new Error('bad VAPID signature');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { aud: string; exp: number; sub: string };
  if (claims.aud !== expected.audience) throw new Error(`bad audience ${claims.aud}`);
  if (claims.exp * 1000 < Date.now()) throw new Error('expired');
  return claims;
}
