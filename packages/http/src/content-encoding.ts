import type { Readable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { AppError } from './errors.js';

/** A request body stream as Fastify reads it: the length it received before any decoding. */
export type EncodedBody = Readable & { receivedEncodedLength?: number };

/** Whether the request's body is compressed (its length then says nothing of the decoded body). */
export function isEncoded(request: FastifyRequest): boolean {
  return contentEncoding(request) !== 'identity';
}

function contentEncoding(request: FastifyRequest): string {
  return (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
}

/**
 * A route's `preParsing` step for bodies sent with `Content-Encoding: gzip` (what log shippers and
 * OTLP exporters send): the body decompressed as it is read, so that the route's body limit counts
 * the decompressed bytes and a small compressed bomb still answers 413. Fastify compares the bytes
 * received, not the decompressed ones, with Content-Length. Any encoding other than gzip and
 * identity answers 400.
 */
export function gunzipBody(request: FastifyRequest, payload: EncodedBody): EncodedBody {
  const encoding = contentEncoding(request);
  if (encoding === 'identity') return payload;
  if (encoding !== 'gzip') throw new AppError('bad_request', `Unsupported Content-Encoding "${encoding}"; send gzip or none`);
  const gunzip: Gunzip & { receivedEncodedLength?: number } = createGunzip();
  let encodedLength = 0;
  payload.on('data', (chunk: Buffer) => {
    encodedLength += chunk.length;
    gunzip.receivedEncodedLength = encodedLength;
  });
  payload.pipe(gunzip);
  return gunzip;
}
