import { EventEmitter } from 'node:events';
import type { Fanout } from '@repo/db';
import type { LogLevel } from '../../db/schema/index.js';

/** A log as stored, announced to in-process listeners (live tail, alert evaluation) after commit. */
export interface IngestedLog {
  id: number;
  projectId: number;
  level: LogLevel;
  message: string;
  context: Record<string, unknown> | null;
  source: string | null;
  timestamp: Date;
  receivedAt: Date;
}

export type LogsListener = (projectId: number, logs: readonly IngestedLog[]) => void;

/**
 * What every listener of all projects hears (alert evaluation, the statistics keeper): the levels a
 * batch brought, and how many logs it stored.
 */
export type LevelsListener = (projectId: number, levels: ReadonlySet<LogLevel>, count: number) => void;

/** A log as it crosses instances: JSON, its instants as ISO text. */
type WireLog = Omit<IngestedLog, 'timestamp' | 'receivedAt'> & { timestamp: string; receivedAt: string };

const revive = (logs: readonly WireLog[]): IngestedLog[] =>
  logs.map((log) => ({ ...log, timestamp: new Date(log.timestamp), receivedAt: new Date(log.receivedAt) }));

/**
 * The announcement of stored logs. Publishing never waits for listeners and a throwing listener
 * never reaches the ingestion request. A project's logs reach its listeners on this instance
 * directly and, through the fan-out (LISTEN/NOTIFY) when one is given, those of the other instances
 * that have any, so a live tail sees what any instance stores. Levels stay within the instance:
 * their listeners (alerts) read the database, which holds every instance's logs.
 */
export function createLogEvents(onListenerError: (error: unknown) => void = () => {}, fanout?: Fanout) {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  const ALL = 'all';
  const topic = (projectId: number) => `project.${projectId}`;
  /** The fan-out subscription of each project this instance has listeners for. */
  const remote = new Map<number, () => void>();

  function wrap<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      try {
        listener(...args);
      } catch (error) {
        onListenerError(error);
      }
    };
  }

  /** Announces the levels and the count to every listener of all projects, on a later tick. */
  function announceLevels(projectId: number, levels: ReadonlySet<LogLevel>, count: number) {
    if (levels.size === 0 || emitter.listenerCount(ALL) === 0) return;
    setImmediate(() => emitter.emit(ALL, projectId, levels, count));
  }

  return {
    /**
     * Stored logs: to the project's listeners (live tail), and their levels to everyone's.
     * After the response: listeners run on a later tick, never inside the request.
     */
    publish(projectId: number, logs: readonly IngestedLog[]) {
      if (logs.length === 0) return;
      const channel = `project:${projectId}`;
      if (emitter.listenerCount(channel) > 0) setImmediate(() => emitter.emit(channel, projectId, logs));
      if (fanout?.hasSubscribers(topic(projectId), { othersOnly: true })) {
        fanout.publish(topic(projectId), logs, { othersOnly: true }).catch(onListenerError);
      }
      announceLevels(projectId, new Set(logs.map((log) => log.level)), logs.length);
    },
    /**
     * Logs stored without being read back, when the project has no listener of its own (see
     * wantsLogs): only their levels are announced.
     */
    publishLevels(projectId: number, levels: ReadonlySet<LogLevel>, count: number) {
      announceLevels(projectId, levels, count);
    },
    /** Whether the project's logs have listeners of their own, who need them whole (with ids). */
    wantsLogs(projectId: number) {
      return emitter.listenerCount(`project:${projectId}`) > 0 || (fanout?.hasSubscribers(topic(projectId)) ?? false);
    },
    /** Logs of one project, stored by any instance; answers the unsubscribe function. */
    subscribe(projectId: number, listener: LogsListener) {
      const channel = `project:${projectId}`;
      const wrapped = wrap(listener);
      emitter.on(channel, wrapped);
      if (fanout && !remote.has(projectId)) {
        // One fan-out subscription per project, however many tails: it also tells the other
        // instances that this one wants the project's logs.
        remote.set(
          projectId,
          fanout.subscribe(topic(projectId), (logs) => emitter.emit(channel, projectId, revive(logs as WireLog[]))),
        );
      }
      return () => {
        emitter.off(channel, wrapped);
        if (emitter.listenerCount(channel) === 0) {
          remote.get(projectId)?.();
          remote.delete(projectId);
        }
      };
    },
    /** The levels of every project's logs. */
    subscribeAll(listener: LevelsListener) {
      const wrapped = wrap(listener);
      emitter.on(ALL, wrapped);
      return () => void emitter.off(ALL, wrapped);
    },
    listenerCount(projectId: number) {
      return emitter.listenerCount(`project:${projectId}`);
    },
  };
}

export type LogEvents = ReturnType<typeof createLogEvents>;
