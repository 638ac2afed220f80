import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, prestataireProfiles, reviews } from '../src/db/schema/index.js';
import { eventsOf } from '../src/modules/outbox/outbox.repository.js';
import { aBooking, anOpenPrestataire } from './appointment-fixtures.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, unique, type TestApp, type TestUser } from './helpers.js';
import { aCompletedBooking, aReview } from './review-fixtures.js';

interface ReviewBody {
  id: number;
  appointment_id: number;
  prestataire_id: number;
  client: { id: number; first_name: string; last_name_initial: string };
  rating: number;
  comment: string;
  status: string;
  created_at: string;
}
interface PublicMeta {
  current_page: number;
  per_page: number;
  total: number;
  last_page: number;
  rating_average: number | null;
  rating_count: number;
  rating_distribution: Record<'1' | '2' | '3' | '4' | '5', number>;
}

let t: TestApp;
let admin: TestUser;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000' });
  admin = await createAdmin(t);
});
afterAll(() => t.close());

function call(method: 'GET' | 'POST', url: string, token?: string, payload?: object) {
  return t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, payload });
}
const review = (appointmentId: number, token: string | undefined, payload: object = { rating: 5, comment: '  Great job, on time.  ' }) =>
  call('POST', `/appointments/${appointmentId}/review`, token, payload);
const approve = (id: number) => call('POST', `/admin/reviews/${id}/approve`, admin.token);

describe('POST /appointments/{appointment}/review', () => {
  it('lets the client review its completed appointment: 201, pending, the reviewer shown by first name and initial', async () => {
    const b = await aCompletedBooking(t);
    const res = await review(b.appointment.id, b.client.token);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json().data as ReviewBody;
    expect(body).toMatchObject({
      appointment_id: b.appointment.id,
      prestataire_id: b.prestataire.user.id,
      client: { id: b.client.user.id, first_name: 'Camille', last_name_initial: 'T.' },
      rating: 5,
      comment: 'Great job, on time.',
      status: 'pending',
    });
    expect(JSON.stringify(res.json())).not.toContain(b.client.user.lastName);

    const events = await eventsOf(t.database.db, 'review', body.id);
    expect(events.map((e) => e.type)).toEqual(['review.created']);
    expect(events[0]!.payload).toMatchObject({ appointment_id: b.appointment.id, prestataire_id: b.prestataire.user.id, rating: 5 });
    const logged = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.subjectType, 'review'), eq(activityLog.subjectId, body.id)));
    expect(logged.map((l) => [l.action, l.actorId])).toEqual([['review.created', b.client.user.id]]);
  });

  it('takes one review per appointment: a second answers 409', async () => {
    const b = await aCompletedBooking(t);
    expect((await review(b.appointment.id, b.client.token)).statusCode).toBe(201);
    expectError(await review(b.appointment.id, b.client.token, { rating: 1, comment: 'Changed my mind' }), 409, 'conflict');
    const rows = await t.database.db.select().from(reviews).where(eq(reviews.appointmentId, b.appointment.id));
    expect(rows).toHaveLength(1);
  });

  it('two concurrent first reviews of one appointment: one 201, one 409', async () => {
    const b = await aCompletedBooking(t);
    const answers = await Promise.all([review(b.appointment.id, b.client.token), review(b.appointment.id, b.client.token)]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([201, 409]);
  });

  it('answers 409 with the appointment status before completion', async () => {
    for (const status of ['scheduled', 'in_progress', 'ended', 'cancelled'] as const) {
      const b = await aBooking(t, { status });
      const res = await review(b.appointment.id, b.client.token);
      expectError(res, 409, 'conflict');
      expect(res.json().current_status).toBe(status);
    }
  });

  it('is for its client only: 401 without a token, 403 for the prestataire and an administrator, 404 for another client or an unknown appointment', async () => {
    const b = await aCompletedBooking(t);
    expectError(await review(b.appointment.id, undefined), 401, 'unauthenticated');
    expectError(await review(b.appointment.id, b.prestataire.token), 403, 'forbidden');
    expectError(await review(b.appointment.id, admin.token), 403, 'forbidden');
    expectError(await review(b.appointment.id, (await createClient(t)).token), 404, 'not_found');
    expectError(await review(2_000_000_000, b.client.token), 404, 'not_found');
    expect(await t.database.db.select().from(reviews).where(eq(reviews.appointmentId, b.appointment.id))).toHaveLength(0);
  });

  it('answers 422 by field for a bad rating or comment', async () => {
    const b = await aCompletedBooking(t);
    const cases: [object, string][] = [
      [{ rating: 0, comment: 'Fine work' }, 'rating'],
      [{ rating: 6, comment: 'Fine work' }, 'rating'],
      [{ rating: 4.5, comment: 'Fine work' }, 'rating'],
      [{ rating: '5', comment: 'Fine work' }, 'rating'],
      [{ comment: 'Fine work' }, 'rating'],
      [{ rating: 4, comment: '   ' }, 'comment'],
      [{ rating: 4, comment: 'x'.repeat(2001) }, 'comment'],
      [{ rating: 4, comment: 'nul \u0000 byte' }, 'comment'],
      [{ rating: 4 }, 'comment'],
    ];
    for (const [payload, field] of cases) {
      const res = await review(b.appointment.id, b.client.token, payload);
      expectError(res, 422, 'validation_error');
      expect(Object.keys(res.json().errors), JSON.stringify(payload)).toContain(field);
    }
    expectError(await call('POST', '/appointments/abc/review', b.client.token, { rating: 4, comment: 'Fine work' }), 422, 'validation_error');
  });
});

