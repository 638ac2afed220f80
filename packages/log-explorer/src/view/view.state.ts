import { LEVELS, type Level } from '../api/api.types';

export const RANGES = ['15m', '1h', '24h', '7d', 'custom'] as const;
export type Range = (typeof RANGES)[number];
export const DEFAULT_RANGE: Range = '24h';

const RANGE_MS: Record<Exclude<Range, 'custom'>, number> = {
  '15m': 15 * 60_000,
  '1h': 60 * 60_000,
  '24h': 24 * 60 * 60_000,
  '7d': 7 * 24 * 60 * 60_000,
};

/** Everything a view is made of; it lives in the URL's query so a link restores it exactly. */
export interface ViewState {
  project: number | null;
  level: Level | '';
  source: string;
  q: string;
  range: Range;
  /** ISO 8601 instants, for the custom range. */
  from: string;
  to: string;
  pattern: number | null;
  log: number | null;
}

export const EMPTY_VIEW: ViewState = {
  project: null,
  level: '',
  source: '',
  q: '',
  range: DEFAULT_RANGE,
  from: '',
  to: '',
  pattern: null,
  log: null,
};

function positiveInt(value: string | null): number | null {
  if (!value || !/^\d+$/.test(value)) return null;
  const n = Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

function instant(value: string | null): string {
  if (!value) return '';
  const t = Date.parse(value);
  return Number.isNaN(t) ? '' : new Date(t).toISOString();
}

export function parseView(search: string): ViewState {
  const p = new URLSearchParams(search);
  const level = p.get('level') ?? '';
  const range = p.get('range') ?? '';
  return {
    project: positiveInt(p.get('project')),
    level: (LEVELS as readonly string[]).includes(level) ? (level as Level) : '',
    source: p.get('source') ?? '',
    q: p.get('q') ?? '',
    range: (RANGES as readonly string[]).includes(range) ? (range as Range) : DEFAULT_RANGE,
    from: instant(p.get('from')),
    to: instant(p.get('to')),
    pattern: positiveInt(p.get('pattern')),
    log: positiveInt(p.get('log')),
  };
}

/** The query string of a view, leaving out what is at its default. */
export function serializeView(view: ViewState): string {
  const p = new URLSearchParams();
  if (view.project) p.set('project', String(view.project));
  if (view.level) p.set('level', view.level);
  if (view.source) p.set('source', view.source);
  if (view.q) p.set('q', view.q);
  if (view.range !== DEFAULT_RANGE) p.set('range', view.range);
  if (view.range === 'custom') {
    if (view.from) p.set('from', view.from);
    if (view.to) p.set('to', view.to);
  }
  if (view.pattern) p.set('pattern', String(view.pattern));
  if (view.log) p.set('log', String(view.log));
  const text = p.toString();
  return text ? `?${text}` : '';
}

export function viewUrl(view: ViewState): string {
  return `${location.origin}${location.pathname}${serializeView(view)}`;
}

/** The instants a view covers; a relative range ends now (`to` is then left open). */
export function resolveRange(view: ViewState, now = Date.now()): { from: string; to: string } {
  if (view.range === 'custom') return { from: view.from, to: view.to };
  return { from: new Date(now - RANGE_MS[view.range]).toISOString(), to: '' };
}

/** The filters that decide which logs a list holds (the project, the open log and the range's `now` aside). */
export function filterKey(view: ViewState): string {
  return JSON.stringify([view.project, view.level, view.source, view.q, view.range, view.from, view.to, view.pattern]);
}
