/** The log tracker's payloads, as the explorer reads them (docs/logtracker.md). */

export const LEVELS = ['error', 'warning', 'info', 'debug'] as const;
export type Level = (typeof LEVELS)[number];

export interface User {
  id: number;
  name: string;
  email: string;
}

export interface Project {
  id: number;
  name: string;
  description?: string | null;
  role?: string;
  /** Being added to the API: shown when present. */
  log_count?: number;
}

export interface Log {
  id: number;
  project_id: number;
  level: Level;
  message: string;
  context: unknown;
  source: string | null;
  timestamp: string;
  pattern_id: number | null;
}

export interface ListMeta {
  total?: number;
  total_is_estimate?: boolean;
  next_cursor?: string | null;
}

export interface StatsBucket {
  start: string;
  total: number;
  error: number;
  warning: number;
  info: number;
  debug: number;
}

export interface Stats {
  bucket_seconds: number;
  series: StatsBucket[];
  total: number;
  by_level?: Partial<Record<Level, number>>;
}

export interface Pattern {
  id: number;
  template: string;
  count: number;
  levels: string[];
  first_seen: string;
  last_seen: string;
  sample?: string;
}

export interface Insights {
  latest_analysis: { new_patterns?: { pattern_id: number }[] } | null;
  patterns: Pattern[];
}
