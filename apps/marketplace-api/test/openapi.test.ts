import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  exampleUrl,
  operationsOf,
  requiresCredentials,
  typeCheck,
  documentProblems,
  writeClientTypes,
  type DocumentedOperation,
} from '@repo/http/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './helpers.js';

// The spec's routes built so far (accounts, catalogue, onboarding, administration, vehicles, repair data, AI).
const ROUTES = `
POST /auth/register/client
POST /auth/register/prestataire
POST /auth/login
POST /auth/login/prestataire
POST /auth/forgot-password
POST /auth/reset-password
GET /auth/verify-email
POST /auth/resend-verification-email
POST /auth/send-email-verification-otp
POST /auth/verify-email-otp
POST /auth/send-password-reset-otp
POST /auth/verify-password-reset-otp
POST /auth/confirm-email
POST /auth/reset-password-otp
POST /auth/social/google
POST /auth/social/apple
GET /categories
GET /services
GET /services/{service}
GET /cities
GET /prestataires
GET /prestataires/{prestataire}
GET /vehicles/lookup
POST /auth/logout
GET /auth/me
PUT /auth/me
POST /auth/me/photo
POST /auth/me/device-token
PUT /auth/me/lang
POST /auth/change-password
DELETE /auth/me
POST /prestataires/{prestataire}/favourite
PUT /prestataire/profile
POST /client/kyc/validate
GET /vehicles
POST /vehicles
GET /vehicles/{vehicle}
PUT /vehicles/{vehicle}
PATCH /vehicles/{vehicle}
DELETE /vehicles/{vehicle}
POST /vehicles/{vehicle}/identify
POST /prestataire/vehicle/lookup
GET /prestataire/documents
POST /prestataire/labor/estimate
GET /repairdata/vehicles/{vehicleId}
GET /repairdata/vehicles/{vehicleId}/tasks
GET /repairdata/vehicles/{vehicleId}/tasks/{taskCode}/times
POST /repairdata/vehicles/{vehicleId}/tasks/batch-times
GET /repairdata/vehicles/{vehicleId}/systems/{systemCode}/procedures
GET /admin/users
POST /admin/users
GET /admin/users/{user}
PUT /admin/users/{user}
PUT /admin/users/{user}/status
POST /admin/users/{user}/documents
DELETE /admin/users/{user}
POST /admin/users/{user}/send-warning
GET /admin/prestataires/pending
GET /admin/prestataires/{prestataire}
POST /admin/prestataires/{prestataire}/validate
POST /admin/prestataires/{prestataire}/reject
POST /admin/prestataires/{prestataire}/request-documents
GET /admin/prestataires/{prestataire}/documents
GET /admin/documents/{document}/download
GET /admin/compliance/expiring-documents
POST /admin/compliance/{prestataire}/suspend
GET /admin/tariff-grids
POST /admin/tariff-grids
GET /admin/tariff-grids/{tariff_grid}
PUT /admin/tariff-grids/{tariff_grid}
PATCH /admin/tariff-grids/{tariff_grid}
DELETE /admin/tariff-grids/{tariff_grid}
GET /admin/admins
POST /admin/admins
DELETE /admin/admins/{user}
GET /admin/activity-log
GET /admin/ai/stats
DELETE /admin/ai/cache/{feature}/{cacheKey}
GET /appointments
GET /appointments/{appointment}
PUT /appointments/{appointment}/reschedule
POST /appointments/{appointment}/cancel
POST /appointments/{appointment}/start
POST /appointments/{appointment}/end
POST /appointments/{appointment}/complete
POST /appointments/{appointment}/request-price-adjustment
POST /appointments/{appointment}/accept-price-adjustment
POST /appointments/{appointment}/reject-price-adjustment
POST /admin/appointments/{appointment}/cancel
GET /admin/content/{key}
PUT /admin/content/{key}
GET /content/{key}
POST /admin/broadcast
GET /admin/broadcasts
GET /admin/broadcasts/{broadcast}
`
  .trim()
  .split('\n')
  .map((line) => line.split(' ') as [string, string]);

