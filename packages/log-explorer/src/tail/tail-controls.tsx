import type { TailState } from './use-tail';

interface Props {
  enabled: boolean;
  state: TailState;
  rate: number;
  paused: boolean;
  onToggle: () => void;
  onPause: () => void;
  onResume: () => void;
}

const LABELS: Record<TailState, string> = { connecting: 'connecting', live: 'live', paused: 'paused', offline: 'offline' };

/** The live tail's switch, pause, rate and connection state. */
export function TailControls({ enabled, state, rate, paused, onToggle, onPause, onResume }: Props) {
  return (
    <div class="tail-controls">
      <button type="button" data-testid="tail-toggle" aria-pressed={enabled ? 'true' : 'false'} onClick={onToggle}>
        {enabled ? 'Stop live tail' : 'Live tail'}
      </button>
      <button
        type="button"
        data-testid="tail-pause"
        disabled={!enabled}
        aria-pressed={paused ? 'true' : 'false'}
        onClick={paused ? onResume : onPause}
      >
        {paused ? 'Resume' : 'Pause'}
      </button>
      <span class={`tail-status tail-${state}`} data-testid="tail-status" data-state={state}>
        {LABELS[state]}
      </span>
      <span class="tail-rate" data-testid="tail-rate" title="Lines per second over the last 10 s">
        {rate.toFixed(1)}/s
      </span>
    </div>
  );
}
