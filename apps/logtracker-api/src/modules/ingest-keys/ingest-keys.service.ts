import { randomBytes } from 'node:crypto';
import { hashToken, type Actor } from '@repo/auth';
import { AppError } from '@repo/http';
import type { FastifyRequest } from 'fastify';
import type { DbTx } from '../../db/index.js';
import type { ProjectAccess } from '../projects/projects.service.js';
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

export function createIngestKeysService(deps: { db: DbTx; access: ProjectAccess }) {
  const { db, access } = deps;
  return {
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
      const found = await repo.findActiveByHash(db, hashToken(key));
      if (!found) throw new AppError('unauthenticated', 'The ingest key is unknown or revoked');
      if (!found.lastUsedAt || Date.now() - found.lastUsedAt.getTime() > 60_000) {
        await repo.touchKey(db, found.id);
      }
      return { keyId: found.id, projectId: found.projectId };
    },
  };
}

export type IngestKeysService = ReturnType<typeof createIngestKeysService>;