/** Warnings of redocly's recommended rules the document keeps, each for a reason. */
const KNOWN_WARNINGS = [
  // The project publishes no licence.
  'info-license #/info',
  // The real-time socket answers 101 Switching Protocols; only its failures are plain HTTP answers.
  'operation-2xx-response #/paths/~1app~1{key}/get/responses',
];

/** The operations anyone may call: sign-up and sign-in, their e-mail flows, the catalogue, public search and media. */
const PUBLIC_OPERATIONS = `
health healthLive healthReady getMedia
registerClient registerPrestataire login loginPrestataire signInWithGoogle signInWithApple
verifyEmail confirmEmail revertEmailChange resendVerificationEmail sendEmailVerificationOtp verifyEmailOtp
forgotPassword resetPassword sendPasswordResetOtp verifyPasswordResetOtp resetPasswordWithOtp
listCategories listServices getService listCities searchPrestataires lookupVehicle
getPrestataireAvailability getPrestataireUpcomingSlots listPrestataireReviews
openRealtimeSocket
paymentWebhook
getContent
`
  .trim()
  .split(/\s+/);

/** Operations anyone may call, that answer more to a signed-in caller (whether a prestataire is a favourite). */
const OPTIONAL_AUTH_OPERATIONS = ['getPrestataire'];

/** Path parameters that are not ids: repair-data codes, an AI cache entry, a media file's path, the Pusher app key. */
const TEXT_PATH_PARAMETERS = ['vehicleId', 'taskCode', 'systemCode', 'feature', 'cacheKey', 'path', 'key'];

const here = path.dirname(fileURLToPath(import.meta.url));
const clientDir = path.join(here, 'client');

let t: TestApp;
let document: { tags?: { name: string }[]; servers?: { url: string }[]; security?: unknown } & object;
let operations: DocumentedOperation[];
beforeAll(async () => {
  // Every operation is called once without credentials from one address.
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000' });
  document = t.app.swagger() as typeof document;
  operations = operationsOf(document);
});
afterAll(() => t.close());

const operationAt = (method: string, route: string) =>
  operations.find((op) => op.method === method.toLowerCase() && op.path === `/api/v1${route}`);

