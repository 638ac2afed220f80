import { AsyncResource } from 'node:async_hooks';
import { inClaimedWork, isDatabaseUnavailable } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import type { NewLog } from '../../db/schema/index.js';
import { SLICE_BYTES, type BatchText } from './batch-text.js';
import * as repo from './logs.repository.js';

/** One request's entries waiting for a writer: a JSON array of entries and the time they were received. */
interface Waiting {
  projectId: number;
  group: repo.EntryGroup;
  count: number;
  withIds: boolean;
  resolve: (inserted: repo.Inserted) => void;
  reject: (error: unknown) => void;
}

/** An insert that runs on its own when its turn comes. */
interface Task {
  run: () => Promise<void>;
}

/**
 * The inserts of logs of an instance: up to `writers` statements at once, the others queued
 * (concurrent inserts contend on the same index pages; on a 2-core database 10 at once stored
 * 19 000 logs/s and 2 at once 42 000). A writer that comes free takes the request at the head of
 * the queue and every other request for the same project queued behind it, up to SLICE_BYTES of
 * entries, and stores them in one statement (repo.insertGroups): a statement's own cost (the
 * project's lock, the rollups' trigger and the rows it appends, planning, a round trip) is paid once
 * for all of them. A log posted alone cost the database as much as a batch of ten. With no writer
 * busy, a request is stored at once, alone: nothing waits to be merged.
 *
 * A second writer starts only for a backlog, when what is queued would take more than the busy
 * writer's next statement (backlogged): two inserts at once extend the same day's table and
 * indexes, and one waits on the other's extension lock (10–18 ms on a busy 2-core machine), which a
 * steady flow that one writer keeps up with need not pay.
 *
 * A request is stored on its own, in its turn, when its statement must be its own: the work of an
 * Idempotency-Key, whose row counts this request's commits (claimedStatement); a batch of several
 * slices, stored in one transaction (repo.insertLogs).
 *
 * `onStatement(requests)`: told of every statement that stored requests' entries, with how many.
 */
export function createLogWrites(deps: { db: DbTx; writers: number; onStatement?: (requests: number) => void }) {
  const { db, writers } = deps;
  const queue: (Waiting | Task)[] = [];
  let busy = 0;

  function pump() {
    // A writer beyond the first starts only for a backlog: with one busy, what is queued waits for
    // it when its next statement can take all of it.
    while (busy < writers && queue.length > 0 && (busy === 0 || backlogged())) {
      const head = queue.shift() as Waiting | Task;
      busy += 1;
      const work = 'run' in head ? head.run() : storeTogether(takeWith(head));
      void work.finally(() => {
        busy -= 1;
        pump();
      });
    }
  }

  /**
   * Whether what is queued would take more than one statement: a task is one of its own, and a
   * project's entries one per SLICE_BYTES (as takeWith takes them, to within a request's entries).
   * Stops at the second statement found.
   */
  function backlogged(): boolean {
    let statements = 0;
    let project: number | undefined;
    let bytes = 0;
    for (const next of queue) {
      if ('run' in next) statements += 1;
      else if (project === undefined || next.projectId === project) {
        project = next.projectId;
        bytes += next.group.entries.length;
      } else return true;
      if (statements + Math.ceil(bytes / SLICE_BYTES) > 1) return true;
    }
    return false;
  }

  /** The head and the requests for its project queued behind it, within SLICE_BYTES of entries (one pass over the queue). */
  function takeWith(head: Waiting): Waiting[] {
    const taken = [head];
    const left: (Waiting | Task)[] = [];
    let bytes = head.group.entries.length;
    for (const next of queue) {
      if (!('run' in next) && next.projectId === head.projectId && bytes + next.group.entries.length <= SLICE_BYTES) {
        taken.push(next);
        bytes += next.group.entries.length;
      } else {
        left.push(next);
      }
    }
    if (taken.length > 1) {
      queue.length = 0;
      for (const next of left) queue.push(next);
    }
    return taken;
  }

  async function storeTogether(taken: Waiting[]): Promise<void> {
    const [first] = taken as [Waiting];
    const withIds = taken.some((w) => w.withIds);
    let inserted: repo.Inserted;
    try {
      inserted = await repo.insertGroups(
        db,
        first.projectId,
        taken.map((w) => w.group),
        withIds,
      );
    } catch (error) {
      if (taken.length === 1 || isDatabaseUnavailable(error)) {
        for (const w of taken) w.reject(error);
        return;
      }
      // One request's entries failed the statement: each is stored on its own, to answer for itself.
      for (const w of taken) await storeTogether([w]);
      return;
    }
    deps.onStatement?.(taken.length);
    const expected = taken.reduce((sum, w) => sum + w.count, 0);
    if (inserted.count !== expected && inserted.count !== 0) {
      const error = new Error(`a merged insert stored ${inserted.count} logs of ${expected}`);
      for (const w of taken) w.reject(error);
      return;
    }
    // All or none: none when the project is gone (each request answers 404).
    let at = 0;
    for (const w of taken) {
      const count = inserted.count === 0 ? 0 : w.count;
      const ids = inserted.ids ? inserted.ids.slice(at, at + count) : undefined;
      at += count;
      w.resolve({ count, ids: w.withIds ? (ids ?? []) : undefined });
    }
  }

  function alone<T>(insert: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // Run in the caller's async context, wherever the writer that takes it came free: a claim's
      // work (claimedStatement) is known by that context.
      // An insert that throws before its first await still answers its caller and frees its writer.
      queue.push({ run: AsyncResource.bind(() => Promise.resolve().then(insert).then(resolve, reject)) });
      pump();
    });
  }

  function merged(projectId: number, group: repo.EntryGroup, count: number, withIds: boolean): Promise<repo.Inserted> {
    return new Promise<repo.Inserted>((resolve, reject) => {
      queue.push({ projectId, group, count, withIds, resolve, reject });
      pump();
    });
  }

  return {
    /** Runs an insert of its own (any statements) when a writer is free, never merged with another. */
    alone,

    /** Stores rows of one project (a log posted alone, an OTLP export, a batch read as objects); their ids when `withIds`. */
    storeRows(projectId: number, rows: NewLog[], withIds: boolean): Promise<repo.Inserted> {
      const slices = repo.jsonSlices(rows);
      const first = slices.next();
      if (first.done) return Promise.resolve({ count: 0, ids: withIds ? [] : undefined });
      const second = slices.next();
      const received = rows[0]?.receivedAt;
      const together = second.done && received !== undefined && rows.every((r) => r.receivedAt?.getTime() === received.getTime());
      if (!together || inClaimedWork()) {
        const all = (function* () {
          yield first.value;
          if (second.done) return;
          yield second.value;
          yield* slices;
        })();
        return alone(() => repo.insertLogSlices(db, projectId, rows.length, all, withIds));
      }
      // The entries' own times received (the same for all) are the group's.
      return merged(projectId, { entries: first.value, received }, rows.length, withIds);
    },

    /** Stores a batch validated in its plainest form from its own text (repo.insertLogsJson); no ids. */
    storeBatch(projectId: number, batch: BatchText, received: Date): Promise<repo.Inserted> {
      const entries = inClaimedWork() ? undefined : batch.oneSlice();
      if (entries === undefined) return alone(() => repo.insertLogsJson(db, projectId, batch, received));
      return merged(projectId, { entries, received }, batch.count, false);
    },

    /** Requests queued for a writer. */
    get waiting(): number {
      return queue.length;
    },
  };
}

export type LogWrites = ReturnType<typeof createLogWrites>;
