import type { ComponentChildren } from 'preact';

/**
 * Log text with the search's matches (case-insensitive, as the API searches) wrapped in <mark>.
 * The text is split and every piece rendered as a text node: log content never becomes markup.
 */
export function Highlight({ text, query }: { text: string; query: string }) {
  if (!query) return <>{text}</>;
  const haystack = text.toLowerCase();
  const needle = query.toLowerCase();
  const parts: ComponentChildren[] = [];
  let at = 0;
  for (let found = haystack.indexOf(needle); found !== -1; found = haystack.indexOf(needle, at)) {
    if (found > at) parts.push(text.slice(at, found));
    parts.push(<mark key={found}>{text.slice(found, found + needle.length)}</mark>);
    at = found + needle.length;
    // One screen line holds few matches: stop before a pathological line costs anything.
    if (parts.length > 200) break;
  }
  if (at < text.length) parts.push(text.slice(at));
  return <>{parts}</>;
}