describe('OpenAPI document', () => {
  it('is served at /docs/json as the app builds it', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(document)));
  });

  it.each(ROUTES)('documents %s %s with its responses', (method, route) => {
    const operation = operationAt(method, route);
    expect(operation, `${method} ${route}`).toBeDefined();
    const codes = Object.keys(operation!.responses);
    expect(codes.some((c) => c.startsWith('2'))).toBe(true);
    expect(codes.some((c) => c.startsWith('4'))).toBe(true);
  });

  it('passes swagger-parser and redocly (only the known warnings), every operation named, summarised, tagged and described', async () => {
    expect(await documentProblems(document, KNOWN_WARNINGS)).toEqual([]);
  });

  it('states the security of every operation: none for the public ones, an optional or required bearer token for the rest', () => {
    expect(document.security).toEqual([{ bearerAuth: [] }]);
    for (const op of operations) {
      const id = op.operationId!;
      const expected = PUBLIC_OPERATIONS.includes(id)
        ? []
        : OPTIONAL_AUTH_OPERATIONS.includes(id)
          ? [{}, { bearerAuth: [] }]
          : [{ bearerAuth: [] }];
      expect(op.security, `${id} states its security`).toEqual(expected);
    }
    expect(PUBLIC_OPERATIONS.filter((id) => !operations.some((op) => op.operationId === id))).toEqual([]);
  });

  it('matches what the routes do: without credentials, exactly the operations that require them answer 401', async () => {
    const mismatches: string[] = [];
    for (const op of operations) {
      const res = await t.app.inject({ method: op.method.toUpperCase() as 'GET', url: exampleUrl(op) });
      const secured = requiresCredentials(op, document);
      if ((res.statusCode === 401) !== secured) mismatches.push(`${op.operationId}: ${res.statusCode}, documented ${secured ? 'secured' : 'public'}`);
    }
    expect(mismatches).toEqual([]);
  });

  it('lists Idempotency-Key on every authenticated POST and PATCH but uploads and the channel signature, and on no other operation', () => {
    const listed = (op: DocumentedOperation) => (op.parameters ?? []).find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    // Multipart uploads ignore the header (their bodies are not read whole before the work).
    const uploads = ['updateMyPhoto', 'uploadPrestataireDocument', 'adminUploadUserDocument', 'addGalleryPhotos', 'uploadServiceRequestPhotos'];
    const honours = (op: DocumentedOperation) =>
      (op.method === 'post' || op.method === 'patch') &&
      (op.security?.length ?? 1) > 0 &&
      !uploads.includes(op.operationId!) &&
      op.operationId !== 'authorizeChannel';
    const wrong = operations.filter((op) => Boolean(listed(op)) !== honours(op)).map((op) => `${op.method} ${op.path}`);
    expect(wrong).toEqual([]);
    expect(operations.filter((op) => listed(op)).length).toBeGreaterThan(50);
    for (const op of operations.filter((op) => listed(op))) {
      expect(listed(op)?.schema, op.operationId).toMatchObject({ type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' });
    }
    // The unauthenticated writes ignore it: sign-in, codes, password reset, the processor's webhook.
    for (const id of ['login', 'registerClient', 'forgotPassword', 'paymentWebhook']) {
      const op = operations.find((o) => o.operationId === id);
      expect(op, id).toBeDefined();
      expect(listed(op!), id).toBeUndefined();
    }
  });

  it('lists the answers the foundation gives before a route runs: 414 on every operation, 413 where a body is read, 429 wherever the rate limiter counts', () => {
    const statuses = (id: string) => Object.keys(operations.find((op) => op.operationId === id)?.responses ?? {});
    for (const id of ['registerClient', 'registerPrestataire', 'login', 'loginPrestataire']) {
      expect(statuses(id), id).toEqual(expect.arrayContaining(['413', '429']));
    }
    expect(operations.filter((op) => !op.responses['414']).map((op) => op.operationId)).toEqual([]);
    const takesBody = (op: DocumentedOperation) => 'requestBody' in op || ['post', 'put', 'patch', 'delete'].includes(op.method);
    expect(operations.filter((op) => takesBody(op) && !op.responses['413']).map((op) => op.operationId)).toEqual([]);
    // The health probes are the operations the rate limiter leaves alone.
    expect(operations.filter((op) => !op.responses['429']).map((op) => op.operationId)).toEqual(['health', 'healthLive', 'healthReady']);
  });

  it('shows path ids as positive integers', () => {
    const ids = operations.flatMap((op) => (op.parameters ?? []).filter((p) => p.in === 'path' && !TEXT_PATH_PARAMETERS.includes(p.name)));
    expect(ids.length).toBeGreaterThan(20);
    for (const parameter of ids) expect(parameter.schema, parameter.name).toMatchObject({ type: 'integer', minimum: 1 });
  });
});

describe('a typed client generated from the document', () => {
  it('type-checks the journey against the generated types, then runs it against the listening app', { timeout: 180_000 }, async () => {
    const types = path.join(clientDir, 'generated', 'openapi.d.ts');
    const journeyFile = path.join(clientDir, 'journey.ts');
    await writeClientTypes(document, types);
    await typeCheck({ tsconfig: path.join(here, '..', 'tsconfig.json'), files: [journeyFile, types], dir: path.dirname(types), timeoutMs: 150_000 });

    // Imported by URL: the journey's types exist once generated, so the app's own type check
    // (pnpm lint) does not follow it.
    const journey = (await import(pathToFileURL(journeyFile).href)) as {
      JOURNEY_OPERATIONS: readonly string[];
      marketplaceJourney(baseUrl: string, email: string): Promise<{
        vehicle: { id: number; make: string; plate: string | null };
        garage: { id: number }[];
        removed: string;
        after: { id: number }[];
      }>;
    };
    for (const id of journey.JOURNEY_OPERATIONS) expect(operations.map((op) => op.operationId)).toContain(id);

    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const result = await journey.marketplaceJourney(address, `journey-${Date.now()}@example.test`);
    expect(result.vehicle).toMatchObject({ make: 'Renault', plate: 'AB-123-CD' });
    expect(result.garage.map((v) => v.id)).toEqual([result.vehicle.id]);
    expect(result.removed).toBeTruthy();
    expect(result.after).toEqual([]);
  });
});
