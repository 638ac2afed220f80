import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { isAbort } from '../api/api.client';
import { listProjects } from '../api/api.routes';
import type { Log, Project, User } from '../api/api.types';
import { Histogram } from '../histogram/histogram';
import { useStats } from '../histogram/use-stats';
import { LogDetail } from '../logs/log-detail';
import { LogPane } from '../logs/log-pane';
import { useLogs } from '../logs/use-logs';
import { PatternList } from '../patterns/pattern-list';
import { useInsights } from '../patterns/use-insights';
import { ProjectList } from '../projects/project-list';
import { useTail } from '../tail/use-tail';
import { Filters } from '../view/filters';
import { useView } from '../view/use-view';
import type { ViewState } from '../view/view.state';
import { useKeyboard } from './use-keyboard';

function useProjects(enabled: boolean) {
  const [projects, setProjects] = useState<Project[] | null>(null);
  useEffect(() => {
    if (!enabled) return;
    const abort = new AbortController();
    listProjects(abort.signal)
      .then(setProjects)
      .catch((error: unknown) => {
        if (!isAbort(error)) setProjects([]);
      });
    return () => abort.abort();
  }, [enabled]);
  return projects;
}

/** How long the page's other requests wait at most for the first page of logs. */
const FIRST_PAGE_HEAD_START_MS = 400;

/**
 * True once `done` has been true, or after `timeoutMs`, and from then on. The first page of logs
 * is what a reader waits for: the histogram, the patterns and the project list are asked for once
 * it has arrived, so that on a busy server (or a machine of two cores shared with the database)
 * their queries do not run beside it.
 */
function useSettled(done: boolean, timeoutMs: number): boolean {
  const [settled, setSettled] = useState(false);
  useEffect(() => {
    if (settled) return;
    if (done) return setSettled(true);
    const timer = setTimeout(() => setSettled(true), timeoutMs);
    return () => clearTimeout(timer);
  }, [done, settled, timeoutMs]);
  return settled || done;
}

/** Whether a line from the tail belongs to the view (the tail filters by level, source and search only). */
function belongs(view: ViewState, log: Log): boolean {
  if (view.pattern && log.pattern_id !== view.pattern) return false;
  return view.range !== 'custom' || !view.to || log.timestamp <= view.to;
}

/** The signed-in page: projects and patterns, the filters, the histogram, the list and the detail. */
export function Explorer({ user, onSignOut }: { user: User | null; onSignOut: () => void }) {
  const [view, update] = useView();
  const store = useLogs(view);
  const listed = useSettled(store.pages > 0 || store.error !== null, FIRST_PAGE_HEAD_START_MS);
  // Without a project in the URL the list waits for the projects: they are asked for at once.
  const projects = useProjects(listed || !view.project);
  const stats = useStats(view, listed);
  const insights = useInsights(view.project, listed);
  const [tailOn, setTailOn] = useState(false);
  const [selectedId, setSelectedId] = useState<number | null>(view.log);
  const [reveal, setReveal] = useState({ index: -1, seq: 0 });
  const searchRef = useRef<HTMLInputElement>(null);

  // Without a project in the URL, the first one is shown.
  useEffect(() => {
    const first = projects?.[0];
    if (!view.project && first) update({ project: first.id }, 'replace');
  }, [projects, view.project, update]);

  const viewRef = useRef(view);
  viewRef.current = view;
  const tail = useTail({
    projectId: view.project,
    level: view.level,
    source: view.source,
    search: view.q,
    enabled: tailOn,
    onLogs: (logs) => store.prepend(logs.filter((log) => belongs(viewRef.current, log))),
    onReconnected: () => void store.catchUp(),
  });

  const open = useCallback((log: Log) => {
    setSelectedId(log.id);
    update({ log: log.id });
  }, [update]);

  const move = (delta: 1 | -1) => {
    const { rows } = store;
    if (rows.count === 0) return;
    const at = selectedId === null ? -1 : rows.indexOf(selectedId, reveal.index);
    const index = at === -1 ? 0 : Math.min(rows.count - 1, Math.max(0, at + delta));
    setSelectedId(rows.at(index)!.id);
    setReveal((r) => ({ index, seq: r.seq + 1 }));
  };

  useKeyboard({
    focusSearch: () => searchRef.current?.focus(),
    move,
    open: () => {
      const log = selectedId === null ? undefined : store.rows.byId.get(selectedId);
      if (log) open(log);
    },
    close: () => {
      if (viewRef.current.log) update({ log: null });
    },
  });

  return (
    <div class="app">
      <header class="topbar">
        <strong class="brand">Log explorer</strong>
        <span class="muted user">{user?.email ?? ''}</span>
        <button type="button" data-testid="signout" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <div class={`layout${view.log ? ' with-detail' : ''}`}>
        <div class="sidebar">
          <ProjectList projects={projects} selected={view.project} onSelect={(id) => update({ project: id, pattern: null, log: null })} />
          <PatternList insights={insights} selected={view.pattern} onSelect={(pattern) => update({ pattern, log: null })} />
        </div>
        <main class="main">
          <Filters view={view} update={update} searchRef={searchRef} />
          <Histogram
            stats={stats.stats}
            span={stats.span}
            message={stats.message}
            onSelect={(from, to) => update({ range: 'custom', from: from.toISOString(), to: to.toISOString(), log: null })}
          />
          <LogPane
            view={view}
            store={store}
            tail={tail}
            tailOn={tailOn}
            onTail={() => setTailOn((on) => !on)}
            selectedId={selectedId}
            reveal={reveal}
            onOpen={open}
            onClearPattern={() => update({ pattern: null })}
          />
        </main>
        {view.log && <LogDetail view={view} known={store.rows.byId.get(view.log)} onClose={() => update({ log: null })} />}
      </div>
    </div>
  );
}
