/**
 * The run wrapper alone writes a run's row (src/sync/run-job.ts, src/sync/recorded-run.ts): what a
 * body returns, settles in its own transaction or throws, with the platform requests the wrapper
 * counted. A real PostgreSQL and the emulator over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob, RunFailed, type RunJobSpec } from '../../src/sync/run-job.js';
import { startWorld, type World } from '../helpers/world.js';

interface RunRow {
  status: string;
  error: string | null;
  requests: number;
  retries: number;
  pages: number;
  changes_applied: number;
  changes_failed: number;
  details: Record<string, unknown>;
}

const spec = (list: string): RunJobSpec => ({
  list,
  job: 'push',
  lockName: `run-job-test:${list}`,
  waitMs: 0,
  holderJobs: ['push'],
  recordSkipped: false,
});

describe('runJob records the outcome the body hands it', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 10 } });
  });
  afterAll(async () => w?.close());

  const runRow = async (id: number): Promise<RunRow> => (await w.t.db('listsync.sync_runs').where({ id }).first()) as RunRow;
  const served = async (): Promise<number> => (await w.emu.admin.requests()).filter((r) => r.path.startsWith('/v1')).length;
  const ask = async (times: number): Promise<void> => {
    for (let i = 0; i < times; i++) await w.client.getFields('demo', 'orders');
  };

  it('a body that returns failed is recorded failed, with its counters and details and the requests the wrapper counted', async () => {
    const before = await served();
    // The second request is refused once with 429: its retry is counted too.
    await w.emu.admin.setFaults({ rateLimitAtRequest: 2 });
    const runId = await runJob(w.deps(), spec('returns-failed'), async (run) => {
      await ask(3);
      const outcome = { status: 'failed', error: 'gave up', counters: { pages: 2, changes_failed: 3 }, details: { why: 'test' } } as const;
      return { outcome, result: run.runId };
    });
    const row = await runRow(runId);
    expect(row).toMatchObject({ status: 'failed', error: 'gave up', pages: 2, changes_failed: 3, requests: 4, retries: 1 });
    expect(row.details).toMatchObject({ why: 'test' });
    expect(row.requests).toBe((await served()) - before);
  });

  it('a body that returns succeeded is recorded succeeded, with the requests of this run only', async () => {
    await ask(2); // outside any run: not counted
    const runId = await runJob(w.deps(), spec('returns-succeeded'), async (run) => {
      await ask(2);
      expect(run.requests()).toEqual({ requests: 2, retries: 0 });
      return { outcome: { status: 'succeeded', counters: { changes_applied: 5 } }, result: run.runId };
    });
    expect(await runRow(runId)).toMatchObject({ status: 'succeeded', error: null, changes_applied: 5, requests: 2, retries: 0 });
  });

  it('a success settled in a transaction that rolls back is not recorded: the run is failed with the error', async () => {
    let runId = 0;
    const body = runJob(w.deps(), spec('settle-rolled-back'), async (run) => {
      runId = run.runId;
      await ask(1);
      await w.t.db.transaction(async (trx) => {
        await run.settle(trx, { status: 'succeeded' });
        throw new Error('the last write failed');
      });
      return { outcome: { status: 'succeeded' }, result: undefined };
    });
    await expect(body).rejects.toThrow('the last write failed');
    expect(await runRow(runId)).toMatchObject({ status: 'failed', error: 'the last write failed', requests: 1 });
  });

  it('a success settled in a committed transaction is recorded once, there', async () => {
    const runId = await runJob(w.deps(), spec('settled'), async (run) => {
      await ask(1);
      const outcome = { status: 'succeeded', counters: { pages: 1 } } as const;
      await w.t.db.transaction((trx) => run.settle(trx, outcome));
      return { outcome, result: run.runId };
    });
    expect(await runRow(runId)).toMatchObject({ status: 'succeeded', pages: 1, requests: 1 });
  });

  it('a described thrown failure is recorded with what the body counted, secret-free, and its cause is thrown on', async () => {
    let runId = 0;
    const cause = new Error(`refused key ${w.emu.apiKey}`);
    const body = runJob(w.deps(), spec('throws'), async (run) => {
      runId = run.runId;
      await ask(2);
      throw new RunFailed(cause, { counters: { changes_applied: 4 }, line: 'push failed; unsent changes stay pending' });
    });
    await expect(body).rejects.toBe(cause);
    const row = await runRow(runId);
    expect(row).toMatchObject({ status: 'failed', changes_applied: 4, requests: 2 });
    expect(row.error).toMatch(/^refused key /);
    expect(row.error).not.toContain(w.emu.apiKey);
    expect(w.logs.join('')).toContain('push failed; unsent changes stay pending');
  });

  it('after the shutdown signal a returned failure is interrupted, with the body’s reason', async () => {
    const stop = new AbortController();
    const runId = await runJob({ ...w.deps(), signal: stop.signal }, spec('interrupted'), async (run) => {
      await ask(1);
      stop.abort('SIGTERM');
      return { outcome: { status: 'failed', error: 'stopped by shutdown; unsent changes stay pending' }, result: run.runId };
    });
    expect(await runRow(runId)).toMatchObject({
      status: 'interrupted',
      error: 'stopped by shutdown; unsent changes stay pending',
      requests: 1,
    });
  });
});
