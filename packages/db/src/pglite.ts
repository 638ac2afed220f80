import { mkdirSync } from 'node:fs';
import { PGlite, type Extensions } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist';
import { cube } from '@electric-sql/pglite/contrib/cube';
import { earthdistance } from '@electric-sql/pglite/contrib/earthdistance';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { unaccent } from '@electric-sql/pglite/contrib/unaccent';

/** The extensions the apps' migrations create; PGlite must load them before `CREATE EXTENSION`. */
const pgliteExtensions = { pg_trgm, btree_gin, btree_gist, unaccent, cube, earthdistance } satisfies Extensions;
export type ExtensionName = keyof typeof pgliteExtensions;

/** A PGlite instance with the extensions the apps' migrations create, from a data directory or a dump of one. */
export async function openPglite(dataDir: string, wanted: readonly ExtensionName[] = ['pg_trgm'], loadDataDir?: Blob): Promise<PGlite> {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true });
  const extensions = Object.fromEntries(wanted.map((name) => [name, pgliteExtensions[name]]));
  return PGlite.create(dataDir, { extensions, loadDataDir });
}

/**
 * PGlite with its statements and transactions counted while they run. Methods are called on the
 * client itself: PGlite keeps private fields a proxy's `this` could not reach.
 */
export function counting(client: PGlite, inFlight: { count: number; closed: boolean }): PGlite {
  const counted = new Set<PropertyKey>(['query', 'exec', 'transaction']);
  return new Proxy(client, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (!counted.has(property)) return (value as (...args: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        // A closed handle over an instance that stays open: as PGlite answers once closed.
        if (inFlight.closed) throw new Error('PGlite is closed');
        inFlight.count += 1;
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          inFlight.count -= 1;
        }
      };
    },
  });
}
