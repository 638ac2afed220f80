import { gunzipSync } from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPLORER_CSP } from '../src/modules/explorer/index.js';
import {
  chromiumPath,
  launchChromium,
  MISSING_CHROMIUM,
  rowMessages,
  rowsWhere,
  screenshot,
  signIn,
  watchedPage,
  type BrowserWindow,
} from './explorer-browser.js';
import { buildTestApp, createProject, createUser, PASSWORD, type TestApp, type TestUser } from './helpers.js';

const browserPath = chromiumPath();
if (!browserPath) {
  // CI installs Chromium (.ci/run): there, its absence is a failure, not a skip.
  if (process.env.CI) throw new Error(MISSING_CHROMIUM);
  process.stderr.write(`\n${MISSING_CHROMIUM}\nSkipping the log explorer's browser tests.\n\n`);
}

const MINUTE = 60_000;
/** A logged attempt at markup and script: it must show as text and do nothing. */
const HOSTILE = [
  '<img src=x onerror="window.__injected=1"> rendered as text',
  '<a href="javascript:window.__injected=2">click me</a> stays text',
  '<script>window.__injected=3</script> never runs',
];

let t: TestApp;
let owner: TestUser;
let base: string;
let checkout: number;
let billing: number;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];

const api = (method: 'GET' | 'POST', url: string, payload?: object, user = owner) =>
  t.app.inject({ method, url, headers: user.headers, ...(payload ? { payload } : {}) });

/** 10 000 lines of the last 50 minutes, errors among them, a few errors of 3 hours ago, and the hostile lines. */
function checkoutLogs(now: number) {
  const entries: object[] = [];
  for (let i = 0; i < 10_000; i++) {
    const at = new Date(now - 50 * MINUTE + i * 300).toISOString();
    const level = i % 50 === 7 ? 'error' : i % 10 === 3 ? 'warning' : i % 4 === 0 ? 'debug' : 'info';
    const message =
      level === 'error'
        ? `payment timeout for order ${1000 + i} after ${200 + (i % 90)} ms`
        : `request ${i} served GET /api/cart/${i % 97} in ${i % 40} ms`;
    entries.push({ level, message, source: i % 3 === 0 ? 'worker' : 'api', timestamp: at, context: { order: 1000 + i, attempt: i % 3 } });
  }
  for (let i = 0; i < 5; i++) {
    entries.push({ level: 'error', message: `payment timeout for order ${i} after 999 ms`, source: 'api', timestamp: new Date(now - 3 * 60 * MINUTE + i).toISOString() });
  }
  HOSTILE.forEach((message, i) => entries.push({ level: 'warning', message, source: 'api', timestamp: new Date(now - 10 * MINUTE + i).toISOString(), context: { html: message } }));
  return entries;
}

