/**
 * A new client's first steps, written against the client types openapi-typescript generates from
 * the document (test/openapi.test.ts writes them to ./generated and type-checks this file before
 * running it): a path, a parameter or an operation the document lacks fails the type check.
 */
import createClient from 'openapi-fetch';
import type { operations, paths } from './generated/openapi.js';

/** The operations the journey goes through, by their operationId. */
export const JOURNEY_OPERATIONS = [
  'registerClient',
  'createVehicle',
  'listVehicles',
  'deleteVehicle',
] as const satisfies readonly (keyof operations)[];

/** The answer's data, or an error naming the status and the error envelope. */
function ok<T>(step: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) {
    throw new Error(`${step}: ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

export async function marketplaceJourney(baseUrl: string, email: string) {
  const client = createClient<paths>({ baseUrl });

  const account = ok(
    'registerClient',
    await client.POST('/api/v1/auth/register/client', {
      body: {
        first_name: 'Camille',
        last_name: 'Martin',
        email,
        password: 'correct horse battery',
        password_confirmation: 'correct horse battery',
        lang: 'fr',
      },
    }),
  );
  const signedIn = { authorization: `Bearer ${account.data.token}` };

  const vehicle = ok(
    'createVehicle',
    await client.POST('/api/v1/vehicles', {
      headers: signedIn,
      body: { make: 'Renault', model: 'Clio', year: 2019, plate: 'AB-123-CD', fuel: 'petrol' },
    }),
  ).data;

  const garage = ok('listVehicles', await client.GET('/api/v1/vehicles', { headers: signedIn })).data;

  // Path ids are integers in the document: the vehicle's id goes in as it came out.
  const removed = ok(
    'deleteVehicle',
    await client.DELETE('/api/v1/vehicles/{vehicle}', { headers: signedIn, params: { path: { vehicle: vehicle.id } } }),
  );

  const after = ok('listVehicles', await client.GET('/api/v1/vehicles', { headers: signedIn, params: { query: { page: 1 } } })).data;

  return { vehicle, garage, removed: removed.message, after };
}
