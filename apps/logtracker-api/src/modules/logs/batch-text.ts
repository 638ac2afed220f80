/**
 * A batch request's body kept as the bytes it arrived in, cut into the spans of its entries, so
 * that a big batch is parsed, validated and stored a slice at a time: the process holds the body
 * once and one slice's worth of objects, never every entry as objects and again as text.
 *
 * Only the shape `{"logs": [entry, ...]}` (whitespace anywhere) is cut; anything else (another
 * key, a duplicate "logs", an escaped key, trailing bytes) is left to the ordinary JSON parser,
 * which also words every error. The scanner checks structure only: a slice that is not valid JSON
 * fails JSON.parse, and the request goes the ordinary way too.
 */

import { AppError } from '@repo/http';
import type { LogLevel } from '../../db/schema/index.js';
import { plainBatch, type LogEntryBody } from './logs.schemas.js';

/** Slices of entries are stored at about this many bytes of JSON, one statement each. */
export const SLICE_BYTES = 512 * 1024;

/**
 * Slices are validated at about this many bytes: below V8's large-object size (128 KiB), so that
 * their text and objects live and die in the young generation instead of each mapping fresh memory.
 */
const VALIDATION_SLICE_BYTES = 64 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const LOGS_KEY = Buffer.from('"logs"');

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

export class BatchText {
  /** The levels of its entries, once every slice has passed validation in its plainest form (validatePlain). */
  levels: ReadonlySet<LogLevel> | undefined;

  constructor(
    readonly bytes: Buffer,
    /** Start and end (exclusive) of each entry, in pairs. */
    private readonly spans: Uint32Array,
  ) {}

  get count(): number {
    return this.spans.length / 2;
  }

  /** The entries as JSON arrays of about `bytes` each (SLICE_BYTES by default), in order. */
  *slices(bytes = SLICE_BYTES): Generator<{ first: number; text: string }> {
    const count = this.count;
    for (let first = 0; first < count; ) {
      const start = this.spans[2 * first] as number;
      let last = first;
      while (last + 1 < count && (this.spans[2 * (last + 1) + 1] as number) - start <= bytes) last++;
      const end = this.spans[2 * last + 1] as number;
      // Cuts fall on ASCII structure, never inside a multi-byte character.
      yield { first, text: `[${this.bytes.toString('utf8', start, end)}]` };
      first = last + 1;
    }
  }

  /** The entries as one JSON array when they fit in one slice (SLICE_BYTES), without cutting any other. */
  oneSlice(): string | undefined {
    const count = this.count;
    if (count === 0) return undefined;
    const start = this.spans[0] as number;
    const end = this.spans[2 * count - 1] as number;
    return end - start <= SLICE_BYTES ? `[${this.bytes.toString('utf8', start, end)}]` : undefined;
  }

  /** The entries as validated objects, once validatePlain passed. */
  entries(): LogEntryBody[] {
    const entries: LogEntryBody[] = [];
    for (const { text } of this.slices()) entries.push(...(plainBatch({ logs: JSON.parse(text) as unknown })?.logs ?? []));
    if (entries.length !== this.count) throw new Error('a batch was stored without being validated');
    return entries;
  }
}

/** The end (exclusive) of the string starting at `i` (its opening quote), or -1. */
function skipString(bytes: Buffer, i: number): number {
  for (let j = i + 1; j < bytes.length; j++) {
    const byte = bytes[j];
    if (byte === BACKSLASH) j++;
    else if (byte === QUOTE) return j + 1;
  }
  return -1;
}

/** The end (exclusive) of the value starting at `i`, or -1. Strings and nesting only: JSON.parse judges the rest. */
function skipValue(bytes: Buffer, i: number): number {
  const first = bytes[i];
  if (first === QUOTE) return skipString(bytes, i);
  if (first !== OPEN_OBJECT && first !== OPEN_ARRAY) {
    let j = i;
    while (j < bytes.length) {
      const byte = bytes[j];
      if (byte === COMMA || byte === CLOSE_ARRAY || byte === CLOSE_OBJECT || isSpace(byte)) break;
      j++;
    }
    return j > i ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < bytes.length; j++) {
    const byte = bytes[j];
    if (byte === QUOTE) {
      j = skipString(bytes, j) - 1;
      if (j < 0) return -1;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      depth++;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth--;
      if (depth === 0) return j + 1;
    }
  }
  return -1;
}

