import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorStatus } from '@repo/http';
import { defineRouteSuite, type Caller, type SuiteOperation } from '@repo/route-suite';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, tokenFor } from './helpers.js';

// The security suite generated from the OpenAPI document: every operation, present and future.

// Social sign-in configured against a provider on loopback that publishes no keys: every identity
// token is refused (401) rather than the route answering 503 "not configured".
const jwks = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}'));
jwks.listen(0, '127.0.0.1');
await once(jwks, 'listening');
const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/keys`;

const t = await buildTestApp({
  RATE_LIMIT_AUTHENTICATED: '1000000',
  RATE_LIMIT_PUBLIC: '1000000',
  GOOGLE_CLIENT_IDS: 'route-suite.apps.googleusercontent.com',
  GOOGLE_JWKS_URL: jwksUrl,
  APPLE_CLIENT_IDS: 'com.example.route-suite',
  APPLE_JWKS_URL: jwksUrl,
});
const admin = await createAdmin(t);
const shown = await createPrestataire(t, { status: 'validated' });

const isAdmin = (op: SuiteOperation) => op.tags.includes('admin') || op.path.startsWith('/api/v1/admin/');
const has = (op: SuiteOperation, name: string) => op.pathParams.some((p) => p.name === name);

/** A vehicle of the user's own garage, made through the API. */
async function vehicleOf(token: string): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/vehicles',
    headers: bearer(token),
    payload: { make: 'Renault', model: 'Clio', year: 2019 },
  });
  if (res.statusCode !== 201) throw new Error(`vehicle fixture: ${res.statusCode} ${res.body}`);
  return String((res.json() as { data: { id: number } }).data.id);
}

/**
 * Hostile requests are sent as the user each operation serves, each a fresh account with fresh
 * fixtures: an administrator for the back office (whose {user} and {prestataire} are made for
 * the operation, so a delete or a ban that goes through harms nothing shared), a validated
 * prestataire for the prestataire workspace, a client otherwise.
 */
async function caller(op: SuiteOperation): Promise<Caller> {
  if (isAdmin(op)) {
    const params: Record<string, string> = {};
    if (has(op, 'user')) params.user = String((await createClient(t)).user.id);
    if (has(op, 'prestataire')) params.prestataire = String((await createPrestataire(t)).user.id);
    return { headers: bearer(await tokenFor(t, admin.user.id)), params };
  }
  if (op.tags.includes('prestataire') || op.path.startsWith('/api/v1/prestataire/')) {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    return { headers: bearer(prestataire.token) };
  }
  const client = await createClient(t);
  const params: Record<string, string> = { prestataire: String(shown.user.id) };
  if (has(op, 'vehicle')) params.vehicle = await vehicleOf(client.token);
  return { headers: bearer(client.token), params };
}

defineRouteSuite({
  name: 'marketplace-api',
  app: t.app,
  jwtSecret: t.config.auth.jwtSecret,
  errorTable: errorStatus,
  // Public by design; the document does not mark them with `security: []` yet.
  publicOperations: [
    'health',
    'getMedia',
    'registerClient',
    'registerPrestataire',
    'login',
    'loginPrestataire',
    'verifyEmail',
    'confirmEmail',
    'revertEmailChange',
    'resendVerificationEmail',
    'sendEmailVerificationOtp',
    'verifyEmailOtp',
    'forgotPassword',
    'resetPassword',
    'sendPasswordResetOtp',
    'verifyPasswordResetOtp',
    'resetPasswordWithOtp',
    'signInWithGoogle',
    'signInWithApple',
    'listCategories',
    'listServices',
    'getService',
    'listCities',
    'searchPrestataires',
    'getPrestataire',
    'lookupVehicle',
    'openRealtimeSocket',
  ],
  // The back office: tagged `admin`, under /admin.
  privileged: isAdmin,
  ordinary: async () => ({ headers: bearer((await createClient(t)).token) }),
  caller,
  close: async () => {
    await t.close();
    await new Promise<void>((resolve) => jwks.close(() => resolve()));
  },
});
