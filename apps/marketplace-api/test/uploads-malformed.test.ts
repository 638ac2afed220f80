import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documents, prestataireProfiles } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let client: TestUser;
let prestataire: TestUser;
let admin: TestUser;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
  client = await createClient(t);
  prestataire = await createPrestataire(t);
  admin = await createAdmin(t);
});
afterAll(() => t.close());

const PDF = Buffer.from('%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n', 'latin1');
const BOUNDARY = '----upload-test-boundary';

/** The three upload routes: who may call each, and a well-formed body for it. */
const routes = () => [
  { url: '/api/v1/auth/me/photo', token: client.token, field: 'photo' },
  { url: '/api/v1/prestataire/documents', token: prestataire.token, field: 'file' },
  { url: `/api/v1/admin/users/${prestataire.user.id}/documents`, token: admin.token, field: 'file' },
];

function part(name: string, value: string | Buffer, filename?: string): Buffer {
  const disposition = `form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`;
  const type = filename === undefined ? '' : 'Content-Type: application/octet-stream\r\n';
  return Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`), Buffer.from(value), Buffer.from('\r\n')]);
}

function post(url: string, token: string, contentType: string, payload: Buffer) {
  return t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'content-type': contentType }, payload });
}

describe('malformed multipart bodies on every upload route', () => {
  it('answers 400 for multipart without a boundary', async () => {
    for (const route of routes()) {
      const res = await post(route.url, route.token, 'multipart/form-data', part(route.field, PDF, 'a.pdf'));
      expectError(res, 400, 'bad_request');
      expect(res.json().message, route.url).toMatch(/multipart/i);
    }
  });

  it('answers 400 for a body cut short', async () => {
    for (const route of routes()) {
      const whole = Buffer.concat([part('type', 'insurance'), part(route.field, PDF, 'a.pdf'), Buffer.from(`--${BOUNDARY}--\r\n`)]);
      const cut = whole.subarray(0, whole.length - 40);
      const res = await post(route.url, route.token, `multipart/form-data; boundary=${BOUNDARY}`, cut);
      expectError(res, 400, 'bad_request');
    }
  });

  it('answers 400 for a part without headers, and for garbage', async () => {
    for (const route of routes()) {
      const garbage = Buffer.from(`--${BOUNDARY}\r\nnot a header line\r\n\r\n\u0000\u0001\u0002\r\n`);
      const res = await post(route.url, route.token, `multipart/form-data; boundary=${BOUNDARY}`, garbage);
      expect(res.statusCode, route.url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, route.url).toBeLessThan(500);
      expect(typeof res.json().error).toBe('string');
    }
  });

  it('answers 422 for a NUL or an unpaired surrogate in a text field, and stores nothing', async () => {
    const url = '/api/v1/prestataire/documents';
    for (const bad of ['insur\u0000ance', 'x\ud800']) {
      const body = Buffer.concat([part('type', bad), part('file', PDF, 'a.pdf'), Buffer.from(`--${BOUNDARY}--\r\n`)]);
      const res = await post(url, prestataire.token, `multipart/form-data; boundary=${BOUNDARY}`, body);
      expectError(res, 422, 'validation_error');
      expect(Object.keys(res.json().errors)).toEqual(['type']);
    }
    const rows = await t.database.db.select().from(documents).where(eq(documents.userId, prestataire.user.id));
    expect(rows).toEqual([]);
  });

  it('keeps only the base name of a file name, without control characters', async () => {
    const body = Buffer.concat([
      part('type', 'insurance'),
      part('file', PDF, '..\\..\\etc/pass\u0001wd\u0000.pdf'),
      Buffer.from(`--${BOUNDARY}--\r\n`),
    ]);
    const res = await post('/api/v1/prestataire/documents', prestataire.token, `multipart/form-data; boundary=${BOUNDARY}`, body);
    expect(res.statusCode).toBe(201);
    expect(res.json().data.original_name).toBe('pass\uFFFDwd\uFFFD.pdf');
  });

  it('refuses a multipart body on a route that takes JSON, and changes nothing', async () => {
    const target = await createPrestataire(t);
    const body = Buffer.concat([part('note', 'ok'), Buffer.from(`--${BOUNDARY}--\r\n`)]);
    const res = await post(`/api/v1/admin/prestataires/${target.user.id}/validate`, admin.token, `multipart/form-data; boundary=${BOUNDARY}`, body);
    expectError(res, 400, 'bad_request');
    const [profile] = await t.database.db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, target.user.id));
    expect(profile?.validationStatus).toBe('pending');
  });
});

