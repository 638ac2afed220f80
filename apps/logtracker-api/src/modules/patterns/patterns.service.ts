import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { DbTx } from '../../db/index.js';
import { TemplateMiner } from './drain.js';
import * as repo from './patterns.repository.js';

const PAGE = 5_000;

/**
 * Mines the templates of a project's logs in a range and tags every log of the range with its
 * pattern. Work is cut into pages with a yield between them, so ingestion keeps flowing while a
 * large range is mined; runs of one project are serialised.
 */
export function createPatternMiningService(deps: { db: DbTx }) {
  const { db } = deps;
  const running = new Map<number, Promise<unknown>>();

  async function mine(projectId: number, from: Date, to: Date) {
    const state = await repo.loadMinerState(db, projectId);
    const miner = state ? TemplateMiner.fromJSON(state) : new TemplateMiner();

    const assigned: { logId: number; clusterId: number }[] = [];
    const samples = new Map<number, string>();
    let afterId = 0;
    for (;;) {
      const page = await repo.unassignedLogs(db, projectId, from, to, afterId, PAGE);
      for (const row of page) {
        const { clusterId } = miner.add(row.message);
        assigned.push({ logId: Number(row.id), clusterId });
        if (!samples.has(clusterId)) samples.set(clusterId, row.message.slice(0, 2_000));
      }
      if (page.length < PAGE) break;
      afterId = Number(page[page.length - 1]?.id);
      await yieldToEventLoop();
    }

    // Clusters merge as mining goes on: resolve every id to the cluster that holds it now.
    const existing = await repo.listProjectPatterns(db, projectId);
    const liveClusters = new Map<number, string>();
    for (const c of miner.clusters()) liveClusters.set(c.id, c.template);
    const touched = new Set<number>();
    for (const a of assigned) {
      a.clusterId = miner.resolve(a.clusterId);
      touched.add(a.clusterId);
    }
    for (const p of existing) {
      const target = miner.resolve(p.clusterId);
      if (target !== p.clusterId || liveClusters.get(p.clusterId) !== p.template) touched.add(target);
    }

    const patternIds = await repo.upsertPatterns(
      db,
      projectId,
      [...touched].map((clusterId) => ({
        clusterId,
        template: liveClusters.get(clusterId) ?? '',
        sample: samples.get(clusterId) ?? '',
      })),
    );
    for (const p of existing) {
      if (!patternIds.has(p.clusterId)) patternIds.set(p.clusterId, p.id);
    }

    await repo.assignPatterns(
      db,
      projectId,
      assigned.map((a) => ({ logId: a.logId, patternId: patternIds.get(a.clusterId) as number })),
    );
    for (const p of existing) {
      const target = miner.resolve(p.clusterId);
      const targetPattern = patternIds.get(target);
      if (target !== p.clusterId && targetPattern !== undefined && targetPattern !== p.id) {
        await repo.mergePattern(db, projectId, p.id, targetPattern);
      }
    }
    const refreshed = [...touched].map((c) => patternIds.get(c)).filter((id): id is number => id !== undefined);
    await repo.refreshPatternStats(db, projectId, refreshed);
    await repo.saveMinerState(db, projectId, miner.toJSON());
    return { mined: assigned.length, patterns: refreshed.length };
  }

  return {
    /** Mines the range; a second call for the same project waits for the first. */
    mineRange(projectId: number, from: Date, to: Date) {
      const previous = running.get(projectId) ?? Promise.resolve();
      const next = previous.catch(() => undefined).then(() => mine(projectId, from, to));
      running.set(projectId, next);
      void next.finally(() => {
        if (running.get(projectId) === next) running.delete(projectId);
      }).catch(() => undefined);
      return next;
    },
  };
}

export type PatternMiningService = ReturnType<typeof createPatternMiningService>;
