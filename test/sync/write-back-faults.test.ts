/**
 * Write-back under faults: a change is settled with its row, edits never carry
 * a stale or placeholder base, "gone" is decided by asking, a failing change
 * does not stop the push, removed fields and odd column names are handled.
 * Real PostgreSQL, the emulator over HTTP, faults through its admin API.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { ensureMirrorTable, loadTableMapping } from '../../src/mirror/index.js';
import { textArrayLiteral } from '../../src/mirror/triggers.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { BIN, childEnv } from '../helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const fast = { rereadDelaysMs: [10, 20] };
const itemsById = async (world: World) =>
  new Map((await world.emu.admin.exportList('demo', 'orders')).items.map((i) => [String(i.ListDataID), i]));
const outboxRows = (world: World) =>
  world.t.db('listsync.outbox').orderBy('id') as Promise<
    {
      id: number;
      op: string;
      item_id: string | null;
      status: string;
      base_version: string | null;
      changes: Record<string, unknown>;
      last_error: string | null;
      mirror_behind: boolean;
    }[]
  >;
const conflicts = (world: World) =>
  world.t.db('listsync.conflicts').orderBy('id') as Promise<{ item_id: string; resolution: string | null }[]>;

describe('write-back settles each change with its row', () => {
  it('re-reads failing after the writes: the next round of edits is applied, platform edits made meanwhile become conflicts, nothing is overwritten', async () => {
    // Whole-item conflicts (the platform edits other fields than the local ones); field by field: test/sync/field-merge.test.ts.
    w = await startWorld({ emulator: { items: 60 }, platform: { retries: 1 }, list: { conflictScope: 'item' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(20).pluck('id')) as string[];
    await w.t.db.raw(`update mirror.orders set customer = 'round 1 ' || right(id, 4) where id = any(?)`, [ids]);
    await w.t.db.raw(`insert into mirror.orders (customer, order_no) values ('created A', 'N-A'), ('created B', 'N-B')`);

    // Every query fails from now on: the writes go through, their re-reads do not.
    await w.emu.admin.setFaults({ errorRate: 1, faultPaths: '/items/query' });
    const first = await pushList({ ...w.deps(), ...fast }, list);
    expect(first).toMatchObject({ applied: 20, created: 2, conflicts: 0, failed: 0 });
    expect(first.behind).toBe(22);
    await w.emu.admin.setFaults({ errorRate: 0, faultPaths: null });
    const behind = (await outboxRows(w)).filter((o) => o.mirror_behind);
    expect(behind).toHaveLength(22);

    // Meanwhile a platform user edits two updated rows and one created row.
    const created = (await w.t
      .db('mirror.orders')
      .whereIn('customer', ['created A', 'created B'])
      .orderBy('customer')
      .pluck('id')) as string[];
    expect(created.every((id) => /^\d+$/.test(id))).toBe(true);
    const editedThere = [ids[0]!, ids[1]!, created[0]!];
    for (const id of editedThere) await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.status]: 'changed on the platform' } });

    // Round 2 in SQL on the same rows, no pull in between.
    await w.t.db.raw(`update mirror.orders set notes = 'round 2 ' || right(id, 4) where id = any(?)`, [[...ids, ...created]]);
    const bases = new Map((await outboxRows(w)).filter((o) => o.status === 'pending').map((o) => [o.item_id!, Number(o.base_version)]));
    const platform = await itemsById(w);
    // Every base is the version the first round produced, never NULL, 0 or a stale one.
    for (const id of [...ids, ...created]) {
      const expected = editedThere.includes(id) ? Number(platform.get(id)!.RowVersion) - 1 : Number(platform.get(id)!.RowVersion);
      expect(bases.get(id), `base of ${id}`).toBe(expected);
    }

    const second = await pushList({ ...w.deps(), ...fast }, list);
    expect(second).toMatchObject({ applied: 19, conflicts: 3, failed: 0, behind: 0 });
    const after = await itemsById(w);
    for (const id of [...ids, ...created]) {
      const item = after.get(id)!;
      if (editedThere.includes(id)) {
        // remote-wins: the platform user's edit stands, the local one is kept in the conflict.
        expect(item[F.status]).toBe('changed on the platform');
        expect(item[F.notes]).not.toMatch(/^round 2/);
      } else expect(item[F.notes]).toBe(`round 2 ${id.slice(-4)}`);
    }
    expect((await conflicts(w)).map((c) => c.item_id).sort()).toEqual([...editedThere].sort());
    // No pull in between: the mirror equals the platform row for row.
    await expectMirrorEqualsPlatform(w);
    expect((await outboxRows(w)).filter((o) => o.mirror_behind)).toEqual([]);
  });

  it('a refill that failed midway does not turn the next SQL edit into a conflict', async () => {
    w = await startWorld({ emulator: { items: 300 }, list: { pageSize: 50 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    await w.emu.admin.addField('demo', 'orders', { FieldName: 'Text9', FieldType: 'Text', Type: 'input', DisplayName: 'Region' });
    // The refill's third page fails for good: the rows stay marked for the refill.
    await w.emu.admin.setFaults({ pageFault: { kind: 'shortPage', page: 3 } });
    await expect(pullList(w.deps(), list)).rejects.toThrow();
    await w.emu.admin.setFaults({ pageFault: null });
    const marked = (await w.t.db('mirror.orders').where({ row_version: -1 }).count('* as n').first()) as { n: string };
    expect(Number(marked.n)).toBeGreaterThan(0);
    const id = (await w.t.db('mirror.orders').where({ row_version: -1 }).orderBy('id').first('id')) as { id: string };

    await w.t.db('mirror.orders').where({ id: id.id }).update({ customer: 'edited during a refill' });
    const [change] = await outboxRows(w);
    const version = Number((await itemsById(w)).get(id.id)!.RowVersion);
    expect(Number(change!.base_version)).toBe(version);

    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 1, conflicts: 0, failed: 0 });
    expect((await itemsById(w)).get(id.id)![F.customer]).toBe('edited during a refill');
  });

  it('a created row edited before its re-read is sent against the version the create produced, never RowVersion 0', async () => {
    w = await startWorld({ emulator: { items: 10 }, platform: { retries: 1 }, list: { conflictScope: 'item' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    await w.t.db.raw(`insert into mirror.orders (customer, order_no) values ('new row', 'N-1')`);
    await w.emu.admin.setFaults({ errorRate: 1, faultPaths: '/items/query' });
    await pushList({ ...w.deps(), ...fast }, list);
    await w.emu.admin.setFaults({ errorRate: 0, faultPaths: null });
    const { id } = (await w.t.db('mirror.orders').where({ customer: 'new row' }).first('id')) as { id: string };
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'renamed on the platform' } });
    await w.t.db('mirror.orders').where({ id }).update({ notes: 'local note' });
    await w.emu.admin.clearRequests();
    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 0, conflicts: 1 });
    const patches = (await w.emu.admin.requests()).filter((e) => e.method === 'PATCH');
    expect(patches.map((p) => (JSON.parse(p.body!) as { RowVersion: number }).RowVersion)).toEqual([1]);
    expect((await itemsById(w)).get(id)![F.customer]).toBe('renamed on the platform');
  });
});

describe('an edit whose base version is unknown', () => {
  it('is sent against the platform version only when the item still holds what the mirror last saw; else a conflict, never RowVersion 0', async () => {
    w = await startWorld({ emulator: { items: 10 }, list: { conflictScope: 'item' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const [same, moved] = (await w.t.db('mirror.orders').orderBy('id').limit(2).pluck('id')) as [string, string];
    // Rows as an older listsync left them: no version anywhere.
    await w.t.db.transaction(async (trx) => {
      await trx.raw(`select set_config('listsync.writer', 'on', true)`);
      await trx.raw(`update mirror.orders set row_version = null, _raw = _raw - 'RowVersion' where id = any(?)`, [[same, moved]]);
    });
    await w.t.db.raw(`update mirror.orders set customer = 'unknown base' where id = any(?)`, [[same, moved]]);
    expect((await outboxRows(w)).map((o) => o.base_version)).toEqual([null, null]);
    await w.emu.admin.editItem('demo', 'orders', moved, { Data: { [F.status]: 'moved on the platform' } });
    await w.emu.admin.clearRequests();
    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 1, conflicts: 1 });
    const patches = (await w.emu.admin.requests()).filter((e) => e.method === 'PATCH');
    expect(patches.map((p) => (JSON.parse(p.body!) as { RowVersion: number }).RowVersion).every((v) => v > 0)).toBe(true);
    const platform = await itemsById(w);
    expect(platform.get(same)![F.customer]).toBe('unknown base');
    expect(platform.get(moved)![F.status]).toBe('moved on the platform');
    expect(platform.get(moved)![F.customer]).not.toBe('unknown base');
  });
});

describe('gone is decided by asking, whatever the Status code', () => {
  it('with unknown items answered HTTP 200 and a six-digit Status, deletes of items already gone are applied, edits of them fail at once', async () => {
    w = await startWorld({ emulator: { items: 40 }, list: { pushDeletes: true } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    await w.emu.admin.setSettings({ unknownItem: { httpStatus: 200, status: 100404 } });
    const [goneA, goneB, edited] = (await w.t.db('mirror.orders').orderBy('id').limit(3).pluck('id')) as string[];
    await w.t.db('mirror.orders').whereIn('id', [goneA!, goneB!]).delete();
    await w.t.db('mirror.orders').where({ id: edited }).update({ customer: 'edit of a deleted item' });
    for (const id of [goneA!, goneB!, edited!]) await w.emu.admin.deleteItem('demo', 'orders', id);
    await w.emu.admin.clearRequests();

    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r).toMatchObject({ deleted: 2, failed: 1, retrying: 0 });
    const rows = await outboxRows(w);
    expect(rows.find((o) => o.item_id === edited)!.last_error).toMatch(/no longer exists on the platform/);
    // Each gone item: one read by ID and one In query, no retry storm.
    const gets = (await w.emu.admin.requests()).filter((e) => e.method === 'GET');
    expect(gets.length).toBeLessThanOrEqual(4);
    const again = await pushList({ ...w.deps(), ...fast }, list);
    expect(again).toMatchObject({ deleted: 0, failed: 0, retrying: 0 });
  });
});

describe('a push goes on past a failing change', () => {
  it('one delete answered 5xx after every retry: the other changes are applied, it stays pending with its error, the run says so', async () => {
    w = await startWorld({ emulator: { items: 30 }, list: { pushDeletes: true }, platform: { retries: 1 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(6).pluck('id')) as string[];
    await w.t.db('mirror.orders').where({ id: ids[0] }).delete();
    await w.t.db.raw(`update mirror.orders set customer = 'still sent' where id = any(?)`, [ids.slice(1)]);
    await w.emu.admin.setFaults({ errorRate: 1, faultPaths: `/items/${ids[0]}$` });
    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 5, retrying: 1, deleted: 0, stoppedAfterFailures: 0 });
    const pending = (await outboxRows(w)).filter((o) => o.status === 'pending');
    expect(pending.map((o) => o.item_id)).toEqual([ids[0]]);
    expect(pending[0]!.last_error).toMatch(/HTTP 50\d/);
    const platform = await itemsById(w);
    expect(ids.slice(1).every((id) => platform.get(id)![F.customer] === 'still sent')).toBe(true);
  });

  it('a platform that is down stops the push after ten changes failed in a row, not at the first; the rest stay pending', async () => {
    w = await startWorld({ emulator: { items: 120 }, platform: { retries: 0 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    await w.t.db.raw(`update mirror.orders set customer = 'outage' where id in (select id from mirror.orders order by id limit 100)`);
    await w.emu.admin.setFaults({ errorRate: 1, faultPaths: '/items' });
    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r.stoppedAfterFailures).toBeGreaterThanOrEqual(10);
    expect(r.applied).toBe(0);
    // Ten in a row stop new changes from starting; those already in flight finish.
    expect(r.retrying).toBeGreaterThanOrEqual(10);
    expect(r.retrying).toBeLessThan(50);
    const untried = (await w.t.db('listsync.outbox').where({ status: 'pending', attempts: 0 }).count('* as n').first()) as { n: string };
    expect(Number(untried.n)).toBe(100 - r.retrying);
    const run = (await w.t.db('listsync.sync_runs').where({ job: 'push' }).orderBy('id', 'desc').first()) as {
      status: string;
      error: string;
    };
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/stopped after \d+ changes in a row failed/);
    expect((await outboxRows(w)).filter((o) => o.status === 'pending')).toHaveLength(100);
  });
});

describe('fields and columns', () => {
  it('an edit naming a since-removed field: the rest is sent, the removed part is kept as a failed change with a message', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const { id } = (await w.t.db('mirror.orders').orderBy('id').first('id')) as { id: string };
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'sent', notes: 'not sendable' });
    // A pull then sees the Notes field gone from the platform.
    const mapping = (await loadTableMapping(w.t.db, 'mirror', 'orders'))!;
    const fields = (await w.client.getFields('demo', 'orders')).filter((f) => f.FieldName !== F.notes);
    await ensureMirrorTable(w.t.db, {
      schema: 'mirror',
      list: { ...list, table: mapping.table },
      fields,
      idField: mapping.idField,
      versionField: mapping.versionField,
    });

    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 1, failed: 0 });
    const item = (await itemsById(w)).get(id)!;
    expect(item[F.customer]).toBe('sent');
    expect(item[F.notes]).not.toBe('not sendable');
    const failed = (await outboxRows(w)).filter((o) => o.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.changes).toEqual({ notes: 'not sendable' });
    expect(failed[0]!.last_error).toMatch(/notes \(field Text4\) belongs to a field that was removed from the platform/);
    // A SQL edit of the removed column is refused, not silently dropped.
    await expect(w.t.db('mirror.orders').where({ id }).update({ notes: 'again' })).rejects.toThrow(/removed from the platform/);
  });

  it('a fraction written to a whole-number field is refused at capture, naming the column', async () => {
    w = await startWorld({ emulator: { items: 5 } });
    await pullList(w.deps(), w.config.lists[0]!);
    const { id } = (await w.t.db('mirror.orders').orderBy('id').first('id')) as { id: string };
    await expect(w.t.db('mirror.orders').where({ id }).update({ quantity: 2.5 })).rejects.toThrow(
      /column quantity of mirror\.orders holds a whole-number field on the platform; 2\.5 is not a whole number/,
    );
    await w.t.db('mirror.orders').where({ id }).update({ quantity: 3 });
    expect((await outboxRows(w)).map((o) => o.changes)).toEqual([{ quantity: '3' }]);
  });

  it('column names such as null, NULL, {a,b}, quotes, backslashes and commas reach the trigger as themselves', async () => {
    w = await startWorld({ emulator: { items: 1 } });
    const names = ['null', 'NULL', '{a,b}', 'say "hi"', 'back\\slash', 'a,b', ' spaced '];
    const back = (await w.t.db.raw('select ?::text[] as a', [textArrayLiteral(names)])) as { rows: { a: string[] }[] };
    expect(back.rows[0]!.a).toEqual(names);
  });

  it('a field shown as "NULL" (column null) round-trips an edit and an insert', async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const list = w.config.lists[0]!;
    await w.emu.admin.addField('demo', 'orders', { FieldName: 'Text9', FieldType: 'Text', Type: 'input', DisplayName: 'NULL' });
    await pullList(w.deps(), list);
    const { id } = (await w.t.db('mirror.orders').orderBy('id').first('id')) as { id: string };
    await w.t.db.raw(`update mirror.orders set "null" = 'edited' where id = ?`, [id]);
    await w.t.db.raw(`insert into mirror.orders ("null", order_no) values ('inserted', 'N-NULL')`);
    const r = await pushList({ ...w.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 1, created: 1, failed: 0 });
    const items = [...(await itemsById(w)).values()];
    expect(items.find((i) => String(i.ListDataID) === id)!.Text9).toBe('edited');
    expect(items.filter((i) => i.Text9 === 'inserted')).toHaveLength(1);
  });
});

describe('applied changes are kept for a while', () => {
  it('an applied change older than appliedRetentionDays is pruned by the next push; newer ones stay', async () => {
    w = await startWorld({ emulator: { items: 5 }, list: { appliedRetentionDays: 7 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(2).pluck('id')) as string[];
    await w.t.db('mirror.orders').where({ id: ids[0] }).update({ customer: 'old' });
    await pushList({ ...w.deps(), ...fast }, list);
    await w.t.db('listsync.outbox').update({ applied_at: w.t.db.raw("now() - interval '8 days'") });
    await w.t.db('mirror.orders').where({ id: ids[1] }).update({ customer: 'new' });
    await pushList({ ...w.deps(), ...fast }, list);
    const rows = await outboxRows(w);
    expect(rows.map((o) => [o.item_id, o.status])).toEqual([[ids[1], 'applied']]);
  });
});

describe('kill -9 at random moments of a push', () => {
  it('20 kills of a 300-change push (updates, creates, deletes): the next push leaves the mirror equal to the platform, no create twice, and a second round of edits is applied with platform edits surfacing as conflicts', async () => {
    // 20 requests a second: a push of 300 changes takes 15 s, so later kills still land in work.
    w = await startWorld({
      emulator: { items: 400 },
      list: { pushDeletes: true, conflictScope: 'item' },
      platform: { requestsPerSecond: 20 },
    });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(250).pluck('id')) as string[];
    const updated = ids.slice(0, 200);
    const deleted = ids.slice(200, 250);
    await w.t.db.raw(
      `update mirror.orders set customer = 'killed run ' || right(id, 4), quantity = coalesce(quantity, 0) + 1 where id = any(?)`,
      [updated],
    );
    await w.t.db('mirror.orders').whereIn('id', deleted).delete();
    await w.t.db.raw(`insert into mirror.orders (customer, order_no) select 'created ' || g, 'K-' || g from generate_series(1, 50) g`);
    // Write answers are slow, so kills land between a write and what follows it.
    await w.emu.admin.setFaults({ latencyMs: 40, faultPaths: '/items(/[0-9]+)?$' });

    const env = childEnv({ PLATFORM_API_KEY: w.emu.apiKey });
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pushRuns = async () =>
      Number(((await w!.t.db('listsync.sync_runs').where({ job: 'push' }).count('* as n').first()) as { n: string }).n);
    for (let kill = 0; kill < 20; kill++) {
      const started = await pushRuns();
      const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'push'], { env, stdio: 'ignore' });
      let done = false;
      const exited = new Promise((r) => child.once('exit', r)).then(() => (done = true));
      // Kill at a random moment after the push has begun (its run is recorded), not while the process starts.
      while (!done && (await pushRuns()) === started) await new Promise((r) => setTimeout(r, 20));
      await Promise.race([exited, new Promise((r) => setTimeout(r, random() * 1500))]);
      child.kill('SIGKILL');
      await exited;
    }
    await w.emu.admin.setFaults({ latencyMs: 0, faultPaths: null });
    // The kills landed inside pushes: their runs were found abandoned by the next one.
    const killed = (await w.t
      .db('listsync.sync_runs')
      .where({ job: 'push' })
      .where('error', 'like', '%abandoned%')
      .count('* as n')
      .first()) as {
      n: string;
    };
    expect(Number(killed.n)).toBeGreaterThanOrEqual(10);
    await w.t.db('listsync.outbox').update({ next_attempt_at: w.t.db.raw('now()') });
    const finish = await pushList({ ...w.deps(), ...fast }, list);
    expect(finish.failed).toBe(0);

    const platform = [...(await itemsById(w)).values()];
    for (let g = 1; g <= 50; g++)
      expect(
        platform.filter((i) => i[F.orderNo] === `K-${g}`),
        `creates of K-${g}`,
      ).toHaveLength(1);
    expect(platform.filter((i) => deleted.includes(String(i.ListDataID)))).toEqual([]);
    expect(platform.filter((i) => updated.includes(String(i.ListDataID)) && !String(i[F.customer]).startsWith('killed run '))).toEqual([]);
    await expectMirrorEqualsPlatform(w);
    expect(await w.t.db('listsync.outbox').whereIn('status', ['pending', 'sending', 'conflict']).count('* as n').first()).toEqual({ n: 0 });

    // Round 2: ten of the rows are edited on the platform meanwhile; every row is edited again in SQL.
    const created = (await w.t.db('mirror.orders').where('order_no', 'like', 'K-%').pluck('id')) as string[];
    const editedThere = [...updated.slice(0, 7), ...created.slice(0, 3)];
    for (const id of editedThere) await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.status]: 'platform edit' } });
    await w.t.db.raw(`update mirror.orders set notes = 'round 2' where id = any(?)`, [[...updated, ...created]]);
    const second = await pushList({ ...w.deps(), ...fast }, list);
    expect(second).toMatchObject({ applied: 240, conflicts: 10, failed: 0 });
    const after = await itemsById(w);
    for (const id of editedThere) expect(after.get(id)![F.status]).toBe('platform edit');
    expect([...updated, ...created].filter((id) => !editedThere.includes(id) && after.get(id)![F.notes] !== 'round 2')).toEqual([]);
    await expectMirrorEqualsPlatform(w);
  }, 240_000);
});
