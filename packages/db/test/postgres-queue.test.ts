import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * postgres.js keeps its pool's connections in array-backed queues. As released (3.4.9), a queue
 * that never drains — a pool under steady load — keeps every slot it ever used, and each move of a
 * connection searches them all: queries got twice as expensive within seconds of sustained load
 * (18 000 → 7 600 queries/s over 12 s here). patches/postgres@3.4.9.patch searches only the live
 * entries and drops the shifted-out front; this checks the patched queue is the one installed.
 */
async function loadQueue() {
  const entry = createRequire(import.meta.url).resolve('postgres');
  const file = entry.replace(/cjs[\\/]src[\\/]index\.js$/, 'src/queue.js');
  const module = (await import(pathToFileURL(file).href)) as { default: <T>() => Queue<T> };
  return module.default;
}

interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}

describe("postgres.js's connection queues (patched)", () => {
  it('stay cheap when they never drain', async () => {
    const Queue = await loadQueue();
    const queue = Queue<{ id: number }>();
    const items = Array.from({ length: 10 }, (_, id) => ({ id }));
    for (const item of items) queue.push(item);
    // A million moves through a queue that always holds ten connections.
    for (let i = 0; i < 1_000_000; i++) queue.push(queue.shift() as { id: number });
    expect(queue.length).toBe(10);
    // Only the queue is timed: the checks of what each remove answered come after.
    let missed = 0;
    const started = performance.now();
    for (let i = 0; i < 10_000; i++) {
      const item = items[i % 10] as { id: number };
      if (queue.remove(item) !== item) missed++;
      queue.push(item);
    }
    const elapsed = performance.now() - started;
    expect(missed).toBe(0);
    // Unpatched, each remove scans the million slots used so far: seconds for these 10 000.
    expect(elapsed).toBeLessThan(500);
    expect(queue.length).toBe(10);
    expect(new Set(Array.from({ length: 10 }, () => queue.shift()?.id))).toEqual(new Set(items.map((x) => x.id)));
  });
});
