import { randomUUID } from 'node:crypto';
import type { LogEntry } from './entry.js';
import { DEFAULT_BACKOFF, retryDelay, sleep, type Backoff } from './retry.js';

/** Logs sent in one request; its Idempotency-Key is the same on every retry, so it is stored once. */
export interface Batch {
  seq: number;
  /** How many entries it holds. */
  count: number;
  /** Its request body, `{"logs":[…]}`: each entry serialised once, as it was added (to weigh it). */
  json: string;
  /** The body's size in bytes. */
  bytes: number;
  idempotencyKey: string;
}

/** What became of one attempt to send a batch. */
export type SendOutcome =
  | { kind: 'stored'; bytesSent: number }
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  | { kind: 'rejected'; reason: string };

export type Send = (batch: Batch, signal: AbortSignal) => Promise<SendOutcome>;

export type BatcherEvent =
  | { kind: 'retry'; batch: Batch; attempt: number; reason: string; delayMs: number }
  | { kind: 'rejected'; batch: Batch; reason: string };

export interface BatcherOptions {
  send: Send;
  /** A batch is sent once it holds this many entries (the server takes at most 1 000 by default). */
  maxEntries?: number;
  /** …or before an entry would take its body past this size (the server's limit is 5 MiB). */
  maxBytes?: number;
  /** …or this long after its first entry. */
  flushMs?: number;
  /** Batches waiting or in flight, beyond which `add` makes its caller wait (back-pressure). */
  maxQueued?: number;
  /**
   * Batches in flight at once, taken in order (default 1: each is sent once the previous one is
   * stored). The log tracker keeps timestamps to the millisecond and lists the logs of one
   * millisecond by arrival (id), so only batches stored one after the other keep the input's order
   * for lines read within a millisecond of each other; more than one trades that for throughput.
   */
  concurrency?: number;
  backoff?: Backoff;
  random?: () => number;
  onEvent?: (event: BatcherEvent) => void;
}

export interface BatcherStats {
  /** Entries handed to the batcher. */
  lines: number;
  /** Entries the server stored (acknowledged). */
  delivered: number;
  /** Entries in batches that could not be delivered: refused, or still unsent at the deadline. */
  lost: number;
  batches: number;
  /** Request body bytes of the stored batches, as sent (compressed when they were). */
  bytes: number;
  retries: number;
}

/** 5 MiB, less room for the envelope and a margin. */
export const DEFAULT_MAX_BYTES = 5 * 1024 * 1024 - 64 * 1024;

/**
 * Groups entries into batches and sends them in order, one at a time by default, each retried
 * (exponential backoff, full jitter, Retry-After) until it is stored, refused, or the close
 * deadline passes.
 * Memory stays bounded: once `maxQueued` batches wait, `add` answers a promise its caller awaits
 * before reading more.
 */
export class Batcher {
  readonly stats: BatcherStats = { lines: 0, delivered: 0, lost: 0, batches: 0, bytes: 0, retries: 0 };
  private readonly options: Required<Omit<BatcherOptions, 'onEvent'>> & Pick<BatcherOptions, 'onEvent'>;
  private current: string[] = [];
  private currentBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly queue: Batch[] = [];
  private inFlight = 0;
  private idle: (() => void) | undefined;
  private waiters: (() => void)[] = [];
  private readonly stop = new AbortController();
  private seq = 0;

  constructor(options: BatcherOptions) {
    this.options = {
      maxEntries: 1000,
      maxBytes: DEFAULT_MAX_BYTES,
      flushMs: 1000,
      maxQueued: 4,
      concurrency: 1,
      backoff: DEFAULT_BACKOFF,
      random: Math.random,
      ...options,
    };
  }

  /** Batches waiting or in flight. */
  get queued(): number {
    return this.queue.length + this.inFlight;
  }

  /** Takes one entry; answers a promise to await when the queue is full, undefined otherwise. */
  add(entry: LogEntry): Promise<void> | undefined {
    const json = JSON.stringify(entry);
    const size = Buffer.byteLength(json) + 1;
    if (this.current.length > 0 && this.currentBytes + size > this.options.maxBytes) this.flush();
    this.current.push(json);
    this.currentBytes += size;
    this.stats.lines += 1;
    if (this.current.length >= this.options.maxEntries) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushMs);
    return this.queued >= this.options.maxQueued ? this.room() : undefined;
  }

  /** Sends what has been added so far as a batch of its own. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.current.length === 0) return;
    const json = `{"logs":[${this.current.join(',')}]}`;
    this.queue.push({ seq: ++this.seq, count: this.current.length, json, bytes: this.currentBytes + 11, idempotencyKey: randomUUID() });
    this.current = [];
    this.currentBytes = 0;
    this.pump();
  }

  /**
   * Sends the rest and waits for every batch to be delivered, for `timeoutMs` at most: what is
   * still unsent then is abandoned and counted as lost.
   */
  async close(timeoutMs: number): Promise<BatcherStats> {
    this.flush();
    if (this.queued > 0) {
      const deadline = setTimeout(() => this.stop.abort(), timeoutMs);
      await new Promise<void>((resolve) => (this.idle = resolve));
      clearTimeout(deadline);
    }
    this.stop.abort();
    this.wake();
    return this.stats;
  }

  private room(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Starts the next batches in order, as many as may be in flight. */
  private pump(): void {
    while (this.inFlight < this.options.concurrency && this.queue.length > 0) {
      const batch = this.queue.shift()!;
      this.inFlight += 1;
      void this.deliver(batch).then(() => {
        this.inFlight -= 1;
        if (this.queued < this.options.maxQueued) this.wake();
        this.pump();
        if (this.queued === 0) this.idle?.();
      });
    }
  }

  private async deliver(batch: Batch): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (this.stop.signal.aborted) return void (this.stats.lost += batch.count);
      const outcome = await this.options.send(batch, this.stop.signal).catch((error: unknown): SendOutcome => ({
        kind: 'retry',
        reason: describe(error),
      }));
      if (outcome.kind === 'stored') {
        this.stats.delivered += batch.count;
        this.stats.batches += 1;
        this.stats.bytes += outcome.bytesSent;
        return;
      }
      if (outcome.kind === 'rejected') {
        this.stats.lost += batch.count;
        this.options.onEvent?.({ kind: 'rejected', batch, reason: outcome.reason });
        return;
      }
      if (this.stop.signal.aborted) return void (this.stats.lost += batch.count);
      const delayMs = retryDelay(attempt, this.options.backoff, outcome.retryAfterMs, this.options.random);
      this.stats.retries += 1;
      this.options.onEvent?.({ kind: 'retry', batch, attempt: attempt + 1, reason: outcome.reason, delayMs });
      await sleep(delayMs, this.stop.signal);
    }
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
