import type { Level } from './entry.js';

const NAMED: Record<string, Level> = {
  fatal: 'error', panic: 'error', emerg: 'error', emergency: 'error', alert: 'error', crit: 'error',
  critical: 'error', severe: 'error', error: 'error', err: 'error',
  warning: 'warning', warn: 'warning',
  notice: 'info', info: 'info', information: 'info', informational: 'info', log: 'info',
  debug: 'debug', trace: 'debug', verbose: 'debug', silly: 'debug', fine: 'debug', finer: 'debug', finest: 'debug',
};

/**
 * The level a structured log names: a name (`warn`, `fatal`, `trace`…, any case) or pino's number
 * (10 trace, 20 debug → debug; 30 → info; 40 → warning; 50 error, 60 fatal → error).
 */
export function levelOf(value: unknown): Level | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) {
    if (value >= 50) return 'error';
    if (value >= 40) return 'warning';
    if (value >= 30) return 'info';
    return 'debug';
  }
  if (typeof value !== 'string') return undefined;
  const name = value.trim().toLowerCase();
  if (/^\d+$/.test(name)) return levelOf(Number(name));
  return NAMED[name];
}

const ESC = String.fromCharCode(0x1b);
const BEL = String.fromCharCode(0x07);
// CSI sequences (colours, cursor moves) and OSC sequences (titles, hyperlinks) that terminals
// interpret and a stored message should not carry.
const ANSI = new RegExp(`${ESC}\\[[0-?]*[ -/]*[@-~]|${ESC}\\][^${BEL}${ESC}]*(?:${BEL}|${ESC}\\\\)|${ESC}[@-Z\\\\-_]`, 'g');

export function stripAnsi(text: string): string {
  return text.includes(ESC) ? text.replace(ANSI, '') : text;
}

/**
 * What marks a plain line's level, as build tools, test runners and loggers print it: an upper-case
 * word (`ERROR`, `WARN`, `npm ERR!`), a bracketed name of any case (`[error]`, `[Warning]`),
 * logfmt's `level=`, a GitHub Actions annotation (`::error::`), Android's `E/Tag:`, and a JavaScript
 * error's first line (`TypeError: …`). The earliest marker of a line decides.
 */
const MARKERS: { pattern: RegExp; level: (match: RegExpExecArray) => Level | undefined }[] = [
  { pattern: /(?<![\w-])(FATAL|CRITICAL|PANIC|SEVERE|ERROR|ERR|WARNING|WARN|INFO|NOTICE|DEBUG|TRACE)(?![\w-])/, level: (m) => levelOf(m[1]) },
  { pattern: /\[\s*(fatal|critical|crit|error|err|warning|warn|info|notice|debug|trace|verbose)\s*\]/i, level: (m) => levelOf(m[1]) },
  { pattern: /(?<![\w-])(?:level|lvl|severity)=["']?(\w+)/i, level: (m) => levelOf(m[1]) },
  { pattern: /^::(error|warning|notice|debug)\b/, level: (m) => levelOf(m[1]) },
  { pattern: /^([EWIDVF])\/[\w.$-]+/, level: (m) => LOGCAT[m[1]!] },
  { pattern: /^\s*(?:Uncaught )?[A-Z]\w*(?:Error|Exception)(?::|$)/, level: () => 'error' },
];
const LOGCAT: Record<string, Level> = { F: 'error', E: 'error', W: 'warning', I: 'info', D: 'debug', V: 'debug' };

/** A plain line's level from its markers (colour codes already stripped), or undefined. */
export function markedLevel(line: string): Level | undefined {
  let best: { at: number; level: Level } | undefined;
  for (const marker of MARKERS) {
    const match = marker.pattern.exec(line);
    if (!match || (best && match.index >= best.at)) continue;
    const level = marker.level(match);
    if (level) best = { at: match.index, level };
  }
  return best?.level;
}
