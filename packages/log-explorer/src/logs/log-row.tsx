import type { Log } from '../api/api.types';
import { rowTime } from './format';
import { Highlight } from './highlight';

export const ROW_HEIGHT = 28;

interface Props {
  log: Log;
  index: number;
  selected: boolean;
  query: string;
  onOpen: (index: number) => void;
}

/** One line of the list, placed absolutely at its index (the list is virtualised). */
export function LogRow({ log, index, selected, query, onOpen }: Props) {
  return (
    <div
      class="log-row"
      role="option"
      data-testid="log-row"
      data-log-id={log.id}
      data-level={log.level}
      aria-selected={selected ? 'true' : 'false'}
      style={{ transform: `translateY(${index * ROW_HEIGHT}px)` }}
      onClick={() => onOpen(index)}
    >
      <span class="log-time">{rowTime(log.timestamp)}</span>
      <span class={`level-badge level-${log.level}`}>{log.level}</span>
      <span class="log-source" title={log.source ?? undefined}>
        {log.source ?? ''}
      </span>
      <span class="log-message" data-testid="log-message">
        <Highlight text={log.message} query={query} />
      </span>
    </div>
  );
}
