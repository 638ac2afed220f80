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
`
  .trim()
  .split('\n')
  .map((line) => line.split(' ') as [string, string]);

interface Operation {
  operationId?: string;
  tags?: string[];
  responses?: Record<string, unknown>;
  security?: unknown[];
}

let t: TestApp;
let paths: Record<string, Record<string, Operation>>;
beforeAll(async () => {
  t = await buildTestApp();
  const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
  paths = (res.json() as { paths: Record<string, Record<string, Operation>> }).paths;
});
afterAll(() => t.close());

describe('OpenAPI document', () => {
  it.each(ROUTES)('documents %s %s with its responses', (method, path) => {
    const operation = paths[`/api/v1${path}`]?.[method.toLowerCase()];
    expect(operation, `${method} ${path}`).toBeDefined();
    expect(operation!.operationId).toBeTruthy();
    expect(operation!.tags?.length).toBeGreaterThan(0);
    const codes = Object.keys(operation!.responses ?? {});
    expect(codes.some((c) => c.startsWith('2'))).toBe(true);
    expect(codes.some((c) => c.startsWith('4'))).toBe(true);
  });

  it('gives every operation a unique operationId, a tag, and bearer security when it needs a token', () => {
    const ids = new Set<string>();
    for (const [path, operations] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (method === 'head') continue;
        expect(operation.operationId, `${method} ${path}`).toBeTruthy();
        expect(ids.has(operation.operationId!), `duplicate ${operation.operationId}`).toBe(false);
        ids.add(operation.operationId!);
        expect(operation.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
        if (path.startsWith('/api/v1/admin/')) expect(operation.security, `${method} ${path}`).toEqual([{ bearerAuth: [] }]);
      }
    }
  });
});
