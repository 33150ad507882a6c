/**
 * What `listsync status`, `/healthz` and `/metrics` read per list (src/status.ts): the runs, state,
 * changes and conflicts of every list in a fixed number of queries, with exact mirror row counts
 * unless the caller asks for none; a long run history is not walked for a list's latest failure.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../src/config.js';
import type { Knex } from '../src/db.js';
import { listStatus, listStatuses, RowCountCache, type ListStatus } from '../src/status.js';
import { STATUS_FACTS_SQL } from '../src/store/status-facts.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

const T0 = new Date('2026-11-20T10:00:00Z');
const at = (minutes: number): Date => new Date(T0.getTime() + minutes * 60_000);
const NOW = at(60);

function configOf(t: TestDatabase, lists: Record<string, unknown>[]): Config {
  return parseConfig({
    // No request reaches the platform: status reads PostgreSQL only.
    platform: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'status-test-key' },
    database: { url: t.url, schema: 'mirror' },
    lists,
  });
}

interface SeededRun {
  job: string;
  status: string;
  startedAt: Date;
  error?: string;
  rowsDeleted?: number;
  rowsUndeleted?: number;
  details?: object;
}

/** Runs of a list, inserted in the order given (their ids ascend in that order). */
async function seedRuns(db: Knex, list: string, runs: readonly SeededRun[]): Promise<void> {
  for (const r of runs) {
    await db('listsync.sync_runs').insert({
      list_name: list,
      job: r.job,
      status: r.status,
      started_at: r.startedAt,
      finished_at: r.status === 'running' ? null : r.startedAt,
      error: r.error ?? null,
      rows_deleted: r.rowsDeleted ?? 0,
      rows_undeleted: r.rowsUndeleted ?? 0,
      details: JSON.stringify(r.details ?? {}),
    });
  }
}

async function seedState(db: Knex, list: string, state: { watermark: string; nextPage?: number; lastSuccessAt: Date }): Promise<void> {
  await db('listsync.sync_state').insert({
    list_name: list,
    job: 'pull',
    watermark: state.watermark,
    checkpoint: state.nextPage === undefined ? null : JSON.stringify({ runId: 1, nextPage: state.nextPage }),
    last_success_at: state.lastSuccessAt,
  });
}

/** One outbox row per status given (each for its own item). */
async function seedChanges(db: Knex, list: string, statuses: readonly string[]): Promise<void> {
  for (const [i, status] of statuses.entries())
    await db('listsync.outbox').insert({ list_name: list, op: 'update', item_id: `${list}-${i}`, status, changes: '{"a":1}' });
}

async function seedConflicts(db: Knex, list: string, statuses: readonly string[]): Promise<void> {
  for (const [i, status] of statuses.entries())
    await db('listsync.conflicts').insert({ list_name: list, item_id: `${list}-${i}`, policy: 'manual', local: '{}', status });
}

/** A mirror table with `live` rows and `deleted` rows marked deleted. */
async function seedMirrorTable(db: Knex, table: string, live: number, deleted: number): Promise<void> {
  await db.raw('create schema if not exists mirror');
  await db.raw('create table ??.?? (id text primary key, _deleted_at timestamptz)', ['mirror', table]);
  const rows = [
    ...Array.from({ length: live }, (_, i) => ({ id: `l${i}`, _deleted_at: null })),
    ...Array.from({ length: deleted }, (_, i) => ({ id: `d${i}`, _deleted_at: T0 })),
  ];
  if (rows.length) await db(`mirror.${table}`).insert(rows);
}

/** The SQL statements `read` issues on `db`. */
async function queriesOf(db: Knex, read: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const listen = (q: { sql: string }) => seen.push(q.sql);
  db.on('query', listen);
  try {
    await read();
  } finally {
    db.off('query', listen);
  }
  return seen;
}

