import { randomBytes } from 'node:crypto';
import { hashToken, type Actor } from '@repo/auth';
import { AppError } from '@repo/http';
import type { FastifyRequest } from 'fastify';
import type { DbTx } from '../../db/index.js';
import type { ProjectAccess } from '../projects/index.js';
import * as repo from './ingest-keys.repository.js';

const KEY_PREFIX = 'ltk_';

/** An ingest key presented on a request: `X-Ingest-Key: ltk_…` or `Authorization: Bearer ltk_…`. */
export function presentedIngestKey(request: FastifyRequest): string | undefined {
  const header = request.headers['x-ingest-key'];
  if (typeof header === 'string' && header.startsWith(KEY_PREFIX)) return header.trim();
  const auth = request.headers.authorization;
  const match = auth ? /^Bearer\s+(ltk_\S+)\s*$/i.exec(auth) : null;
  return match?.[1];
}

export interface IngestPrincipal {
  keyId: number;
  projectId: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes ingest keys (log submission, OTLP). */
    ingestKey?: boolean;
  }
}

const RECENT_TTL_MS = 5 * 60_000;
const RECENT_MAX = 10_000;

export function createIngestKeysService(deps: { db: DbTx; access: ProjectAccess }) {
  const { db, access } = deps;
  // Hashes of keys this instance verified lately. Only they earn the ingest rate-limit budget:
  // an unknown key (or a made-up one per request) stays on its caller's IP budget.
  const recentlyVerified = new Map<string, number>();

  function remember(hash: string) {
    if (recentlyVerified.size >= RECENT_MAX) {
      const oldest = recentlyVerified.keys().next().value;
      if (oldest !== undefined) recentlyVerified.delete(oldest);
    }
    recentlyVerified.delete(hash);
    recentlyVerified.set(hash, Date.now() + RECENT_TTL_MS);
  }

  return {
    /** The rate-limit budget of a request on an ingest route, when it carries a key verified lately. */
    rateLimitTier(request: FastifyRequest, max: number) {
      if (!request.routeOptions.config.ingestKey) return undefined;
      const key = presentedIngestKey(request);
      if (!key) return undefined;
      const hash = hashToken(key);
      const until = recentlyVerified.get(hash);
      if (until === undefined || until < Date.now()) return undefined;
      return { key: `ingest:${hash.slice(0, 24)}`, max };
    },

    /** Owners only. The key is returned once; only its SHA-256 is kept. */
    async create(actor: Actor, projectId: number, name: string) {
      await access.owner(actor, projectId);
      const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
      const row = await repo.insertKey(db, {
        projectId,
        name,
        prefix: key.slice(0, KEY_PREFIX.length + 8),
        keyHash: hashToken(key),
        createdBy: actor.userId,
      });
      return { row, key };
    },

    async list(actor: Actor, projectId: number) {
      await access.owner(actor, projectId);
      return repo.listKeys(db, projectId);
    },

    async revoke(actor: Actor, projectId: number, keyId: number) {
      await access.owner(actor, projectId);
      const key = await repo.revokeKey(db, projectId, keyId);
      if (!key) throw AppError.notFound('Ingest key');
      return key;
    },

    /** The project a live key may write to; 401 for an unknown or revoked key. */
    async verify(key: string): Promise<IngestPrincipal> {
      const hash = hashToken(key);
      const found = await repo.findActiveByHash(db, hash);
      if (!found) {
        recentlyVerified.delete(hash);
        throw new AppError('unauthenticated', 'The ingest key is unknown or revoked');
      }
      remember(hash);
      if (!found.lastUsedAt || Date.now() - found.lastUsedAt.getTime() > 60_000) {
        await repo.touchKey(db, found.id);
      }
      return { keyId: found.id, projectId: found.projectId };
    },
  };
}

export type IngestKeysService = ReturnType<typeof createIngestKeysService>;
