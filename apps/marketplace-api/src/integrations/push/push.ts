import type { Agent } from 'node:https';
import webpush from 'web-push';

/** A browser's push subscription, as `POST /auth/me/device-token` stores it. */
export interface WebPushTarget {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** `gone`: the push service no longer knows the subscription (404/410); it should be forgotten. */
export type PushOutcome = 'sent' | 'gone' | 'failed';

export interface PushSender {
  send(target: WebPushTarget, payload: string): Promise<PushOutcome>;
}

export interface VapidConfig {
  publicKey: string;
  privateKey: string;
  /** A `mailto:` or https URL the push services can reach the sender at. */
  subject: string;
}

/**
 * Web push (RFC 8030) with VAPID (RFC 8292) through the `web-push` library: the payload is encrypted
 * for the subscription's keys (aes128gcm) and posted to its endpoint. `agent` lets tests trust their
 * local push service's certificate.
 */
export function createWebPushSender(opts: { vapid: VapidConfig; agent?: Agent; timeoutMs?: number; ttlSeconds?: number }): PushSender {
  const vapidDetails = { subject: opts.vapid.subject, publicKey: opts.vapid.publicKey, privateKey: opts.vapid.privateKey };
  return {
    async send(target, payload) {
      try {
        await webpush.sendNotification(target, payload, {
          vapidDetails,
          TTL: opts.ttlSeconds ?? 24 * 3600,
          contentEncoding: 'aes128gcm',
          timeout: opts.timeoutMs ?? 5000,
          ...(opts.agent ? { agent: opts.agent } : {}),
        });
        return 'sent';
      } catch (error) {
        if (error instanceof webpush.WebPushError && (error.statusCode === 404 || error.statusCode === 410)) return 'gone';
        return 'failed';
      }
    },
  };
}
