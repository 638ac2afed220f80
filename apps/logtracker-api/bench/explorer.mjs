// The `explorer` phase of the bench (run.mjs): the log explorer page in headless Chromium (Debian's
// package, or CHROMIUM_PATH) against the big project of the data set (BENCH_LOGS, default 1 000 000).
//
//   1. First page: BENCH_EXPLORER_LOADS navigations (default 20, after 3 warm-ups) to the project's
//      view of the last 7 days, signed in; the figure is the time from navigation start to the
//      page's `explorer:first-page` mark (the first page of logs rendered), p50 and p95; target
//      p95 ≤ 300 ms.
//   2. Scrolling: the list scrolled 400 px a frame until 10 000 lines are loaded (pages of 200
//      fetched as it goes); every frame of 50 ms or more is reported by the browser (Long Animation
//      Frames); target none.
/* global document, requestAnimationFrame -- the page functions run in the browser */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { positiveInt } from '../../../scripts/bench-lib.mjs';

const LOADS = positiveInt('BENCH_EXPLORER_LOADS', 20);
const WARMUPS = 3;
const FIRST_PAGE_TARGET_MS = 300;
const SCROLL_LINES = 10_000;
const LONG_FRAME_MS = 50;

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && existsSync(p));

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

export async function measureExplorer({ base, token, projectId, total, log, fmt }) {
  if (!CHROMIUM) return [['log explorer in a browser', 'n/a: no Chromium (apt-get install chromium, or CHROMIUM_PATH)', `first page ≤ ${FIRST_PAGE_TARGET_MS} ms`, '—']];
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // Signed in as the page keeps it: the token in the tab's session storage.
    await context.addInitScript((value) => sessionStorage.setItem('logtracker.token', value), token);
    const page = await context.newPage();
    const view = `${base}/?project=${projectId}&range=7d`;
    log(`explorer: ${LOADS} loads of the first page of a project of ${fmt(total)} logs, after ${WARMUPS} warm-ups`);
    const times = [];
    for (let i = 0; i < WARMUPS + LOADS; i++) {
      await page.goto('about:blank');
      await page.goto(view);
      await page.waitForFunction(() => performance.getEntriesByName('explorer:first-page').length > 0, null, { timeout: 30_000 });
      const at = await page.evaluate(() => performance.getEntriesByName('explorer:first-page')[0].startTime);
      if (i >= WARMUPS) times.push(at);
    }
    const p50 = quantile(times, 0.5);
    const p95 = quantile(times, 0.95);

    log(`explorer: scrolling through ${fmt(SCROLL_LINES)} lines`);
    const scroll = await page.evaluate(async ({ lines, longMs }) => {
      const list = document.querySelector('[data-testid="log-list"]');
      const long = [];
      const observer = new PerformanceObserver((entries) => entries.getEntries().forEach((e) => long.push(e.duration)));
      observer.observe({ type: 'long-animation-frame', buffered: false });
      let frames = 0;
      let worst = 0;
      let last = performance.now();
      const started = last;
      while (performance.now() - started < 120_000) {
        await new Promise(requestAnimationFrame);
        const now = performance.now();
        worst = Math.max(worst, now - last);
        last = now;
        frames++;
        list.scrollTop += 400;
        if (Number(list.dataset.loaded ?? 0) >= lines && list.scrollTop + list.clientHeight >= list.scrollHeight - 2) break;
      }
      observer.disconnect();
      return { long: long.filter((d) => d >= longMs), frames, worst, loaded: Number(list.dataset.loaded ?? 0), seconds: (performance.now() - started) / 1000 };
    }, { lines: SCROLL_LINES, longMs: LONG_FRAME_MS });
    return [
      [
        `log explorer: first page of a project of ${fmt(total)} logs (Chromium, navigation → rendered), p50 / p95`,
        `${p50.toFixed(0)} / ${p95.toFixed(0)} ms (n=${times.length})`,
        `p95 ≤ ${FIRST_PAGE_TARGET_MS} ms`,
        p95 <= FIRST_PAGE_TARGET_MS ? 'PASS' : 'FAIL',
      ],
      [
        `log explorer: scrolling through ${fmt(scroll.loaded)} lines, frames of ≥ ${LONG_FRAME_MS} ms`,
        `${scroll.long.length} in ${fmt(scroll.frames)} frames over ${scroll.seconds.toFixed(1)} s (longest interval ${scroll.worst.toFixed(0)} ms)`,
        'none',
        scroll.long.length === 0 && scroll.loaded >= SCROLL_LINES ? 'PASS' : 'FAIL',
      ],
    ];
  } finally {
    await browser.close();
  }
}
