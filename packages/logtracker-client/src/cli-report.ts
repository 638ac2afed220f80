import type { BatcherEvent, BatcherStats } from './batcher.js';
import type { ShipSettings } from './cli-options.js';

export type Write = (text: string) => void;

/** Notices of retries (unless quiet) and of refused batches (always, once per reason). */
export function eventReporter(settings: Pick<ShipSettings, 'quiet'>, write: Write) {
  const refusals = new Set<string>();
  return (event: BatcherEvent) => {
    const lines = `${event.batch.count} line${event.batch.count === 1 ? '' : 's'}`;
    if (event.kind === 'rejected') {
      if (refusals.has(event.reason)) return;
      refusals.add(event.reason);
      write(`logtracker: batch ${event.batch.seq} (${lines}) refused by the server: ${event.reason}\n`);
    } else if (!settings.quiet) {
      write(`logtracker: batch ${event.batch.seq} (${lines}) not delivered (${event.reason}); retry ${event.attempt} in ${(event.delayMs / 1000).toFixed(1)} s\n`);
    }
  };
}

/** The last words on stderr: the lost lines (always), then the one-line summary (unless quiet). */
export function summarize(stats: BatcherStats, elapsedMs: number, settings: Pick<ShipSettings, 'quiet' | 'flushTimeoutMs'>, write: Write): void {
  if (stats.lost > 0) {
    write(`logtracker: ${stats.lost} of ${stats.lines} lines lost: not delivered (refused, or still unsent after the ${settings.flushTimeoutMs / 1000} s flush timeout)\n`);
  }
  if (settings.quiet) return;
  const seconds = elapsedMs / 1000;
  const rate = seconds > 0 ? Math.round(stats.delivered / seconds) : stats.delivered;
  write(
    `logtracker: ${stats.delivered} lines in ${stats.batches} batches, ${formatBytes(stats.bytes)} sent, ${stats.retries} retries, ${seconds.toFixed(2)} s (${rate} lines/s)\n`,
  );
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
