// The bench's log data: one set of message templates and words, used both by the SQL that loads
// millions of rows server-side and by the JavaScript that builds ingest batches.
//
// Templates take positional arguments (PostgreSQL's format() and fill() below agree on them):
//   %1$s a number (ids, counts)   %2$s an IPv4 address   %3$s a duration or size
//   %4$s a word from WORDS        %5$s a short hex id
// WORDS are drawn with a skewed distribution, so the first words are common and the last rare.
// The common search term (COMMON_TERM) sits in three templates (~10 % of messages); the rare one
// (RARE_TERM) only in RARE_TEMPLATE, used for ~0.05 % of messages.
import { createRequire } from 'node:module';

/** postgres.js is a dependency of @repo/db, not of this app: resolve it from there. */
export const postgres = createRequire(new URL('../../../packages/db/package.json', import.meta.url))('postgres');

export const TEMPLATES = [
  'GET /api/orders/%1$s 200 in %3$s ms',
  'POST /api/checkout 201 in %3$s ms (cart %5$s)',
  'User %1$s logged in from %2$s',
  'User %1$s logged out after %3$s s',
  'Failed login for user %1$s from %2$s: invalid password',
  'Upstream %4$s timeout after %3$s ms',
  'Database query timeout on table %4$s after %3$s ms',
  'Request %5$s to %4$s-service timeout, retrying (attempt 2 of 5)',
  'Cache miss for key user:%1$s:profile',
  'Cache for %4$s warmed up with %1$s entries',
  'Payment %5$s declined for order %1$s: insufficient funds',
  'Payment %5$s captured for order %1$s (%3$s cents)',
  'Job %5$s finished: processed %1$s records in %3$s ms',
  'Job %5$s started on worker %2$s',
  'Sending email to user %1$s with template %4$s',
  'Webhook delivery %5$s to %2$s failed with status 502',
  'Disk usage on volume %4$s: %3$s MB free',
  'Feature flag %4$s evaluated to true for user %1$s',
  'Slow query on table %4$s took %3$s ms',
  'Connection pool exhausted: %3$s clients waiting on %2$s',
  'Received SIGHUP, reloading configuration of %4$s',
  'Inventory for SKU %5$s dropped to %3$s units',
  'Order %1$s shipped via %4$s, tracking number %5$s',
  'Rate limit exceeded for client %2$s on /api/%4$s',
  'Health check of %4$s passed in %3$s ms',
  'Session %5$s expired for user %1$s',
  'Uploaded file %5$s.pdf (%3$s KB) for user %1$s',
  'Search for "%4$s" returned %1$s results in %3$s ms',
  'TLS handshake with %2$s failed: certificate expired',
  'Scheduled report %4$s generated for account %1$s',
];

export const RARE_TEMPLATE = 'Deadlock detected while updating invoice %1$s, transaction %5$s rolled back';
export const RARE_SHARE = 0.0005;
export const COMMON_TERM = 'timeout';
export const RARE_TERM = 'deadlock';

export const WORDS = [
  'billing', 'checkout', 'inventory', 'accounts', 'search', 'catalog', 'shipping', 'payments', 'orders',
  'sessions', 'reports', 'notifications', 'analytics', 'pricing', 'recommendations', 'reviews', 'coupons',
  'warehouse', 'invoices', 'refunds', 'subscriptions', 'loyalty', 'gateway', 'ledger', 'fraud', 'profiles',
  'carts', 'media', 'thumbnails', 'exports', 'imports', 'geolocation', 'translations', 'audit', 'webhooks',
  'scheduler', 'mailer', 'sms', 'ratings', 'wishlist', 'returns', 'tax', 'currency', 'compliance',
  'onboarding', 'kyc', 'dispatch', 'telemetry', 'backups', 'archival', 'quarantine', 'sandbox', 'canary',
  'blueprint', 'zeppelin', 'quokka', 'xylograph', 'juniper', 'obsidian', 'marzipan',
];

export const SOURCES = [
  'api-gateway', 'auth-service', 'billing-service', 'checkout-service', 'email-worker',
  'inventory-service', 'notification-worker', 'payment-service', 'scheduler', 'search-service',
];

const REGIONS = ['eu-west-1', 'eu-central-1', 'us-east-1', 'us-west-2', 'ap-southeast-1'];

/** Level by share: 70 % info, 15 % debug, 10 % warning, 5 % error. */
function levelOf(r) {
  return r < 0.7 ? 'info' : r < 0.85 ? 'debug' : r < 0.95 ? 'warning' : 'error';
}

