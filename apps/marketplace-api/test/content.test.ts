import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog } from '../src/db/schema/index.js';
import { nonAdminTokens } from './admin-lifecycle-fixtures.js';
import { bearer, buildTestApp, createAdmin, createClient, expectAdminOnly, expectError, type NonAdminTokens, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let admin: TestUser;
let tokens: NonAdminTokens;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000' });
  admin = await createAdmin(t);
  tokens = await nonAdminTokens(t);
});
afterAll(() => t.close());

const put = (key: string, payload: unknown, token = admin.token) =>
  t.app.inject({ method: 'PUT', url: `/api/v1/admin/content/${key}`, headers: bearer(token), payload: payload as object });
const adminGet = (path: string, token = admin.token) => t.app.inject({ method: 'GET', url: `/api/v1/admin/content/${path}`, headers: bearer(token) });
const publicGet = (path: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url: `/api/v1/content/${path}`, headers });

describe('content', () => {
  it('adds a version on each save, per language, and logs each', async () => {
    const first = await put('terms', { title: 'Conditions', body: '# Article 1\n\nLe texte.' });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().data).toEqual({
      key: 'terms',
      lang: 'fr',
      version: 1,
      title: 'Conditions',
      body: '# Article 1\n\nLe texte.',
      created_at: expect.any(String),
      created_by: admin.user.id,
    });
    const second = await put('terms', { lang: 'fr', title: 'Conditions v2', body: 'Nouveau texte <b>kept as sent</b>' });
    expect(second.json().data).toMatchObject({ version: 2, title: 'Conditions v2', body: 'Nouveau texte <b>kept as sent</b>' });
    const english = await put('terms', { lang: 'en', title: 'Terms', body: 'The text.' });
    expect(english.json().data).toMatchObject({ lang: 'en', version: 1 });

    const logged = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.action, 'content.updated'), eq(activityLog.actorId, admin.user.id)));
    expect(logged).toHaveLength(3);
    expect(logged.map((e) => e.after)).toContainEqual({ key: 'terms', lang: 'fr', version: 2, title: 'Conditions v2' });
  });

  it('reads the latest version with every version listed, and an older one by number', async () => {
    const latest = await adminGet('terms');
    expect(latest.statusCode).toBe(200);
    const data = latest.json().data;
    expect(data).toMatchObject({ key: 'terms', lang: 'fr', version: 2, title: 'Conditions v2' });
    expect(data.versions).toEqual([
      { version: 2, created_at: expect.any(String), created_by: admin.user.id },
      { version: 1, created_at: expect.any(String), created_by: admin.user.id },
    ]);
    const old = await adminGet('terms?version=1');
    expect(old.json().data).toMatchObject({ version: 1, title: 'Conditions', body: '# Article 1\n\nLe texte.' });
    expect(old.json().data.versions).toHaveLength(2);
    expect((await adminGet('terms?lang=en')).json().data).toMatchObject({ lang: 'en', version: 1, title: 'Terms' });

    expectError(await adminGet('terms?version=9'), 404, 'not_found');
    expectError(await adminGet('unknown-key'), 404, 'not_found');
    expectError(await adminGet('privacy?lang=en'), 404, 'not_found');
  });

  it('answers the public the latest version, in French when the language has none; 404 when there is none', async () => {
    await put('faq', { lang: 'fr', title: 'FAQ', body: 'Questions' });
    const fr = await publicGet('terms');
    expect(fr.statusCode).toBe(200);
    expect(fr.json().data).toEqual({
      key: 'terms',
      lang: 'fr',
      version: 2,
      title: 'Conditions v2',
      body: 'Nouveau texte <b>kept as sent</b>',
      created_at: expect.any(String),
    });
    expect((await publicGet('terms?lang=en')).json().data).toMatchObject({ lang: 'en', title: 'Terms' });
    // No English FAQ: the French one.
    expect((await publicGet('faq?lang=en')).json().data).toMatchObject({ lang: 'fr', title: 'FAQ' });
    // A signed-in user reads it too.
    const client = await createClient(t);
    expect((await publicGet('faq', bearer(client.token))).statusCode).toBe(200);
    expectError(await publicGet('nothing-here'), 404, 'not_found');
    // Only an English version: no French fallback either.
    await put('legal-en-only', { lang: 'en', title: 'Legal', body: 'Text' });
    expectError(await publicGet('legal-en-only?lang=fr'), 404, 'not_found');
    expect((await publicGet('legal-en-only?lang=en')).statusCode).toBe(200);
  });

  it('refuses a key that is not a slug, a bad language, empty or oversized fields with 422', async () => {
    const body = { title: 'T', body: 'B' };
    for (const key of ['Terms', '-terms', 'a'.repeat(65), 'ter%20ms', 'été']) {
      expectError(await put(encodeURIComponent(key), body), 422, 'validation_error');
      expectError(await adminGet(encodeURIComponent(key)), 422, 'validation_error');
      expectError(await publicGet(encodeURIComponent(key)), 422, 'validation_error');
    }
    expect((await put('a'.repeat(64), body)).statusCode).toBe(200);
    expect(expectError(await put('terms', { ...body, lang: 'de' }), 422, 'validation_error').errors).toHaveProperty('lang');
    expect(expectError(await put('terms', { ...body, title: '   ' }), 422, 'validation_error').errors).toHaveProperty('title');
    expect(expectError(await put('terms', { ...body, title: 'x'.repeat(201) }), 422, 'validation_error').errors).toHaveProperty('title');
    expect(expectError(await put('terms', { ...body, body: 'x'.repeat(100_001) }), 422, 'validation_error').errors).toHaveProperty('body');
    expect(expectError(await put('terms', { ...body, body: 'nul\u0000' }), 422, 'validation_error').errors).toHaveProperty('body');
    expect(expectError(await put('terms', { title: 'T' }), 422, 'validation_error').errors).toHaveProperty('body');
    expect(expectError(await adminGet('terms?version=0'), 422, 'validation_error').errors).toHaveProperty('version');
    expect(expectError(await publicGet('terms?lang=xx'), 422, 'validation_error').errors).toHaveProperty('lang');
    // The largest body is taken.
    expect((await put('long', { title: 'x'.repeat(200), body: 'é'.repeat(100_000) })).statusCode).toBe(200);
    // Nothing was saved by the refused requests.
    expect((await adminGet('terms')).json().data.version).toBe(2);
  });

  it('is for administrators only', async () => {
    await expectAdminOnly(t, tokens, 'GET', '/admin/content/terms');
    await expectAdminOnly(t, tokens, 'PUT', '/admin/content/terms', { title: 'Hacked', body: 'x' });
    expect((await adminGet('terms')).json().data.version).toBe(2);
  });

  it('numbers concurrent saves one after the other', async () => {
    const saves = await Promise.all(Array.from({ length: 8 }, (_, i) => put('concurrent', { title: `Save ${i}`, body: 'x' })));
    expect(saves.map((r) => r.statusCode)).toEqual(Array(8).fill(200));
    expect(saves.map((r) => r.json().data.version as number).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect((await adminGet('concurrent')).json().data.versions).toHaveLength(8);
  });
});