describe('list statuses', () => {
  let t: TestDatabase;
  let config: Config;

  beforeAll(async () => {
    t = await createTestDatabase();
    config = configOf(t, [
      { name: 'alpha', appID: 'demo', listID: 'alpha', table: 'alpha_items' },
      { name: 'beta', appID: 'demo', listID: 'beta' },
      { name: 'gamma', appID: 'demo', listID: 'gamma' },
    ]);
    // alpha: a pull running now; the last failure (a push) is newer than the last success (a reconcile).
    await seedRuns(t.db, 'alpha', [
      { job: 'pull', status: 'succeeded', startedAt: at(0) },
      {
        job: 'reconcile',
        status: 'succeeded',
        startedAt: at(5),
        rowsDeleted: 2,
        rowsUndeleted: 1,
        details: { healed: { missing: 3, behind: 4 } },
      },
      { job: 'push', status: 'failed', startedAt: at(10), error: 'push failed: HTTP 500' },
      { job: 'pull', status: 'running', startedAt: at(20) },
    ]);
    await seedState(t.db, 'alpha', { watermark: '2026-11-19', nextPage: 7, lastSuccessAt: at(1) });
    await seedChanges(t.db, 'alpha', ['pending', 'pending', 'sending', 'failed', 'applied', 'conflict', 'superseded']);
    await seedConflicts(t.db, 'alpha', ['open', 'open', 'resolved']);
    await seedMirrorTable(t.db, 'alpha_items', 3, 1);

    // beta: a backfill failed, a pull succeeded since, then a pull was interrupted and one skipped; no mirror table.
    await seedRuns(t.db, 'beta', [
      { job: 'backfill', status: 'failed', startedAt: at(0), error: 'backfill: timed out' },
      { job: 'pull', status: 'succeeded', startedAt: at(30) },
      { job: 'pull', status: 'interrupted', startedAt: at(35), error: 'stopped by SIGTERM; the next run carries on' },
      { job: 'pull', status: 'skipped', startedAt: at(40), error: 'coalesced' },
    ]);
    await seedState(t.db, 'beta', { watermark: '2026-11-20', lastSuccessAt: at(31) });
    await seedConflicts(t.db, 'beta', ['resolved']);

    // gamma: a pull failure recorded after a pull's success but fired before it started (serve's queue records a
    // skipped or failed fire afterwards), so it is not the list's error; an empty mirror table.
    await seedRuns(t.db, 'gamma', [
      { job: 'reconcile', status: 'succeeded', startedAt: at(50) },
      { job: 'pull', status: 'succeeded', startedAt: at(48) },
      { job: 'pull', status: 'failed', startedAt: at(45), error: 'database unreachable' },
    ]);
    await seedMirrorTable(t.db, 'gamma', 0, 0);

    // A list not configured: none of its runs, changes or conflicts count.
    await seedRuns(t.db, 'other', [{ job: 'pull', status: 'failed', startedAt: at(59), error: 'not ours' }]);
    await seedChanges(t.db, 'other', ['pending', 'failed']);
    await seedConflicts(t.db, 'other', ['open']);
  });
  afterAll(async () => t?.drop());

  const alpha: ListStatus = {
    list: 'alpha',
    account: 'default',
    table: 'mirror.alpha_items',
    lastSuccessAt: at(1),
    lastRunAt: at(20),
    lastRunStatus: 'running',
    running: true,
    watermark: '2026-11-19',
    lastReconcileHealed: { at: at(5), deleted: 2, undeleted: 1, missing: 3, behind: 4 },
    lagMinutes: 60,
    lastPullStartedAt: at(0),
    rows: 3,
    deletedRows: 1,
    lastError: 'push failed: HTTP 500',
    pendingChanges: 3,
    failedChanges: 1,
    openConflicts: 2,
    resumeFromPage: 7,
  };
  const beta: ListStatus = {
    list: 'beta',
    account: 'default',
    table: 'mirror.beta',
    lastSuccessAt: at(31),
    lastRunAt: at(40),
    lastRunStatus: 'skipped',
    running: false,
    watermark: '2026-11-20',
    lastReconcileHealed: null,
    lagMinutes: 30,
    lastPullStartedAt: at(30),
    rows: null,
    deletedRows: null,
    lastError: null,
    pendingChanges: 0,
    failedChanges: 0,
    openConflicts: 0,
    resumeFromPage: null,
  };
  const gamma: ListStatus = {
    list: 'gamma',
    account: 'default',
    table: 'mirror.gamma',
    lastSuccessAt: null,
    lastRunAt: at(45),
    lastRunStatus: 'failed',
    running: false,
    watermark: null,
    lastReconcileHealed: { at: at(50), deleted: 0, undeleted: 0, missing: 0, behind: 0 },
    lagMinutes: 12,
    lastPullStartedAt: at(48),
    rows: 0,
    deletedRows: 0,
    lastError: null,
    pendingChanges: 0,
    failedChanges: 0,
    openConflicts: 0,
    resumeFromPage: null,
  };

  it('reports each list’s runs, state, changes, conflicts and mirror rows, in config order', async () => {
    expect(await listStatuses(t.db, config, NOW)).toEqual([alpha, beta, gamma]);
  });

  it('reports one list alone as it reports it among the others', async () => {
    expect(await listStatus(t.db, config, config.lists[2]!, NOW)).toEqual(gamma);
  });

  it('with { rows: false } leaves the row counts null and reads no mirror table', async () => {
    const noRows = (s: ListStatus): ListStatus => ({ ...s, rows: null, deletedRows: null });
    let statuses: ListStatus[] = [];
    const sql = await queriesOf(t.db, async () => (statuses = await listStatuses(t.db, config, NOW, { rows: false })));
    expect(statuses).toEqual([noRows(alpha), noRows(beta), noRows(gamma)]);
    expect(sql.filter((s) => /\bmirror"?\./.test(s))).toEqual([]);
  });

  it('with { rows: false } answers while a mirror table is locked; counting rows waits for the lock', async () => {
    const holder = await t.db.transaction();
    try {
      await holder.raw('lock table mirror.alpha_items in access exclusive mode');
      const readLocked = (rows: boolean) =>
        t.db.transaction(async (trx) => {
          await trx.raw(`set local lock_timeout = '500ms'`);
          return listStatuses(trx, config, NOW, { rows });
        });
      expect((await readLocked(false))[0]).toEqual({ ...alpha, rows: null, deletedRows: null });
      await expect(readLocked(true)).rejects.toThrow(/lock timeout/);
    } finally {
      await holder.rollback();
    }
  });
});

describe('list statuses of many lists', () => {
  let t: TestDatabase;
  const many = 50;

  beforeAll(async () => {
    t = await createTestDatabase();
    for (let i = 0; i < many; i++) {
      const list = `list_${i}`;
      await seedRuns(t.db, list, [
        { job: 'pull', status: 'failed', startedAt: at(0), error: `failed ${i}` },
        { job: 'pull', status: 'succeeded', startedAt: at(10) },
        { job: 'reconcile', status: 'succeeded', startedAt: at(20), details: { healed: { missing: i } } },
        { job: 'pull', status: 'running', startedAt: at(30) },
      ]);
      await seedState(t.db, list, { watermark: '2026-11-20', nextPage: i, lastSuccessAt: at(11) });
      await seedChanges(t.db, list, ['pending', 'failed']);
      await seedConflicts(t.db, list, ['open']);
      await seedMirrorTable(t.db, list, i % 3, 1);
    }
  });
  afterAll(async () => t?.drop());

  const lists = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `list_${i}`, appID: 'demo', listID: `l${i}` }));

  it('reads 50 lists with as many queries as 2', async () => {
    const two = configOf(t, lists(2));
    const fifty = configOf(t, lists(many));
    let statuses: ListStatus[] = [];
    const forTwo = await queriesOf(t.db, () => listStatuses(t.db, two, NOW));
    const forFifty = await queriesOf(t.db, async () => (statuses = await listStatuses(t.db, fifty, NOW)));
    expect(forFifty.length).toBe(forTwo.length);
    // One for listsync's own tables, one for the mirror tables' rows.
    expect(forFifty.length).toBe(2);
    expect(statuses.map((s) => [s.list, s.rows, s.deletedRows, s.resumeFromPage, s.lastReconcileHealed?.missing])).toEqual(
      Array.from({ length: many }, (_, i) => [`list_${i}`, i % 3, 1, i, i]),
    );
    expect(statuses.every((s) => s.running && s.lastError === null && s.pendingChanges === 1 && s.openConflicts === 1)).toBe(true);

    const withoutRows = await queriesOf(t.db, () => listStatuses(t.db, fifty, NOW, { rows: false }));
    expect(withoutRows.length).toBe(1);
  });
});

