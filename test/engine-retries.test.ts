/**
 * A job failing for a passing reason (the platform answering 500) is tried again with backoff before
 * its next fire, counted in /metrics and visible as a second attempt of the same job in sync_runs; a
 * failure that would come again (a list the platform does not have) is not retried.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { jobs } from '../jobs/index.js';
import { createMetrics } from '../src/metrics.js';
import { startServe, type RunningServe } from '../src/serve/start-serve.js';
import { startWorld, type World } from './helpers/world.js';

let w: World | undefined;
let serve: RunningServe | undefined;
afterEach(async () => {
  await serve?.close();
  await w?.close();
  serve = w = undefined;
});

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Run {
  status: string;
  attempt: number;
  error: string | null;
}

describe('job retries', () => {
  it('a platform answering 500 is retried with backoff and counted; a list the platform does not have is not', async () => {
    w = await startWorld({
      emulator: { items: 30 },
      platform: { retries: 0 },
      lists: [
        { name: 'orders', appID: 'demo', listID: 'orders' },
        { name: 'ghost', appID: 'demo', listID: 'no-such-list' },
      ],
    });
    const metrics = createMetrics({ db: w.t.db, config: w.config, defaultMetrics: false });
    serve = await startServe({
      jobs,
      ...w.deps(),
      port: 0,
      host: '127.0.0.1',
      schedule: false,
      pollMs: 200,
      routes: { '/metrics': metrics.handler },
      engineEvents: metrics.engine,
    });
    const runsOf = async (id: string) =>
      (await w!.t.db('listsync.sync_runs').where({ job_id: id }).orderBy('id').select('status', 'attempt', 'error')) as Run[];

    await w.emu.admin.setFaults({ errorRate: 1 });
    const id = await serve.enqueue('pull', 'orders');
    await until('the first attempt failed', async () => ((await runsOf(id)).some((r) => r.status === 'failed') ? true : undefined));
    // The job waits for its retry (not failed for good, not queued at once).
    await until('the job waiting for its retry', async () => {
      const rows = (await w!.t.db.raw(`select state::text as state from listsync_jobs.job where id = ?`, [id])).rows as { state: string }[];
      return rows[0]?.state === 'retry' ? true : undefined;
    });
    await w.emu.admin.setFaults({ errorRate: 0 });
    await until('the retry succeeded', async () => ((await runsOf(id)).some((r) => r.status === 'succeeded') ? true : undefined));
    expect((await runsOf(id)).map((r) => [r.status, r.attempt])).toEqual([
      ['failed', 0],
      ['succeeded', 1],
    ]);
    const scraped = await (await fetch(`${serve.url}/metrics`)).text();
    expect(scraped).toMatch(/^listsync_job_retries_total\{account="default",job="pull"\} 1$/m);

    const ghost = await serve.enqueue('pull', 'ghost');
    await until('the ghost pull failed', async () => ((await runsOf(ghost)).some((r) => r.status === 'failed') ? true : undefined));
    await until('its job failed for good', async () => {
      const rows = (await w!.t.db.raw(`select state::text as state, retry_count from listsync_jobs.job where id = ?`, [ghost])).rows as {
        state: string;
        retry_count: number;
      }[];
      return rows[0]?.state === 'failed' ? rows[0] : undefined;
    });
    expect((await runsOf(ghost)).length).toBe(1);
  }, 120_000);
});
