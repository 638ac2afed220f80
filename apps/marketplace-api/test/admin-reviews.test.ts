import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, notifications, prestataireProfiles, reviews } from '../src/db/schema/index.js';
import { eventsOf } from '../src/modules/outbox/outbox.repository.js';
import { anOpenPrestataire } from './appointment-fixtures.js';
import { nonAdminTokens } from './admin-lifecycle-fixtures.js';
import { bearer, buildTestApp, createAdmin, expectAdminOnly, expectError, type NonAdminTokens, type TestApp, type TestUser } from './helpers.js';
import { deliverAll } from './outbox-helpers.js';
import { aCompletedBooking, aReview } from './review-fixtures.js';

interface AdminReviewBody {
  id: number;
  status: string;
  rating: number;
  prestataire_id: number;
  prestataire: { id: number; business_name: string | null };
  client: { id: number; first_name: string; last_name_initial: string };
  moderated_by: number | null;
  moderated_at: string | null;
  rejection_reason: string | null;
}

let t: TestApp;
let admin: TestUser;
let tokens: NonAdminTokens;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000' });
  admin = await createAdmin(t);
  tokens = await nonAdminTokens(t);
});
afterAll(() => t.close());

function call(method: 'GET' | 'POST', url: string, payload?: object, token = admin.token) {
  return t.app.inject({ method, url: `/api/v1${url}`, headers: bearer(token), payload });
}
const moderate = (id: number, move: 'approve' | 'reject' | 'hide', payload?: object) => call('POST', `/admin/reviews/${id}/${move}`, payload);

async function ratingOf(prestataireId: number) {
  const [row] = await t.database.db
    .select({ average: prestataireProfiles.ratingAverage, count: prestataireProfiles.ratingCount })
    .from(prestataireProfiles)
    .where(eq(prestataireProfiles.userId, prestataireId));
  return row!;
}

/** A prestataire with `n` pending reviews of the given ratings (cycled). */
async function withPendingReviews(n: number, ratings: readonly number[]) {
  const prestataire = await anOpenPrestataire(t);
  const made = [];
  for (let i = 0; i < n; i += 1) made.push(await aReview(t, await aCompletedBooking(t, { prestataire }), { rating: ratings[i % ratings.length] }));
  return { prestataire, reviews: made };
}

describe('admin-only', () => {
  it('turns away everyone but an active administrator', async () => {
    const r = await aReview(t, await aCompletedBooking(t));
    await expectAdminOnly(t, tokens, 'GET', '/admin/reviews');
    await expectAdminOnly(t, tokens, 'POST', `/admin/reviews/${r.id}/approve`);
    await expectAdminOnly(t, tokens, 'POST', `/admin/reviews/${r.id}/reject`, { reason: 'Off topic' });
    await expectAdminOnly(t, tokens, 'POST', `/admin/reviews/${r.id}/hide`);
    const [still] = await t.database.db.select().from(reviews).where(eq(reviews.id, r.id));
    expect(still!.status).toBe('pending');
  });
});

describe('GET /admin/reviews', () => {
  it('lists newest first with the client and the business name, filtered by status, rating and prestataire, paginated', async () => {
    const { prestataire, reviews: made } = await withPendingReviews(4, [5, 3, 3, 1]);
    await moderate(made[0]!.id, 'approve');
    const mine = await call('GET', `/admin/reviews?prestataire_id=${prestataire.user.id}`);
    expect(mine.statusCode, mine.body).toBe(200);
    const rows = mine.json().data as AdminReviewBody[];
    expect(rows.map((r) => r.id)).toEqual(made.map((r) => r.id).reverse());
    expect(rows[0]).toMatchObject({
      prestataire: { id: prestataire.user.id, business_name: prestataire.profile!.businessName },
      client: { first_name: 'Camille', last_name_initial: 'T.' },
    });
    expect(mine.json().meta).toMatchObject({ total: 4, current_page: 1 });

    const threes = await call('GET', `/admin/reviews?prestataire_id=${prestataire.user.id}&rating=3`);
    expect((threes.json().data as AdminReviewBody[]).map((r) => r.id)).toEqual([made[2]!.id, made[1]!.id]);
    const pending = await call('GET', `/admin/reviews?prestataire_id=${prestataire.user.id}&status=pending`);
    expect((pending.json().data as AdminReviewBody[]).map((r) => r.id)).toEqual([made[3]!.id, made[2]!.id, made[1]!.id]);
    const approved = await call('GET', `/admin/reviews?status=approved&prestataire_id=${prestataire.user.id}`);
    expect((approved.json().data as AdminReviewBody[]).map((r) => [r.id, r.moderated_by])).toEqual([[made[0]!.id, admin.user.id]]);

    const page = await call('GET', `/admin/reviews?prestataire_id=${prestataire.user.id}&per_page=3&page=2`);
    expect((page.json().data as AdminReviewBody[]).map((r) => r.id)).toEqual([made[0]!.id]);
    expect(page.json().meta).toMatchObject({ total: 4, per_page: 3, current_page: 2, last_page: 2 });
  });

  it('answers 422 for bad filters', async () => {
    for (const query of ['status=published', 'rating=0', 'rating=6', 'rating=abc', 'prestataire_id=-1', 'per_page=500', 'page=0']) {
      expectError(await call('GET', `/admin/reviews?${query}`), 422, 'validation_error');
    }
  });
});