beforeAll(async () => {
  if (!browserPath) return;
  t = await buildTestApp();
  owner = await createUser(t, { name: 'Ada' });
  checkout = (await createProject(t, owner, { name: 'checkout' })).id;
  billing = (await createProject(t, owner, { name: 'billing' })).id;
  const now = Date.now();
  const entries = checkoutLogs(now);
  for (const logs of [entries.slice(0, 5000), entries.slice(5000)]) {
    const stored = await api('POST', `/api/projects/${checkout}/logs/batch`, { logs });
    expect(stored.statusCode, stored.body).toBe(201);
  }
  await api('POST', `/api/projects/${billing}/logs/batch`, { logs: [{ level: 'info', message: 'invoice 7 sent', source: 'mailer' }] });
  // Patterns for the patterns panel.
  expect((await api('POST', `/api/projects/${checkout}/analyze`, { time_range: '24h' })).statusCode).toBe(201);
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  browser = await launchChromium(browserPath);
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ({ page, problems } = await watchedPage(context));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe.skipIf(!browserPath)('the log explorer, in Chromium', { timeout: 60_000 }, () => {
  it('is served at / with its policy: no inline script, hashed files cached for a year, under 150 kB compressed', async () => {
    const index = await fetch(`${base}/`, { headers: { 'accept-encoding': 'identity' } });
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toBe(EXPLORER_CSP);
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    const html = await index.text();
    // Every script is a file of the page's own; no inline script or style, no style attribute.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(html).not.toMatch(/<style|\sstyle=/i);
    const files = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(files.some((f) => f.endsWith('.js'))).toBe(true);
    // The scripts the entry loads on its own (the histogram's chart) belong to the first load too.
    for (const file of files.filter((f) => f.endsWith('.js'))) {
      const script = await (await fetch(`${base}${file}`)).text();
      for (const [, chunk] of script.matchAll(/["'`](?:\.\/|\/assets\/|assets\/)([\w.-]+\.js)["'`]/g)) {
        if (!files.includes(`/assets/${chunk}`)) files.push(`/assets/${chunk}`);
      }
    }
    expect(files.filter((f) => f.endsWith('.js')).length).toBeGreaterThan(1);
    let compressed = Buffer.byteLength(html);
    for (const file of files) {
      const response = await fetch(`${base}${file}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(response.status, file).toBe(200);
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(response.headers.get('content-security-policy')).toBe(EXPLORER_CSP);
      const body = Buffer.from(await response.arrayBuffer());
      // fetch decodes what it is sent; the bytes on the wire are the gzip copy beside the file.
      const wire = await fetch(`${base}${file}`, { headers: { 'accept-encoding': 'gzip' } }).then(async (r) => ({ encoding: r.headers.get('content-encoding'), length: Number(r.headers.get('content-length') ?? 0) }));
      expect(wire.encoding, file).toBe('gzip');
      compressed += wire.length || gunzipSync(body).byteLength;
    }
    expect(compressed).toBeLessThan(150 * 1024);
    // An asset that is not there is the API's 404; a path up and out is not an asset.
    expect((await fetch(`${base}/assets/nothing-here.js`)).status).toBe(404);
    expect((await fetch(`${base}/assets/..%2Fpackage.json`)).status).toBe(404);
  });

  it('signs in, picks a project and shows its newest logs first', async () => {
    await page.goto(`${base}/`);
    await page.getByTestId('signin-form').waitFor();
    await page.getByTestId('signin-email').fill(owner.email);
    await page.getByTestId('signin-password').fill('not the password');
    await page.getByTestId('signin-submit').click();
    await expect.poll(() => page.getByTestId('signin-error').textContent()).toBeTruthy();
    await signIn(page, owner.email, PASSWORD);
    // The token is kept for the tab, never put in the address.
    expect(page.url()).not.toContain('token');
    const items = page.getByTestId('project-item');
    await expect.poll(() => items.count()).toBe(2);
    await page.locator(`[data-testid="project-item"][data-project-id="${checkout}"]`).click();
    await page.getByTestId('range-24h').click();
    await rowsWhere(page, (messages) => messages.length > 10);
    const newest = (await api('GET', `/api/projects/${checkout}/logs?per_page=1`)).json().data[0];
    expect((await rowMessages(page))[0]).toBe(newest.message);
    // 10 008 logs in the range: beyond 10 000 the count of a bounded range is an estimate, and says so.
    const total = page.getByTestId('log-total');
    expect(Math.abs(Number(await total.getAttribute('data-total')) - 10_008)).toBeLessThan(200);
    expect(await total.textContent()).toMatch(/^(about )?10\d{3} logs$/);
    await page.getByTestId('histogram').locator('canvas').first().waitFor();
    await screenshot(page, 'logs');
  });

  it('searches, highlighting every match, and keeps the search in the address', async () => {
    await page.getByTestId('filter-search').fill('timeout');
    await page.getByTestId('filter-search').press('Enter');
    await rowsWhere(page, (messages) => messages.length > 0 && messages.every((m) => m.includes('timeout')));
    const marks = await page.getByTestId('log-message').locator('mark').allTextContents();
    expect(marks.length).toBeGreaterThan(0);
    expect(new Set(marks.map((m) => m.toLowerCase()))).toEqual(new Set(['timeout']));
    expect(new URL(page.url()).searchParams.get('q')).toBe('timeout');
    await screenshot(page, 'search');
  });

  it('filters by level and by time range', async () => {
    await page.getByTestId('filter-search').fill('');
    await page.getByTestId('filter-search').press('Enter');
    await page.getByTestId('filter-level').selectOption('error');
    await rowsWhere(page, (_m, levels) => levels.length > 0 && levels.every((l) => l === 'error'));
    // 200 errors of the last 50 minutes and 5 of three hours ago: 24 h shows all, 1 h the recent ones.
    await expect.poll(() => page.getByTestId('log-total').textContent()).toMatch(/\b205\b/);
    await page.getByTestId('range-1h').click();
    await expect.poll(() => page.getByTestId('log-total').textContent()).toMatch(/\b200\b/);
    const url = new URL(page.url());
    expect([url.searchParams.get('level'), url.searchParams.get('range')]).toEqual(['error', '1h']);
    await page.getByTestId('range-15m').click();
    await expect.poll(async () => Number((await page.getByTestId('log-total').textContent())?.match(/\d+/)?.[0])).toBeLessThan(200);
    await page.getByTestId('range-24h').click();
    await expect.poll(() => page.getByTestId('log-total').textContent()).toMatch(/\b205\b/);
  });

  it("opens a line with all its fields, and its link reopens exactly that view after signing in", async () => {
    await page.getByTestId('filter-search').fill('timeout');
    await page.getByTestId('filter-search').press('Enter');
    await rowsWhere(page, (messages, levels) => messages.length > 0 && messages.every((m) => m.includes('timeout')) && levels.every((l) => l === 'error'));
    const row = page.getByTestId('log-row').nth(2);
    const id = await row.getAttribute('data-log-id');
    await row.click();
    const detail = page.getByTestId('log-detail');
    await detail.waitFor();
    const json = await page.getByTestId('log-detail-json').textContent();
    expect(JSON.parse(json ?? '')).toMatchObject({ order: expect.any(Number) });
    const href = await page.getByTestId('log-detail-link').getAttribute('href');
    const shared = new URL(href ?? '', base);
    expect(shared.searchParams.get('log')).toBe(id);
    await screenshot(page, 'detail');

    // A colleague opens the link: signs in, and sees the same filters and the same line.
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const { page: second, problems: secondProblems } = await watchedPage(other);
      await second.goto(shared.href);
      await second.getByTestId('signin-form').waitFor();
      await signIn(second, owner.email, PASSWORD);
      await second.getByTestId('log-detail').waitFor();
      expect(await second.getByTestId('log-detail').textContent()).toContain((await api('GET', `/api/logs/${id}`)).json().data.message);
      expect(await second.getByTestId('filter-search').inputValue()).toBe('timeout');
      expect(await second.getByTestId('filter-level').inputValue()).toBe('error');
      expect(await second.locator(`[data-testid="project-item"][aria-current="true"]`).getAttribute('data-project-id')).toBe(String(checkout));
      expect(secondProblems).toEqual([]);
    } finally {
      await other.close();
    }
    await page.getByTestId('log-detail-close').click();
    await expect.poll(() => detail.count()).toBe(0);
  });

  it('shows logged markup and script as inert text', async () => {
    await page.getByTestId('filter-level').selectOption('');
    await page.getByTestId('filter-search').fill('<');
    await page.getByTestId('filter-search').press('Enter');
    await rowsWhere(page, (messages) => HOSTILE.every((h) => messages.includes(h)));
    const list = page.getByTestId('log-list');
    expect(await list.locator('img, script, a, iframe').count()).toBe(0);
    await page.getByTestId('log-row').filter({ hasText: 'onerror' }).click();
    await page.getByTestId('log-detail').waitFor();
    expect(await page.getByTestId('log-detail').locator('img, script, iframe').count()).toBe(0);
    // The only link in the panel is the one to this view.
    const links = await page.getByTestId('log-detail').locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    expect(links.every((href) => href.startsWith('/') || href.startsWith(base))).toBe(true);
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => (globalThis as unknown as BrowserWindow).__injected)).toBeUndefined();
    await page.getByTestId('log-detail-close').click();
  });

  it('tails new lines live within a second, with the filters, and holds them while paused', async () => {
    await page.getByTestId('filter-search').fill('');
    await page.getByTestId('filter-search').press('Enter');
    await page.getByTestId('filter-level').selectOption('error');
    await page.getByTestId('tail-toggle').click();
    await expect.poll(() => page.getByTestId('tail-status').getAttribute('data-state')).toBe('live');
    const sent = Date.now();
    await api('POST', `/api/projects/${checkout}/logs`, { level: 'info', message: 'tail: filtered out' });
    await api('POST', `/api/projects/${checkout}/logs`, { level: 'error', message: 'tail: card declined live' });
    await expect.poll(async () => (await rowMessages(page))[0], { timeout: 1000, interval: 20 }).toBe('tail: card declined live');
    expect(Date.now() - sent).toBeLessThan(1000);
    expect(await rowMessages(page)).not.toContain('tail: filtered out');
    await screenshot(page, 'tail');

    await page.getByTestId('tail-pause').click();
    await expect.poll(() => page.getByTestId('tail-status').getAttribute('data-state')).toBe('paused');
    await api('POST', `/api/projects/${checkout}/logs`, { level: 'error', message: 'tail: arrived while paused' });
    await page.waitForTimeout(300);
    expect(await rowMessages(page)).not.toContain('tail: arrived while paused');
    await page.getByTestId('tail-pause').click();
    await expect.poll(async () => (await rowMessages(page))[0]).toBe('tail: arrived while paused');
    expect(await page.getByTestId('tail-rate').textContent()).toMatch(/\d/);
    await page.getByTestId('tail-toggle').click();
    await expect.poll(() => page.getByTestId('tail-status').getAttribute('data-state')).toBe('offline');
  });

  it("filters the view to a mined pattern's lines", async () => {
    await page.getByTestId('filter-level').selectOption('');
    const patterns = page.getByTestId('pattern-item');
    await expect.poll(() => patterns.count()).toBeGreaterThan(1);
    const timeouts = patterns.filter({ hasText: 'payment timeout' }).first();
    const patternId = await timeouts.getAttribute('data-pattern-id');
    await timeouts.click();
    expect(new URL(page.url()).searchParams.get('pattern')).toBe(patternId);
    await rowsWhere(page, (messages) => messages.length > 0 && messages.every((m) => m.startsWith('payment timeout for order')));
    await screenshot(page, 'patterns');
  });

  it('scrolls through 10 000 lines with no frame of 50 ms or more, and moves with j and k', async () => {
    await page.goto(`${base}/?project=${checkout}&range=24h`);
    await rowsWhere(page, (messages) => messages.length > 10);
    const first = await page.evaluate(() => performance.getEntriesByName('explorer:first-page')[0]?.startTime ?? -1);
    expect(first).toBeGreaterThan(0);
    // The figure itself (300 ms for a project of a million logs) is the bench's (BENCH_ONLY=explorer),
    // on a quiet machine; here, beside other test files, a bound that catches a page gone slow.
    expect(first).toBeLessThan(1500);

    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    expect(await page.locator('[data-testid="log-row"][aria-selected="true"]').count()).toBe(1);
    await page.keyboard.press('/');
    expect(await page.evaluate(() => (globalThis as unknown as BrowserWindow).document.activeElement?.getAttribute('data-testid'))).toBe('filter-search');
    await page.getByTestId('filter-search').blur();

    // Scroll to the end at a steady pace, pages loading as it goes; the browser reports every
    // frame that took 50 ms or more (Long Animation Frames) and what it spent its time on.
    const scrollToEnd = () =>
      page.evaluate(async () => {
        const w = globalThis as unknown as BrowserWindow;
        const list = w.document.querySelector('[data-testid="log-list"]')!;
        // What each long frame spent its time on (its scripts, then style and layout), for the log.
        const seen: string[] = [];
        type Frame = { duration: number; startTime: number; styleAndLayoutStart: number; scripts?: { invoker: string; duration: number }[] };
        const observer = new w.PerformanceObserver((entries) =>
          entries.getEntries().forEach((e) => {
            const f = e as unknown as Frame;
            const scripts = (f.scripts ?? []).map((x) => `${x.invoker} ${Math.round(x.duration)} ms`).join(', ');
            const layout = f.styleAndLayoutStart ? Math.round(f.startTime + f.duration - f.styleAndLayoutStart) : 0;
            seen.push(`${Math.round(e.duration)} ms: scripts [${scripts}], style and layout ${layout} ms`);
          }),
        );
        observer.observe({ type: 'long-animation-frame', buffered: false });
        const started = performance.now();
        while (performance.now() - started < 30_000) {
          await new Promise((resolve) => w.requestAnimationFrame(resolve));
          list.scrollTop += 400;
          if (Number(list.dataset.loaded ?? 0) >= 10_000 && list.scrollTop + list.clientHeight >= list.scrollHeight - 2) break;
        }
        observer.disconnect();
        return { seen, loaded: Number(list.dataset.loaded ?? 0) };
      });
    let result = await scrollToEnd();
    process.stderr.write(`explorer scroll: frames of 50 ms or more: ${result.seen.length === 0 ? 'none' : result.seen.join('; ')}\n`);
    for (let again = 1; again <= 2 && result.seen.length > 0; again++) {
      // The target is no such frame. This machine's two cores also run the server, its database
      // and other test files (in CI, another package's tests too): a frame stretched by them is
      // measured again, from a fresh load, up to twice (two runs in five of all the app's test files
      // at once saw such frames on both of two tries); a page gone slow has them every time.
      await page.goto(`${base}/?project=${checkout}&range=24h`);
      await rowsWhere(page, (messages) => messages.length > 10);
      result = await scrollToEnd();
      process.stderr.write(`explorer scroll, again: frames of 50 ms or more: ${result.seen.length === 0 ? 'none' : result.seen.join('; ')}\n`);
    }
    expect(result.loaded).toBeGreaterThanOrEqual(10_000);
    expect(result.seen).toEqual([]);
    await screenshot(page, 'scrolled');
  }, 120_000);

  it('reads well in a dark theme and on a phone', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto(`${base}/?project=${checkout}&range=24h&level=error`);
    await rowsWhere(page, (_m, levels) => levels.length > 0 && levels.every((l) => l === 'error'));
    const background = await page.evaluate(() => {
      const w = globalThis as unknown as BrowserWindow;
      return w.getComputedStyle(w.document.body).backgroundColor;
    });
    const [r, g, b] = background.match(/\d+/g)!.map(Number);
    expect(r! + g! + b!).toBeLessThan(3 * 80);
    await screenshot(page, 'dark');
    await page.setViewportSize({ width: 390, height: 844 });
    await rowsWhere(page, (messages) => messages.length > 0);
    // Measured once the page has laid itself out again for the new width: the rows are already
    // there from before the resize, and a first read could catch the layout of the wider window.
    const overflow = () =>
      page.evaluate(() => {
        const { documentElement } = (globalThis as unknown as BrowserWindow).document;
        return documentElement.scrollWidth - documentElement.clientWidth;
      });
    await expect.poll(overflow, { timeout: 2_000 }).toBeLessThanOrEqual(0);
    await screenshot(page, 'phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('signs out, ending the session', async () => {
    const token = await page.evaluate(() => (globalThis as unknown as BrowserWindow).sessionStorage.getItem('logtracker.token'));
    expect(token).toBeTruthy();
    await page.getByTestId('signout').click();
    await page.getByTestId('signin-form').waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as BrowserWindow).sessionStorage.getItem('logtracker.token'))).toBeNull();
    const after = await t.app.inject({ method: 'GET', url: '/api/user', headers: { authorization: `Bearer ${token}` } });
    expect(after.statusCode).toBe(401);
    expect(problems).toEqual([]);
  });
});
