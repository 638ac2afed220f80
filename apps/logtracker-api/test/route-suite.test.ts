import { errorStatus } from '@repo/http';
import { defineRouteSuite, type Caller, type SuiteOperation } from '@repo/route-suite';
import { addMember, buildTestApp, createLogs, createProject, createUser, type TestUser } from './helpers.js';

// The security suite generated from the OpenAPI document: every operation, present and future.
const t = await buildTestApp();

/** An ingest key of the project, made through the API by its owner. */
async function ingestKey(owner: TestUser, projectId: number): Promise<{ id: number; key: string }> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/api/projects/${projectId}/ingest-keys`,
    headers: owner.headers,
    payload: { name: 'route suite' },
  });
  if (res.statusCode !== 201) throw new Error(`ingest key fixture: ${res.statusCode} ${res.body}`);
  return (res.json() as { data: { id: number; key: string } }).data;
}

const has = (op: SuiteOperation, name: string) => op.pathParams.some((p) => p.name === name);
const onlyIngestKey = (op: SuiteOperation) => (op.security ?? []).every((requirement) => !('bearerAuth' in requirement));

/**
 * A project of its own for every operation: the caller owns it, with a member, an ingest key and a
 * log, so a hostile request naming them reaches the handler and a delete that succeeds harms
 * nothing another test uses. `{id}` is the log under /logs, the project elsewhere.
 */
async function caller(op: SuiteOperation): Promise<Caller> {
  const owner = await createUser(t);
  const project = await createProject(t, owner);
  const params: Record<string, string> = { project_id: String(project.id), id: String(project.id) };
  if (has(op, 'user_id')) {
    const member = await createUser(t);
    await addMember(t, project.id, member);
    params.user_id = String(member.id);
  }
  if (has(op, 'key_id') || onlyIngestKey(op)) {
    const key = await ingestKey(owner, project.id);
    params.key_id = String(key.id);
    if (onlyIngestKey(op)) return { headers: { 'x-ingest-key': key.key }, params };
  }
  if (op.path.startsWith('/api/logs/')) {
    const [log] = await createLogs(t, project.id, [{ message: 'route suite' }]);
    params.id = String(log!.id);
  }
  return { headers: owner.headers, params };
}

/**
 * A member who is not an owner, on a project of someone else's: owners-only operations refuse
 * them. `{user_id}` is the owner (whom a member may not change or remove), `{key_id}` a live key.
 */
async function ordinary(op: SuiteOperation): Promise<Caller> {
  const owner = await createUser(t);
  const member = await createUser(t);
  const project = await createProject(t, owner);
  await addMember(t, project.id, member);
  const params: Record<string, string> = { project_id: String(project.id), id: String(project.id), user_id: String(owner.id) };
  if (has(op, 'key_id')) params.key_id = String((await ingestKey(owner, project.id)).id);
  return { headers: member.headers, params };
}

defineRouteSuite({
  name: 'logtracker-api',
  app: t.app,
  jwtSecret: t.config.auth.jwtSecret,
  errorTable: errorStatus,
  // Public by design; the document does not mark them with `security: []` yet.
  publicOperations: ['health', 'register', 'login'],
  // A project's administration is for its owners: the routes say "(owners only)", or "(owners)"
  // where a member may act on themselves.
  privileged: (op) => /\(owners\b/.test(op.summary),
  ordinary,
  caller,
  close: () => t.close(),
});
