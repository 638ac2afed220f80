import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { basename } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { parseCommon, settingsOf, UsageError } from './cli-options.js';
import { RUN_HELP } from './cli-help.js';
import { eventReporter, summarize } from './cli-report.js';
import type { CliIo } from './cli-ship.js';
import { LineSplitter } from './lines.js';
import { createShipper, type Shipper } from './shipper.js';

export interface RunIo extends CliIo {
  /** Where the command's output is passed through, as bytes. */
  out: Writable;
  err: Writable;
}

/** `logtracker run [flags] -- command args…`: answers the command's exit status. */
export async function run(args: string[], io: RunIo): Promise<number> {
  const dash = args.indexOf('--');
  const { values, positionals } = parseCommon(dash === -1 ? args : args.slice(0, dash));
  if (values.help) {
    io.stdout(RUN_HELP);
    return 0;
  }
  const command = dash === -1 ? positionals : args.slice(dash + 1);
  if (command.length === 0) throw new UsageError('no command to run: logtracker run [flags] -- <command> [args ...]');
  const settings = settingsOf(values, io.env);
  const started = Date.now();
  const shipper = createShipper({ ...settings, source: settings.source ?? basename(command[0]!), env: io.env, onEvent: eventReporter(settings, io.stderr) });

  const child = spawn(command[0]!, command.slice(1), { stdio: ['inherit', 'pipe', 'pipe'] });
  // Once the command has ended or been signalled, its last output (what the pipes still hold) is
  // read without waiting for room in the queue: the end is then reached even while the server is
  // unreachable, and the flush timeout bounds the rest.
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const forward = (signal: NodeJS.Signals) => {
    release();
    child.kill(signal);
  };
  process.on('SIGTERM', forward);
  process.on('SIGINT', forward);
  const piped = Promise.all([relay(child.stdout, io.out, shipper, released), relay(child.stderr, io.err, shipper, released)]);
  const status = await new Promise<number>((resolve) => {
    child.once('error', (error) => {
      io.stderr(`logtracker: cannot run ${command[0]}: ${error.message}\n`);
      resolve(127);
    });
    child.once('exit', (code, signal) => resolve(signal ? 128 + constants.signals[signal] : (code ?? 1)));
  });
  release();
  await piped;
  process.off('SIGTERM', forward);
  process.off('SIGINT', forward);

  const stats = await shipper.close(settings.flushTimeoutMs);
  summarize(stats, Date.now() - started, settings, io.stderr);
  if (status === 0 && stats.lost > 0 && !settings.bestEffort) return 1;
  return status;
}

/**
 * Passes `from`'s bytes to `to` unchanged and ships its lines. Reading pauses while `to` is full
 * or the shipper's queue is: memory stays bounded, and the command waits as it would on a pipe.
 */
function relay(from: Readable, to: Writable, shipper: Shipper, released: Promise<void>): Promise<void> {
  const splitter = new LineSplitter();
  let waits = 0;
  const wait = (promise: Promise<void>) => {
    if (waits++ === 0) from.pause();
    void promise.then(() => {
      if (--waits === 0) from.resume();
    });
  };
  return new Promise((resolve) => {
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) wait(new Promise((r) => to.once('drain', r)));
      for (const line of splitter.push(chunk)) {
        const full = shipper.line(line);
        if (full) wait(Promise.race([full, released]));
      }
    });
    from.once('end', () => {
      for (const line of splitter.end()) shipper.line(line);
      resolve();
    });
  });
}
