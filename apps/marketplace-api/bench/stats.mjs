// The statistics figures for `pnpm bench` (issue 19): the admin dashboard's latency over the lifecycle
// data set, and an export streamed to an HTTP client: its rate and the server's peak RSS growth,
// sampled from /proc/<pid>/status outside the server.
import { readFileSync } from 'node:fs';
import http from 'node:http';

/**
 * Makes the lifecycle data set look like a platform's history: requests and appointments created
 * over the past year instead of all at once, a payment for every completed appointment (if it has
 * none), some prestataires waiting for validation, open disputes and reviews to moderate. Set-based.
 */
export async function seedStats(sql) {
  await sql`update service_requests set created_at = now() - make_interval(days => id % 365, mins => id % 1440) where created_at > now() - interval '1 hour'`;
  await sql`update appointments set created_at = now() - make_interval(days => id % 365, mins => id % 1440) where created_at > now() - interval '1 hour'`;
  await sql`
    insert into payments (appointment_id, client_id, prestataire_id, amount_cents, commission_cents, status, processor, intent_id,
                          client_secret, paid_at, created_at)
    select a.id, a.client_id, a.prestataire_id, a.price_cents, a.price_cents / 10, 'succeeded', 'builtin', 'pi_bench_' || a.id,
           'bench_secret', coalesce(a.completed_at, now()) - make_interval(days => a.id % 365), coalesce(a.completed_at, now()) - make_interval(days => a.id % 365)
      from appointments a
     where a.status = 'completed' and a.price_cents > 0
    -- Not an anti-join on payments: read while it is written, a table never analysed was scanned
    -- once per inserted row.
    on conflict (appointment_id) do nothing`;
  await sql`
    update prestataire_profiles set validation_status = case when user_id % 2 = 0 then 'pending' else 'documents_requested' end
     where user_id in (select user_id from prestataire_profiles order by user_id limit 200)`;
  await sql`
    insert into conversations (client_id, prestataire_id, appointment_id, dispute_status, dispute_reported_at)
    select client_id, prestataire_id, id, case when id % 3 = 0 then 'open' else 'resolved' end, now()
      from appointments where status = 'completed' and id % 50 = 0
    on conflict do nothing`;
  await sql`
    insert into reviews (appointment_id, client_id, prestataire_id, rating, comment, status)
    select id, client_id, prestataire_id, 1 + id % 5, 'Bench review', case when id % 4 = 0 then 'pending' else 'approved' end
      from appointments where status = 'completed' and id % 5 = 0
    on conflict do nothing`;
  await sql`vacuum analyze`;
  const [{ n }] = await sql`select count(*)::int as n from appointments where created_at >= now() - interval '365 days'`;
  return { exportable: n };
}

function rssKb(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : 0;
}

/** GETs `url` with node:http and counts the body's lines as they arrive, keeping none of it. */
function countLines(url, headers) {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers }, (response) => {
      if (response.statusCode !== 200) {
        let body = '';
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () => reject(new Error(`${url}: ${response.statusCode} ${body.slice(0, 300)}`)));
        return;
      }
      let lines = 0;
      response.on('data', (chunk) => {
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      });
      response.on('end', () => resolve(lines));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/**
 * Reads an export as a client would, chunk by chunk without keeping it, counting its lines; meanwhile
 * samples the server's resident memory every 20 ms. Answers rows (lines less the header), seconds and
 * the peak RSS growth over the level just before the request, in MB.
 */
export async function measureExport(url, headers, serverPid) {
  const baseline = rssKb(serverPid);
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssKb(serverPid));
  }, 20);
  try {
    const start = performance.now();
    const lines = await countLines(url, headers);
    const seconds = (performance.now() - start) / 1000;
    peak = Math.max(peak, rssKb(serverPid));
    return { rows: lines - 1, seconds, growthMb: (peak - baseline) / 1024 };
  } finally {
    clearInterval(sampler);
  }
}
