import { count, eq } from 'drizzle-orm';
import protobuf from 'protobufjs';
import { expect } from 'vitest';
import { logs } from '../src/db/schema/index.js';
import { createProject, createUser, type TestApp, type TestUser, type LogBody } from './helpers.js';


/** A fresh project and an ingest key of it, so that what is read back is exactly what was sent. */
export async function projectWithKey(app: TestApp, who?: TestUser) {
  const owner = who ?? (await createUser(app));
  const projectId = (await createProject(app, owner)).id;
  const response = await app.app.inject({
    method: 'POST',
    url: `/api/projects/${projectId}/ingest-keys`,
    headers: owner.headers,
    payload: { name: 'otel' },
  });
  expect(response.statusCode, response.body).toBe(201);
  const { key } = (response.json() as { data: { key: string } }).data;
  return { projectId, key, owner };
}

/** Every log of the project through the API, page after page (keyset cursor). */
export async function readAllLogs(app: TestApp, owner: TestUser, projectId: number): Promise<LogBody[]> {
  const rows: LogBody[] = [];
  let cursor: string | null = null;
  do {
    const response = await app.app.inject({
      method: 'GET',
      url: `/api/projects/${projectId}/logs`,
      headers: owner.headers,
      query: cursor ? { per_page: '500', cursor } : { per_page: '500' },
    });
    expect(response.statusCode, response.body).toBe(200);
    const page = response.json() as { data: LogBody[]; meta: { next_cursor: string | null } };
    rows.push(...page.data);
    cursor = page.meta.next_cursor;
  } while (cursor);
  return rows;
}

export async function countLogs(app: TestApp, projectId: number) {
  const [row] = await app.database.db.select({ n: count() }).from(logs).where(eq(logs.projectId, projectId));
  return row?.n ?? 0;
}

/**
 * google.rpc.Status, declared here field by field rather than read from the app's proto/ tree, so
 * that the test decodes what the app encodes with a definition of its own.
 */
const Status = new protobuf.Type('Status')
  .add(new protobuf.Field('code', 1, 'int32'))
  .add(new protobuf.Field('message', 2, 'string'));
new protobuf.Root().define('google.rpc').add(Status);

export function decodeStatus(bytes: Uint8Array): { code: number; message: string } {
  return Status.toObject(Status.decode(bytes), { defaults: true }) as { code: number; message: string };
}
