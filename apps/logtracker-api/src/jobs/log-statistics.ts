import type { FastifyInstance } from 'fastify';
import type { DbTx } from '../db/index.js';
import { forgetKeptEstimates, type LogEvents } from '../modules/logs/index.js';
import { createLogStatisticsService } from '../modules/maintenance/index.js';

/** How soon after ingest the partitions' statistics are looked at, and how often while it goes on. */
const CHECK_INTERVAL_MS = 1_000;
/**
 * PostgreSQL's counts of new rows come from each writing connection, at most once a second; what a
 * connection wrote within a second of its last report is reported once it has been idle for ten
 * seconds (PGSTAT_IDLE_INTERVAL). The end of a burst can therefore reach the counts after the last
 * check: one more check this long after the last batch sees it.
 */
const LATE_COUNTS_CHECK_MS = 11_000;
/**
 * The trigram indexes' pending lists (mergeSearchPending) are merged this long after the last
 * batch, so that the searches after a burst do not read them…
 */
const QUIET_MERGE_MS = 1_000;
/**
 * …and at most this often while batches keep coming, so that a steady trickle never leaves a full
 * list (and the rollups, when maintenance runs, are compacted as often)…
 */
const MERGE_EVERY_MS = 10_000;
/**
 * …unless this many logs or more were stored since the last merge: inserts merge a list themselves
 * once it passes its limit (4 MB, about 2 000 logs), so at such a rate the list never stays full,
 * and a forced merge only competes with them. Forced every 10 s (and after each analysis) during
 * sustained batch ingest, merges took 0.1–1.8 s each and the database's CPU per batch rose from
 * 38 to 68 ms; ingest ran at 92 % of the bare endpoint's rate, and at 114 % without them.
 */
const SELF_MERGING_LOGS = 10_000;

/**
 * The search keys common in each project (createLogStatisticsService().refreshCommonKeys) are
 * found again once this many logs were stored since they last were, at a check, at most every
 * COMMON_KEYS_EVERY_MS: they change as slowly as what a project logs.
 */
const COMMON_KEYS_AFTER_LOGS = 1_000;
const COMMON_KEYS_EVERY_MS = 60_000;

/** The job's timing, overridable for tests. */
export interface LogStatisticsTiming {
  mergeEveryMs: number;
  selfMergingLogs: number;
  commonKeysEveryMs: number;
}

