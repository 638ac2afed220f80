import { EventEmitter } from 'node:events';
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
 * The in-process announcement of stored logs. Publishing never waits for listeners and a
 * throwing listener never reaches the ingestion request. It fans out within one instance;
 * listeners that need every instance's logs (alerts) read the database instead.
 */
export function createLogEvents(onListenerError: (error: unknown) => void = () => {}) {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  const ALL = 'all';

  function wrap(listener: LogsListener): LogsListener {
    return (projectId, logs) => {
      try {
        listener(projectId, logs);
      } catch (error) {
        onListenerError(error);
      }
    };
  }

  return {
    publish(projectId: number, logs: readonly IngestedLog[]) {
      if (logs.length === 0) return;
      const channel = `project:${projectId}`;
      if (emitter.listenerCount(channel) === 0 && emitter.listenerCount(ALL) === 0) return;
      // After the response: listeners run on a later tick, never inside the request.
      setImmediate(() => {
        emitter.emit(channel, projectId, logs);
        emitter.emit(ALL, projectId, logs);
      });
    },
    /** Logs of one project; answers the unsubscribe function. */
    subscribe(projectId: number, listener: LogsListener) {
      const channel = `project:${projectId}`;
      const wrapped = wrap(listener);
      emitter.on(channel, wrapped);
      return () => void emitter.off(channel, wrapped);
    },
    /** Logs of every project. */
    subscribeAll(listener: LogsListener) {
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
