import { envelope, iso, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { LOG_LEVELS, type LogLevel } from '../../db/schema/index.js';
import { logLevel } from '../logs/index.js';
import { TIME_RANGES, timeRange } from '../stats/index.js';

export const FOCUS_AREAS = ['errors', 'performance', 'security', 'new_patterns', 'anomalies', 'sources'] as const;
export type FocusArea = (typeof FOCUS_AREAS)[number];

export const AnalyzeBody = z.object({
  time_range: timeRange.default('24h'),
  log_levels: z
    .array(logLevel)
    .min(1, 'Give at least one level, or leave log_levels out for all')
    .max(LOG_LEVELS.length)
    .refine((l) => new Set(l).size === l.length, 'Levels must be unique')
    .optional(),
  focus_areas: z
    .array(z.enum(FOCUS_AREAS, { message: `Must be one of: ${FOCUS_AREAS.join(', ')}` }))
    .max(FOCUS_AREAS.length)
    .refine((l) => new Set(l).size === l.length, 'Focus areas must be unique')
    .optional(),
});
export type AnalyzeBody = z.infer<typeof AnalyzeBody>;

export const PatternResponse = z.object({
  id: z.number().int(),
  template: z.string(),
  count: z.number().int(),
  levels: z.array(z.enum(LOG_LEVELS)),
  first_seen: timestamp.nullable(),
  last_seen: timestamp.nullable(),
  sample: z.string().nullable(),
});

const patternShare = z.object({
  pattern_id: z.number().int(),
  template: z.string(),
  count: z.number().int(),
  share: z.number().describe('Share of the analysed logs, 0–1'),
  levels: z.array(z.enum(LOG_LEVELS)),
  sample: z.string().nullable(),
});

const anomaly = z.object({
  kind: z.enum(['pattern', 'level']),
  pattern_id: z.number().int().nullable(),
  template: z.string().nullable(),
  level: z.enum(LOG_LEVELS).nullable(),
  bucket_start: timestamp,
  bucket_seconds: z.number().int(),
  count: z.number().int(),
  baseline_per_bucket: z.number().describe('Mean count per bucket over the previous period'),
  ratio: z.number().nullable().describe('count ÷ baseline; null when the baseline is zero'),
});

export const AnalysisResult = z.object({
  time_range: z.enum(TIME_RANGES),
  from: timestamp,
  to: timestamp,
  log_levels: z.array(z.enum(LOG_LEVELS)),
  focus_areas: z.array(z.enum(FOCUS_AREAS)),
  total: z.number().int(),
  by_level: z.record(z.enum(LOG_LEVELS), z.number().int()),
  error_rate: z.number(),
  previous_error_rate: z.number(),
  error_rate_change: z.number().describe('Difference of error rates against the previous period'),
  top_patterns: z.array(patternShare),
  new_patterns: z.array(patternShare),
  anomalies: z.array(anomaly),
  top_sources: z.array(z.object({ source: z.string().nullable(), count: z.number().int() })),
  focus: z.record(z.string(), z.array(z.number().int())).describe('Pattern ids that bear on each focus area'),
  mined: z.object({ logs: z.number().int(), patterns: z.number().int() }),
});
export type AnalysisResult = z.infer<typeof AnalysisResult>;

export const AnalysisResponse = z.object({
  id: z.number().int(),
  project_id: z.number().int(),
  created_at: timestamp,
  summary: z.string(),
  narrative: z.string().nullable(),
  ai_model: z.string().nullable(),
  result: AnalysisResult,
});

export const AnalysisEnvelope = envelope(AnalysisResponse);
export const InsightsEnvelope = envelope(
  z.object({ latest_analysis: AnalysisResponse.nullable(), patterns: z.array(PatternResponse) }),
);

export function presentPattern(p: {
  id: number;
  template: string;
  count: number;
  levels: LogLevel[];
  firstSeen: Date | null;
  lastSeen: Date | null;
  sample: string | null;
}) {
  return {
    id: p.id,
    template: p.template,
    count: Number(p.count),
    levels: p.levels,
    first_seen: iso(p.firstSeen),
    last_seen: iso(p.lastSeen),
    sample: p.sample,
  };
}

export function presentAnalysis(a: {
  id: number;
  projectId: number;
  createdAt: Date;
  summary: string;
  narrative: string | null;
  aiModel: string | null;
  result: Record<string, unknown>;
}) {
  return {
    id: a.id,
    project_id: a.projectId,
    created_at: iso(a.createdAt),
    summary: a.summary,
    narrative: a.narrative,
    ai_model: a.aiModel,
    result: a.result as AnalysisResult,
  };
}