/** The body cut into its entries, or undefined when it is not plainly `{"logs": [...]}`. */
export function scanBatch(bytes: Buffer): BatchText | undefined {
  let i = 0;
  const space = () => {
    while (isSpace(bytes[i])) i++;
  };
  space();
  if (bytes[i] !== OPEN_OBJECT) return undefined;
  i++;
  space();
  if (!bytes.subarray(i, i + LOGS_KEY.length).equals(LOGS_KEY)) return undefined;
  i += LOGS_KEY.length;
  space();
  if (bytes[i] !== COLON) return undefined;
  i++;
  space();
  if (bytes[i] !== OPEN_ARRAY) return undefined;
  i++;
  space();
  const spans: number[] = [];
  if (bytes[i] === CLOSE_ARRAY) return undefined; // empty: the ordinary way says so
  for (;;) {
    const end = skipValue(bytes, i);
    if (end < 0) return undefined;
    spans.push(i, end);
    i = end;
    space();
    if (bytes[i] === COMMA) {
      i++;
      space();
      continue;
    }
    if (bytes[i] !== CLOSE_ARRAY) return undefined;
    i++;
    break;
  }
  space();
  if (bytes[i] !== CLOSE_OBJECT) return undefined;
  i++;
  space();
  return i === bytes.length ? new BatchText(bytes, Uint32Array.from(spans)) : undefined;
}

/**
 * Validates a cut batch a slice at a time with plainBatch, keeping nothing but the levels seen:
 * true when every entry is valid in its plainest form (its text can then be stored as sent),
 * false when anything is not, and the whole body must go the ordinary way (BatchBody).
 */
export function validatePlain(batch: BatchText): boolean {
  const levels = new Set<LogLevel>();
  for (const { text } of batch.slices(VALIDATION_SLICE_BYTES)) {
    let entries: unknown;
    try {
      entries = JSON.parse(text);
    } catch {
      return false;
    }
    const valid = plainBatch({ logs: entries });
    if (!valid) return false;
    for (const entry of valid.logs) levels.add(entry.level);
  }
  batch.levels = levels;
  return true;
}

/** A request body stream, as Fastify hands it to a content-type parser. */
type BodyStream = NodeJS.ReadableStream & { receivedEncodedLength?: number };

/**
 * Reads a request body into one Buffer of its declared length, filled as chunks arrive: the body
 * is held once, where collecting chunks and joining them holds it twice. Without a declared length
 * (chunked encoding) the chunks are joined at the end. Refuses, as Fastify's own reader does, a
 * body over `limit` (413) and one whose length differs from the declared one (400).
 */
export function readBody(
  payload: BodyStream,
  declaredLength: number,
  limit: number,
  allocate: (length: number) => Buffer = (length) => Buffer.allocUnsafe(length),
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new AppError('payload_too_large', 'The request body is too large');
    const mismatch = () => new AppError('bad_request', 'The Content-Length header does not match the body');
    if (declaredLength > limit) return reject(tooLarge());
    const declared = Number.isInteger(declaredLength) && declaredLength >= 0;
    const buffer = declared ? allocate(declaredLength) : undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = (error?: Error, body?: Buffer) => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onError);
      if (error) reject(error);
      else resolve(body as Buffer);
    };
    function onData(data: Buffer | string) {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      const at = received;
      received += chunk.length;
      if (received > limit || (payload.receivedEncodedLength ?? 0) > limit) return stop(tooLarge());
      if (!buffer) return void chunks.push(chunk);
      if (received > buffer.length) return stop(mismatch());
      chunk.copy(buffer, at);
    }
    function onEnd() {
      if (!buffer) return stop(undefined, Buffer.concat(chunks, received));
      if (received !== buffer.length) return stop(mismatch());
      stop(undefined, buffer);
    }
    function onError(error: Error & { statusCode?: number }) {
      if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
      stop(error);
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onError);
    payload.resume();
  });
}

/** Bodies from this size on are read into the pool's buffer. */
const POOLED_FROM = 1024 * 1024;

/**
 * One buffer of the largest body size, lent to one big body at a time and taken back when its
 * request is done with it. A big body read into fresh memory leaves that memory to the garbage
 * collector, which frees it only at its next full collection: a few big batches in a row held
 * several times their size. A second big body while the buffer is lent gets fresh memory, and
 * one never given back (a request that failed on the way) is simply collected.
 */
export function createBodyPool(capacity: number) {
  let spare: Buffer | undefined;
  const lent = new WeakSet<Buffer>();
  return {
    /** A buffer of `length` bytes; from the pool when the body is big. */
    take(length: number): Buffer {
      if (length < POOLED_FROM || length > capacity) return Buffer.allocUnsafe(length);
      const whole = spare ?? Buffer.allocUnsafeSlow(capacity);
      spare = undefined;
      const view = whole.subarray(0, length);
      lent.add(view);
      return view;
    },
    /** Takes back a buffer `take` lent; nothing may read it afterwards. Anything else is ignored. */
    give(view: Buffer): void {
      if (!lent.has(view)) return;
      lent.delete(view);
      spare ??= Buffer.from(view.buffer, view.byteOffset, capacity);
    },
  };
}