/** Runs `fn` once `ms` have passed since the last `arm()`; idle, it holds no timer. */
function afterLast(ms: number, fn: () => void) {
  let timer: NodeJS.Timeout | undefined;
  return {
    arm() {
      if (timer) {
        timer.refresh();
        return;
      }
      timer = setTimeout(() => {
        timer = undefined;
        fn();
      }, ms);
      timer.unref();
    },
    clear() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

/**
 * A job of the app's run in the background, one run at a time (`start` while one runs does
 * nothing); a failure is logged as `failure`, not thrown. `running` is the run under way, if any.
 */
function backgroundJob(app: FastifyInstance, name: string, run: () => Promise<unknown>, failure: string) {
  let running: Promise<unknown> | undefined;
  return {
    get running() {
      return running;
    },
    start() {
      running ??= app.metrics
        .job(name, run)
        .catch((error: unknown) => app.log.warn({ err: error }, failure))
        .finally(() => {
          running = undefined;
        });
    },
  };
}

/**
 * Refreshes the logs partitions' statistics after ingest (see createLogStatisticsService): any
 * stored batch arms a check a second later; while batches keep coming, one check a second; one
 * when a partition left waiting for its spacing is due; and a last one once the counts of the
 * burst's end are in. The trigram indexes' pending lists are merged a second after the last batch,
 * and every ten seconds while a trickle of ingest goes on (not while ingest is busy enough to merge
 * them itself: SELF_MERGING_LOGS). The rows the batches appended to the rollups are compacted at
 * the same moments and every ten seconds, with `compactRollups` (the maintenance job's merge): the counts
 * of lists and statistics would otherwise read one per batch until the next scheduled pass. Idle,
 * it costs nothing. At a check, at most once a minute, the search keys common in each project are
 * found again (COMMON_KEYS_EVERY_MS).
 */
export function registerLogStatistics(
  app: FastifyInstance,
  deps: { db: DbTx; events: LogEvents; compactRollups?: () => Promise<unknown>; timing?: Partial<LogStatisticsTiming> },
) {
  const { mergeEveryMs = MERGE_EVERY_MS, selfMergingLogs = SELF_MERGING_LOGS, commonKeysEveryMs = COMMON_KEYS_EVERY_MS } = deps.timing ?? {};
  const statistics = createLogStatisticsService({ db: deps.db });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let pending = false;
  let closed = false;
  let mergedAt = Date.now();
  /** Logs stored since the last merge (or the last one passed over). */
  let storedSinceMerge = 0;
  /** When the common search keys were last found (never: the first check finds them), and the logs stored since. */
  let commonKeysAt = -Infinity;
  let storedSinceCommonKeys = 0;
  /** Logs stored per project since the last analysis (a new project's burst: staleLogPartitions). */
  const storedByProject = new Map<number, number>();

  let compacting: Promise<unknown> | undefined;

  const compact = () => {
    const { compactRollups } = deps;
    if (!compactRollups || compacting || closed) return;
    // A merge fails loudly on its own (the maintenance job's metrics); here it is only told of.
    compacting = compactRollups()
      .catch((error: unknown) => app.log.warn({ err: error }, 'compacting the rollups after ingest failed'))
      .finally(() => {
        compacting = undefined;
      });
  };
  const merging = backgroundJob(app, 'log_search_merge', () => statistics.mergePending(), 'merging the search index pending lists failed');
  const findingKeys = backgroundJob(app, 'log_search_common_keys', () => statistics.refreshCommonKeys(), 'finding the common search keys failed');
  const merge = () => {
    compact();
    if (merging.running || closed) return;
    mergedAt = Date.now();
    storedSinceMerge = 0;
    merging.start();
  };
  const quiet = afterLast(QUIET_MERGE_MS, merge);

  // A partition left waiting for its spacing (ANALYZE_SPACING_MS) is looked at again when it is
  // due, whether or not batches keep coming: the last of a burst gets its statistics.
  let due: NodeJS.Timeout | undefined;
  const checkWhenDue = (ms: number) => {
    if (closed) return;
    if (due) clearTimeout(due);
    due = setTimeout(() => {
      due = undefined;
      arm();
    }, Math.max(0, ms - CHECK_INTERVAL_MS));
    due.unref();
  };

  const check = () => {
    timer = undefined;
    if (closed) return;
    pending = false;
    if (Date.now() - mergedAt >= mergeEveryMs) {
      if (storedSinceMerge < selfMergingLogs) merge();
      else {
        // Ingest this busy merges the lists itself; the next window is judged on its own.
        mergedAt = Date.now();
        storedSinceMerge = 0;
        compact();
      }
    }
    if (!findingKeys.running && storedSinceCommonKeys >= COMMON_KEYS_AFTER_LOGS && Date.now() - commonKeysAt >= commonKeysEveryMs) {
      commonKeysAt = Date.now();
      storedSinceCommonKeys = 0;
      findingKeys.start();
    }
    const counted = new Map(storedByProject);
    running = app.metrics
      .job('log_statistics', () => statistics.refresh(counted))
      .then((pass) => {
        if (pass.analysed.length > 0) {
          // Estimates kept for searches came from the statistics just replaced.
          forgetKeptEstimates();
          // What the analysis saw is in the statistics now; what was stored since is not.
          for (const [project, n] of counted) {
            const left = (storedByProject.get(project) ?? 0) - n;
            if (left > 0) storedByProject.set(project, left);
            else storedByProject.delete(project);
          }
        }
        if (pass.nextDueInMs !== undefined) checkWhenDue(pass.nextDueInMs);
      })
      .catch((error: unknown) => app.log.warn({ err: error }, 'refreshing the logs statistics failed'))
      .finally(() => {
        running = undefined;
        // Batches stored during the check arm the next one.
        if (pending) arm();
      });
  };
  const arm = () => {
    if (timer || running || closed) {
      pending = true;
      return;
    }
    timer = setTimeout(check, CHECK_INTERVAL_MS);
    timer.unref();
  };

  const lateCounts = afterLast(LATE_COUNTS_CHECK_MS, () => arm());

  const unsubscribe = deps.events.subscribeAll((projectId, _levels, count) => {
    storedSinceMerge += count;
    storedSinceCommonKeys += count;
    storedByProject.set(projectId, (storedByProject.get(projectId) ?? 0) + count);
    arm();
    lateCounts.arm();
    quiet.arm();
  });
  app.addHook('preClose', async () => {
    closed = true;
    unsubscribe();
    if (timer) clearTimeout(timer);
    if (due) clearTimeout(due);
    lateCounts.clear();
    quiet.clear();
    await Promise.all([running, merging.running, compacting, findingKeys.running]);
  });
  return statistics;
}
