import { TemplateMiner, type DrainOptions } from './drain.js';

/**
 * Grouping accuracy of the template miner on labelled samples in Loghub's CSV layout (a `Content`
 * column holding the message, an `EventId` column holding its true template): the measure the
 * Loghub benchmark reports, so the miner can be compared with Drain's published figures.
 */

/**
 * Drain's grouping accuracy on Loghub's 2k samples (Loghub-2.0, RQ2; Android and Windows from Loghub's
 * original labels). The first eight are the miner's development samples; the others are systems it
 * was not developed on.
 */
export const DRAIN_GROUPING_ACCURACY: Readonly<Record<string, number>> = {
  Apache: 1.0,
  Hadoop: 0.948,
  Spark: 0.922,
  Zookeeper: 0.967,
  OpenSSH: 0.789,
  Linux: 0.69,
  Android: 0.911,
  Windows: 0.997,
  BGL: 0.963,
  HDFS: 0.998,
  HealthApp: 0.78,
  HPC: 0.887,
  Mac: 0.787,
  OpenStack: 0.733,
  Proxifier: 0.527,
  Thunderbird: 0.955,
};

/** RFC 4180: quoted fields may hold commas, doubled quotes and line breaks. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** Share of lines whose predicted group holds exactly the lines of their true group. */
export function groupingAccuracy(predicted: readonly (string | number)[], truth: readonly string[]): number {
  const groups = <K>(keys: readonly K[]) => {
    const map = new Map<K, number[]>();
    keys.forEach((k, i) => {
      const list = map.get(k);
      if (list) list.push(i);
      else map.set(k, [i]);
    });
    return map;
  };
  const byPrediction = groups(predicted);
  let correct = 0;
  for (const [label, lines] of groups(truth)) {
    const first = lines[0];
    const sameGroup = first === undefined ? undefined : byPrediction.get(predicted[first] ?? NaN);
    if (sameGroup?.length === lines.length && sameGroup.every((i) => truth[i] === label)) correct += lines.length;
  }
  return truth.length === 0 ? 1 : correct / truth.length;
}

export interface SampleResult {
  sample: string;
  lines: number;
  accuracy: number;
  /** Drain's published figure for the sample, when it has one. */
  drain: number | undefined;
}

/** Mines a labelled CSV sample with a fresh miner and scores its grouping. */
export function evaluateSample(sample: string, csv: string, options?: Partial<DrainOptions>): SampleResult {
  const [header, ...rows] = parseCsv(csv).filter((r) => r.length > 1);
  const content = header?.indexOf('Content') ?? -1;
  const eventId = header?.indexOf('EventId') ?? -1;
  if (content < 0 || eventId < 0) throw new Error(`${sample}: the CSV has no Content or EventId column`);
  const miner = new TemplateMiner(options);
  const assigned = rows.map((r) => miner.assign(r[content] ?? ''));
  const predicted = assigned.map((id) => miner.resolve(id));
  const truth = rows.map((r) => r[eventId] ?? '');
  return { sample, lines: rows.length, accuracy: groupingAccuracy(predicted, truth), drain: DRAIN_GROUPING_ACCURACY[sample] };
}

/** The sample's name from a Loghub file name (`Linux_2k.log_structured_corrected.csv` → `Linux`). */
export function sampleName(file: string): string {
  return file.split(/[\\/]/).pop()?.split('_')[0] ?? file;
}

/** The results as a plain-text table with their average. */
export function formatTable(results: readonly SampleResult[]): string {
  const average = (pick: (r: SampleResult) => number | undefined) => {
    const values = results.map(pick).filter((v): v is number => v !== undefined);
    return values.length ? (values.reduce((a, b) => a + b, 0) / values.length).toFixed(3) : '—';
  };
  const rows = results.map((r) => `${r.sample.padEnd(12)} ${String(r.lines).padStart(5)}  ${r.accuracy.toFixed(3)}   ${r.drain?.toFixed(3) ?? '—'}`);
  return ['sample       lines  GA      Drain GA', ...rows, `${'average'.padEnd(12)}        ${average((r) => r.accuracy)}   ${average((r) => r.drain)}`].join('\n');
}
