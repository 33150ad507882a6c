/**
 * The account's cap (platform.maxConcurrentJobs) and one job a scope at once hold when workers take at
 * the same moment (real PostgreSQL, pg-boss): takers held on a lock of the job table and released
 * together start one job of an account at cap 1 and one of a list, not one each; many short jobs on
 * several workers never run more than their account's cap at once, all run, oldest first, and an
 * account's next job starts soon after its slot frees.
 */
import { describe, expect, it } from 'vitest';
import { createDb, type Knex } from '../src/db.js';
import { jobScope, type JobKind, type JobPayload } from '../src/engine/job-payload.js';
import { takeNext } from '../src/engine/job-rows.js';
import type { JobEnd } from '../src/engine/worker.js';
import { startEngineWorker, until, useJobEngine } from './helpers/job-engine.js';

const engine = useJobEngine();

const payload = (job: JobKind, list: string, account: string, accountCap: number): JobPayload => ({
  job,
  list,
  account,
  origin: 'request',
  firedAt: new Date(Date.UTC(2026, 0, 1)).toISOString(),
  scope: jobScope(job, list),
  accountCap,
});

/** Backends of this test's database waiting for a lock. */
async function waitingForLocks(db: Knex): Promise<number> {
  const res = await db.raw(
    `select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
     where not l.granted and a.datname = current_database()`,
  );
  return (res.rows as { n: number }[])[0]!.n;
}

/** Runs `n` takes that all wait behind a lock of the job table, then lets them go at one instant. */
async function takeTogether(n: number): Promise<(string | undefined)[]> {
  const takers = createDb({ url: engine.t.url, poolMax: n });
  const gate = await engine.t.db.transaction();
  try {
    await gate.raw('lock table listsync_jobs.job in exclusive mode');
    const takes = Array.from({ length: n }, () => takeNext(takers));
    await until(`${n} takers waiting`, async () => (await waitingForLocks(engine.t.db)) >= n);
    await gate.commit();
    return (await Promise.all(takes)).map((j) => j && `${j.data.job}:${j.data.list}`);
  } finally {
    if (!gate.isCompleted()) await gate.rollback();
    await takers.destroy();
  }
}

interface Event {
  kind: 'start' | 'end';
  key: string;
  account: string;
  at: number;
}

/** Workers whose runs each last `holdMs`, writing every start and end on one timeline. */
function timedWorkers(count: number, slots: number, holdMs: number): Event[] {
  const timeline: Event[] = [];
  const note = (kind: Event['kind'], job: { data: JobPayload }) =>
    timeline.push({ kind, key: `${job.data.job}:${job.data.list}`, account: job.data.account, at: performance.now() });
  for (let i = 0; i < count; i++) {
    startEngineWorker(
      engine,
      slots,
      (job) =>
        new Promise<JobEnd>((resolve) => {
          note('start', job);
          setTimeout(() => {
            note('end', job);
            resolve({ kind: 'done', output: { status: 'succeeded' } });
          }, holdMs);
        }),
    );
  }
  return timeline;
}

/** The most jobs of `account` running at once on the timeline. */
function mostAtOnce(timeline: readonly Event[], account: string): number {
  let now = 0;
  let most = 0;
  for (const e of timeline.filter((x) => x.account === account)) {
    now += e.kind === 'start' ? 1 : -1;
    most = Math.max(most, now);
  }
  return most;
}

/** For an account at cap 1: how long each of its jobs after the first waited from the previous one's end. */
function gapsAfterEnds(timeline: readonly Event[], account: string): number[] {
  const own = timeline.filter((e) => e.account === account);
  return own.flatMap((e, i) => (e.kind === 'start' && i > 0 ? [e.at - own[i - 1]!.at] : []));
}

describe('the account cap across workers', () => {
  it('takers released at one instant start one job of an account at cap 1 and one of a list, not one each', async () => {
    for (const list of ['a1', 'a2', 'a3', 'a4']) await engine.enqueuer.request(payload('pull', list, 'alpha', 1));
    await engine.enqueuer.request(payload('pull', 's', 'beta', 0));
    await engine.enqueuer.request(payload('push', 's', 'beta', 0));
    const taken = await takeTogether(6);
    expect(taken.filter((k) => k !== undefined).sort()).toEqual(['pull:a1', 'pull:s']);
    const running = await engine.t.db.raw(`select singleton_key from listsync_jobs.job where state = 'active' order by 1`);
    expect((running.rows as { singleton_key: string }[]).map((r) => r.singleton_key)).toEqual(['pull:a1', 'pull:s']);
  });

  it.each([
    { account: 'alpha', cap: 1, jobs: 8 },
    { account: 'beta', cap: 2, jobs: 8 },
  ])('many jobs on three workers: $account never runs more than $cap at once, and every job runs', async ({ account, cap, jobs }) => {
    const keys = Array.from({ length: jobs }, (_, i) => `pull:${account}${i}`);
    for (let i = 0; i < jobs; i++) {
      await engine.enqueuer.request(payload('pull', `${account}${i}`, account, cap));
      await engine.enqueuer.request(payload('pull', `other${i}`, 'other', 0));
    }
    const timeline = timedWorkers(3, 3, 30);
    await until('every job ran', () => timeline.filter((e) => e.kind === 'end').length === jobs * 2, 20_000);
    const started = timeline.filter((e) => e.kind === 'start' && e.account === account).map((e) => e.key);
    expect(started.sort()).toEqual([...keys].sort());
    expect(mostAtOnce(timeline, account)).toBeLessThanOrEqual(cap);
  });

  it("an account at cap 1 runs its jobs one after another, oldest first, each soon after the previous one's end", async () => {
    const keys = Array.from({ length: 8 }, (_, i) => `pull:a${i}`);
    for (let i = 0; i < 8; i++) await engine.enqueuer.request(payload('pull', `a${i}`, 'alpha', 1));
    const timeline = timedWorkers(3, 2, 30);
    await until('every job ran', () => timeline.filter((e) => e.kind === 'end').length === 8, 20_000);
    expect(timeline.filter((e) => e.kind === 'start').map((e) => e.key)).toEqual(keys);
    expect(mostAtOnce(timeline, 'alpha')).toBe(1);
    // Settling the job, a poll (50 ms) and a take: well under 2 s, even on a loaded machine.
    for (const gap of gapsAfterEnds(timeline, 'alpha')) expect(gap).toBeLessThan(2000);
  });
});
