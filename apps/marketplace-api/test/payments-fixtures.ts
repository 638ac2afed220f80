import { inflateSync } from 'node:zlib';
import { and, desc, eq } from 'drizzle-orm';
import Stripe from 'stripe';
import { appointments, domainEvents, outboxCursors } from '../src/db/schema/index.js';
import { systemActor } from '../src/lib/context.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { lifecycleFixtures } from './admin-lifecycle-fixtures.js';
import { bearer, type TestApp, type TestUser } from './helpers.js';

export const WEBHOOK_SECRET = 'whsec_test_payments_0123456789abcdef';

/** The configuration that points the app's stripe SDK at the local Stripe-like server (test/stripe-server.ts) on `port`. */
export function stripeTestEnv(port: number): Record<string, string> {
  return {
    STRIPE_SECRET_KEY: 'sk_test_local',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_HOST: '127.0.0.1',
    STRIPE_API_PORT: String(port),
    STRIPE_API_PROTOCOL: 'http',
  };
}

/** Stripe's own helper signs the test deliveries, as Stripe would. */
const signer = new Stripe('sk_test_signer', { telemetry: false });

export function signedDelivery(event: Record<string, unknown>, opts: { secret?: string; timestamp?: number } = {}) {
  const payload = JSON.stringify(event);
  const signature = signer.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? WEBHOOK_SECRET, timestamp: opts.timestamp });
  return { payload, signature };
}

let eventCounter = 0;
/** An event in Stripe's shape. */
export function stripeEvent(type: string, object: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  eventCounter += 1;
  return { id: `evt_test_${Date.now()}_${eventCounter}`, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object }, ...extra };
}

export function paymentsFixtures(t: () => TestApp) {
  const fx = () => lifecycleFixtures(t());

  /** An appointment of the client with the prestataire, `ended` by default, at `priceCents`. */
  async function appointment(client: TestUser, prestataire: TestUser, opts: { priceCents?: number; status?: 'scheduled' | 'in_progress' | 'ended' } = {}) {
    const f = fx();
    const category = await f.category();
    const service = await f.service(category.id);
    const vehicle = await f.vehicle(client.user.id);
    const request = await f.request({ clientId: client.user.id, vehicleId: vehicle.id, serviceId: service.id, status: 'accepted' });
    const startsAt = new Date(Date.now() - 3 * 3_600_000);
    return f.appointment({
      serviceRequestId: request.id,
      clientId: client.user.id,
      prestataireId: prestataire.user.id,
      vehicleId: vehicle.id,
      serviceId: service.id,
      startsAt,
      priceCents: opts.priceCents ?? 12_000,
      status: opts.status ?? 'ended',
    });
  }

  /** Completes an appointment as the appointments module does (the move and its outbox event), then delivers the outbox. */
  async function complete(appointmentId: number) {
    const db = t().database.db;
    await db.transaction(async (tx) => {
      await tx.update(appointments).set({ status: 'completed', completedAt: new Date() }).where(eq(appointments.id, appointmentId));
      await createOutbox({ db: tx }).publish(
        systemActor,
        { type: 'appointment.completed', subject: { type: 'appointment', id: appointmentId }, payload: { from: 'ended', to: 'completed', id: appointmentId } },
        tx,
      );
    });
    await delivered(appointmentId);
    await t().app.moneyMoves.drain();
  }

  /** Delivers the outbox until the payments consumer has read the appointment's completion. */
  async function delivered(appointmentId: number) {
    const db = t().database.db;
    // On a PostgreSQL server an event becomes readable once every older transaction of the cluster
    // has ended (other test files share it): deliver until the payments consumer has gone past it.
    const [event] = await db
      .select({ id: domainEvents.id })
      .from(domainEvents)
      .where(and(eq(domainEvents.type, 'appointment.completed'), eq(domainEvents.subjectId, appointmentId)))
      .orderBy(desc(domainEvents.id))
      .limit(1);
    for (let attempt = 0; attempt < 200; attempt++) {
      await t().app.outboxDispatch.drain();
      const [cursor] = await db.select().from(outboxCursors).where(eq(outboxCursors.consumer, 'payments.transfers'));
      if (cursor && cursor.lastEventId >= event!.id) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`the outbox never delivered appointment.completed of appointment ${appointmentId}`);
  }

  function api(method: 'GET' | 'POST' | 'PUT', url: string, token?: string, payload?: Record<string, unknown>) {
    return t().app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  }

  function deliver(delivery: { payload: string; signature?: string }) {
    return t().app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/psp',
      headers: { 'content-type': 'application/json; charset=utf-8', ...(delivery.signature ? { 'stripe-signature': delivery.signature } : {}) },
      payload: delivery.payload,
    });
  }

  /** Drives the money moves (refunds, transfers, reversals, payouts) the worker would. */
  const moves = () => t().app.moneyMoves.drain();

  return { appointment, complete, delivered, api, deliver, moves };
}

/** The text a PDF shows: its streams inflated, the strings of its text operators decoded. */
export function pdfText(pdf: Buffer): string {
  const source = pdf.toString('latin1');
  const lines: string[] = [];
  const streams = /stream\r?\n/g;
  let match: RegExpExecArray | null;
  while ((match = streams.exec(source))) {
    const start = match.index + match[0].length;
    const end = source.indexOf('endstream', start);
    const raw = pdf.subarray(start, end);
    let content: string;
    try {
      content = inflateSync(raw).toString('latin1');
    } catch {
      continue;
    }
    for (const tj of content.matchAll(/\[(.*?)\]\s*TJ/g)) {
      const parts = [...tj[1]!.matchAll(/<([0-9a-fA-F]*)>/g)].map((h) => Buffer.from(h[1]!, 'hex').toString('latin1'));
      lines.push(parts.join(''));
    }
  }
  return lines.join('\n');
}
