import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq, sql } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import { alertDeliveries, alerts, projects } from '../src/db/schema/index.js';
import type { TestApp, TestUser } from './helpers.js';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A real HTTP server on a free loopback port. `answer` decides each response (it may delay it, or
 * never answer at all); every request is recorded with its raw body as received.
 */
export async function startHttpServer(answer: (request: ReceivedRequest, res: ServerResponse, index: number) => void) {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(received);
      answer(received, res, requests.length - 1);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/alerts`,
    requests,
    async close() {
      // A server that never answered still holds its sockets: drop them or close() never ends.
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  user: string | undefined;
}

/**
 * A real SMTP server (smtp-server) on a free loopback port, requiring the credentials given, so
 * that the SMTP_URL's user and password are proven to be used. Recipients listed in `reject` are
 * refused with a 550, as a real server refuses an unknown mailbox.
 */
export async function startSmtpSink(opts: { user: string; pass: string; reject?: string[] }) {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    logger: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (auth.username === opts.user && auth.password === opts.pass) callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onRcptTo(address, _session, callback) {
      if (opts.reject?.includes(address.address)) {
        callback(Object.assign(new Error(`5.1.1 <${address.address}>: mailbox unavailable`), { responseCode: 550 }));
      } else {
        callback();
      }
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const from = session.envelope.mailFrom;
        messages.push({
          from: from ? from.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          user: typeof session.user === 'string' ? session.user : undefined,
        });
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    url: `smtp://${encodeURIComponent(opts.user)}:${encodeURIComponent(opts.pass)}@127.0.0.1:${port}`,
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A header of a raw RFC 5322 message, unfolded. */
export function mailHeader(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const line = unfolded.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/** The decoded body of the message's part of the given content type (quoted-printable or 7bit). */
export function mailPart(raw: string, contentType: 'text/plain' | 'text/html'): string | undefined {
  const parts = raw.split(/\r?\n--[^\r\n]+\r?\n/);
  for (const part of parts) {
    const [head = '', ...rest] = part.split(/\r?\n\r?\n/);
    if (!new RegExp(`^content-type:\\s*${contentType}`, 'im').test(head)) continue;
    const body = rest.join('\r\n\r\n');
    if (!/content-transfer-encoding:\s*quoted-printable/i.test(head)) return body;
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return undefined;
}

export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Turns notifications on through the API, as an owner would. */
export async function configureAlerts(
  t: TestApp,
  owner: TestUser,
  projectId: number,
  settings: Record<string, unknown>,
  alertLevels?: string[],
) {
  const response = await t.app.inject({
    method: 'PUT',
    url: `/api/projects/${projectId}/config`,
    headers: owner.headers,
    payload: { notification_settings: { enabled: true, ...settings }, ...(alertLevels ? { alert_levels: alertLevels } : {}) },
  });
  if (response.statusCode !== 200) throw new Error(`config update failed: ${response.body}`);
}

/** Submits a batch through the API (the path whose announcements the evaluator hears). */
export async function postBatch(t: TestApp, user: TestUser, projectId: number, logs: Record<string, unknown>[]) {
  return t.app.inject({ method: 'POST', url: `/api/projects/${projectId}/logs/batch`, headers: user.headers, payload: { logs } });
}

export const errors = (n: number, prefix = 'db timeout') =>
  Array.from({ length: n }, (_, i) => ({ level: 'error' as const, message: `${prefix} #${i}`, source: 'api' }));

export async function alertsOf(t: TestApp, projectId: number) {
  return t.database.db.select().from(alerts).where(eq(alerts.projectId, projectId)).orderBy(alerts.id);
}

export async function deliveriesOfProject(t: TestApp, projectId: number) {
  return t.database.db
    .select({ delivery: alertDeliveries })
    .from(alertDeliveries)
    .innerJoin(alerts, eq(alerts.id, alertDeliveries.alertId))
    .where(eq(alerts.projectId, projectId))
    .orderBy(alertDeliveries.id)
    .then((rows) => rows.map((r) => r.delivery));
}

/** Ends the quiet period as if it had passed: moves the last alert back in time. */
export async function endQuietPeriod(t: TestApp, projectId: number) {
  await t.database.db
    .update(projects)
    .set({ lastAlertAt: sql`${projects.lastAlertAt} - interval '1 day'` })
    .where(eq(projects.id, projectId));
}

/** Makes every pending delivery of a project due now, instead of sleeping through its backoff. */
export async function makeDueNow(t: TestApp, projectId: number) {
  await t.database.db
    .update(alertDeliveries)
    .set({ nextAttemptAt: sql`now() - interval '1 second'` })
    .where(
      sql`${alertDeliveries.status} = 'pending' and ${alertDeliveries.alertId} in (select id from ${alerts} where ${alerts.projectId} = ${projectId})`,
    );
}
