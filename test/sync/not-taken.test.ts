/**
 * "Applied" means the platform holds it: a system field's column is
 * read-only in the mirror; a value the platform answers success for but does
 * not keep ends the change failed (exit 1) with the field named, and the
 * mirror shows the platform's value. What push would refuse is refused when
 * written (NULL elements in a multi-value array); a cleared switch is sent as
 * off; a date-time before the zone's first standard offset round-trips.
 * Real PostgreSQL, the emulator over HTTP, the CLI in a child process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const fast = { rereadDelaysMs: [10, 20] };
const firstId = async (world: World) => String(((await world.t.db('mirror.orders').orderBy('id').first('id')) as { id: string }).id);
const platformItem = async (world: World, id: string) =>
  (await world.emu.admin.exportList('demo', 'orders')).items.find((i) => String(i.ListDataID) === id)!;
const patchBodies = async (world: World) =>
  (await world.emu.admin.requests())
    .filter((e) => e.method === 'PATCH')
    .map((p) => JSON.parse(p.body!) as { RowVersion: number; Data: Record<string, string> });

describe('fields the platform does not let one write', () => {
  it("an SQL edit of a system field's column is refused with a message naming the field and the column; the other columns stay editable", async () => {
    w = await startWorld({ emulator: { items: 5 } });
    await w.emu.admin.setSettings({ systemFields: [F.status] });
    await pullList(w.deps(), w.config.lists[0]!);
    const id = await firstId(w);
    await expect(w.t.db('mirror.orders').where({ id }).update({ status: 'set in SQL' })).rejects.toThrow(
      /column status of mirror\.orders holds "Status" \(field Text3\), which the platform does not let one write/,
    );
    await expect(w.t.db.raw(`insert into mirror.orders (customer, status) values ('new', 'Open')`)).rejects.toThrow(
      /"Status" \(field Text3\)/,
    );
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'still editable' });
    expect(await w.t.db('listsync.outbox').pluck('changes')).toEqual([{ customer: 'still editable' }]);
  });

  it("a field the platform ignores on write ends not taken: failed with the field named, push exit 1, the mirror shows the platform's value", async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const world = w;
    await world.emu.admin.setSettings({ ignoredWriteFields: [F.notes] });
    await pullList(world.deps(), world.config.lists[0]!);
    const id = await firstId(world);
    const kept = (await platformItem(world, id))[F.notes];
    await world.t.db('mirror.orders').where({ id }).update({ notes: 'never taken', customer: 'taken' });
    const push = await runCli(['--config', world.configFile, 'push'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
    expect(push.code, push.stdout + push.stderr).toBe(1);
    expect(push.stdout).toMatch(/0 applied.*1 failed/);
    const [change] = (await world.t.db('listsync.outbox').select('status', 'last_error')) as { status: string; last_error: string }[];
    expect(change!.status).toBe('failed');
    expect(change!.last_error).toMatch(/not taken: .*notes \(field Text4, "Notes"\): sent "never taken", the platform kept/);
    expect(change!.last_error).not.toMatch(/customer/);
    const row = (await world.t.db('mirror.orders').where({ id }).first('notes', 'customer')) as { notes: string | null; customer: string };
    expect(row).toEqual({ notes: kept === '' ? null : kept, customer: 'taken' });
    expect((await platformItem(world, id))[F.notes]).toBe(kept);
  });
});

describe('a value not taken by a write whose answer was lost', () => {
  it('the item read back carries the taken values and the old value of the other: recognised as our write, and the field not taken named, no conflict', async () => {
    w = await startWorld({ emulator: { items: 5 }, platform: { retries: 1 } });
    const world = w;
    const list = world.config.lists[0]!;
    await world.emu.admin.setSettings({ ignoredWriteFields: [F.notes] });
    await pullList(world.deps(), list);
    const id = await firstId(world);
    await world.t.db('mirror.orders').where({ id }).update({ notes: 'never taken', customer: 'taken' });
    await world.emu.admin.setFaults({ loseWriteAnswers: 1 });
    const r = await pushList({ ...world.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 0, conflicts: 0, failed: 1 });
    expect(await world.t.db('listsync.conflicts')).toEqual([]);
    const [change] = (await world.t.db('listsync.outbox').select('status', 'last_error')) as { status: string; last_error: string }[];
    expect(change).toMatchObject({ status: 'failed' });
    expect(change!.last_error).toMatch(/not taken: .*notes \(field Text4/);
    expect((await platformItem(world, id))[F.customer]).toBe('taken');
  });
});

describe('capture-time checks and NULL per kind', () => {
  it('a multi-value array with a NULL element is refused when written, naming the column; a cleared switch is sent as "0"', async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const id = await firstId(w);
    await expect(w.t.db.raw(`update mirror.orders set tags = array['a', null] where id = ?`, [id])).rejects.toThrow(
      /column tags of mirror\.orders is a multi-value field; its array holds a NULL element/,
    );
    await w.t.db.raw(`update mirror.orders set paid = true, tags = array['a'] where id = ?`, [id]);
    await pushList({ ...w.deps(), ...fast }, list);
    expect((await platformItem(w, id))[F.paid]).toBe('1');
    await w.t.db.raw(`update mirror.orders set paid = null, tags = null where id = ?`, [id]);
    await w.emu.admin.clearRequests();
    expect(await pushList({ ...w.deps(), ...fast }, list)).toMatchObject({ applied: 1, failed: 0 });
    expect((await patchBodies(w)).map((p) => p.Data)).toEqual([{ [F.paid]: '0', [F.tags]: '' }]);
    expect((await platformItem(w, id))[F.paid]).toBe('0');
  });
});

describe("date-times before the zone's first standard offset", () => {
  it('1900-01-01 00:00:00 in Asia/Shanghai pulls as 1899-12-31 16:00:00+00 and is pushed back as 1900-01-01 00:00:00', async () => {
    w = await startWorld({ emulator: { items: 5, timeZone: 'Asia/Shanghai' }, platform: { timeZone: 'Asia/Shanghai' } });
    const list = w.config.lists[0]!;
    const [a, b] = (await w.emu.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID)) as [string, string];
    await w.emu.admin.editItem('demo', 'orders', a, { Data: { [F.shippedAt]: '1900-01-01 00:00:00' } });
    await w.emu.admin.editItem('demo', 'orders', b, { Data: { [F.shippedAt]: '1950-06-01 12:00:00' } });
    await pullList(w.deps(), list);
    const shipped = async (id: string) =>
      (
        (await w!.t.db.raw(
          `select to_char(shipped_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00' as t from mirror.orders where id = ?`,
          [id],
        )) as { rows: { t: string }[] }
      ).rows[0]!.t;
    expect(await shipped(a)).toBe('1899-12-31 16:00:00+00');
    await w.t.db.raw(`update mirror.orders set shipped_at = '1899-12-31 16:00:00+00' where id = ?`, [b]);
    await w.emu.admin.clearRequests();
    expect(await pushList({ ...w.deps(), ...fast }, list)).toMatchObject({ applied: 1, failed: 0 });
    expect((await patchBodies(w)).map((p) => p.Data)).toEqual([{ [F.shippedAt]: '1900-01-01 00:00:00' }]);
    expect((await platformItem(w, b))[F.shippedAt]).toBe('1900-01-01 00:00:00');
    expect(await shipped(b)).toBe('1899-12-31 16:00:00+00');
  });
});

describe('a verdict is about what was sent', () => {
  it('items hold NUL and lone surrogates in a text field; an SQL edit of another column is applied, push exit 0', async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const world = w;
    const ids = (await world.emu.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID));
    const odd = ['a\u0000b', 'half \ud83d of an emoji', '\u0010marked', 'tail \udc00'];
    for (const [n, id] of ids.slice(0, odd.length).entries())
      await world.emu.admin.editItem('demo', 'orders', id, { Data: { [F.notes]: odd[n]! } });
    await pullList(world.deps(), world.config.lists[0]!);
    await world.t.db('mirror.orders').whereIn('id', ids).update({ customer: 'Edited' });
    const push = await runCli(['--config', world.configFile, 'push'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
    expect(push.code, push.stdout + push.stderr).toBe(0);
    expect(push.stdout).toMatch(/5 applied/);
    expect(await world.t.db('listsync.outbox').whereNot({ status: 'applied' }).select('status', 'last_error')).toEqual([]);
    expect((await patchBodies(world)).map((p) => p.Data)).toEqual(ids.map(() => ({ [F.customer]: 'Edited' })));
    for (const [n, id] of ids.slice(0, odd.length).entries()) expect((await platformItem(world, id))[F.notes]).toBe(odd[n]);
  });
});

describe('the push summary counts each change once', () => {
  it('creates whose value was not taken are failed only; the updates applied beside them are all counted applied', async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const world = w;
    await world.emu.admin.setSettings({ ignoredWriteFields: [F.notes] });
    await pullList(world.deps(), world.config.lists[0]!);
    const ids = (await world.t.db('mirror.orders').orderBy('id').limit(3).pluck('id')) as string[];
    await world.t.db('mirror.orders').whereIn('id', ids).update({ customer: 'taken' });
    await world.t.db.raw(`insert into mirror.orders (customer, notes) values ('new one', 'never taken'), ('new two', 'never taken')`);
    const push = await runCli(['--config', world.configFile, 'push'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
    expect(push.code, push.stdout + push.stderr).toBe(1);
    expect(push.stdout).toMatch(/3 applied, 0 created, 0 conflict\(s\), 2 failed, 0 left pending/);
    const statuses = (await world.t.db('listsync.outbox').select('op', 'status').orderBy('id')) as { op: string; status: string }[];
    expect(statuses.filter((s) => s.status === 'applied')).toHaveLength(3);
    expect(statuses.filter((s) => s.op === 'create' && s.status === 'failed')).toHaveLength(2);
  });
});
