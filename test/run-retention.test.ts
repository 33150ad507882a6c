/**
 * The run history keeps serve.runHistoryDays: older runs go in batches, while
 * running runs, the newest run of each status per list and job, and runs a
 * schema change or a checkpoint names stay (src/store/runs.ts, pruneRuns);
 * serve prunes in the background and stops doing so at shutdown
 * (src/serve/run-retention.ts).
 */
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobs } from '../jobs/index.js';
import type { Knex } from '../src/db.js';
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { startRunRetention } from '../src/serve/run-retention.js';
import { startServe } from '../src/serve/start-serve.js';
import { pruneRuns } from '../src/store/runs.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startWorld, type World } from './helpers/world.js';

const RUNS = 'listsync.sync_runs';

interface RunSpec {
  list?: string;
  job?: string;
  status: 'running' | 'succeeded' | 'failed' | 'skipped' | 'interrupted';
  /** When it started and (unless running) ended, in days before now. */
  daysAgo: number;
  /** When it ended, when not at its start. */
  endedDaysAgo?: number;
  /** Counter columns and details, as written by the run. */
  counted?: Record<string, unknown>;
}

async function addRun(db: Knex, r: RunSpec): Promise<number> {
  const ended = r.endedDaysAgo ?? r.daysAgo;
  const [row] = (await db(RUNS)
    .insert({
      list_name: r.list ?? 'orders',
      job: r.job ?? 'pull',
      status: r.status,
      started_at: db.raw(`now() - make_interval(days => ?)`, [r.daysAgo]),
      finished_at: r.status === 'running' ? null : db.raw(`now() - make_interval(days => ?)`, [ended]),
      ...r.counted,
    })
    .returning('id')) as { id: string | number }[];
  return Number(row!.id);
}

async function runIds(db: Knex): Promise<number[]> {
  return ((await db(RUNS).orderBy('id').pluck('id')) as (string | number)[]).map(Number);
}

