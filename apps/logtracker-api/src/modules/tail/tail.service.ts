import type { Actor, SessionStore } from '@repo/auth';
import { isAppError } from '@repo/http';
import { type IngestedLog, type LogEvents, presentLog } from '../logs/index.js';
import type { ProjectAccess } from '../projects/index.js';
import { CLOSE, type TailFilters, type TailFrame } from './tail.schemas.js';

/** The part of a `ws` WebSocket the tail uses. */
export interface TailSocket {
  readonly readyState: number;
  readonly OPEN: number;
  readonly bufferedAmount: number;
  send(data: string): void;
  ping(): void;
  close(code: number, reason: string): void;
  terminate(): void;
  on(event: 'close' | 'pong', listener: () => void): unknown;
}

interface TailLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** The list's filters applied to one log in memory: the same meaning as the SQL of the list. */
export function matcher(filters: TailFilters): (log: IngestedLog) => boolean {
  const search = filters.search?.toLowerCase();
  return (log) =>
    (!filters.level || log.level === filters.level) &&
    (!filters.from_date || log.timestamp >= filters.from_date) &&
    (!filters.to_date || log.timestamp <= filters.to_date) &&
    (!search || log.message.toLowerCase().includes(search));
}

/**
 * Streams a project's new logs to its members over WebSockets. Logs come from the in-process bus
 * once committed, so a tail sees the logs stored by this instance.
 */
export function createTailService(deps: {
  access: ProjectAccess;
  events: LogEvents;
  sessions: SessionStore;
  heartbeatMs: number;
  sessionCheckMs: number;
  maxBufferedBytes: number;
}) {
  const { access, events, sessions } = deps;

  return {
    /** 404 unless the actor is a member: checked before the upgrade, so a stranger learns nothing. */
    authorize: (actor: Actor, projectId: number) => access.assertMember(actor, projectId),

    /** Serves an upgraded socket until it closes; every timer and the subscription end with it. */
    open(socket: TailSocket, actor: Actor, projectId: number, filters: TailFilters, log: TailLogger) {
      const matches = matcher(filters);
      let open = true;
      let alive = true;
      let checkTimer: NodeJS.Timeout | undefined;
      const send = (frame: TailFrame) => socket.send(JSON.stringify(frame));

      function end(code: number, reason: string) {
        if (!open) return;
        cleanup();
        socket.close(code, reason);
      }

      const unsubscribe = events.subscribe(projectId, (_projectId, logs) => {
        if (!open || socket.readyState !== socket.OPEN) return;
        // Checked per delivery, not per frame: a client that keeps up takes a whole batch at once,
        // and one that has not drained what it was sent before is dropped. The buffer stays below
        // the limit plus one delivery instead of growing with every log the project receives.
        if (socket.bufferedAmount > deps.maxBufferedBytes) {
          log.warn({ projectId, userId: actor.userId, buffered: socket.bufferedAmount }, 'live tail: slow consumer dropped');
          end(CLOSE.slowConsumer, 'Too far behind; reconnect');
          return;
        }
        for (const entry of logs) {
          if (matches(entry)) send({ type: 'log', data: presentLog({ ...entry, patternId: null }) });
        }
      });

      // A peer that stopped answering pings (a dead network path) is cut at the next beat.
      const heartbeat = setInterval(() => {
        if (!alive) {
          log.info({ projectId, userId: actor.userId }, 'live tail: peer stopped answering pings');
          cleanup();
          socket.terminate();
          return;
        }
        alive = false;
        socket.ping();
      }, deps.heartbeatMs);
      heartbeat.unref();

      // The upgrade authenticated once; a stream outlives that, so logout and removal from the
      // project must reach it too. One check at a time, the next counted from the end of the last.
      function scheduleCheck() {
        checkTimer = setTimeout(async () => {
          try {
            if (!(await sessions.resolve(actor.sessionId, actor.userId))) return end(CLOSE.sessionEnded, 'Session ended');
            await access.assertMember(actor, projectId);
          } catch (error) {
            if (isAppError(error) && error.code === 'not_found') return end(CLOSE.notMember, 'Project not found');
            // The database being away is no reason to cut a stream; the next check decides.
            log.warn({ err: error, projectId }, 'live tail: session check failed');
          }
          if (open) scheduleCheck();
        }, deps.sessionCheckMs);
        checkTimer.unref();
      }
      scheduleCheck();

      function cleanup() {
        if (!open) return;
        open = false;
        unsubscribe();
        clearInterval(heartbeat);
        clearTimeout(checkTimer);
      }

      socket.on('pong', () => {
        alive = true;
      });
      socket.on('close', () => {
        cleanup();
        log.info({ projectId, userId: actor.userId }, 'live tail closed');
      });

      const { level, from_date, to_date, search } = filters;
      log.info({ projectId, userId: actor.userId, filters: { level, from_date, to_date, search } }, 'live tail opened');
      send({ type: 'ready' });
    },
  };
}

export type TailService = ReturnType<typeof createTailService>;
