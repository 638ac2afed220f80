import type { Ref } from 'preact';
import { LEVELS, type Level } from '../api/api.types';
import { fromLocalInput, toLocalInput } from '../logs/format';
import type { UpdateView } from './use-view';
import { useDebouncedInput } from './use-debounced-input';
import { RANGES, type Range, type ViewState } from './view.state';

const RANGE_LABELS: Record<Range, string> = { '15m': '15 min', '1h': '1 h', '24h': '24 h', '7d': '7 d', custom: 'Custom' };

interface Props {
  view: ViewState;
  update: UpdateView;
  searchRef: Ref<HTMLInputElement>;
}

/** Level, source, time range and search: every change goes to the URL, which the list follows. */
export function Filters({ view, update, searchRef }: Props) {
  const search = useDebouncedInput(view.q, (q) => update({ q, log: null }));
  const source = useDebouncedInput(view.source, (value) => update({ source: value.trim(), log: null }));

  const pickRange = (range: Range) => {
    if (range !== 'custom') return update({ range, from: '', to: '' });
    // A custom range starts as the last hour, to be adjusted.
    const now = Date.now();
    update({
      range,
      from: view.from || new Date(now - 3_600_000).toISOString(),
      to: view.to || new Date(now).toISOString(),
    });
  };

  return (
    <div class="filters" role="search">
      <input
        class="filter-search"
        data-testid="filter-search"
        type="search"
        placeholder="Search messages (press /)"
        aria-label="Search"
        ref={searchRef}
        {...search}
      />
      <select
        data-testid="filter-level"
        aria-label="Level"
        value={view.level}
        onChange={(e) => update({ level: e.currentTarget.value as Level | '', log: null })}
      >
        <option value="">all levels</option>
        {LEVELS.map((level) => (
          <option key={level} value={level}>
            {level}
          </option>
        ))}
      </select>
      <input class="filter-source" data-testid="filter-source" type="text" placeholder="source" aria-label="Source (exact)" {...source} />
      <div class="ranges" role="group" aria-label="Time range">
        {RANGES.map((range) => (
          <button
            key={range}
            type="button"
            data-testid={`range-${range}`}
            aria-pressed={view.range === range ? 'true' : 'false'}
            onClick={() => pickRange(range)}
          >
            {RANGE_LABELS[range]}
          </button>
        ))}
      </div>
      {view.range === 'custom' && (
        <div class="custom-range">
          <input
            type="datetime-local"
            data-testid="range-from"
            aria-label="From"
            value={toLocalInput(view.from)}
            onChange={(e) => update({ from: fromLocalInput(e.currentTarget.value) })}
          />
          <span aria-hidden="true">→</span>
          <input
            type="datetime-local"
            data-testid="range-to"
            aria-label="To"
            value={toLocalInput(view.to)}
            onChange={(e) => update({ to: fromLocalInput(e.currentTarget.value) })}
          />
        </div>
      )}
    </div>
  );
}
