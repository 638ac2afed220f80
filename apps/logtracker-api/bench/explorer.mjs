// The `explorer` phase of the bench (run.mjs): the log explorer page in headless Chromium (Debian's
// package, or CHROMIUM_PATH) against the big project of the data set (BENCH_LOGS, default 1 000 000).
//
//   1. First page: BENCH_EXPLORER_LOADS navigations (default 20, after 3 warm-ups) to the project's
//      view of the last 7 days, signed in; the figure is the time from navigation start to the
//      page's `explorer:first-page` mark (the first page of logs rendered), p50 and p95; target
//      p95 ≤ 300 ms. Measured twice: returning (from a page of the same origin, the hashed files
//      cached) and first visits (from about:blank, nothing cached).
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
    // A first visit comes from another site with nothing cached; a returning one (a reload, a link
    // followed inside the page's own origin) has the hashed files cached, as they are for a year.
    const firstPage = async (from) => {
      const times = [];
      for (let i = 0; i < WARMUPS + LOADS; i++) {
        await page.goto(from === 'elsewhere' ? 'about:blank' : `${base}/api/health/live`);
        await page.goto(view);
        await page.waitForFunction(() => performance.getEntriesByName('explorer:first-page').length > 0, null, { timeout: 30_000 });
        const at = await page.evaluate(() => performance.getEntriesByName('explorer:first-page')[0].startTime);
        if (i >= WARMUPS) times.push(at);
      }
      return { p50: quantile(times, 0.5), p95: quantile(times, 0.95), n: times.length };
    };
    log(`explorer: ${LOADS} loads of the first page of a project of ${fmt(total)} logs, after ${WARMUPS} warm-ups, returning then first visits`);
    const returning = await firstPage('same origin');
    const first = await firstPage('elsewhere');
    await page.goto(view);
    await page.waitForFunction(() => performance.getEntriesByName('explorer:first-page').length > 0, null, { timeout: 30_000 });

    log(`explorer: scrolling through ${fmt(SCROLL_LINES)} lines`);
    const scroll = await page.evaluate(async ({ lines, longMs }) => {
      const list = document.querySelector('[data-testid="log-list"]');
      const rowHeight = document.querySelector('[data-testid="log-row"]').getBoundingClientRect().height;
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
        // Past the 10 000th line (pages keep loading ahead of the reader: the end is never reached).
        if (list.scrollTop >= lines * rowHeight) break;
      }
      observer.disconnect();
      return { long: long.filter((d) => d >= longMs), frames, worst, passed: Math.floor(list.scrollTop / rowHeight), seconds: (performance.now() - started) / 1000 };
    }, { lines: SCROLL_LINES, longMs: LONG_FRAME_MS });
    return [
      [
        `log explorer: first page of a project of ${fmt(total)} logs, returning visit (Chromium, navigation → rendered), p50 / p95`,
        `${returning.p50.toFixed(0)} / ${returning.p95.toFixed(0)} ms (n=${returning.n})`,
        `p95 ≤ ${FIRST_PAGE_TARGET_MS} ms`,
        returning.p95 <= FIRST_PAGE_TARGET_MS ? 'PASS' : 'FAIL',
      ],
      [
        `log explorer: the same, first visit (from another site, nothing cached), p50 / p95`,
        `${first.p50.toFixed(0)} / ${first.p95.toFixed(0)} ms (n=${first.n})`,
        `p95 ≤ ${FIRST_PAGE_TARGET_MS} ms`,
        first.p95 <= FIRST_PAGE_TARGET_MS ? 'PASS' : 'FAIL',
      ],
      [
        `log explorer: scrolling through ${fmt(scroll.passed)} lines, frames of ≥ ${LONG_FRAME_MS} ms`,
        `${scroll.long.length} in ${fmt(scroll.frames)} frames over ${scroll.seconds.toFixed(1)} s (longest interval ${scroll.worst.toFixed(0)} ms)`,
        'none',
        scroll.long.length === 0 && scroll.passed >= SCROLL_LINES ? 'PASS' : 'FAIL',
      ],
    ];
  } finally {
    await browser.close();
  }
}
