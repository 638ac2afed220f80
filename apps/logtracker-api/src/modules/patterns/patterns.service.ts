import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { DbTx } from '../../db/index.js';
import type { LogLevel } from '../../db/schema/index.js';
import { TemplateMiner } from './drain.js';
import * as repo from './patterns.repository.js';

const PAGE = 5_000;
const WRITERS = 2;

function templateOf(miner: TemplateMiner, clusterId: number): string {
  return miner.template(clusterId) ?? '';
}

function clusterInfo(miner: TemplateMiner, clusterId: number, latest: Map<number, { message: string }>) {
  return { clusterId, template: templateOf(miner, clusterId), sample: latest.get(clusterId)?.message ?? '' };
}

/** Sees every log of a mined range once, with its pattern: what a report counts, without reading the range again. */
export type MinedLogObserver = (ts: string, level: LogLevel, patternId: number) => void;

/**
 * Mines the templates of a project's logs in a range and tags every log of the range with its
 * pattern. Work goes a page at a time: while a page is mined, the next one is read and the tags of
 * the two before are written (on PostgreSQL, on two connections), with a yield between pages so
 * ingestion keeps flowing while a large range is mined; runs of one project are serialised. An observer sees each log of the range with
 * its pattern as the run goes; patterns merged at the end of the run are answered in `merged`
 * (pattern id → the pattern that absorbed it).
 */
export function createPatternMiningService(deps: { db: DbTx }) {
  const { db } = deps;
  const running = new Map<number, Promise<unknown>>();

  async function mine(projectId: number, from: Date, to: Date, observe?: MinedLogObserver) {
    const state = await repo.loadMinerState(db, projectId);
    const miner = state ? TemplateMiner.fromJSON(state) : new TemplateMiner();
    const existing = await repo.listProjectPatterns(db, projectId);
    // Cluster id → pattern id, for every cluster that has had a pattern, merged away or not.
    const patternOf = new Map<number, number>(existing.map((p) => [p.clusterId, p.id]));
    const touched = new Set<number>();
    // The newest message of each cluster in this run, for the pattern's sample.
    const latest = new Map<number, { ts: string; message: string }>();

    // What this run's tags add to each pattern, applied once at the end.
    const increments = new Map<number, repo.PatternIncrement>();
    const count = (written: repo.PatternTag[]) => {
      for (const { log, patternId } of written) {
        const inc = increments.get(patternId);
        if (!inc) {
          increments.set(patternId, { patternId, count: 1, levels: [log.level], firstSeen: log.ts, lastSeen: log.ts });
          continue;
        }
        inc.count++;
        if (!inc.levels.includes(log.level)) inc.levels.push(log.level);
        // Timestamps as fixed-width UTC text: their order is the text's.
        if (log.ts < inc.firstSeen) inc.firstSeen = log.ts;
        if (log.ts > inc.lastSeen) inc.lastSeen = log.ts;
      }
    };

    let mined = 0;
    // Tag writes in flight, oldest first: on PostgreSQL two run at once, on two connections.
    const writing: Promise<void>[] = [];
    let next = repo.logsToMine(db, projectId, from, to, undefined, PAGE);
    for (;;) {
      const window = await next;
      // The next page is read while this one is mined and the one before is written.
      const last = window.at(-1);
      if (window.length === PAGE && last) {
        next = repo.logsToMine(db, projectId, from, to, last, PAGE);
        // Awaited at the next turn; until then a failure must not count as unhandled.
        next.catch(() => undefined);
      }
      const page: repo.UnminedLog[] = [];
      const clusterIds: number[] = [];
      const fresh = new Set<number>();
      for (const row of window) {
        if (row.message === null) {
          observe?.(row.ts, row.level, row.pattern_id);
          continue;
        }
        const clusterId = miner.resolve(miner.assign(row.message));
        page.push(row);
        clusterIds.push(clusterId);
        touched.add(clusterId);
        if (!patternOf.has(clusterId)) fresh.add(clusterId);
        const seen = latest.get(clusterId);
        if (!seen || seen.ts < row.ts) latest.set(clusterId, { ts: row.ts, message: row.message.slice(0, 2_000) });
      }
      while (writing.length >= WRITERS) await writing.shift();
      if (fresh.size > 0) {
        const ids = await repo.upsertPatterns(db, projectId, [...fresh].map((clusterId) => clusterInfo(miner, clusterId, latest)));
        for (const [clusterId, id] of ids) patternOf.set(clusterId, id);
      }
      const tags: repo.PatternTag[] = new Array(page.length);
      for (let i = 0; i < page.length; i++) {
        const log = page[i] as repo.UnminedLog;
        const patternId = patternOf.get(clusterIds[i] as number) as number;
        observe?.(log.ts, log.level, patternId);
        tags[i] = { log, patternId };
      }
      const write = repo.tagLogs(db, projectId, tags).then(count);
      // Awaited before a later write; until then a failure must not count as unhandled.
      write.catch(() => undefined);
      writing.push(write);
      mined += page.length;
      if (window.length < PAGE) break;
      await yieldToEventLoop();
    }
    for (const write of writing) await write;

    // Clusters merge as mining goes on: a pattern whose cluster was absorbed hands its logs and
    // counts to the survivor's; templates widened since a pattern was created are written back.
    const storedTemplate = new Map(existing.map((p) => [p.clusterId, p.template]));
    for (const [clusterId] of patternOf) {
      const target = miner.resolve(clusterId);
      if (target !== clusterId || storedTemplate.get(clusterId) !== templateOf(miner, clusterId)) touched.add(target);
    }
    const live = [...touched].filter((clusterId) => miner.resolve(clusterId) === clusterId);
    const ids = await repo.upsertPatterns(db, projectId, live.map((clusterId) => clusterInfo(miner, clusterId, latest)));
    for (const [clusterId, id] of ids) patternOf.set(clusterId, id);
    await repo.addPatternStats(db, projectId, [...increments.values()]);
    const merged = new Map<number, number>();
    for (const [clusterId, patternId] of patternOf) {
      const target = patternOf.get(miner.resolve(clusterId));
      if (target === undefined || target === patternId) continue;
      await repo.mergePattern(db, projectId, patternId, target);
      merged.set(patternId, target);
    }
    await repo.saveMinerState(db, projectId, miner.toJSON());
    const patterns = live.filter((clusterId) => patternOf.has(clusterId)).length;
    return { mined, patterns, merged };
  }

  return {
    /** Mines the range; a second call for the same project waits for the first. */
    mineRange(projectId: number, from: Date, to: Date, observe?: MinedLogObserver) {
      const previous = running.get(projectId) ?? Promise.resolve();
      const next = previous.catch(() => undefined).then(() => mine(projectId, from, to, observe));
      running.set(projectId, next);
      void next.finally(() => {
        if (running.get(projectId) === next) running.delete(projectId);
      }).catch(() => undefined);
      return next;
    },
  };
}

export type PatternMiningService = ReturnType<typeof createPatternMiningService>;
