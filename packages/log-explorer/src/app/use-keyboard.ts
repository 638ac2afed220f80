import { useEffect, useRef } from 'preact/hooks';

export interface KeyActions {
  focusSearch: () => void;
  move: (delta: 1 | -1) => void;
  open: () => void;
  close: () => void;
}

function typingIn(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

/** `/` focuses the search, `j`/`k` move the selection, Enter opens it, Escape closes the detail. */
export function useKeyboard(actions: KeyActions) {
  const current = useRef(actions);
  current.current = actions;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const a = current.current;
      if (event.key === 'Escape') {
        if (typingIn(event.target)) (event.target as HTMLElement).blur();
        a.close();
        return;
      }
      if (typingIn(event.target)) return;
      // A focused button or link keeps its own Enter.
      if (event.key === 'Enter' && event.target instanceof HTMLElement && event.target.closest('button, a')) return;
      const handlers: Record<string, () => void> = {
        '/': a.focusSearch,
        j: () => a.move(1),
        k: () => a.move(-1),
        Enter: a.open,
      };
      const handler = handlers[event.key];
      if (handler) {
        event.preventDefault();
        handler();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}
