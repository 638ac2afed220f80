// The `explorer` phase of the bench (run.mjs): the log explorer page in headless Chromium (Debian's
// package, or CHROMIUM_PATH) against the big project of the data set (BENCH_LOGS, default 1 000 000).
//
//   1. First page: BENCH_EXPLORER_LOADS navigations (default 20, after 3 warm-ups) to the project's
//      view of the last 7 days, signed in; the figure is the time from navigation start to the
//      page's `explorer:first-page` mark (the first page of logs rendered), p50 and p95; target
//      p95 ≤ 300 ms. Measured twice: returning (from a page of the same origin, the hashed files
//      cached) and first visits (a fresh browser context, from another site), the latter beside a
//      bare document navigated to the same way (what the browser's new process costs any page).
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
    // Another site than the app's (127.0.0.1 and localhost are two): Chromium gives a page
    // navigated to from it a renderer process of its own, as it does when a link is followed from
    // another site (a CI run's page).
    const elsewhere = (base.includes('127.0.0.1') ? base.replace('127.0.0.1', 'localhost') : base.replace('localhost', '127.0.0.1')) + '/api/health/live';
    const firstPageMark = async (p) => {
      await p.waitForFunction(() => performance.getEntriesByName('explorer:first-page').length > 0, null, { timeout: 30_000 });
      return p.evaluate(() => performance.getEntriesByName('explorer:first-page')[0].startTime);
    };
    const stats = (times) => ({ p50: quantile(times, 0.5), p95: quantile(times, 0.95), n: times.length });
    // A returning visit (a reload, a link followed inside the page's own origin) has the hashed
    // files cached, as they are for a year.
    const returningVisits = async () => {
      const times = [];
      for (let i = 0; i < WARMUPS + LOADS; i++) {
        await page.goto(`${base}/api/health/live`);
        await page.goto(view);
        const at = await firstPageMark(page);
        if (i >= WARMUPS) times.push(at);
      }
      return stats(times);
    };
    // A first visit: a browser context of its own (nothing cached), from another site. Beside it,
    // the same navigation to a bare document of the app (the JSON of /api/health/live, loaded):
    // what any page costs before its own work (the browser's new process, the connection).
    const firstVisits = async () => {
      const times = [];
      const bare = [];
      for (let i = 0; i < WARMUPS + LOADS; i++) {
        const fresh = await browser.newContext({ viewport: { width: 1280, height: 800 } });
        try {
          await fresh.addInitScript((value) => sessionStorage.setItem('logtracker.token', value), token);
          const p = await fresh.newPage();
          await p.goto(elsewhere);
          await p.goto(`${base}/api/health/live`);
          const floor = await p.evaluate(() => performance.getEntriesByType('navigation')[0].loadEventEnd);
          await p.goto(elsewhere);
          await p.goto(view);
          const at = await firstPageMark(p);
          if (i >= WARMUPS) {
            times.push(at);
            bare.push(floor);
          }
        } finally {
          await fresh.close();
        }
      }
      return { ...stats(times), bare: stats(bare) };
    };
    log(`explorer: ${LOADS} loads of the first page of a project of ${fmt(total)} logs, after ${WARMUPS} warm-ups, returning then first visits`);
    const returning = await returningVisits();
    const first = await firstVisits();
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
        `bare document, first visit the same way (the app's /api/health/live JSON, navigation → loaded), p50 / p95`,
        `${first.bare.p50.toFixed(0)} / ${first.bare.p95.toFixed(0)} ms (n=${first.bare.n})`,
        'reference',
        '—',
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
