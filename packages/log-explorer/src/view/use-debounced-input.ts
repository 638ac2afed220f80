import { useEffect, useRef, useState } from 'preact/hooks';

export const DEBOUNCE_MS = 300;

/**
 * A text filter's draft: applied on Enter or after 300 ms without typing, and set back to the
 * view's value when the view changes from elsewhere (back, forward, a link).
 */
export function useDebouncedInput(value: string, apply: (value: string) => void) {
  const [draft, setDraft] = useState(value);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const applyRef = useRef(apply);
  applyRef.current = apply;

  useEffect(() => setDraft(value), [value]);
  useEffect(() => () => clearTimeout(timer.current), []);

  const commit = (next: string) => {
    clearTimeout(timer.current);
    if (next !== value) applyRef.current(next);
  };

  return {
    value: draft,
    onInput: (event: Event) => {
      const next = (event.currentTarget as HTMLInputElement).value;
      setDraft(next);
      clearTimeout(timer.current);
      timer.current = setTimeout(() => applyRef.current(next), DEBOUNCE_MS);
    },
    onKeyDown: (event: KeyboardEvent) => {
      if (event.key === 'Enter') commit((event.currentTarget as HTMLInputElement).value);
    },
  };
}