function captureLogs(): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, logger: createLogger({ level: 'info', destination }) };
}

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('run history retention (store)', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });
  afterEach(async () => {
    await t.db.raw('truncate listsync.sync_runs, listsync.schema_changes, listsync.sync_state, listsync.pruned_run_totals');
  });

  it('removes runs ended before the window; recent runs, running runs and the newest of each status stay', async () => {
    const db = t.db;
    const oldSuccess = await addRun(db, { status: 'succeeded', daysAgo: 40 });
    const olderSuccess = await addRun(db, { status: 'succeeded', daysAgo: 35 });
    const oldFailure = await addRun(db, { status: 'failed', daysAgo: 50 });
    const lastFailure = await addRun(db, { status: 'failed', daysAgo: 45 });
    const running = await addRun(db, { status: 'running', daysAgo: 60 });
    const lastSkipped = await addRun(db, { status: 'skipped', daysAgo: 31 });
    const lastInterrupted = await addRun(db, { status: 'interrupted', daysAgo: 90 });
    const recentSuccess = await addRun(db, { status: 'succeeded', daysAgo: 29 });
    const lastSuccess = await addRun(db, { status: 'succeeded', daysAgo: 2 });
    const monthlyOld = await addRun(db, { list: 'monthly', status: 'succeeded', daysAgo: 90 });
    const monthlyLast = await addRun(db, { list: 'monthly', status: 'succeeded', daysAgo: 60 });
    const lastPush = await addRun(db, { job: 'push', status: 'succeeded', daysAgo: 40 });

    const result = await pruneRuns(db, 30);

    expect(result.deleted).toBe(4);
    const kept = [lastFailure, running, lastSkipped, lastInterrupted, recentSuccess, lastSuccess, monthlyLast, lastPush];
    const left = await runIds(db);
    expect(left).toEqual(kept.sort((a, b) => a - b));
    for (const id of [oldSuccess, olderSuccess, oldFailure, monthlyOld]) expect(left).not.toContain(id);
  });

  it('the newest run by id and the newest by start time both stay (a fire recorded after the fact started earlier)', async () => {
    const db = t.db;
    await addRun(db, { status: 'failed', daysAgo: 70 });
    const newestStart = await addRun(db, { status: 'failed', daysAgo: 50, endedDaysAgo: 40 });
    const recordedLater = await addRun(db, { status: 'failed', daysAgo: 60, endedDaysAgo: 39 });

    expect((await pruneRuns(db, 30)).deleted).toBe(1);
    expect(await runIds(db)).toEqual([newestStart, recordedLater]);
  });

  it('deletes in batches until a batch comes back short', async () => {
    const db = t.db;
    for (let i = 0; i < 25; i++) await addRun(db, { status: 'succeeded', daysAgo: 100 - i });
    const last = await addRun(db, { status: 'succeeded', daysAgo: 40 });

    expect(await pruneRuns(db, 30, { batch: 10 })).toEqual({ deleted: 25, batches: 3 });
    expect(await runIds(db)).toEqual([last]);
  });

  it('stops between batches when asked, leaving the rest for the next prune', async () => {
    const db = t.db;
    for (let i = 0; i < 25; i++) await addRun(db, { status: 'succeeded', daysAgo: 100 - i });

    expect(await pruneRuns(db, 30, { batch: 10, stopped: () => true })).toEqual({ deleted: 10, batches: 1 });
    expect(await runIds(db)).toHaveLength(15);
  });

  it('keeps old runs a schema change or a checkpoint names', async () => {
    const db = t.db;
    const sawChange = await addRun(db, { status: 'succeeded', daysAgo: 80 });
    const unnamed = await addRun(db, { status: 'succeeded', daysAgo: 70 });
    const resumable = await addRun(db, { status: 'interrupted', daysAgo: 65 });
    await addRun(db, { status: 'interrupted', daysAgo: 60 });
    await addRun(db, { status: 'succeeded', daysAgo: 1 });
    await db('listsync.schema_changes').insert({ list_name: 'orders', kind: 'added', message: 'added column x', run_id: sawChange });
    await db('listsync.sync_state').insert({
      list_name: 'orders',
      job: 'pull',
      checkpoint: JSON.stringify({ runId: resumable, nextPage: 3 }),
    });

    expect((await pruneRuns(db, 30)).deleted).toBe(1);
    const left = await runIds(db);
    expect(left).toContain(sawChange);
    expect(left).toContain(resumable);
    expect(left).not.toContain(unnamed);
  });

  it("/metrics' totals and the last pull with changes stay the same after a prune", async () => {
    const db = t.db;
    await addRun(db, { status: 'succeeded', daysAgo: 90, counted: { rows_inserted: 100, rows_updated: 7, rows_unstorable: 1 } });
    await addRun(db, { status: 'succeeded', daysAgo: 80, counted: { rows_updated: 5 } });
    await addRun(db, { status: 'succeeded', daysAgo: 70, counted: { rows_unchanged: 50 } });
    await addRun(db, { status: 'succeeded', daysAgo: 1, counted: { rows_unchanged: 50 } });
    await addRun(db, { job: 'push', status: 'failed', daysAgo: 60, counted: { changes_applied: 3, changes_failed: 1 } });
    await addRun(db, { job: 'push', status: 'failed', daysAgo: 50, counted: { changes_conflicted: 2 } });
    const healed = { rows_deleted: 4, rows_undeleted: 1, details: JSON.stringify({ healed: { missing: 6, behind: 2 } }) };
    await addRun(db, { job: 'reconcile', status: 'succeeded', daysAgo: 40, counted: healed });
    await addRun(db, { job: 'reconcile', status: 'succeeded', daysAgo: 35, counted: healed });
    const before = await historyMetrics(db, t.url);

    expect((await pruneRuns(db, 30)).deleted).toBe(4);
    await addRun(db, { status: 'succeeded', daysAgo: 0, counted: { rows_unchanged: 10 } });
    expect((await pruneRuns(db, 30)).deleted).toBe(0);

    const after = await historyMetrics(db, t.url);
    expect(before.some((l) => l.includes('listsync_reconcile_healed_total{list="orders",kind="missing"} 12'))).toBe(true);
    expect(before.some((l) => l.startsWith('listsync_last_pull_with_changes_timestamp_seconds'))).toBe(true);
    // The only change: the new run, counted once more.
    const changed = after.filter((l) => !before.includes(l));
    expect(changed).toEqual([
      'listsync_rows_total{list="orders",kind="unchanged"} 110',
      'listsync_runs_total{list="orders",job="pull",status="succeeded"} 5',
    ]);
    expect(after).toHaveLength(before.length);
  });
});

