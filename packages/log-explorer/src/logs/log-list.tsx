import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Log } from '../api/api.types';
import { LogRow, ROW_HEIGHT } from './log-row';
import type { LogStore } from './use-logs';

const OVERSCAN = 10;
/** The rendered window moves in steps of this many rows, so a slow scroll re-renders every few rows, not every frame. */
const STEP = 8;
/** The next page is asked for when the reader is this many rows from the end. */
const PREFETCH_ROWS = 150;
/**
 * Rows are keyed by their index modulo this (more than a screen holds): a row scrolled out hands its
 * elements to the one scrolled in, so scrolling changes text in place instead of building and
 * styling new elements every frame.
 */
const ROW_SLOTS = 512;

interface Props {
  store: LogStore;
  projectId: number | null;
  query: string;
  selectedId: number | null;
  /** A request to bring a row into view (j/k); `seq` makes the same index ask again. */
  reveal: { index: number; seq: number };
  onOpen: (log: Log, index: number) => void;
}

/** Marks for the first page of a project's logs and for every page appended after it. */
function usePageMarks(projectId: number | null, pages: number) {
  const marked = useRef<number | null>(null);
  useLayoutEffect(() => {
    if (!projectId || pages === 0) return;
    if (pages === 1 && marked.current !== projectId) {
      marked.current = projectId;
      performance.mark('explorer:first-page');
    } else if (pages > 1) {
      performance.mark('explorer:page-rendered');
    }
  }, [projectId, pages]);
}

/**
 * The logs, newest first, virtualised: rows have a fixed height and only those in view (and a few
 * either side) are in the DOM, so 100 000 loaded lines scroll as smoothly as 100.
 */
export function LogList({ store, projectId, query, selectedId, reveal, onOpen }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  const [span, setSpan] = useState({ first: 0, last: 40 });
  const { rows, loadMore, nextCursor, loading } = store;
  const count = rows.count;
  usePageMarks(projectId, store.pages);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    let frame = 0;
    const measure = () => {
      frame = 0;
      const first = Math.max(0, Math.floor((el.scrollTop / ROW_HEIGHT - OVERSCAN) / STEP) * STEP);
      const last = Math.ceil(((el.scrollTop + el.clientHeight) / ROW_HEIGHT + OVERSCAN) / STEP) * STEP;
      setSpan((w) => (w.first === first && w.last === last ? w : { first, last }));
    };
    const onScroll = () => {
      if (!frame) frame = requestAnimationFrame(measure);
    };
    const observer = new ResizeObserver(onScroll);
    observer.observe(el);
    el.addEventListener('scroll', onScroll, { passive: true });
    measure();
    return () => {
      cancelAnimationFrame(frame);
      observer.disconnect();
      el.removeEventListener('scroll', onScroll);
    };
  }, []);

  // A new list starts at its top.
  useLayoutEffect(() => {
    if (scroller.current) scroller.current.scrollTop = 0;
  }, [projectId, store.pages === 0]);

  // Lines arriving on top keep what the reader looks at in place, unless they are at the top.
  const tailCount = useRef(rows.tail.length);
  useLayoutEffect(() => {
    const el = scroller.current;
    const added = rows.tail.length - tailCount.current;
    tailCount.current = rows.tail.length;
    if (el && added > 0 && el.scrollTop > 0) el.scrollTop += added * ROW_HEIGHT;
  }, [store.version, rows]);

  useEffect(() => {
    const el = scroller.current;
    if (!el || reveal.index < 0) return;
    const top = reveal.index * ROW_HEIGHT;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_HEIGHT - el.clientHeight;
  }, [reveal]);

  const first = Math.min(span.first, count);
  const last = Math.min(count, span.last);

  useEffect(() => {
    if (nextCursor && !loading && last >= count - PREFETCH_ROWS) loadMore();
  }, [last, count, nextCursor, loading, loadMore]);

  const items = [];
  for (let i = first; i < last; i++) {
    const log = rows.at(i);
    if (log) {
      items.push(
        <LogRow key={i % ROW_SLOTS} log={log} index={i} selected={log.id === selectedId} query={query} onOpen={(index) => onOpen(log, index)} />,
      );
    }
  }

  return (
    <div class="log-list" data-testid="log-list" data-loaded={count} ref={scroller} role="listbox" aria-label="Logs" tabIndex={-1}>
      <div class="log-list-body" style={{ height: `${count * ROW_HEIGHT}px` }}>
        {items}
      </div>
    </div>
  );
}
