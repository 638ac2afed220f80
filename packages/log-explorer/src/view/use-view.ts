import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { parseView, serializeView, type ViewState } from './view.state';

export type UpdateView = (patch: Partial<ViewState>, mode?: 'push' | 'replace') => void;

/**
 * The view held in the URL: every change writes the query (pushState, so back and forward walk
 * through views; replaceState for corrections no one would go back to), and popstate reads it.
 */
export function useView(): [ViewState, UpdateView] {
  const [view, setView] = useState<ViewState>(() => parseView(location.search));
  const current = useRef(view);
  current.current = view;

  useEffect(() => {
    const onPop = () => {
      current.current = parseView(location.search);
      setView(current.current);
    };
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);

  const update = useCallback<UpdateView>((patch, mode = 'push') => {
    const next = { ...current.current, ...patch };
    const search = serializeView(next);
    if (search !== location.search) {
      const url = `${location.pathname}${search}${location.hash}`;
      if (mode === 'push') history.pushState(null, '', url);
      else history.replaceState(null, '', url);
    }
    current.current = next;
    setView(next);
  }, []);

  return [view, update];
}
