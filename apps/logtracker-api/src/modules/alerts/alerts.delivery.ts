import { createHmac } from 'node:crypto';
import { fetch } from 'undici';
import type { Alert } from '../../db/schema/index.js';
import type { MailMessage } from '../../integrations/mail/index.js';
import { presentAlertBody } from './alerts.schemas.js';
import { WebhookTargetError, type WebhookGuard } from './webhook-target.js';

export const WEBHOOK_EVENT = 'alert.triggered';

export interface AlertProject {
  id: number;
  name: string;
}

/** `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`: the timestamp is signed so a captured request cannot be replayed later. */
export function signWebhook(secret: string, timestamp: string, body: string) {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export function webhookBody(alert: Alert, project: AlertProject) {
  return JSON.stringify({ event: WEBHOOK_EVENT, alert: presentAlertBody(alert), project: { id: project.id, name: project.name } });
}

/**
 * POSTs a signed alert. Resolves on a 2xx answer; rejects on any other status, a network error or
 * no answer within `timeoutMs` (the timeout covers the whole exchange, headers and body).
 * Redirects are not followed: a 3xx is a failure, and the signed body never goes elsewhere.
 */
export async function postWebhook(options: {
  url: string;
  secret: string;
  body: string;
  deliveryId: number;
  timeoutMs: number;
  /** Checks the URL again now (a name may resolve elsewhere than when it was configured) and carries the request. */
  guard: WebhookGuard;
  now?: Date;
}) {
  // The agent checks the addresses it connects to, but an IP literal never goes through its
  // lookup: the URL is checked here too, face and DNS.
  const problem = await options.guard.problem(options.url);
  if (problem) throw new WebhookTargetError(`webhook URL refused: ${problem}`);
  const timestamp = Math.floor((options.now ?? new Date()).getTime() / 1000).toString();
  const response = await fetch(options.url, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'LogTracker-Webhook/1.0',
      'x-logtracker-event': WEBHOOK_EVENT,
      // Deliveries are at least once: the same id on a retry lets a receiver drop a duplicate.
      'x-logtracker-delivery': String(options.deliveryId),
      'x-logtracker-timestamp': timestamp,
      'x-logtracker-signature': signWebhook(options.secret, timestamp, options.body),
    },
    body: options.body,
    signal: AbortSignal.timeout(options.timeoutMs),
    dispatcher: options.guard.agent,
  });
  // The answer's body is not needed, and an endpoint may send a large one: drop it unread.
  await response.body?.cancel().catch(() => undefined);
  if (response.status < 200 || response.status > 299) {
    throw new Error(`webhook answered HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`);
  }
}

/** A short, readable reason for `last_error`: fetch hides the network cause one level down. */
export function describeError(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${timeoutMs} ms`;
  }
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`.slice(0, 1000);
  }
  return String(error).slice(0, 1000);
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** The e-mail of an alert: plain text, and the same as simple HTML. */
export function alertEmail(alert: Alert, project: AlertProject, to: string): MailMessage {
  const levels = alert.levels.join(', ');
  const subject = `[Log Tracker] ${project.name}: ${alert.count} ${levels} logs in ${alert.windowMinutes} min`;
  const summary =
    `${alert.count} logs at level ${levels} in the last ${alert.windowMinutes} minutes ` +
    `(threshold ${alert.threshold}) in project "${project.name}" (#${project.id}).`;
  const window = `Window: ${alert.windowStart.toISOString()} – ${alert.windowEnd.toISOString()}`;
  const samples = alert.samples.map(
    (s) => `[${s.timestamp}] ${s.level.toUpperCase()}${s.source ? ` (${s.source})` : ''}: ${s.message}`,
  );
  const text = [summary, window, '', 'Latest logs:', ...samples.map((s) => `  ${s}`), '', `Alert #${alert.id}`].join('\n');
  const html = [
    `<p>${escapeHtml(summary)}</p>`,
    `<p>${escapeHtml(window)}</p>`,
    '<p>Latest logs:</p>',
    `<ul>${samples.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('')}</ul>`,
    `<p>Alert #${alert.id}</p>`,
  ].join('\n');
  return { to, subject, text, html };
}
