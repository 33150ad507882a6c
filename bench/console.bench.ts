/**
 * The console with 500 lists: the overview (one query for a page of 100, the
 * 500 ranked), a list's page and the conflicts page, timed over real HTTP
 * against a database seeded with what 500 lists leave behind — 40 runs each
 * (a failure in every tenth), pending and failed changes, open conflicts,
 * unapplied real-time events on every fifth, a mirror table each.
 * Bar: overview p95 <= 300 ms. No platform request is made: the client is
 * never called to draw a page.
 */
import { parseConfig } from '../src/config.js';
import { startConsole } from '../src/console/console-server.js';
import type { Knex } from '../src/db.js';
import { silentLogger } from '../src/logger.js';
import { benchClient, benchDatabase } from './support.js';

const LISTS = Number(process.env.BENCH_CONSOLE_LISTS ?? 500);
const RUNS_PER_LIST = 40;
const SAMPLES = Number(process.env.BENCH_CONSOLE_SAMPLES ?? 30);
const TOKEN = 'bench-console-token-0123456789';

export default async function run(): Promise<Record<string, string | number>> {
  const b = await benchDatabase('console');
  try {
    const names = Array.from({ length: LISTS }, (_, i) => `list_${String(i).padStart(3, '0')}`);
    const config = parseConfig({
      platform: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'bench-key-0123' },
      database: { url: b.url, schema: 'mirror' },
      serve: { publicUrl: 'https://sync.example.com' },
      lists: names.map((name, i) => ({ name, appID: 'app', listID: name, schedule: `*/${(i % 6) + 5} * * * *`, realtime: i % 5 === 0 })),
    });
    const t0 = performance.now();
    await seed(b.db, [...names]);
    const seedSeconds = (performance.now() - t0) / 1000;
    const client = benchClient(config, b.db);
    const running = await startConsole({ config, db: b.db, client, logger: silentLogger(), host: '127.0.0.1', port: 0, token: TOKEN });
    try {
      const time = (path: string) => timings(`${running.url}${path}`, SAMPLES);
      const overview = await time('/');
      const list = await time(`/lists/${names[7]}`);
      const conflicts = await time('/conflicts');
      const budget = await time('/budget');
      return {
        lists: LISTS,
        'runs seeded': LISTS * RUNS_PER_LIST,
        'seed s': Math.round(seedSeconds * 10) / 10,
        'overview median ms (500 lists)': overview.median,
        'overview p95 ms (500 lists)': overview.p95,
        'overview max ms': overview.max,
        "a list's page p95 ms": list.p95,
        'conflicts page p95 ms': conflicts.p95,
        'budget page p95 ms': budget.p95,
        'platform requests made': client.stats().requests,
      };
    } finally {
      await running.close();
      await client.close();
    }
  } finally {
    await b.drop();
  }
}

async function timings(url: string, samples: number): Promise<{ median: number; p95: number; max: number }> {
  const headers = { authorization: `Bearer ${TOKEN}` };
  for (let i = 0; i < 3; i++) await (await fetch(url, { headers })).text(); // warm up: pool, plans
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    const res = await fetch(url, { headers });
    await res.text();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    ms.push(performance.now() - start);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => Math.round(ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)]! * 10) / 10;
  return { median: at(0.5), p95: at(0.95), max: at(1) };
}

/** What 500 lists leave in listsync's tables, written with set-based SQL. */
export async function seed(db: Knex, names: string[]): Promise<void> {
  await db.raw('create schema if not exists mirror');
  for (const name of names) await db.raw('create table mirror.?? (id text primary key, _deleted_at timestamptz)', [name]);
  await db.raw(
    `insert into listsync.sync_runs (list_name, job, status, started_at, finished_at, pages, requests, rows_inserted, error)
     select n, case when r % 4 = 0 then 'push' else 'pull' end,
            case when i % 10 = 3 and r = ${RUNS_PER_LIST} then 'failed' else 'succeeded' end,
            now() - make_interval(mins => ((${RUNS_PER_LIST} - r) * 30 + i % 7)::int), now() - make_interval(mins => ((${RUNS_PER_LIST} - r) * 30 + i % 7 - 1)::int),
            3, 4, 100, case when i % 10 = 3 and r = ${RUNS_PER_LIST} then 'GET /lists/app/x/items failed: HTTP 503' end
       from unnest(?::text[]) with ordinality as l(n, i), generate_series(1, ${RUNS_PER_LIST}) r`,
    [names],
  );
  await db.raw(
    `insert into listsync.outbox (list_name, op, item_id, changes, base_version, status)
     select n, 'update', (i * 10 + k)::text, '{"title":"x"}', 1, case when k = 1 then 'failed' else 'pending' end
       from unnest(?::text[]) with ordinality as l(n, i), generate_series(1, 3) k where i % 3 = 0`,
    [names],
  );
  await db.raw(
    `insert into listsync.conflicts (list_name, item_id, policy, op, base_version, remote_version, local, remote, base, status)
     select n, (i * 100)::text, 'manual', 'update', 1, 2, '{"title":"local"}', '{"Title":"remote","RowVersion":2}', '{"Title":"base"}', 'open'
       from unnest(?::text[]) with ordinality as l(n, i) where i % 8 = 0`,
    [names],
  );
  await db.raw(
    `insert into listsync.webhook_subscriptions (platform_id, resource, channel, type, token, callback_url, list_name)
     select 'sub-' || i, 'lists/app/' || n, 'webhook', 1, 'tok-' || n, 'https://sync.example.com/hooks/tok-' || n, n
       from unnest(?::text[]) with ordinality as l(n, i) where (i - 1) % 5 = 0`,
    [names],
  );
  await db.raw(
    `insert into listsync.webhook_inbox (subscription_id, dedup_key, channel, type, headers, body, received_at)
     select s.id, s.id || '-' || e, 'webhook', 1, '{}', '{}', now() - make_interval(secs => e * 20.0)
       from listsync.webhook_subscriptions s, generate_series(1, 10) e`,
  );
  await db.raw('analyze');
}
