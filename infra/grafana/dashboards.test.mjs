// Checks the Grafana dashboards against what the apps export, so that the two cannot drift:
//   node --test infra/grafana/        (after `pnpm build`: the apps are built from their dist/)
// Every dashboard parses, picks its Prometheus data source through a variable, and every metric
// name in every panel's query is one that /metrics of one of the apps declares (both apps are
// built in memory here and scraped through `inject`).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const GRAFANA = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(GRAFANA, '..', '..');
const APPS = ['marketplace-api', 'logtracker-api'];

/** PromQL words that are not metric names (aggregations and functions are followed by `(`, stripped below). */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'and', 'or', 'unless', 'inf', 'nan']);

/** The metric names a PromQL expression reads. */
export function metricNamesOf(expr) {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = [];
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const rest = stripped.slice(match.index + match[0].length);
    if (/^\s*\(/.test(rest)) continue; // a function or an aggregation
    if (KEYWORDS.has(match[0].toLowerCase())) continue;
    names.push(match[0]);
  }
  return names;
}

/** Every series name an exposition can hold: each declared metric, and a histogram's or summary's parts. */
function exportedNames(exposition) {
  const names = new Set();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') for (const part of ['_bucket', '_sum', '_count']) names.add(name + part);
    if (type === 'summary') for (const part of ['_sum', '_count']) names.add(name + part);
  }
  return names;
}

/** Builds an app from its dist/ on an in-memory database and answers its /metrics text. */
async function scrapeApp(app) {
  const { loadConfig } = await import(join(ROOT, 'apps', app, 'dist', 'config.js'));
  const { buildApp } = await import(join(ROOT, 'apps', app, 'dist', 'app.js'));
  const built = await buildApp(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: 'memory://' }));
  try {
    const response = await built.inject({ method: 'GET', url: '/metrics' });
    assert.equal(response.statusCode, 200, response.body);
    return response.body;
  } finally {
    await built.close();
  }
}

function panelsOf(dashboard) {
  return dashboard.panels.flatMap((panel) => (panel.type === 'row' ? (panel.panels ?? []) : [panel]));
}

const dashboards = readdirSync(GRAFANA)
  .filter((file) => file.endsWith('.json'))
  .map((file) => ({ file, text: readFileSync(join(GRAFANA, file), 'utf8') }));

describe('Grafana dashboards', () => {
  const exported = new Set();
  before(async () => {
    for (const app of APPS) for (const name of exportedNames(await scrapeApp(app))) exported.add(name);
  });
  after(() => exported.clear());

  it('are there', () => {
    assert.ok(dashboards.length > 0, 'no dashboard JSON under infra/grafana');
  });

  for (const { file, text } of dashboards) {
    describe(file, () => {
      const dashboard = JSON.parse(text);

      it('picks its Prometheus data source through a variable, used by every panel and query', () => {
        const variable = dashboard.templating.list.find((v) => v.type === 'datasource');
        assert.ok(variable, 'no data source variable');
        assert.equal(variable.query, 'prometheus');
        const reference = `\${${variable.name}}`;
        for (const panel of panelsOf(dashboard)) {
          assert.equal(panel.datasource?.uid, reference, `panel "${panel.title}" has its own data source`);
          for (const target of panel.targets ?? []) assert.equal(target.datasource?.uid, reference, `a query of "${panel.title}" has its own data source`);
        }
      });

      it('has unique panel ids and a query in every panel', () => {
        const ids = dashboard.panels.map((panel) => panel.id);
        assert.equal(new Set(ids).size, ids.length, 'duplicate panel ids');
        for (const panel of panelsOf(dashboard)) {
          assert.ok(panel.targets?.length > 0, `panel "${panel.title}" has no query`);
          for (const target of panel.targets) assert.ok(metricNamesOf(target.expr).length > 0, `"${panel.title}": no metric in ${target.expr}`);
        }
      });

      it('reads only metrics the apps export', () => {
        const unknown = [];
        for (const panel of panelsOf(dashboard)) {
          for (const target of panel.targets ?? []) {
            for (const name of metricNamesOf(target.expr)) if (!exported.has(name)) unknown.push(`${panel.title}: ${name}`);
          }
        }
        assert.deepEqual(unknown, []);
      });

      it('shows what operators watch: rate, latency percentiles, 5xx, pool, ingest, job failures, outbox lag, websockets', () => {
        const exprs = panelsOf(dashboard).flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
        const has = (pattern) => exprs.some((expr) => pattern.test(expr));
        assert.ok(has(/rate\(http_request_duration_seconds_count/), 'request rate');
        for (const q of ['0.5', '0.95', '0.99']) assert.ok(has(new RegExp(`histogram_quantile\\(${q.replace('.', '\\.')}, .*http_request_duration_seconds_bucket`)), `p${q}`);
        assert.ok(has(/status_code=~"5\.\."/), '5xx rate');
        assert.ok(has(/db_queries_in_flight/) && has(/db_pool_size/), 'database pool');
        assert.ok(has(/logtracker_logs_accepted_total/), 'ingest rate');
        assert.ok(has(/job_runs_total\{[^}]*outcome="failure"/), 'job failures');
        assert.ok(has(/marketplace_outbox_lag_seconds/), 'outbox lag');
        assert.ok(has(/websocket_connections/), 'websocket connections');
      });
    });
  }
});

describe('metricNamesOf', () => {
  it('finds the metrics of a query, not its functions, labels or variables', () => {
    assert.deepEqual(
      metricNamesOf('histogram_quantile(0.95, sum by (job, le) (rate(http_request_duration_seconds_bucket{job=~"$job", route="a b"}[$__rate_interval])))'),
      ['http_request_duration_seconds_bucket'],
    );
    assert.deepEqual(metricNamesOf('db_queries_in_flight / on (pool) db_pool_size'), ['db_queries_in_flight', 'db_pool_size']);
  });
});