describe('moderation', () => {
  it('approves a pending review: 200, logged, published, counted in the rating, and the prestataire is notified', async () => {
    const { prestataire, reviews: made } = await withPendingReviews(2, [5, 2]);
    const res = await moderate(made[0]!.id, 'approve');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json().data as AdminReviewBody;
    expect(body).toMatchObject({ id: made[0]!.id, status: 'approved', moderated_by: admin.user.id, rejection_reason: null });
    expect(body.moderated_at).not.toBeNull();
    expect(await ratingOf(prestataire.user.id)).toEqual({ average: 5, count: 1 });
    await moderate(made[1]!.id, 'approve');
    expect(await ratingOf(prestataire.user.id)).toEqual({ average: 3.5, count: 2 });

    const events = await eventsOf(t.database.db, 'review', made[0]!.id);
    expect(events.map((e) => e.type)).toEqual(['review.approved']);
    expect(events[0]!.payload).toMatchObject({ from: 'pending', to: 'approved', prestataire_id: prestataire.user.id });
    const logged = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.subjectType, 'review'), eq(activityLog.subjectId, made[0]!.id)));
    expect(logged.map((l) => [l.action, l.actorId, l.before?.status, l.after?.status])).toEqual([['review.approved', admin.user.id, 'pending', 'approved']]);

    await deliverAll(t, ['notifications']);
    const told = await t.database.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.userId, prestataire.user.id), eq(notifications.type, 'review.approved')));
    expect(told).toHaveLength(2);
    expect(told[0]!.title).toBe('Nouvel avis publié');
  });

  it('rejects a pending review with a reason (422 without), which never counts', async () => {
    const { prestataire, reviews: made } = await withPendingReviews(1, [1]);
    for (const payload of [undefined, {}, { reason: '  ' }, { reason: 'x'.repeat(2001) }]) {
      const res = await moderate(made[0]!.id, 'reject', payload);
      expectError(res, 422, 'validation_error');
      if (payload) expect(Object.keys(res.json().errors)).toContain('reason');
    }
    const res = await moderate(made[0]!.id, 'reject', { reason: ' Insults the prestataire ' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'rejected', rejection_reason: 'Insults the prestataire', moderated_by: admin.user.id });
    expect(await ratingOf(prestataire.user.id)).toEqual({ average: null, count: 0 });
    expect((await eventsOf(t.database.db, 'review', made[0]!.id)).map((e) => [e.type, e.payload.reason])).toEqual([['review.rejected', 'Insults the prestataire']]);
  });

  it('hides an approved review, with or without a reason; the rating drops it', async () => {
    const { prestataire, reviews: made } = await withPendingReviews(3, [5, 4, 1]);
    for (const r of made) await moderate(r.id, 'approve');
    expect(await ratingOf(prestataire.user.id)).toMatchObject({ count: 3 });
    expect((await ratingOf(prestataire.user.id)).average).toBeCloseTo(10 / 3, 5);

    const silent = await moderate(made[2]!.id, 'hide');
    expect(silent.statusCode, silent.body).toBe(200);
    expect(silent.json().data).toMatchObject({ status: 'hidden', rejection_reason: null });
    expect(await ratingOf(prestataire.user.id)).toEqual({ average: 4.5, count: 2 });

    const reasoned = await moderate(made[1]!.id, 'hide', { reason: 'Names an employee' });
    expect(reasoned.json().data).toMatchObject({ status: 'hidden', rejection_reason: 'Names an employee' });
    expect(await ratingOf(prestataire.user.id)).toEqual({ average: 5, count: 1 });
    expectError(await moderate(made[0]!.id, 'hide', { reason: 'x' }), 422, 'validation_error');
  });

  it('answers 409 with the current status for a move the state does not allow, 404 for an unknown review', async () => {
    const { prestataire, reviews: made } = await withPendingReviews(2, [4]);
    const [pending, approved] = made;
    await moderate(approved!.id, 'approve');
    const illegal: [number, 'approve' | 'reject' | 'hide', string, object?][] = [
      [pending!.id, 'hide', 'pending'],
      [approved!.id, 'approve', 'approved'],
      [approved!.id, 'reject', 'approved', { reason: 'Too late now' }],
    ];
    for (const [id, move, status, payload] of illegal) {
      const res = await moderate(id, move, payload);
      expectError(res, 409, 'conflict');
      expect(res.json().current_status).toBe(status);
    }
    await moderate(approved!.id, 'hide');
    for (const move of ['approve', 'hide'] as const) {
      const res = await moderate(approved!.id, move);
      expectError(res, 409, 'conflict');
      expect(res.json().current_status).toBe('hidden');
    }
    await moderate(pending!.id, 'reject', { reason: 'Off topic' });
    const res = await moderate(pending!.id, 'approve');
    expectError(res, 409, 'conflict');
    expect(res.json().current_status).toBe('rejected');
    expect(await ratingOf(prestataire.user.id)).toEqual({ average: null, count: 0 });

    for (const move of ['approve', 'hide'] as const) expectError(await moderate(2_000_000_000, move), 404, 'not_found');
    expectError(await moderate(2_000_000_000, 'reject', { reason: 'Off topic' }), 404, 'not_found');
    expectError(await call('POST', '/admin/reviews/0/approve'), 422, 'validation_error');
  });
});

