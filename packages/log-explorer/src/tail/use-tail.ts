import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, reportUnauthorized, withQuery } from '../api/api.client';
import { createTailTicket } from '../api/api.routes';
import type { Log } from '../api/api.types';

export type TailState = 'connecting' | 'live' | 'paused' | 'offline';

interface Options {
  projectId: number | null;
  level: string;
  source: string;
  search: string;
  enabled: boolean;
  /** New lines, oldest first. */
  onLogs: (logs: Log[]) => void;
  /** Live again after a cut: lines stored in between were not streamed. */
  onReconnected: () => void;
}

const RATE_WINDOW_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;

/** Close codes of the tail: the session ended, the caller left the project. */
const SESSION_ENDED = 4401;
const NOT_A_MEMBER = 4404;

function tailUrl(projectId: number, ticket: string, o: Options): string {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const path = withQuery(`/api/projects/${projectId}/logs/tail`, { ticket, level: o.level, source: o.source, search: o.search });
  return `${scheme}://${location.host}${path}`;
}

/** Lines per second over the last ten seconds, from the arrival times. */
function useRate(enabled: boolean) {
  const arrivals = useRef<number[]>([]);
  const [rate, setRate] = useState(0);
  useEffect(() => {
    arrivals.current = [];
    setRate(0);
    if (!enabled) return;
    const timer = setInterval(() => {
      const since = Date.now() - RATE_WINDOW_MS;
      const kept = arrivals.current.filter((t) => t >= since);
      arrivals.current = kept;
      setRate(kept.length / (RATE_WINDOW_MS / 1000));
    }, 1000);
    return () => clearInterval(timer);
  }, [enabled]);
  const count = useCallback((n: number) => {
    const now = Date.now();
    for (let i = 0; i < n; i++) arrivals.current.push(now);
  }, []);
  return [rate, count] as const;
}

/**
 * The live tail: a single-use ticket, then a WebSocket with the view's filters. It reconnects by
 * itself with backoff (a new ticket each time) until switched off; while paused, lines are kept
 * and handed over on resume.
 */
export function useTail(o: Options) {
  const [connection, setConnection] = useState<'connecting' | 'live' | 'offline'>('offline');
  const [paused, setPaused] = useState(false);
  const [rate, countArrivals] = useRate(o.enabled);
  const held = useRef<Log[]>([]);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const onLogs = useRef(o.onLogs);
  onLogs.current = o.onLogs;
  const onReconnected = useRef(o.onReconnected);
  onReconnected.current = o.onReconnected;

  useEffect(() => {
    held.current = [];
    if (!o.enabled || !o.projectId) {
      setConnection('offline');
      setPaused(false);
      return;
    }
    const projectId = o.projectId;
    let stopped = false;
    let socket: WebSocket | null = null;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let backoff = 1000;
    let wasLive = false;

    const scheduleRetry = () => {
      if (stopped) return;
      setConnection('offline');
      retry = setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    };

    const onMessage = (event: MessageEvent) => {
      let frame: { type?: string; data?: Log };
      try {
        frame = JSON.parse(String(event.data)) as typeof frame;
      } catch {
        return;
      }
      if (frame.type === 'ready') {
        backoff = 1000;
        setConnection('live');
        if (wasLive) onReconnected.current();
        wasLive = true;
      } else if (frame.type === 'log' && frame.data) {
        countArrivals(1);
        if (pausedRef.current) held.current.push(frame.data);
        else onLogs.current([frame.data]);
      }
    };

    const onClose = (event: CloseEvent) => {
      socket = null;
      if (stopped) return;
      if (event.code === SESSION_ENDED) return reportUnauthorized();
      if (event.code === NOT_A_MEMBER) return setConnection('offline');
      scheduleRetry();
    };

    async function connect() {
      if (stopped) return;
      setConnection('connecting');
      try {
        const { ticket } = await createTailTicket(projectId);
        if (stopped) return;
        socket = new WebSocket(tailUrl(projectId, ticket, o));
        socket.addEventListener('message', onMessage);
        socket.addEventListener('close', onClose);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) return;
        // Refused (no tail on this server, a bad filter): asking again soon would be refused again.
        if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429) backoff = MAX_BACKOFF_MS;
        scheduleRetry();
      }
    }

    void connect();
    return () => {
      stopped = true;
      clearTimeout(retry);
      socket?.close(1000);
    };
    // The connection is made again when the filters it carries change.
  }, [o.enabled, o.projectId, o.level, o.source, o.search, countArrivals]);

  const resume = useCallback(() => {
    setPaused(false);
    const lines = held.current;
    held.current = [];
    if (lines.length > 0) onLogs.current(lines);
  }, []);

  const state: TailState = !o.enabled ? 'offline' : paused ? 'paused' : connection;
  return { state, rate, paused, pause: () => setPaused(true), resume };
}
