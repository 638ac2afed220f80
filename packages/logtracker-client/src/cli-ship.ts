import { createReadStream } from 'node:fs';
import { constants } from 'node:os';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import { parseCommon, settingsOf, UsageError } from './cli-options.js';
import { SHIP_HELP } from './cli-help.js';
import { eventReporter, summarize, type Write } from './cli-report.js';
import { LineSplitter } from './lines.js';
import { createShipper, type Shipper } from './shipper.js';

export interface CliIo {
  stdin: Readable;
  stdout: Write;
  stderr: Write;
  env: Record<string, string | undefined>;
}

/** `logtracker ship`: lines of standard input or files; answers the exit status. */
export async function ship(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommon(args);
  if (values.help) {
    io.stdout(SHIP_HELP);
    return 0;
  }
  const settings = settingsOf(values, io.env);
  const started = Date.now();
  const inputs = positionals.length === 0 ? ['-'] : positionals;
  if (inputs.includes('-') && (io.stdin as { isTTY?: boolean }).isTTY) {
    throw new UsageError('nothing to read: pipe lines in (command | logtracker ship …) or name files');
  }
  const source = settings.source ?? (inputs.length === 1 && inputs[0] !== '-' ? basename(inputs[0]!) : 'cli');
  const shipper = createShipper({ ...settings, source, env: io.env, onEvent: eventReporter(settings, io.stderr) });

  const stop = stopOnSignal();
  let failed = false;
  for (const input of inputs) {
    if (stop.signal) break;
    const stream = input === '-' ? io.stdin : createReadStream(input);
    stop.reading = stream;
    try {
      await shipStream(stream, shipper, stop.stopped);
    } catch (error) {
      // A signal ends the reading by destroying the stream: that is no read error.
      if (stop.signal) break;
      io.stderr(`logtracker: cannot read ${input === '-' ? 'standard input' : input}: ${(error as Error).message}\n`);
      failed = true;
    }
  }
  const stats = await shipper.close(settings.flushTimeoutMs);
  stop.dispose();
  summarize(stats, Date.now() - started, settings, io.stderr);
  if (stop.signal) return 128 + constants.signals[stop.signal];
  if (failed) return 1;
  return stats.lost > 0 && !settings.bestEffort ? 1 : 0;
}

/**
 * Each line of `stream` to the shipper, waiting whenever its queue is full (back-pressure: the
 * stream is not read meanwhile), until the stream ends or `stopped` settles.
 */
export async function shipStream(stream: Readable, shipper: Shipper, stopped: Promise<void>): Promise<void> {
  const splitter = new LineSplitter();
  let stopping = false;
  void stopped.then(() => (stopping = true));
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    for (const line of splitter.push(chunk)) {
      const full = shipper.line(line);
      if (full) await Promise.race([full, stopped]);
    }
    if (stopping) break;
  }
  for (const line of splitter.end()) shipper.line(line);
}

/** After SIGTERM or SIGINT, how long what the input still holds is read before reading stops. */
const SIGNAL_GRACE_MS = 1000;

/**
 * SIGTERM and SIGINT end the reading: what the input still holds is read for a moment (all of it
 * when its writer was stopped too, as the processes of a pipeline are), then the stream is
 * destroyed and a wait for room in the queue cut short. What was read is then delivered within
 * the flush timeout.
 */
function stopOnSignal() {
  let resolve: () => void = () => {};
  let grace: NodeJS.Timeout | undefined;
  const state = {
    signal: undefined as NodeJS.Signals | undefined,
    reading: undefined as Readable | undefined,
    stopped: new Promise<void>((r) => (resolve = r)),
    dispose: () => {
      clearTimeout(grace);
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    },
  };
  function onSignal(signal: NodeJS.Signals) {
    if (state.signal) return;
    state.signal = signal;
    grace = setTimeout(() => {
      state.reading?.destroy();
      resolve();
    }, SIGNAL_GRACE_MS);
  }
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return state;
}
