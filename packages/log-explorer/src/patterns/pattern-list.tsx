import type { Insights } from '../api/api.types';
import { ago } from '../logs/format';

interface Props {
  insights: Insights | null;
  selected: number | null;
  onSelect: (patternId: number | null) => void;
}

/** The mined patterns, most frequent first; a click shows that pattern's logs (again: all logs). */
export function PatternList({ insights, selected, onSelect }: Props) {
  const fresh = new Set((insights?.latest_analysis?.new_patterns ?? []).map((p) => p.pattern_id));
  const patterns = insights?.patterns ?? [];
  return (
    <section class="panel patterns" aria-label="Patterns">
      <h2>Patterns</h2>
      {insights && patterns.length === 0 && <p class="muted">No patterns mined yet: run an analysis of the project.</p>}
      <ul class="pattern-list" data-testid="pattern-list">
        {patterns.map((p) => (
          <li key={p.id}>
            <button
              type="button"
              class="pattern-item"
              data-testid="pattern-item"
              data-pattern-id={p.id}
              aria-pressed={selected === p.id ? 'true' : 'false'}
              onClick={() => onSelect(selected === p.id ? null : p.id)}
            >
              <span class="pattern-template">{p.template}</span>
              <span class="pattern-meta">
                {fresh.has(p.id) && <span class="badge-new">new</span>}
                <span>{p.count}×</span>
                {p.levels.map((level) => (
                  <span key={level} class={`level-badge level-${level}`}>
                    {level}
                  </span>
                ))}
                <span class="muted" title={p.last_seen}>
                  {ago(p.last_seen)}
                </span>
              </span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
