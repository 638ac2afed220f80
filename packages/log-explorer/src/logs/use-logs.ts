import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { isAbort, type Query } from '../api/api.client';
import { listLogs } from '../api/api.routes';
import type { Log } from '../api/api.types';
import { filterKey, resolveRange, type ViewState } from '../view/view.state';

/**
 * The first page is small, to show something at once; the pages after it are the API's largest, so
 * that reading far back spends few requests of the rate limit (10 000 lines: 21 requests).
 */
export const FIRST_PAGE_SIZE = 100;
export const PAGE_SIZE = 500;

interface ListStatus {
  total: number | null;
  estimate: boolean;
  nextCursor: string | null;
  loading: boolean;
  error: string | null;
  /** Pages appended to the current list (1 once the first page is in). */
  pages: number;
  /** Bumped on every change of the rows, which are held outside the state (see `Rows`). */
  version: number;
}

/**
 * The rows, newest first: lines from the live tail (held newest last, so a new line is a push, not
 * a copy of 100 000 rows) above the pages read from the list route, in its order.
 */
class Rows {
  tail: Log[] = [];
  pages: Log[] = [];
  byId = new Map<number, Log>();

  get count(): number {
    return this.tail.length + this.pages.length;
  }

  at(index: number): Log | undefined {
    const t = this.tail.length;
    return index < t ? this.tail[t - 1 - index] : this.pages[index - t];
  }

  indexOf(id: number, hint = -1): number {
    if (hint >= 0 && this.at(hint)?.id === id) return hint;
    for (let i = 0; i < this.count; i++) if (this.at(i)?.id === id) return i;
    return -1;
  }

  /** Adds logs not already held; returns how many were new. */
  add(logs: Log[], where: 'top' | 'bottom'): number {
    let added = 0;
    for (const log of logs) {
      if (this.byId.has(log.id)) continue;
      this.byId.set(log.id, log);
      (where === 'top' ? this.tail : this.pages).push(log);
      added++;
    }
    return added;
  }
}

const INITIAL: ListStatus = { total: null, estimate: false, nextCursor: null, loading: false, error: null, pages: 0, version: 0 };

export type LogStore = ReturnType<typeof useLogs>;

/** The list of a view's logs, read page by page with the cursor as the reader scrolls. */
export function useLogs(view: ViewState) {
  const key = filterKey(view);
  const [status, setStatus] = useState<ListStatus>(INITIAL);
  const rows = useRef(new Rows());
  // `failed`: a page was refused (a 429, the network); pages are asked for again by retry() only,
  // not by every scroll, which would only spend the rate limit.
  const current = useRef<{ query: Query; abort: AbortController | null; cursor: string | null; busy: boolean; failed: boolean }>({
    query: {},
    abort: null,
    cursor: null,
    busy: false,
    failed: false,
  });

  const fetchPage = useCallback(async (projectId: number, cursor: string | null) => {
    const c = current.current;
    const abort = c.abort;
    if (!abort || c.busy) return;
    c.busy = true;
    c.failed = false;
    setStatus((s) => ({ ...s, loading: true, error: null }));
    try {
      const page = await listLogs(projectId, { ...c.query, cursor, per_page: cursor === null ? FIRST_PAGE_SIZE : PAGE_SIZE }, abort.signal);
      if (abort.signal.aborted) return;
      rows.current.add(page.data, 'bottom');
      c.cursor = page.meta?.next_cursor ?? null;
      setStatus((s) => ({
        ...s,
        total: cursor === null ? (page.meta?.total ?? page.data.length) : s.total,
        estimate: cursor === null ? page.meta?.total_is_estimate === true : s.estimate,
        nextCursor: c.cursor,
        loading: false,
        pages: s.pages + 1,
        version: s.version + 1,
      }));
    } catch (error) {
      if (isAbort(error) || abort.signal.aborted) return;
      c.failed = true;
      setStatus((s) => ({ ...s, loading: false, error: (error as Error).message }));
    } finally {
      if (!abort.signal.aborted) c.busy = false;
    }
  }, []);

  useEffect(() => {
    const projectId = view.project;
    rows.current = new Rows();
    setStatus(INITIAL);
    if (!projectId) return;
    const { from, to } = resolveRange(view);
    const abort = new AbortController();
    current.current = {
      query: {
        level: view.level,
        source: view.source,
        search: view.q,
        from_date: from,
        to_date: to,
        pattern_id: view.pattern,
      },
      abort,
      cursor: null,
      busy: false,
      failed: false,
    };
    void fetchPage(projectId, null);
    return () => abort.abort();
    // Read again when the filters change (the key), not when a log is opened.
  }, [key, fetchPage]);

  const loadMore = useCallback(() => {
    const c = current.current;
    if (view.project && c.cursor && !c.busy && !c.failed) void fetchPage(view.project, c.cursor);
  }, [view.project, fetchPage]);

  /** Asks again for the page that failed (the first one, or the next). */
  const retry = useCallback(() => {
    const c = current.current;
    if (view.project && c.failed && !c.busy) void fetchPage(view.project, c.cursor);
  }, [view.project, fetchPage]);

  /** Lines from the live tail, oldest first: they go on top. */
  const prepend = useCallback((logs: Log[]) => {
    const added = rows.current.add(logs, 'top');
    if (added > 0) setStatus((s) => ({ ...s, total: (s.total ?? 0) + added, version: s.version + 1 }));
    return added;
  }, []);

  /**
   * After the tail was cut (a reconnect), the logs stored meanwhile are read from the list: those
   * newer than the newest line held, one page of them at most, added on top.
   */
  const catchUp = useCallback(async () => {
    const c = current.current;
    const newest = rows.current.at(0);
    if (!view.project || !newest || !c.abort) return;
    try {
      const page = await listLogs(view.project, { ...c.query, from_date: newest.timestamp }, c.abort.signal);
      prepend([...page.data].reverse());
    } catch {
      // The next reconnect tries again; the list itself is intact.
    }
  }, [view.project, prepend]);

  return { ...status, rows: rows.current, loadMore, retry, prepend, catchUp };
}
