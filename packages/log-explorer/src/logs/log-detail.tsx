import { useEffect, useState } from 'preact/hooks';
import { isAbort } from '../api/api.client';
import { getLog } from '../api/api.routes';
import type { Log } from '../api/api.types';
import { viewUrl, type ViewState } from '../view/view.state';
import { Highlight } from './highlight';

interface Props {
  view: ViewState;
  /** The log when the list holds it; otherwise it is read from the API. */
  known: Log | undefined;
  onClose: () => void;
}

function useLog(id: number, known: Log | undefined) {
  const [state, setState] = useState<{ log: Log | null; error: string | null }>({ log: known ?? null, error: null });
  useEffect(() => {
    if (known) return setState({ log: known, error: null });
    setState({ log: null, error: null });
    const abort = new AbortController();
    getLog(id, abort.signal)
      .then((log) => setState({ log, error: null }))
      .catch((error: unknown) => {
        if (!isAbort(error)) setState({ log: null, error: (error as Error).message });
      });
    return () => abort.abort();
  }, [id, known]);
  return state;
}

/** Every field of one log, its context as JSON (text only), and a link to this very view. */
export function LogDetail({ view, known, onClose }: Props) {
  const id = view.log!;
  const { log, error } = useLog(id, known);
  const fields: [string, string][] = log
    ? [
        ['id', String(log.id)],
        ['time', log.timestamp],
        ['level', log.level],
        ['source', log.source ?? '—'],
        ['project', String(log.project_id)],
        ['pattern', log.pattern_id === null ? '—' : String(log.pattern_id)],
      ]
    : [];

  return (
    <aside class="panel log-detail" data-testid="log-detail" aria-label={`Log ${id}`}>
      <header class="detail-header">
        <h2>Log {id}</h2>
        <a data-testid="log-detail-link" href={viewUrl({ ...view, log: id })}>
          Link to this view
        </a>
        <button type="button" data-testid="log-detail-close" aria-label="Close (Escape)" onClick={onClose}>
          ✕
        </button>
      </header>
      {error && <p class="error" role="alert">{error}</p>}
      {!log && !error && <p class="muted">Loading…</p>}
      {log && (
        <>
          <dl class="detail-fields">
            {fields.map(([name, value]) => (
              <div key={name}>
                <dt>{name}</dt>
                <dd class={name === 'level' ? `level-badge level-${value}` : undefined}>{value}</dd>
              </div>
            ))}
          </dl>
          <h3>Message</h3>
          <pre class="detail-message">
            <Highlight text={log.message} query={view.q} />
          </pre>
          <h3>Context</h3>
          <pre class="detail-json" data-testid="log-detail-json">
            {JSON.stringify(log.context ?? null, null, 2)}
          </pre>
        </>
      )}
    </aside>
  );
}
