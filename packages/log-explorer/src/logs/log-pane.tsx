import type { Log } from '../api/api.types';
import { TailControls } from '../tail/tail-controls';
import type { useTail } from '../tail/use-tail';
import type { ViewState } from '../view/view.state';
import { LogList } from './log-list';
import type { LogStore } from './use-logs';

interface Props {
  view: ViewState;
  store: LogStore;
  tail: ReturnType<typeof useTail>;
  tailOn: boolean;
  onTail: () => void;
  selectedId: number | null;
  reveal: { index: number; seq: number };
  onOpen: (log: Log) => void;
  onClearPattern: () => void;
}

function totalText(store: LogStore): string {
  if (store.total === null) return store.loading ? 'Loading…' : '';
  return `${store.estimate ? 'about ' : ''}${store.total} log${store.total === 1 ? '' : 's'}`;
}

/** The list's toolbar (total, live tail), its errors, and the list or its empty state. */
export function LogPane({ view, store, tail, tailOn, onTail, selectedId, reveal, onOpen, onClearPattern }: Props) {
  const empty = store.pages > 0 && store.rows.count === 0 && !store.loading;
  return (
    <section class="log-pane" aria-label="Logs">
      <div class="list-toolbar">
        <span class="log-total" data-testid="log-total" data-total={store.total ?? undefined} data-estimate={store.estimate ? 'true' : 'false'}>
          {totalText(store)}
        </span>
        {view.pattern && (
          <button type="button" class="chip" onClick={onClearPattern} title="Show every pattern">
            pattern #{view.pattern} ✕
          </button>
        )}
        <TailControls
          enabled={tailOn}
          state={tail.state}
          rate={tail.rate}
          paused={tail.paused}
          onToggle={onTail}
          onPause={tail.pause}
          onResume={tail.resume}
        />
      </div>
      {store.error && (
        <p class="error" role="alert">
          {store.error}{' '}
          <button type="button" onClick={store.retry}>
            Retry
          </button>
        </p>
      )}
      <div class="list-frame">
        <LogList store={store} projectId={view.project} query={view.q} selectedId={selectedId} reveal={reveal} onOpen={onOpen} />
        {empty && (
          <div class="empty-state" data-testid="empty-state">
            No logs match this view.
          </div>
        )}
      </div>
    </section>
  );
}