// Real parallel connections: PGlite runs one statement at a time, so the races are PostgreSQL's.
describe('concurrent moderation', () => {
  it.skipIf(!process.env.TEST_DATABASE_URL)('approving 20 pending reviews of one prestataire at once counts all 20, with the exact average', async () => {
    const ratings = [5, 4, 3, 5, 1, 2, 4, 5, 3, 4];
    const { prestataire, reviews: made } = await withPendingReviews(20, ratings);
    const answers = await Promise.all(made.map((r) => moderate(r.id, 'approve')));
    expect(answers.map((a) => a.statusCode)).toEqual(made.map(() => 200));
    const expected = made.reduce((sum, r) => sum + r.rating, 0) / made.length;
    const { average, count } = await ratingOf(prestataire.user.id);
    expect(count).toBe(20);
    expect(average).toBeCloseTo(expected, 5);
    const publicList = await t.app.inject({ method: 'GET', url: `/api/v1/prestataires/${prestataire.user.id}/reviews` });
    expect(publicList.json().meta).toMatchObject({ rating_count: 20, total: 20, rating_average: Math.round(expected * 100) / 100 });
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('a hide racing approvals leaves the rating of the reviews left approved', async () => {
    const { prestataire, reviews: made } = await withPendingReviews(9, [5, 1, 3]);
    const [first, ...rest] = made;
    await moderate(first!.id, 'approve');
    const answers = await Promise.all([moderate(first!.id, 'hide'), ...rest.map((r) => moderate(r.id, 'approve'))]);
    expect(answers.map((a) => a.statusCode)).toEqual(made.map(() => 200));
    const expected = rest.reduce((sum, r) => sum + r.rating, 0) / rest.length;
    const { average, count } = await ratingOf(prestataire.user.id);
    expect(count).toBe(8);
    expect(average).toBeCloseTo(expected, 5);
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('a hide racing the approval of the same review: the rating matches where the review ends', async () => {
    for (let round = 0; round < 5; round += 1) {
      const { prestataire, reviews: made } = await withPendingReviews(1, [4]);
      const [approved, hidden] = await Promise.all([moderate(made[0]!.id, 'approve'), moderate(made[0]!.id, 'hide')]);
      expect(approved.statusCode).toBe(200);
      // The hide either came first (409: still pending) or after the approval (200).
      expect([200, 409]).toContain(hidden.statusCode);
      const [row] = await t.database.db.select().from(reviews).where(eq(reviews.id, made[0]!.id));
      expect(row!.status).toBe(hidden.statusCode === 200 ? 'hidden' : 'approved');
      expect(await ratingOf(prestataire.user.id)).toEqual(row!.status === 'approved' ? { average: 4, count: 1 } : { average: null, count: 0 });
    }
  });
});
