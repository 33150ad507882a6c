/**
 * The job engine every serve process shares (real PostgreSQL, pg-boss): at most `slots` jobs at once per
 * worker, oldest first, never two of one scope (a list) together across workers; a scheduled fire of a
 * job still queued or running coalesced with its reason, never stacked, and the same fire from another
 * replica made once; early requests joined; a job handed back at shutdown run by another worker.
 */
import { describe, expect, it } from 'vitest';
import { jobScope, type JobKind, type JobOrigin, type JobPayload } from '../src/engine/job-payload.js';
import type { JobEnd } from '../src/engine/worker.js';
import { startEngineWorker, until, useJobEngine } from './helpers/job-engine.js';

const engine = useJobEngine();

const payload = (job: JobKind, list: string, origin: JobOrigin, second = 0, account = 'default', accountCap = 0): JobPayload => ({
  job,
  list,
  account,
  origin,
  firedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
  scope: jobScope(job, list),
  accountCap,
});

/** A worker whose runs end when the test says: `started` in order, `finish(key)` ends the oldest running one of a key. */
function harness(slots: number) {
  const started: string[] = [];
  const finishers = new Map<string, (() => void)[]>();
  const worker = startEngineWorker(
    engine,
    slots,
    (job) =>
      new Promise<JobEnd>((resolve) => {
        const key = `${job.data.job}:${job.data.list}`;
        started.push(key);
        finishers.set(key, [...(finishers.get(key) ?? []), () => resolve({ kind: 'done', output: { status: 'succeeded' } })]);
      }),
  );
  return {
    worker,
    started,
    finish: (key: string) => finishers.get(key)!.shift()!(),
  };
}

const settle = () => new Promise((r) => setTimeout(r, 400));

describe('job engine', () => {
  it('runs at most `slots` at once, oldest first, never two of one scope together', async () => {
    for (const [job, list] of [
      ['pull', 'a'],
      ['push', 'a'],
      ['pull', 'b'],
      ['pull', 'c'],
    ] as const)
      await engine.enqueuer.request(payload(job, list, 'request'));
    const h = harness(2);
    await until('two started', () => h.started.length === 2);
    await settle();
    expect(h.started).toEqual(['pull:a', 'pull:b']);
    h.finish('pull:a');
    await until('push:a started', () => h.started.length === 3);
    expect(h.started.at(-1)).toBe('push:a');
    h.finish('pull:b');
    await until('pull:c started', () => h.started.length === 4);
    expect(h.started.at(-1)).toBe('pull:c');
  });

  it('a scheduled fire of a job still queued or running is coalesced with the reason, never stacked; the same fire from another replica is one job', async () => {
    const h = harness(1);
    expect(await engine.enqueuer.fire(payload('pull', 'a', 'schedule', 1))).toHaveProperty('sent');
    await until('pull:a started', () => h.started.length === 1);
    expect(await engine.enqueuer.fire(payload('pull', 'b', 'schedule', 1))).toHaveProperty('sent');
    expect(await engine.enqueuer.fire(payload('pull', 'a', 'schedule', 2))).toEqual({
      coalesced: 'coalesced: the previous run is still running',
    });
    expect(await engine.enqueuer.fire(payload('pull', 'b', 'schedule', 2))).toEqual({
      coalesced: 'coalesced: the previous fire is still queued',
    });
    // Another replica's fire of the same instant: no skip, no second job, even after the job finished.
    expect(await engine.enqueuer.fire(payload('pull', 'b', 'schedule', 1))).toHaveProperty('sameFire');
    h.finish('pull:a');
    await until('pull:b started', () => h.started.length === 2);
    h.finish('pull:b');
    await until('idle', () => h.worker.running === 0);
    expect(await engine.enqueuer.fire(payload('pull', 'b', 'schedule', 1))).toHaveProperty('sameFire');
    await settle();
    expect(h.started).toEqual(['pull:a', 'pull:b']);
  });

  it('an early request joins the queued run, or asks for one more after the running one', async () => {
    const h = harness(1);
    const first = await engine.enqueuer.request(payload('pull', 'a', 'request'));
    await until('pull:a started', () => h.started.length === 1);
    const second = await engine.enqueuer.request(payload('pull', 'a', 'request'));
    expect(await engine.enqueuer.request(payload('pull', 'a', 'request'))).toBe(second);
    expect(second).not.toBe(first);
    h.finish('pull:a');
    await until('the second run', () => h.started.length === 2);
    h.finish('pull:a');
    await until('idle', () => h.worker.running === 0);
    await settle();
    expect(h.started).toEqual(['pull:a', 'pull:a']);
  });

  it('a job handed back at shutdown is not failed: another worker runs it', async () => {
    const a = harness(1);
    await engine.enqueuer.request(payload('backfill', 'a', 'operator'));
    await until('started on the first worker', () => a.started.length === 1);
    const b = harness(1);
    await settle();
    expect(b.started).toEqual([]);
    await a.worker.stopTaking();
    await a.worker.handBackRunning('stopped by shutdown');
    await until('taken by the second worker', () => b.started.length === 1);
    expect(b.started).toEqual(['backfill:a']);
    const row = (await engine.t.db.raw(`select state, retry_count from listsync_jobs.job where singleton_key = 'backfill:a'`)).rows[0];
    expect(row).toEqual({ state: 'active', retry_count: 0 });
  });

  it('an account at its cap (platform.maxConcurrentJobs) waits while the jobs of another account run, across workers', async () => {
    for (const list of ['a1', 'a2', 'a3']) await engine.enqueuer.request(payload('pull', list, 'request', 0, 'alpha', 1));
    await engine.enqueuer.request(payload('pull', 'b1', 'request', 0, 'beta', 1));
    const one = harness(2);
    const two = harness(2);
    await until('two started', () => one.started.length + two.started.length === 2);
    await settle();
    const started = () => [...one.started, ...two.started].sort();
    expect(started()).toEqual(['pull:a1', 'pull:b1']);
    (one.started.includes('pull:a1') ? one : two).finish('pull:a1');
    await until('the next of alpha', () => one.started.length + two.started.length === 3);
    await settle();
    expect(started()).toEqual(['pull:a1', 'pull:a2', 'pull:b1']);
  });
});