/** The /metrics lines summed over the run history, and the last pull with changes. */
async function historyMetrics(db: Knex, url: string): Promise<string[]> {
  const config = parseConfig({ platform: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k-123456' }, database: { url }, lists: [] });
  const metrics = createMetrics({ db, config, defaultMetrics: false, logger: createLogger({ level: 'silent' }) });
  await metrics.refresh();
  const text = await metrics.registry.metrics();
  const families =
    /^listsync_(runs_total|rows_total|changes_pushed_total|reconcile_healed_total|last_pull_with_changes_timestamp_seconds)\{/;
  return text.split('\n').filter((line) => families.test(line));
}

describe('run history retention (serve)', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it('prunes after start, logs what it removed, and a failed prune warns once and is retried', async () => {
    w = await startWorld({ emulator: { items: 1 } });
    const db = w.t.db;
    for (let i = 0; i < 3; i++) await addRun(db, { status: 'succeeded', daysAgo: 50 - i });
    const { lines, logger } = captureLogs();
    // The table away: each prune fails until it is back.
    await db.raw('alter table listsync.sync_runs rename to sync_runs_away');
    const retention = startRunRetention({ db, logger, days: 30, timing: { firstAfterMs: 0, everyMs: 50 } });
    try {
      await until(() => lines.some((l) => l.includes('could not remove old runs')), 'the warning');
      await db.raw('alter table listsync.sync_runs_away rename to sync_runs');
      await until(() => lines.some((l) => l.includes('removed 2 runs')), 'the prune after the failure');
    } finally {
      await retention.stop();
    }
    const warnings = lines.filter((l) => l.includes('could not remove old runs'));
    expect(warnings.length).toBeGreaterThan(0);
    for (const line of warnings) expect(JSON.parse(line)).toMatchObject({ level: 'warn', msg: expect.stringContaining('trying again') });
    expect(lines.filter((l) => l.includes('removed'))).toHaveLength(1);
    expect(JSON.parse(lines.find((l) => l.includes('removed 2 runs'))!)).toMatchObject({ level: 'info', deleted: 2 });
    expect(await runIds(db)).toHaveLength(1);

    // Stopped: a run that turns old afterwards stays.
    const after = lines.length;
    await addRun(db, { status: 'succeeded', daysAgo: 45 });
    await addRun(db, { status: 'succeeded', daysAgo: 44 });
    await new Promise((r) => setTimeout(r, 200));
    expect(await runIds(db)).toHaveLength(3);
    expect(lines.length).toBe(after);
  });

  it('stopping waits at most 2 s for a prune stuck behind a lock', async () => {
    w = await startWorld({ emulator: { items: 1 } });
    const db = w.t.db;
    for (let i = 0; i < 3; i++) await addRun(db, { status: 'succeeded', daysAgo: 50 - i });
    const { lines, logger } = captureLogs();
    const holder = await db.transaction();
    try {
      await holder.raw('lock table listsync.sync_runs in access exclusive mode');
      const retention = startRunRetention({ db, logger, days: 30, timing: { firstAfterMs: 0 } });
      await until(async () => {
        const waiting = await db.raw(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like 'with gone as%'`);
        return (waiting as { rows: unknown[] }).rows.length > 0;
      }, 'the prune to wait for the lock');
      const started = Date.now();
      await retention.stop();
      expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      await holder.rollback();
    }
    // The prune under way finishes once the lock is gone; none follows it.
    await until(() => lines.some((l) => l.includes('removed 2 runs')), 'the stuck prune to finish');
    expect(await runIds(db)).toHaveLength(1);
  });

  it('serve prunes with serve.runHistoryDays and stops pruning at shutdown', async () => {
    w = await startWorld({ emulator: { items: 1 } });
    const db = w.t.db;
    for (let i = 0; i < 4; i++) await addRun(db, { status: 'failed', daysAgo: 20 - i });
    const config = { ...w.config, serve: { ...w.config.serve, runHistoryDays: 10 } };
    const s = await startServe({
      ...w.deps(),
      config,
      jobs,
      port: 0,
      host: '127.0.0.1',
      schedule: false,
      runRetention: { firstAfterMs: 0, everyMs: 20 },
    });
    try {
      await until(async () => (await runIds(db)).length === 1, 'the prune after start');
    } finally {
      await s.close();
    }
    expect(w.logs.some((l) => l.includes('removed 3 runs older than 10 days'))).toBe(true);

    // After shutdown no prune runs, however often they were due.
    await addRun(db, { status: 'failed', daysAgo: 15 });
    await new Promise((r) => setTimeout(r, 200));
    expect(await runIds(db)).toHaveLength(2);
  });
});
