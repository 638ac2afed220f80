import { randomBytes } from 'node:crypto';
import { hashToken, type Actor, type SessionStore } from '@repo/auth';
import { AppError, isAppError } from '@repo/http';
import { iso } from '@repo/schemas';
import type { DbTx } from '../../db/index.js';
import { type IngestedLog, type LogEvents, presentLog } from '../logs/index.js';
import type { ProjectAccess } from '../projects/index.js';
import * as repo from './tail.repository.js';
import { CLOSE, TICKET_PREFIX, type TailFilters, type TailFrame } from './tail.schemas.js';

/** How long a tail ticket may wait for its upgrade: long enough for a page to open its socket. */
export const TICKET_TTL_MS = 30_000;

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
    (!filters.source || log.source === filters.source) &&
    (!filters.from_date || log.timestamp >= filters.from_date) &&
    (!filters.to_date || log.timestamp <= filters.to_date) &&
    (!search || log.message.toLowerCase().includes(search));
}

/**
 * Streams a project's new logs to its members over WebSockets. Logs come from the in-process bus
 * once committed, so a tail sees the logs stored by this instance.
 */
export function createTailService(deps: {
  db: DbTx;
  access: ProjectAccess;
  events: LogEvents;
  sessions: SessionStore;
  heartbeatMs: number;
  sessionCheckMs: number;
  maxBufferedBytes: number;
  ticketTtlMs?: number;
}) {
  const { db, access, events, sessions } = deps;
  const ticketTtlMs = deps.ticketTtlMs ?? TICKET_TTL_MS;

  return {
    /** 404 unless the actor is a member: checked before the upgrade, so a stranger learns nothing. */
    authorize: (actor: Actor, projectId: number) => access.assertMember(actor, projectId),

    /**
     * A single-use ticket for one tail of one project, bound to the caller's session (logout still
     * closes the tail it opens). Only its hash is stored; the expired ones go as new ones come.
     */
    async issueTicket(actor: Actor, projectId: number) {
      await access.assertMember(actor, projectId);
      const ticket = `${TICKET_PREFIX}${randomBytes(32).toString('base64url')}`;
      await repo.deleteExpiredTickets(db);
      const { expiresAt } = await repo.insertTicket(
        db,
        { ticketHash: hashToken(ticket), userId: actor.userId, sessionId: actor.sessionId, projectId },
        ticketTtlMs,
      );
      return { ticket, expires_at: iso(expiresAt) };
    },

    /**
     * The actor a ticket stands for, once: 401 for a ticket unknown, used, expired or issued for
     * another project (which it is spent on all the same: a ticket seen where it should not be is
     * burnt), or whose session has ended since.
     */
    async redeemTicket(ticket: string, projectId: number, requestId: string): Promise<Actor> {
      const refused = new AppError('unauthenticated', 'The ticket is unknown, used, expired or for another project; ask for a new one');
      if (!ticket.startsWith(TICKET_PREFIX) || ticket.length > 128) throw refused;
      const row = await repo.redeemTicket(db, hashToken(ticket));
      if (!row || row.projectId !== projectId) throw refused;
      const session = await sessions.resolve(row.sessionId, row.userId);
      if (!session) throw new AppError('unauthenticated', 'The session has ended; sign in again');
      return { userId: row.userId, sessionId: row.sessionId, role: session.role, requestId };
    },

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

      const { level, source, from_date, to_date, search } = filters;
      log.info({ projectId, userId: actor.userId, filters: { level, source, from_date, to_date, search } }, 'live tail opened');
      send({ type: 'ready' });
    },
  };
}

export type TailService = ReturnType<typeof createTailService>;
