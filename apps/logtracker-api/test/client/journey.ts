/**
 * A new user's first steps, written against the client types openapi-typescript generates from the
 * document (test/openapi.test.ts writes them to ./generated and type-checks this file before running
 * it): a path, a parameter or an operation the document lacks fails the type check.
 */
import createClient from 'openapi-fetch';
import type { operations, paths } from './generated/openapi.js';

/** The operations the journey goes through, by their operationId. */
export const JOURNEY_OPERATIONS = [
  'register',
  'createProject',
  'createIngestKey',
  'createLogBatch',
  'listLogs',
] as const satisfies readonly (keyof operations)[];

/** The answer's data, or an error naming the status and the error envelope. */
function ok<T>(step: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) {
    throw new Error(`${step}: ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

export async function logTrackerJourney(baseUrl: string, email: string) {
  const client = createClient<paths>({ baseUrl });

  const account = ok(
    'register',
    await client.POST('/api/auth/register', {
      body: { name: 'Ada', email, password: 'correct horse battery', password_confirmation: 'correct horse battery' },
    }),
  );
  const signedIn = { authorization: `Bearer ${account.data.token}` };

  const project = ok(
    'createProject',
    await client.POST('/api/projects', { headers: signedIn, body: { name: 'Checkout', repository_url: 'https://example.test/checkout' } }),
  ).data;
  // Path ids are integers in the document: the project's id goes in as it came out.
  const path = { project_id: project.id };

  const ingestKey = ok(
    'createIngestKey',
    await client.POST('/api/projects/{project_id}/ingest-keys', { headers: signedIn, params: { path }, body: { name: 'CI' } }),
  ).data;

  const batch = ok(
    'createLogBatch',
    await client.POST('/api/projects/{project_id}/logs/batch', {
      headers: { 'x-ingest-key': ingestKey.key },
      params: { path },
      body: {
        logs: [
          { level: 'info', message: 'deploy started', source: 'ci' },
          { level: 'error', message: 'payment declined', context: { order: 42 } },
        ],
      },
    }),
  ).data;

  const errors = ok(
    'listLogs',
    await client.GET('/api/projects/{project_id}/logs', { headers: signedIn, params: { path, query: { level: 'error' } } }),
  );

  return { projectId: project.id, accepted: batch.accepted, errors: errors.data };
}