describe('list statuses over a long run history', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    // 20 lists, 2,000 runs each, interleaved; a failure now and then, nothing running.
    await t.db.raw(
      `insert into listsync.sync_runs (list_name, job, status, started_at, finished_at)
       select 'list_' || (i % 20), case when i % 3 = 0 then 'reconcile' else 'pull' end,
              case when i % 500 = 7 then 'failed' else 'succeeded' end, ?::timestamptz + make_interval(secs => i), ?::timestamptz + make_interval(secs => i)
         from generate_series(1, 40000) i`,
      [T0, T0],
    );
    await t.db.raw('analyze listsync.sync_runs');
  });
  afterAll(async () => t?.drop());

  it('finds each list’s latest failure and whether it runs through their partial indexes, not by walking its runs', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `list_${i}`);
    const r = await t.db.raw<{ rows: { 'QUERY PLAN': string }[] }>(`explain ${STATUS_FACTS_SQL}`, ['mirror', names, names]);
    const plan = r.rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/Index Scan Backward using sync_runs_failed_by_list/);
    expect(plan).toMatch(/Index Only Scan using sync_runs_succeeded_by_list_job|Index Scan using sync_runs_succeeded_by_list_job/);
    expect(plan).toMatch(/Index Only Scan using sync_runs_running_by_list/);
  });
});

