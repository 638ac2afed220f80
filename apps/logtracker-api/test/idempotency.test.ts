import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, buildTestApp, createUser, expectError, type TestApp } from './helpers.js';
import { countLogs, projectWithKey } from './otlp-support.js';

// Retried submissions with one Idempotency-Key store their logs once (DESIGN.md §10); the
// mechanics themselves are @repo/http's tests.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_INGEST: '100000' });
});
afterAll(async () => {
  await t.close();
});

const batchOf = (n: number, tag: string) =>
  JSON.stringify({
    logs: Array.from({ length: n }, (_, i) => ({ level: i % 7 === 0 ? 'error' : 'info', message: `${tag} entry ${i}`, source: 'ci', context: { i } })),
  });

describe('Idempotency-Key on the log tracker', () => {
  it('stores a retried batch of 1 000 logs once, and answers the first 201 again', async () => {
    const { projectId, key } = await projectWithKey(t);
    const payload = batchOf(1000, 'retried');
    const send = () =>
      t.app.inject({
        method: 'POST',
        url: `/api/projects/${projectId}/logs/batch`,
        headers: { 'x-ingest-key': key, 'content-type': 'application/json', 'idempotency-key': 'pipeline-run-42' },
        payload,
      });
    const first = await send();
    expect(first.statusCode, first.body).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await send();
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(await countLogs(t, projectId)).toBe(1000);
  });

  it('stores a retried OTLP export once, fingerprinted after gzip (another compression of the same JSON replays)', async () => {
    const { projectId, key } = await projectWithKey(t);
    const json = JSON.stringify({
      resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ scope: { name: 'retry' }, logRecords: [{ severityNumber: 9, body: { stringValue: 'once' } }] }] }],
    });
    const send = (level: number) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/logs',
        headers: { 'x-ingest-key': key, 'content-type': 'application/json', 'content-encoding': 'gzip', 'idempotency-key': 'export-7' },
        payload: gzipSync(json, { level }),
      });
    const first = await send(1);
    expect(first.statusCode, first.body).toBe(200);
    const again = await send(9);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await countLogs(t, projectId)).toBe(1);
  });

  it('keys a user and an ingest key apart, and checks a member still is one before replaying', async () => {
    const { projectId, key, owner } = await projectWithKey(t);
    const member = await createUser(t);
    await addMember(t, projectId, member);
    const send = (headers: Record<string, string>) =>
      t.app.inject({ method: 'POST', url: `/api/projects/${projectId}/logs`, headers: { ...headers, 'idempotency-key': 'same' }, payload: { level: 'info', message: 'hello' } });
    expect((await send({ 'x-ingest-key': key })).statusCode).toBe(201);
    const byMember = await send(member.headers);
    expect(byMember.statusCode).toBe(201);
    expect(byMember.headers['idempotent-replayed']).toBeUndefined();
    expect((await send(member.headers)).headers['idempotent-replayed']).toBe('true');
    // Removed from the project: its 404, not the answer it was given.
    const removed = await t.app.inject({ method: 'DELETE', url: `/api/projects/${projectId}/members/${member.id}`, headers: owner.headers });
    expect(removed.statusCode, removed.body).toBe(200);
    expectError(await send(member.headers), 404, 'not_found');
    expect(await countLogs(t, projectId)).toBe(2);
  });
});
