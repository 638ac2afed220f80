import { useEffect, useState } from 'preact/hooks';
import { isAbort } from '../api/api.client';
import { getInsights } from '../api/api.routes';
import type { Insights } from '../api/api.types';

/** The project's mined patterns and which of them the latest analysis found new; asked for once `enabled`. */
export function useInsights(projectId: number | null, enabled = true) {
  const [insights, setInsights] = useState<Insights | null>(null);
  useEffect(() => {
    setInsights(null);
    if (!projectId || !enabled) return;
    const abort = new AbortController();
    getInsights(projectId, abort.signal)
      .then(setInsights)
      .catch((error: unknown) => {
        if (!isAbort(error)) setInsights({ latest_analysis: null, patterns: [] });
      });
    return () => abort.abort();
  }, [projectId, enabled]);
  return insights;
}
