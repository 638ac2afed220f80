import { useEffect, useState } from 'preact/hooks';
import { ApiError, isAbort } from '../api/api.client';
import { getStats } from '../api/api.routes';
import type { Stats } from '../api/api.types';
import { resolveRange, type ViewState } from '../view/view.state';

/** The preset ranges the stats route has always taken, for a server without custom ranges. */
const PRESETS: Partial<Record<ViewState['range'], string>> = { '1h': '1h', '24h': '24h', '7d': '7d' };

interface StatsView {
  stats: Stats | null;
  span: { from: number; to: number };
  message: string | null;
}

/**
 * The histogram's counts for the view's range (from the stats route), with the span to draw; asked
 * for once `enabled` (see useSettled).
 */
export function useStats(view: ViewState, enabled = true): StatsView {
  const [result, setResult] = useState<StatsView>({ stats: null, span: { from: 0, to: 0 }, message: null });
  const { project, range, from: customFrom, to: customTo } = view;

  useEffect(() => {
    if (!project || !enabled) return;
    const now = Date.now();
    const { from, to } = resolveRange(view, now);
    const end = to || new Date(now).toISOString();
    const span = { from: Date.parse(from || end) / 1000, to: Date.parse(end) / 1000 };
    const abort = new AbortController();
    setResult({ stats: null, span, message: null });
    const load = async () => {
      try {
        return await getStats(project, { from_date: from, to_date: end }, abort.signal);
      } catch (error) {
        // A server without custom ranges refuses from_date/to_date: fall back to its preset.
        const preset = PRESETS[range];
        if (error instanceof ApiError && (error.status === 422 || error.status === 400) && preset) {
          return getStats(project, { time_range: preset }, abort.signal);
        }
        throw error;
      }
    };
    load()
      .then((stats) => setResult({ stats, span, message: stats.series.length ? null : 'No logs in this range' }))
      .catch((error: unknown) => {
        if (!isAbort(error)) setResult({ stats: null, span, message: 'Volume unavailable for this range' });
      });
    return () => abort.abort();
    // The range and the project decide the counts; the other filters do not reach the stats route.
  }, [project, range, customFrom, customTo, enabled]);

  return result;
}
