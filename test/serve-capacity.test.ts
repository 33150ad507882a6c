/**
 * serve with many lists on a small pool: one queue, workers sized to the pool,
 * every fire accounted for in sync_runs, /healthz and /metrics that answer
 * whatever the database does, and a run's request count that is its own.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { createDb, type Knex } from '../src/db.js';
import { createMetrics } from '../src/metrics.js';
import { jobs } from '../jobs/index.js';
import { startServe, type RunningServe } from '../src/serve/start-serve.js';
import { workerCount } from '../src/serve/worker-count.js';
import { createRunOutcomes } from '../src/serve/run-outcomes.js';
import { spreadOverMinute } from '../src/serve/scheduler.js';
import { BIN, childEnv } from './helpers/cli.js';
import { startTcpProxy, viaProxy, type TcpProxy } from './helpers/tcp-proxy.js';
import { startWorld, type World } from './helpers/world.js';

let w: World | undefined;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await w?.close();
  w = undefined;
});

const listsOf = (n: number, schedule?: string) =>
  Array.from({ length: n }, (_, k) => {
    const id = `l${String(k + 1).padStart(3, '0')}`;
    return { name: id, appID: 'bench', listID: id, ...(schedule ? { schedule } : {}) };
  });

interface RunRow {
  list_name: string;
  status: string;
  error: string | null;
  requests: number;
}
const runRows = async (db: Knex): Promise<RunRow[]> =>
  (await db('listsync.sync_runs').orderBy('id').select('list_name', 'status', 'error', 'requests')) as RunRow[];

/** Probes a URL every `everyMs` until stopped: the slowest answer and every status seen. */
function probe(url: string, everyMs: number) {
  const seen: { ms: number; status: number; body: string }[] = [];
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const t0 = performance.now();
      const res = await fetch(url);
      const body = await res.text();
      seen.push({ ms: performance.now() - t0, status: res.status, body });
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    seen,
    async end() {
      stop = true;
      await loop;
      return seen;
    },
  };
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('serve capacity', () => {
  it('workers are sized to the pool, and lists on one cron expression are spread over its minute', () => {
    expect(workerCount(10)).toBe(3);
    expect(workerCount(2)).toBe(1);
    const seconds = listsOf(100).map((l) => Number(spreadOverMinute('* * * * *', `pull:${l.name}`).split(' ')[0]));
    expect(new Set(seconds).size).toBeGreaterThan(40);
    expect(seconds.every((s) => s >= 0 && s < 60)).toBe(true);
    expect(spreadOverMinute('* * * * *', 'pull:l001')).toBe(spreadOverMinute('* * * * *', 'pull:l001'));
    expect(spreadOverMinute('*/5 * * * * *', 'pull:l001')).toBe('*/5 * * * * *');
  });

  it('many lists firing together on a small pool: every fire ends succeeded or skipped with its reason, no pool timeout, /healthz fast throughout', async () => {
    w = await startWorld({
      // Each pull takes a few hundred ms: one worker cannot keep up with twelve fires a second.
      emulator: { sample: false, lists: 12, items: 60, faults: { latencyMs: 80 } },
      lists: listsOf(12, '* * * * * *'),
      database: { poolMax: 5 },
    });
    // The work pool is as small as the config says: 5 connections, 1 worker.
    const db = createDb({ url: w.t.url, poolMax: 5 });
    cleanups.push(() => db.destroy());
    const serve = await startServe({ jobs, ...w.deps(), db, port: 0, host: '127.0.0.1' });
    const health = probe(`${serve.url}/healthz`, 200);
    const startedAt = Date.now();
    await new Promise((r) => setTimeout(r, 4500));
    const probes = await health.end();
    await serve.close();
    const elapsedS = (Date.now() - startedAt) / 1000;

    const runs = await runRows(w.t.db);
    expect(runs.filter((r) => r.status === 'running')).toEqual([]);
    expect(runs.filter((r) => r.status === 'failed')).toEqual([]);
    const skipped = runs.filter((r) => r.status === 'skipped');
    expect(skipped.every((r) => /^coalesced: the previous (fire is still queued|run is still running)$/.test(r.error ?? ''))).toBe(true);
    expect(runs.filter((r) => r.status === 'succeeded').length).toBeGreaterThanOrEqual(5);
    // Twelve fires a second, each accounted for (the first and last second may be partial).
    expect(runs.length).toBeGreaterThanOrEqual(12 * (Math.floor(elapsedS) - 2));
    expect(w.logs.join('')).not.toMatch(/Timeout acquiring a connection/);
    expect(probes.length).toBeGreaterThan(10);
    expect(Math.max(...probes.map((p) => p.ms))).toBeLessThan(1000);
    expect(probes.every((p) => p.status === 200 || p.status === 503)).toBe(true);
    // Skips for lack of capacity make it degraded, and it says why.
    expect(probes.some((p) => p.status === 503 && /"status":"degraded"/.test(p.body) && /coalesced/.test(p.body))).toBe(true);
  }, 60_000);

  it('the database refusing connections during fires: every fire is accounted for afterwards, /healthz degraded during it, metrics count the failures at once, nothing left running', async () => {
    w = await startWorld({ emulator: { sample: false, lists: 3, items: 20 }, lists: listsOf(3, '* * * * * *') });
    const proxy: TcpProxy = await startTcpProxy({ host: new URL(w.t.url).hostname, port: Number(new URL(w.t.url).port || 5432) });
    cleanups.push(() => proxy.close());
    const db = createDb({ url: viaProxy(w.t.url, proxy), poolMax: 10 });
    cleanups.push(() => db.destroy());
    const outcomes = createRunOutcomes({ db, logger: w.logger, retryMs: 300 });
    const metrics = createMetrics({
      db,
      config: w.config,
      logger: w.logger,
      defaultMetrics: false,
      unrecorded: () => outcomes.unrecorded(),
    });
    let serve: RunningServe | undefined = await startServe({
      jobs,
      ...w.deps(),
      db,
      outcomes,
      port: 0,
      host: '127.0.0.1',
      routes: { '/metrics': metrics.handler },
    });
    cleanups.push(() => serve?.close() ?? Promise.resolve());
    await until('a first succeeded run', async () => ((await runRows(w!.t.db)).some((r) => r.status === 'succeeded') ? true : undefined));

    expect((await fetch(`${serve.url}/readyz`)).status).toBe(200);
    await proxy.down();
    const health = probe(`${serve.url}/healthz`, 250);
    const readiness = probe(`${serve.url}/readyz`, 500);
    // The database refuses connections for 20 s while fires keep coming (every second, three lists).
    await new Promise((r) => setTimeout(r, 20_000));
    const scrapeStart = performance.now();
    const scraped = await (await fetch(`${serve.url}/metrics`)).text();
    const scrapeMs = performance.now() - scrapeStart;
    await proxy.up();
    const during = await health.end();
    // Out of service only while the database is away (callbacks cannot be stored), not for being degraded.
    expect((await readiness.end()).some((p) => p.status === 503 && /"status":"not ready"/.test(p.body))).toBe(true);
    await until('ready again', async () => ((await fetch(`${serve!.url}/readyz`)).status === 200 ? true : undefined));

    expect(during.some((p) => p.status === 503 && /"status":"degraded"/.test(p.body) && /unreachable/.test(p.body))).toBe(true);
    expect(Math.max(...during.map((p) => p.ms))).toBeLessThan(1000);
    expect(during.every((p) => p.status !== 500)).toBe(true);
    expect(scrapeMs).toBeLessThan(2000);
    const streaks = [...scraped.matchAll(/^listsync_consecutive_failed_runs\{list="(l\d+)",job="pull"\} (\d+)$/gm)].map((m) =>
      Number(m[2]),
    );
    expect(Math.max(0, ...streaks)).toBeGreaterThan(0);
    expect(scraped).toMatch(/^listsync_runs_total\{list="l\d+",job="pull",status="failed"\} [1-9]\d*$/m);

    // Back: what waited in memory is written; the lists run again.
    await until('the kept outcomes written', async () => (outcomes.unrecorded().length === 0 ? true : undefined));
    const failedBefore = (await runRows(w.t.db)).filter((r) => r.status === 'failed');
    expect(failedBefore.length).toBeGreaterThanOrEqual(3);
    expect(failedBefore.every((r) => /database|connect|ECONNREFUSED|Connection terminated/i.test(r.error ?? ''))).toBe(true);
    await until('a pull succeeding after the outage', async () => {
      const runs = await runRows(w!.t.db);
      const lastFailed = Math.max(...runs.map((r, i) => (r.status === 'failed' ? i : -1)));
      return runs.slice(lastFailed + 1).some((r) => r.status === 'succeeded') ? true : undefined;
    });
    await serve.close();
    serve = undefined;
    const runs = await runRows(w.t.db);
    expect(runs.filter((r) => r.status === 'running')).toEqual([]);
    expect(runs.every((r) => ['succeeded', 'failed', 'skipped', 'interrupted'].includes(r.status))).toBe(true);
  }, 120_000);

  it('request counts per run are each its own when two lists run together', async () => {
    w = await startWorld({
      emulator: { sample: false, lists: 2, items: 900, faults: { latencyMs: 30 } },
      // Pages of 100: each run makes a dozen requests, long enough to overlap the other's.
      lists: listsOf(2).map((l) => ({ ...l, pageSize: 100 })),
      database: { poolMax: 7 },
    });
    const serve = await startServe({ jobs, ...w.deps(), port: 0, host: '127.0.0.1', schedule: false });
    cleanups.push(() => serve.close());
    expect(serve.load().workers).toBe(2);
    await w.emu.admin.clearRequests();
    await Promise.all([serve.runNow('pull', 'l001'), serve.runNow('pull', 'l002')]);
    const log = await w.emu.admin.requests();
    const runs = await runRows(w.t.db);
    for (const list of ['l001', 'l002']) {
      const own = log.filter((e) => e.path.includes(`/bench/${list}`)).length;
      const run = runs.find((r) => r.list_name === list && r.status === 'succeeded');
      expect(run, JSON.stringify(runs)).toBeDefined();
      expect(own).toBeGreaterThan(1);
      expect(run!.requests, list).toBe(own);
    }
    // They did run together: their requests interleave.
    const order = log.filter((e) => e.path.includes('/bench/')).map((e): number => (e.path.includes('/l001') ? 1 : 2));
    const overlap = (a: number, b: number) => order.slice(0, order.lastIndexOf(a)).includes(b);
    expect(overlap(1, 2) && overlap(2, 1)).toBe(true);
  }, 60_000);

  it('SIGTERM during blocked fires: exit 0 within 10 s, no run left running, queued and unfinished jobs left on the queue for the next worker', async () => {
    w = await startWorld({
      emulator: { sample: false, lists: 8, items: 30, faults: { latencyMs: 1500 } },
      lists: listsOf(8, '* * * * * *'),
      database: { poolMax: 5 },
      platform: { requestsPerSecond: 10, maxInFlight: 2 },
    });
    const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'serve', '--port', '0'], {
      env: childEnv({ PLATFORM_API_KEY: w.emu.apiKey }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    cleanups.push(async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    });
    await until('a run under way', async () => ((await runRows(w!.t.db)).some((r) => r.status === 'running') ? true : undefined));
    await new Promise((r) => setTimeout(r, 2500));
    const signalledAt = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    expect(Date.now() - signalledAt, out).toBeLessThan(10_000);
    expect(code, out).toBe(0);
    const runs = await runRows(w.t.db);
    expect(runs.filter((r) => r.status === 'running')).toEqual([]);
    // Nothing the worker had taken is left running on the queue, nor failed: it is queued for the next worker.
    const states = (await w.t.db.raw(`select state::text as state, count(*)::int as n from listsync_jobs.job group by 1`)).rows as {
      state: string;
      n: number;
    }[];
    expect(states.filter((s) => s.state === 'active' || s.state === 'failed')).toEqual([]);
    expect(states.find((s) => s.state === 'created')?.n ?? 0).toBeGreaterThan(0);
    expect(out).not.toMatch(/NODE-CRON|overlap prevention/);
  }, 60_000);
});
