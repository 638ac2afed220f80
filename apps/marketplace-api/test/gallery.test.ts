import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, galleryPhotos } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, unique, type TestApp } from './helpers.js';

let t: TestApp;
let storageDir: string;

beforeAll(async () => {
  storageDir = await mkdtemp(join(tmpdir(), 'gallery-test-'));
  // A small upload limit, so that "too large" needs only a few kilobytes.
  t = await buildTestApp({ STORAGE_DIR: storageDir, UPLOAD_MAX_BYTES: '4096', RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
});
afterAll(async () => {
  await t.close();
  await rm(storageDir, { recursive: true, force: true });
});

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const JPEG_1X1 = Buffer.from(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
  'base64',
);

interface Part {
  name: string;
  filename?: string;
  type?: string;
  data: Buffer | string;
}

/** A multipart/form-data body with the given parts. */
function multipart(parts: Part[]) {
  const boundary = `----vitest${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

function upload(token: string | undefined, parts: Part[]) {
  const body = multipart(parts);
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/prestataire/gallery',
    headers: { ...body.headers, ...(token ? bearer(token) : {}) },
    payload: body.payload,
  });
}
const remove = (token: string | undefined, id: number | string) =>
  t.app.inject({ method: 'DELETE', url: `/api/v1/prestataire/gallery/${id}`, headers: token ? bearer(token) : {} });
const png = (name = 'work.png'): Part => ({ name: 'photo', filename: name, type: 'image/png', data: PNG_1X1 });
const fieldErrors = (res: LightMyRequestResponse) => expectError(res, 422, 'validation_error').errors ?? {};
const keyOf = (url: string) => url.replace(/^\/api\/v1\/media\//, '');
const photosOf = (prestataireId: number) => t.database.db.select().from(galleryPhotos).where(eq(galleryPhotos.prestataireId, prestataireId));

/** Stored files under the gallery folder. */
async function storedFiles(): Promise<number> {
  const root = join(storageDir, 'public', 'gallery');
  if (!existsSync(root)) return 0;
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).length;
}

describe('POST /prestataire/gallery', () => {
  it('adds one photo from `photo` with its caption, served publicly and shown on the public page', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    const res = await upload(p.token, [png(), { name: 'caption', data: '  Brake job on a Clio  ' }]);
    expect(res.statusCode).toBe(201);
    const photo = res.json().data;
    expect(photo).toEqual({ id: expect.any(Number), url: expect.any(String), caption: 'Brake job on a Clio', position: 0, created_at: expect.any(String) });
    expect(photo.url).toMatch(/^\/api\/v1\/media\/public\/gallery\/\d{4}\/\d{2}\/[0-9a-f-]+\.png$/);

    const served = await t.app.inject({ method: 'GET', url: photo.url });
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(PNG_1X1)).toBe(true);
    const page = await t.app.inject({ method: 'GET', url: `/api/v1/prestataires/${p.user.id}` });
    expect(page.json().data.gallery).toEqual([{ id: photo.id, url: photo.url, caption: 'Brake job on a Clio' }]);

    const [log] = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.action, 'prestataire.gallery_photos_added'), eq(activityLog.subjectId, p.user.id)));
    expect(log!.after).toEqual({
      photos: [{ photo_id: photo.id, prestataire_id: p.user.id, url: photo.url, caption: 'Brake job on a Clio', position: 0 }],
    });
  });

  it('adds several photos from `photos` (PNG and JPEG) in order, answering the list', async () => {
    const p = await createPrestataire(t); // not yet validated: the gallery is still its own to prepare
    await upload(p.token, [png()]);
    const res = await upload(p.token, [
      { name: 'photos', filename: 'a.png', type: 'image/png', data: PNG_1X1 },
      { name: 'photos', filename: 'b.jpg', type: 'image/jpeg', data: JPEG_1X1 },
    ]);
    expect(res.statusCode).toBe(201);
    const list = res.json().data as { url: string; position: number; caption: string | null }[];
    expect(list.map((x) => x.position)).toEqual([1, 2]);
    expect(list.map((x) => x.url.split('.').pop())).toEqual(['png', 'jpg']);
    expect(list.every((x) => x.caption === null)).toBe(true);
    expect(await photosOf(p.user.id)).toHaveLength(3);
  });

  it('judges images by their bytes: a text file named .jpg is refused (422) and nothing is stored', async () => {
    const p = await createPrestataire(t);
    const before = await storedFiles();
    const res = await upload(p.token, [{ name: 'photo', filename: 'holiday.jpg', type: 'image/jpeg', data: 'just some text, not a picture' }]);
    expect(fieldErrors(res)).toEqual({ photo: ['Must be a JPEG, PNG or WebP image'] });
    const mixed = await upload(p.token, [
      { name: 'photos', filename: 'a.png', data: PNG_1X1 },
      { name: 'photos', filename: 'b.jpg', data: '%PDF-1.4 not an image' },
    ]);
    expect(Object.keys(fieldErrors(mixed))).toEqual(['photos']);
    expect(await photosOf(p.user.id)).toEqual([]);
    expect(await storedFiles()).toBe(before);
  });

  it('answers 413 for a file over the upload size', async () => {
    const p = await createPrestataire(t);
    const big = Buffer.concat([PNG_1X1, Buffer.alloc(8192, 7)]);
    expectError(await upload(p.token, [{ name: 'photo', filename: 'big.png', data: big }]), 413, 'payload_too_large');
    expect(await photosOf(p.user.id)).toEqual([]);
  });

  it('holds at most 20 photos: the 21st, or a batch going past 20, answers 422 and stores nothing', async () => {
    const p = await createPrestataire(t);
    const ten = Array.from({ length: 10 }, (_, i): Part => ({ name: 'photos', filename: `${i}.png`, data: PNG_1X1 }));
    expect((await upload(p.token, ten)).statusCode).toBe(201);
    expect((await upload(p.token, ten.slice(0, 5))).statusCode).toBe(201);
    const before = await storedFiles();
    expect(fieldErrors(await upload(p.token, ten.slice(0, 6)))).toEqual({
      photos: ['A gallery holds at most 20 photos; it has 15, so 5 more may be added'],
    });
    expect((await upload(p.token, ten.slice(0, 5))).statusCode).toBe(201);
    expect(Object.keys(fieldErrors(await upload(p.token, [png()])))).toEqual(['photo']);
    expect(await photosOf(p.user.id)).toHaveLength(20);
    expect(await storedFiles()).toBe(before + 5);
  });

  it('lets only one of two concurrent batches fill the last places', async () => {
    const p = await createPrestataire(t);
    const ten = Array.from({ length: 10 }, (_, i): Part => ({ name: 'photos', filename: `${i}.png`, data: PNG_1X1 }));
    expect((await upload(p.token, ten)).statusCode).toBe(201);
    const results = await Promise.all([upload(p.token, ten), upload(p.token, ten)]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 422]);
    expect(await photosOf(p.user.id)).toHaveLength(20);
  });

  it('refuses an upload without a photo, a file in another part, a caption too long, and a body not multipart', async () => {
    const p = await createPrestataire(t);
    expect(Object.keys(fieldErrors(await upload(p.token, [{ name: 'caption', data: 'no photo' }])))).toEqual(['photo']);
    expect(Object.keys(fieldErrors(await upload(p.token, [{ name: 'picture', filename: 'a.png', data: PNG_1X1 }])))).toEqual(['picture']);
    expect(Object.keys(fieldErrors(await upload(p.token, [png(), { name: 'caption', data: 'x'.repeat(501) }])))).toEqual(['caption']);
    const json = await t.app.inject({ method: 'POST', url: '/api/v1/prestataire/gallery', headers: bearer(p.token), payload: { photo: 'x' } });
    expectError(json, 400, 'bad_request');
    expect(await photosOf(p.user.id)).toEqual([]);
  });
});

describe('DELETE /prestataire/gallery/{photo}', () => {
  it('removes the photo and its file, once', async () => {
    const p = await createPrestataire(t);
    const photo = (await upload(p.token, [png()])).json().data;
    expect(existsSync(join(storageDir, keyOf(photo.url)))).toBe(true);
    const res = await remove(p.token, photo.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ message: 'Photo deleted' });
    expect(await photosOf(p.user.id)).toEqual([]);
    expect(existsSync(join(storageDir, keyOf(photo.url)))).toBe(false);
    expect((await t.app.inject({ method: 'GET', url: photo.url })).statusCode).toBe(404);
    expectError(await remove(p.token, photo.id), 404, 'not_found');
    const [log] = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.action, 'prestataire.gallery_photo_deleted'), eq(activityLog.subjectId, p.user.id)));
    expect(log!.before).toMatchObject({ photo_id: photo.id, url: photo.url });
  });

  it("answers 404 for another prestataire's photo and leaves it in place", async () => {
    const [owner, other] = [await createPrestataire(t), await createPrestataire(t)];
    const photo = (await upload(owner.token, [png()])).json().data;
    expectError(await remove(other.token, photo.id), 404, 'not_found');
    expect(await photosOf(owner.user.id)).toHaveLength(1);
    expect(existsSync(join(storageDir, keyOf(photo.url)))).toBe(true);
    expectError(await remove(other.token, 'abc'), 422, 'validation_error');
  });
});

describe('security', () => {
  it('answers 401 without a token and 403 to a client or an admin', async () => {
    const owner = await createPrestataire(t);
    const photo = (await upload(owner.token, [png()])).json().data;
    const client = await createClient(t);
    const admin = await createAdmin(t, { email: `gallery-admin-${unique()}@example.test` });
    expectError(await upload(undefined, [png()]), 401, 'unauthenticated');
    expectError(await remove(undefined, photo.id), 401, 'unauthenticated');
    for (const token of [client.token, admin.token]) {
      expectError(await upload(token, [png()]), 403, 'forbidden');
      expectError(await remove(token, photo.id), 403, 'forbidden');
    }
    expect(await photosOf(owner.user.id)).toHaveLength(1);
  });
});
