// Runs both services side by side (each on its own embedded database unless DATABASE_URL is set),
// prefixes their output, forwards Ctrl-C / SIGTERM, and stops both if either exits.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const apps = ['marketplace-api', 'logtracker-api'];
const children = apps.map((name) => {
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: `${root}apps/${name}`,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = '';
    stream.on('data', (chunk) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) process.stdout.write(`[${name}] ${line}\n`);
    });
  }
  return { name, child };
});

let stopping = false;
function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const { child } of children) if (child.exitCode === null) child.kill('SIGTERM');
  setTimeout(() => process.exit(code), 12_000).unref();
  Promise.all(children.map(({ child }) => new Promise((r) => (child.exitCode === null ? child.on('exit', r) : r())))).then(
    () => process.exit(code),
  );
}

for (const { name, child } of children) {
  child.on('exit', (code, signal) => {
    if (!stopping) {
      process.stdout.write(`[${name}] exited (${signal ?? code}); stopping the other service\n`);
      stopAll(code ?? 1);
    }
  });
}
process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));
