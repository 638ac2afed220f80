import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

/**
 * The Chromium the explorer's browser tests drive: CHROMIUM_PATH, or Debian's package. Browsers
 * downloaded by test tools cannot be fetched everywhere; a system Chromium can.
 */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((path): path is string => Boolean(path) && existsSync(path as string));
}

export const MISSING_CHROMIUM =
  "The log explorer's browser tests need Chromium: install Debian's package (apt-get install chromium) or set CHROMIUM_PATH to a Chromium or Chrome binary. .ci/run installs it.";

/** Where the screenshots of the main views are saved (a CI artefact; not committed). */
export const SCREENSHOTS = fileURLToPath(new URL('../test-results/explorer/', import.meta.url));

/** Headless Chromium, started as this closed network needs (no background connections). */
export function launchChromium(executablePath: string): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** A page that records every Content-Security-Policy violation and every uncaught error. */
export async function watchedPage(context: BrowserContext) {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) problems.push(`csp: ${message.text()}`);
  });
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, problems };
}

export async function signIn(page: Page, email: string, password: string) {
  await page.getByTestId('signin-email').fill(email);
  await page.getByTestId('signin-password').fill(password);
  await page.getByTestId('signin-submit').click();
  await page.getByTestId('project-list').waitFor();
}

/** The messages of the rows on screen, top first. */
export async function rowMessages(page: Page): Promise<string[]> {
  return page.getByTestId('log-message').allTextContents();
}

/** The levels of the rows on screen. */
export async function rowLevels(page: Page): Promise<string[]> {
  return page.getByTestId('log-row').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-level') ?? ''));
}

/** Waits until the list shows rows and none is the one from before a filter changed. */
export async function rowsWhere(page: Page, check: (messages: string[], levels: string[]) => boolean) {
  await expect.poll(async () => check(await rowMessages(page), await rowLevels(page)), { timeout: 5000 }).toBe(true);
}

export async function screenshot(page: Page, name: string) {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

/** An element as the page functions below read it. */
interface PageElement {
  scrollTop: number;
  clientHeight: number;
  scrollHeight: number;
  dataset: Record<string, string | undefined>;
  getAttribute(name: string): string | null;
}

/**
 * The little of the browser that the tests' page functions (`page.evaluate`) use, typed here: the
 * test program is Node's and has no DOM types. Inside a page function: `const w = browserWindow()`.
 */
export interface BrowserWindow {
  document: {
    querySelector(selector: string): PageElement | null;
    activeElement: PageElement | null;
    body: unknown;
    documentElement: { scrollWidth: number; clientWidth: number };
  };
  sessionStorage: { getItem(key: string): string | null };
  requestAnimationFrame(callback: (time: number) => void): number;
  getComputedStyle(element: unknown): { backgroundColor: string };
  PerformanceObserver: new (callback: (list: { getEntries(): { duration: number }[] }) => void) => {
    observe(options: { type: string; buffered?: boolean }): void;
    disconnect(): void;
  };
  __injected?: number;
}

