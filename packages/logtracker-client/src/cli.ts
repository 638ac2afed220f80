#!/usr/bin/env node
import { UsageError } from './cli-options.js';
import { MAIN_HELP } from './cli-help.js';
import { run } from './cli-run.js';
import { ship } from './cli-ship.js';

const [command, ...args] = process.argv.slice(2);
const io = {
  stdin: process.stdin,
  stdout: (text: string) => void process.stdout.write(text),
  stderr: (text: string) => void process.stderr.write(text),
  out: process.stdout,
  err: process.stderr,
  env: process.env,
};

async function main(): Promise<number> {
  switch (command) {
    case 'ship':
      return ship(args, io);
    case 'run':
      return run(args, io);
    case undefined:
    case 'help':
    case '-h':
    case '--help':
      io.stdout(MAIN_HELP);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main().then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      io.stderr(`logtracker: ${error.message}\nRun "logtracker --help" for usage.\n`);
      process.exitCode = 2;
    } else {
      io.stderr(`logtracker: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
