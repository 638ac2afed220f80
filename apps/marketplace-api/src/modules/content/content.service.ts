import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { ContentVersion, Lang } from '../../db/schema/index.js';
import type { Actor } from '../../lib/context.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import { findVersion, insertNextVersion, latestVersion, listVersions } from './content.repository.js';

/** The language public readers fall back to when an entry has no version in theirs. */
const FALLBACK_LANG: Lang = 'fr';

/**
 * Editorial content (terms, privacy, FAQ…): every save adds a version per key and language, the
 * previous ones are kept; administrators read any version, everyone else the latest.
 */
export function createContentService(deps: { db: DbTx; recorder: ActivityRecorder }) {
  const { db } = deps;
  return {
    /** One version (the latest unless `version` is given) with the list of all versions of the key and language. */
    async adminRead(_actor: Actor, key: string, lang: Lang, version?: number) {
      const entry = version === undefined ? await latestVersion(db, key, lang) : await findVersion(db, key, lang, version);
      if (!entry) throw AppError.notFound(version === undefined ? 'Content' : 'Content version');
      return { entry, versions: await listVersions(db, key, lang) };
    },

    /** Saves a new version of the entry in the language; the activity log records it. */
    async save(actor: Actor, key: string, input: { lang: Lang; title: string; body: string }): Promise<ContentVersion> {
      return withTransaction(db, async (tx) => {
        const entry = await insertNextVersion(tx, { key, lang: input.lang, title: input.title, body: input.body, createdBy: actor.userId });
        await deps.recorder.record(
          actor,
          'content.updated',
          { type: 'content', id: entry.id },
          { after: { key, lang: entry.lang, version: entry.version, title: entry.title } },
          tx,
        );
        return entry;
      });
    },

    /** The latest version in the reader's language, else in French; 404 when there is none. */
    async publicRead(key: string, lang: Lang): Promise<ContentVersion> {
      const entry = (await latestVersion(db, key, lang)) ?? (lang === FALLBACK_LANG ? undefined : await latestVersion(db, key, FALLBACK_LANG));
      if (!entry) throw AppError.notFound('Content');
      return entry;
    },
  };
}

export type ContentService = ReturnType<typeof createContentService>;