describe('mirror row counts kept between reads (RowCountCache, as /metrics reads)', () => {
  let t: TestDatabase;
  let config: Config;
  beforeAll(async () => {
    t = await createTestDatabase();
    config = configOf(t, [{ name: 'delta', appID: 'demo', listID: 'delta' }]);
    await seedRuns(t.db, 'delta', [{ job: 'pull', status: 'succeeded', startedAt: at(0) }]);
    await seedMirrorTable(t.db, 'delta', 2, 0);
  });
  afterAll(async () => t?.drop());

  const addRow = (id: string) => t.db('mirror.delta').insert({ id, _deleted_at: null });
  /** The list's live rows as read at `when`, and whether the mirror table was scanned for them. */
  async function read(cache: RowCountCache, when: Date): Promise<{ rows: number | null; scanned: boolean }> {
    let rows: number | null = null;
    const sql = await queriesOf(t.db, async () => (rows = (await listStatuses(t.db, config, when, { rows: cache }))[0]!.rows));
    return { rows, scanned: sql.some((s) => /\bmirror"?\./.test(s)) };
  }

  it('counts a table once, again after a run of its list started or while one runs, and again when the count is 5 minutes old', async () => {
    const cache = new RowCountCache();
    expect(await read(cache, at(60))).toEqual({ rows: 2, scanned: true });
    await addRow('a'); // an edit no run made (real time): seen within the count's age
    expect(await read(cache, at(61))).toEqual({ rows: 2, scanned: false });
    expect(await read(cache, at(65))).toEqual({ rows: 3, scanned: true });

    await seedRuns(t.db, 'delta', [{ job: 'pull', status: 'succeeded', startedAt: at(66) }]);
    await addRow('b');
    expect(await read(cache, at(67))).toEqual({ rows: 4, scanned: true });
    expect(await read(cache, at(68))).toEqual({ rows: 4, scanned: false });

    // A run started before the count and still writing: counted at every read while it runs, and once after.
    await seedRuns(t.db, 'delta', [{ job: 'pull', status: 'running', startedAt: at(67.5) }]);
    expect(await read(cache, at(69))).toEqual({ rows: 4, scanned: true });
    await addRow('c');
    await t
      .db('listsync.sync_runs')
      .where({ list_name: 'delta', status: 'running' })
      .update({ status: 'succeeded', finished_at: at(69.5) });
    expect(await read(cache, at(70))).toEqual({ rows: 5, scanned: true });
    expect(await read(cache, at(71))).toEqual({ rows: 5, scanned: false });
  });
});

describe('a list is as healthy as its worst job', () => {
  let t: TestDatabase;
  let config: Config;
  beforeAll(async () => {
    t = await createTestDatabase();
    config = configOf(t, [
      { name: 'pulls', appID: 'demo', listID: 'pulls' },
      { name: 'pushes', appID: 'demo', listID: 'pushes' },
      { name: 'healed', appID: 'demo', listID: 'healed' },
    ]);
    // pulls: a pull failed; a push and a reconcile succeeded since: still the pull's error.
    await seedRuns(t.db, 'pulls', [
      { job: 'pull', status: 'succeeded', startedAt: at(0) },
      { job: 'pull', status: 'failed', startedAt: at(10), error: 'pull: HTTP 503' },
      { job: 'push', status: 'succeeded', startedAt: at(11) },
      { job: 'reconcile', status: 'succeeded', startedAt: at(12) },
    ]);
    // pushes: a push failed, then a pull failed, then a pull succeeded: the push's error is left.
    await seedRuns(t.db, 'pushes', [
      { job: 'push', status: 'failed', startedAt: at(10), error: 'push: HTTP 500' },
      { job: 'pull', status: 'failed', startedAt: at(20), error: 'pull: HTTP 503' },
      { job: 'pull', status: 'succeeded', startedAt: at(30) },
    ]);
    // healed: a pull failed, a backfill succeeded since (a pull of a date range): no error.
    await seedRuns(t.db, 'healed', [
      { job: 'pull', status: 'failed', startedAt: at(10), error: 'pull: HTTP 503' },
      { job: 'backfill', status: 'succeeded', startedAt: at(20) },
    ]);
  });
  afterAll(async () => t?.drop());

  it('keeps a job’s failure until a run of the same job succeeds, whatever else succeeded since', async () => {
    const statuses = await listStatuses(t.db, config, NOW, { rows: false });
    expect(statuses.map((s) => [s.list, s.lastError])).toEqual([
      ['pulls', 'pull: HTTP 503'],
      ['pushes', 'push: HTTP 500'],
      ['healed', null],
    ]);
  });
});