/**
 * One INSERT … SELECT generating rows [first, last] (from 0) of a data set of `total` rows spread
 * over the last `days` days, in time order, the projects' rows interleaved (row i belongs to
 * projects[i % projects]): logs stored as they are shipped, so that ids grow with time as they do
 * on a deployment. Parameters: $1 project ids, $2 first, $3 last, $4 templates, $5 words,
 * $6 sources, $7 regions, $8 rare template, $9 rare share, $10 days, $11 total.
 */
export const INSERT_GENERATED_SQL = `
insert into logs (project_id, level, message, context, source, "timestamp", received_at)
select ($1::int[])[1 + (i % cardinality($1::int[]))::int],
       case when r_level < 0.70 then 'info' when r_level < 0.85 then 'debug'
            when r_level < 0.95 then 'warning' else 'error' end,
       format(case when r_rare < $9::float8 then $8::text
                   else ($4::text[])[1 + floor(r_tpl * cardinality($4::text[]))::int] end,
              a_num, a_ip, a_ms, a_word, a_hex),
       case when r_ctx < 0.5 then null
            else jsonb_build_object('request_id', a_hex, 'user_id', a_num,
                                    'region', ($7::text[])[1 + floor(r_ctx * 1000)::int % cardinality($7::text[])]) end,
       ($6::text[])[1 + floor(r_src * cardinality($6::text[]))::int],
       ts,
       ts + make_interval(secs => r_src * 2)
  from (select i, random() as r_level, random() as r_rare, random() as r_tpl, random() as r_ctx, random() as r_src,
               1 + floor(random() * 999999)::int as a_num,
               '10.' || floor(random() * 256)::int || '.' || floor(random() * 256)::int || '.' || floor(random() * 256)::int as a_ip,
               1 + floor(random() * random() * 5000)::int as a_ms,
               ($5::text[])[1 + floor(power(random(), 3) * cardinality($5::text[]))::int] as a_word,
               substr(md5(random()::text), 1, 8) as a_hex,
               now() - make_interval(days => $10::int) * (1 - (i + random()) / $11::float8) as ts
          from generate_series($2::bigint, $3::bigint) as i) as g`;

/** The parameters of INSERT_GENERATED_SQL: rows [first, last] of `total` over `days` days. */
export function insertGeneratedParams(projectIds, first, last, total, days = 30) {
  return [projectIds, first, last, TEMPLATES, WORDS, SOURCES, REGIONS, RARE_TEMPLATE, RARE_SHARE, days, total];
}

/**
 * The slices [first, last] of a generated data set of `total` rows over `days` days, each at most
 * `chunk` rows and six hours: loaded two at a time, the ids of one day then reach into the days
 * beside it only, as a day's ids do when late logs arrive.
 */
export function generatedSlices(total, days, chunk) {
  const size = Math.max(1, Math.min(chunk, Math.ceil(total / (days * 4))));
  const slices = [];
  for (let first = 0; first < total; first += size) slices.push([first, Math.min(total, first + size) - 1]);
  return slices;
}

/** A small seeded generator, so every run sends the same batches. */
export function seededRandom(seed = 42) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fill(template, args) {
  return template.replace(/%(\d)\$s/g, (_, n) => String(args[Number(n) - 1]));
}

/**
 * `count` log entries as a client sends them, with timestamps over the `spreadMs` before `now`;
 * `padTo` lengthens each message to about that many characters (for the memory batches).
 */
export function makeEntries(count, { random = seededRandom(), now = Date.now(), spreadMs = 60_000, padTo = 0 } = {}) {
  const pick = (list, r = random()) => list[Math.floor(r * list.length)];
  return Array.from({ length: count }, () => {
    const hex = Math.floor(random() * 0xffffffff).toString(16).padStart(8, '0');
    const args = [
      1 + Math.floor(random() * 999_999),
      `10.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`,
      1 + Math.floor(random() * random() * 5000),
      pick(WORDS, random() ** 3),
      hex,
    ];
    let message = fill(random() < RARE_SHARE ? RARE_TEMPLATE : pick(TEMPLATES), args);
    if (padTo > message.length) {
      const words = [];
      while (message.length + words.join(' ').length < padTo) words.push(pick(WORDS));
      message = `${message} - ${words.join(' ')}`.slice(0, padTo);
    }
    const entry = {
      level: levelOf(random()),
      message,
      source: pick(SOURCES),
      timestamp: new Date(now - Math.floor(random() * spreadMs)).toISOString(),
    };
    if (random() < 0.5) entry.context = { request_id: hex, user_id: args[0], region: pick(REGIONS) };
    return entry;
  });
}
