/**
 * Jobs an operator queues (`--queue`) go through the queue serve's workers share: one queued while no
 * worker runs is run by the first worker that starts, `listsync jobs` shows it with its worker, and a
 * queued job (and one a worker was running) survives a restart of every worker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { jobs } from '../jobs/index.js';
import { createMetrics } from '../src/metrics.js';
import { startServe, type RunningServe } from '../src/serve/start-serve.js';
import { HOLDER } from '../src/store/runs.js';
import { runCli } from './helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from './helpers/world.js';

let w: World | undefined;
const serves: RunningServe[] = [];
afterEach(async () => {
  for (const s of serves.splice(0)) await s.close();
  await w?.close();
  w = undefined;
});

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const cli = (args: string[]) => runCli(['--config', w!.configFile, ...args], { env: { PLATFORM_API_KEY: w!.emu.apiKey } });
const queuedId = (stdout: string): string => /: job ([0-9a-f-]{36})$/m.exec(stdout)![1]!;
const worker = async () => {
  const metrics = createMetrics({ db: w!.t.db, config: w!.config, defaultMetrics: false });
  const s = await startServe({
    jobs,
    ...w!.deps(),
    port: 0,
    host: '127.0.0.1',
    schedule: false,
    pollMs: 200,
    routes: { '/metrics': metrics.handler },
    engineEvents: metrics.engine,
  });
  serves.push(s);
  return s;
};
const runsOf = async (jobId: string) =>
  (await w!.t.db('listsync.sync_runs').where({ job_id: jobId }).orderBy('id')) as {
    status: string;
    holder: string;
    resumed: boolean;
    attempt: number;
  }[];

describe('jobs queued by an operator', () => {
  it('pull --queue with no worker running: the first worker to start runs it; `jobs` shows it and its worker', async () => {
    w = await startWorld({ emulator: { items: 300 } });
    const queued = await cli(['pull', '--list', 'orders', '--queue']);
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout).toMatch(/^queued pull of orders: job [0-9a-f-]{36}$/m);
    const id = queuedId(queued.stdout);
    // Asking again joins the job queued: one job, the same id.
    expect(queuedId((await cli(['pull', '--list', 'orders', '--queue'])).stdout)).toBe(id);
    expect(await w.t.db('listsync.sync_runs').count('* as n').first()).toEqual({ n: 0 });
    const listed = await cli(['jobs']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+queued\\s+pull\\s+orders\\s+default`));

    const serve = await worker();
    await until('the queued pull ran', async () => ((await runsOf(id)).some((r) => r.status === 'succeeded') ? true : undefined));
    expect((await runsOf(id)).map((r) => ({ status: r.status, holder: r.holder, attempt: r.attempt }))).toEqual([
      { status: 'succeeded', holder: HOLDER, attempt: 0 },
    ]);
    await expectMirrorEqualsPlatform(w);
    const after = await cli(['jobs', '--json']);
    const line = (JSON.parse(after.stdout) as { id: string; state: string; worker: string }[]).find((l) => l.id === id);
    expect(line).toMatchObject({ state: 'completed', worker: HOLDER });
    // /metrics: the job's wait from being asked for to its start, and the queue per account.
    const scraped = await (await fetch(`${serve.url}/metrics`)).text();
    expect(scraped).toMatch(/^listsync_job_start_delay_seconds_count\{account="default",job="pull"\} 1$/m);
    expect(scraped).toMatch(/^listsync_jobs\{account="default",state="running"\} 0$/m);
    expect(scraped).toMatch(/^# TYPE listsync_job_retries_total counter$/m);
    expect(scraped).toMatch(/^# TYPE listsync_jobs_taken_over_total counter$/m);
  }, 120_000);

  it('a queued job and the one a worker was running survive a restart of every worker', async () => {
    w = await startWorld({ emulator: { items: 2000, faults: { latencyMs: 150 } }, list: { pageSize: 100 } });
    const backfill = queuedId((await cli(['backfill', '--list', 'orders', '--from', '2000-01-01', '--queue'])).stdout);
    const reconcile = queuedId((await cli(['reconcile', '--list', 'orders', '--queue'])).stdout);
    const first = await worker();
    await until('the backfill paging', async () => {
      const row = (await w!.t.db('listsync.sync_runs').where({ job_id: backfill, status: 'running' }).first()) as
        { pages: number } | undefined;
      return (row?.pages ?? 0) >= 2 ? true : undefined;
    });
    // The reconcile waits: one run of a list at a time.
    expect(await runsOf(reconcile)).toEqual([]);
    await first.close();
    serves.splice(serves.indexOf(first), 1);
    const states = (await w.t.db.raw(`select id::text, state::text, retry_count from listsync_jobs.job order by created_on`)).rows;
    expect(states).toEqual([
      { id: backfill, state: 'created', retry_count: 0 },
      { id: reconcile, state: 'created', retry_count: 0 },
    ]);

    await worker();
    await until('both ran', async () => {
      const done = [...(await runsOf(backfill)), ...(await runsOf(reconcile))].filter((r) => r.status === 'succeeded');
      return done.length === 2 ? true : undefined;
    });
    const backfillRuns = await runsOf(backfill);
    expect(backfillRuns.map((r) => r.status)).toEqual(['interrupted', 'succeeded']);
    expect(backfillRuns[1]!.resumed).toBe(true);
    await expectMirrorEqualsPlatform(w);
  }, 180_000);
});