describe('GET /prestataires/{prestataire}/reviews', () => {
  it('lists approved reviews only, newest first, with the rating and its distribution', async () => {
    const prestataire = await anOpenPrestataire(t);
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000);
    const made = [];
    for (const [rating, minutesAgo] of [
      [5, 50],
      [4, 40],
      [4, 30],
      [2, 20],
    ] as const) {
      const r = await aReview(t, await aCompletedBooking(t, { prestataire }), { rating, createdAt: at(minutesAgo) });
      expect((await approve(r.id)).statusCode).toBe(200);
      made.push(r);
    }
    // Neither a pending, nor a rejected, nor a hidden review is public or counts.
    await aReview(t, await aCompletedBooking(t, { prestataire }), { rating: 1, status: 'pending', createdAt: at(5) });
    await aReview(t, await aCompletedBooking(t, { prestataire }), { rating: 1, status: 'rejected', createdAt: at(5) });
    const toHide = await aReview(t, await aCompletedBooking(t, { prestataire }), { rating: 1, createdAt: at(5) });
    expect((await approve(toHide.id)).statusCode).toBe(200);
    expect((await call('POST', `/admin/reviews/${toHide.id}/hide`, admin.token)).statusCode).toBe(200);

    const res = await call('GET', `/prestataires/${prestataire.user.id}/reviews`);
    expect(res.statusCode, res.body).toBe(200);
    const { data, meta } = res.json() as { data: ReviewBody[]; meta: PublicMeta };
    expect(data.map((r) => r.id)).toEqual([made[3]!.id, made[2]!.id, made[1]!.id, made[0]!.id]);
    expect(data.every((r) => r.status === 'approved')).toBe(true);
    expect(meta).toMatchObject({
      total: 4,
      rating_count: 4,
      rating_average: 3.75,
      rating_distribution: { '1': 0, '2': 1, '3': 0, '4': 2, '5': 1 },
    });

    const page2 = await call('GET', `/prestataires/${prestataire.user.id}/reviews?per_page=3&page=2`);
    expect(page2.statusCode).toBe(200);
    const p2 = page2.json() as { data: ReviewBody[]; meta: PublicMeta };
    expect(p2.data.map((r) => r.id)).toEqual([made[0]!.id]);
    expect(p2.meta).toMatchObject({ current_page: 2, per_page: 3, total: 4, last_page: 2, rating_count: 4 });
  });

  it('answers an empty page and a null average for a prestataire without approved reviews', async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const res = await call('GET', `/prestataires/${prestataire.user.id}/reviews`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      data: [],
      meta: { total: 0, rating_average: null, rating_count: 0, rating_distribution: { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 } },
    });
  });

  it('answers 404 for an unknown or a non-validated prestataire, 422 for bad paging', async () => {
    expectError(await call('GET', '/prestataires/2000000000/reviews'), 404, 'not_found');
    for (const status of ['pending', 'suspended', 'rejected'] as const) {
      const p = await createPrestataire(t, { status });
      expectError(await call('GET', `/prestataires/${p.user.id}/reviews`), 404, 'not_found');
    }
    const client = await createClient(t);
    expectError(await call('GET', `/prestataires/${client.user.id}/reviews`), 404, 'not_found');
    const p = await createPrestataire(t, { status: 'validated' });
    expectError(await call('GET', `/prestataires/${p.user.id}/reviews?per_page=0`), 422, 'validation_error');
    expectError(await call('GET', `/prestataires/${p.user.id}/reviews?per_page=101`), 422, 'validation_error');
  });
});

describe('search by rating', () => {
  it('sorts by the rating moderation keeps, and min_rating filters by it', async () => {
    const tag = `Avisgarage${unique()}`;
    const make = async (suffix: string) => {
      const p = await anOpenPrestataire(t);
      await t.database.db.update(prestataireProfiles).set({ businessName: `${tag} ${suffix}` }).where(eq(prestataireProfiles.userId, p.user.id));
      return p;
    };
    const [low, high, unrated] = [await make('low'), await make('high'), await make('unrated')];
    for (const [p, ratings] of [
      [low, [3, 2]],
      [high, [5, 4]],
    ] as const) {
      for (const rating of ratings) {
        const r = await aReview(t, await aCompletedBooking(t, { prestataire: p }), { rating });
        expect((await approve(r.id)).statusCode).toBe(200);
      }
    }

    const sorted = await call('GET', `/prestataires?q=${tag}&sort=rating`);
    expect(sorted.statusCode, sorted.body).toBe(200);
    const rows = sorted.json().data as { id: number; rating_average: number | null; rating_count: number }[];
    expect(rows.map((r) => r.id)).toEqual([high.user.id, low.user.id, unrated.user.id]);
    expect(rows.map((r) => [r.rating_average, r.rating_count])).toEqual([
      [4.5, 2],
      [2.5, 2],
      [null, 0],
    ]);

    const filtered = await call('GET', `/prestataires?q=${tag}&min_rating=3`);
    expect(filtered.statusCode).toBe(200);
    expect((filtered.json().data as { id: number }[]).map((r) => r.id)).toEqual([high.user.id]);
  });
});
