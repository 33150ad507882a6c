/**
 * Workers and accounts: three `listsync serve` processes on one PostgreSQL,
 * two emulators in child processes (two accounts, each at its real 10
 * requests/s) with 30 lists each, every list on `* * * * *`, for
 * BENCH_WORKERS_MINUTES (default 5). The mirror is loaded first by one
 * `listsync pull` (as the quickstart does), so the fires counted are serve's.
 *
 * Reports, from the queue (listsync_jobs.job and its archive) and the run
 * history (listsync.sync_runs): the fires sent and recorded skipped, the
 * share run exactly once (one succeeded run of the fire's job), the share of
 * runs each worker (its `holder`) ran, fire-to-start p50/p95 (the job's start
 * minus its fire instant); from each emulator: the most requests in any
 * sliding second and its 429s; and the PostgreSQL connections of the
 * benchmark's database sampled every 5 s (first, min, max, last). Timings on
 * a shared machine are noisy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MANY_LISTS_APP_ID, manyListId } from '../src/emulator/many-lists.js';
import type { Knex } from '../src/db.js';
import { benchDatabase, emulatorProcess } from './support.js';

const BIN = fileURLToPath(new URL('../bin/listsync.js', import.meta.url));
const WORKERS = 3;
const LISTS = 30;
const SAMPLE_MS = 5000;

type Figures = Record<string, string | number>;
type Emulator = Awaited<ReturnType<typeof emulatorProcess>>;

export default async function run(): Promise<Figures> {
  const minutes = Number(process.env.BENCH_WORKERS_MINUTES ?? 5);
  const items = Number(process.env.BENCH_WORKERS_ITEMS ?? 200);
  const emus = await Promise.all([0, 1].map(() => emulatorProcess(['--lists', String(LISTS), '--items', String(items)])));
  const b = await benchDatabase('workers');
  const dir = mkdtempSync(join(tmpdir(), 'listsync-workers-'));
  const configFile = join(dir, 'listsync.config.json');
  writeFileSync(configFile, JSON.stringify(configOf(emus, b.url)));
  const env = { ...process.env, ACME_API_KEY: emus[0]!.apiKey, GLOBEX_API_KEY: emus[1]!.apiKey };
  const serves: ChildProcess[] = [];
  try {
    await cli(['--config', configFile, 'pull'], env);
    const firstRunId = Number(
      ((await b.db.raw('select coalesce(max(id), 0) as n from listsync.sync_runs')) as { rows: { n: string }[] }).rows[0]!.n,
    );
    const admins = emus.map((e) => e.admin);
    await Promise.all(admins.map((a) => a.clearRequests()));
    for (let i = 0; i < WORKERS; i++) serves.push(await startServe(configFile, env));
    // The window counted opens once every worker is up.
    const started = new Date();
    const connections: number[] = [];
    const end = Date.now() + minutes * 60_000;
    while (Date.now() < end) {
      connections.push(await connectionsOf(b.db));
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
    const stopped = new Date();
    await Promise.all(serves.map(stop));
    const stats = await Promise.all(admins.map((a) => a.stats()));
    return {
      minutes,
      'lists (two accounts)': LISTS * 2,
      ...(await fireFigures(b.db, firstRunId, started, stopped)),
      ...Object.fromEntries(
        stats.flatMap((s, i) => [
          [`max requests in a sliding second (emulator ${i + 1})`, s.maxPerSlidingSecond],
          [`429s (emulator ${i + 1})`, s.rateLimited],
        ]),
      ),
      'PostgreSQL connections (first, min, max, last)': [
        connections[0],
        Math.min(...connections),
        Math.max(...connections),
        connections.at(-1),
      ].join(', '),
      'PostgreSQL connections, max minus min': Math.max(...connections) - Math.min(...connections),
      'PostgreSQL connections, mean of the first half / of the second half': halves(connections),
    };
  } finally {
    for (const s of serves) if (s.exitCode === null) s.kill('SIGKILL');
    await Promise.all(emus.map((e) => e.stop()));
    await b.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function configOf(emus: readonly Emulator[], url: string): object {
  const account = (name: string, emu: Emulator, key: string) => ({
    name,
    platform: { baseUrl: emu.baseUrl, apiKey: `\${${key}}` },
    lists: Array.from({ length: LISTS }, (_, i) => ({
      name: `${name}_${manyListId(i + 1)}`,
      appID: MANY_LISTS_APP_ID,
      listID: manyListId(i + 1),
      schedule: { pull: '* * * * *' },
    })),
  });
  return {
    database: { url, schema: 'mirror' },
    accounts: [account('acme', emus[0]!, 'ACME_API_KEY'), account('globex', emus[1]!, 'GLOBEX_API_KEY')],
    users: { enabled: false },
    directory: { enabled: false },
    serve: { host: '127.0.0.1', console: 'off' },
  };
}

/** The fires of the window, how many ran exactly once, each worker's share, fire to start. */
async function fireFigures(db: Knex, firstRunId: number, from: Date, to: Date): Promise<Figures> {
  const jobs = (await db.raw(
    `with jobs as (
       select id, data, started_on from listsync_jobs.job where data->>'origin' = 'schedule'
       union all
       select id, data, started_on from listsync_jobs.archive where data->>'origin' = 'schedule'
     )
     select j.id, j.started_on, (j.data->>'firedAt')::timestamptz as fired_at,
            count(r.id) filter (where r.status = 'succeeded')::int as succeeded
       from jobs j left join listsync.sync_runs r on r.job_id = j.id
      where (j.data->>'firedAt')::timestamptz between ? and ?
      group by 1, 2, 3`,
    [from, to],
  )) as { rows: { id: string; started_on: Date | null; fired_at: Date; succeeded: number }[] };
  const skipped = (await db.raw(`select count(*)::int as n from listsync.sync_runs where id > ? and job = 'pull' and status = 'skipped'`, [
    firstRunId,
  ])) as { rows: { n: number }[] };
  const byWorker = (await db.raw(
    `select holder, count(*)::int as n from listsync.sync_runs where id > ? and job = 'pull' and status = 'succeeded' group by 1 order by 1`,
    [firstRunId],
  )) as { rows: { holder: string; n: number }[] };
  const fires = jobs.rows.length + skipped.rows[0]!.n;
  const once = jobs.rows.filter((j) => j.succeeded === 1).length;
  const twice = jobs.rows.filter((j) => j.succeeded > 1).length;
  const waits = jobs.rows
    .filter((j) => j.started_on)
    .map((j) => (j.started_on!.getTime() - j.fired_at.getTime()) / 1000)
    .sort((a, b) => a - b);
  const runs = byWorker.rows.reduce((s, r) => s + r.n, 0);
  const pct = (n: number, of: number) => (of ? Math.round((n / of) * 1000) / 10 : 0);
  return {
    'fires (jobs sent + recorded skipped)': fires,
    'fires expected (lists x minutes)': Math.round(((to.getTime() - from.getTime()) / 60_000) * LISTS * 2),
    'fires run exactly once %': pct(once, fires),
    'fires run more than once': twice,
    'fires recorded skipped': skipped.rows[0]!.n,
    'share of runs per worker %': byWorker.rows.map((r) => pct(r.n, runs)).join(', '),
    'smallest share of runs of a worker %': Math.min(...byWorker.rows.map((r) => pct(r.n, runs)), byWorker.rows.length < WORKERS ? 0 : 100),
    'fire to start p50 s': quantile(waits, 0.5),
    'fire to start p95 s': quantile(waits, 0.95),
  };
}

/** The mean of the first half of the samples and of the second, e.g. "14.2 / 14.6": flat when they agree. */
function halves(samples: readonly number[]): string {
  const mean = (xs: readonly number[]) => Math.round((xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length)) * 10) / 10;
  const mid = Math.floor(samples.length / 2);
  return `${mean(samples.slice(0, mid))} / ${mean(samples.slice(mid))}`;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 10) / 10;
}

async function connectionsOf(db: Knex): Promise<number> {
  const r = (await db.raw(
    'select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  )) as {
    rows: { n: number }[];
  };
  return r.rows[0]!.n;
}

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  if (code !== 0) throw new Error(`listsync ${args.join(' ')} exited ${code}: ${err}`);
}

async function startServe(configFile: string, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, '--config', configFile, 'serve', '--port', '0'], {
    env: { ...env, LISTSYNC_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in 60 s: ${out}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (/listsync serve on /.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
  return child;
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
