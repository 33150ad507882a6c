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

type Row = Record<string, unknown> & { id: string; row_version: number };

const versionsOf = async (world: World): Promise<Map<string, number>> =>
  new Map((await world.emu.admin.exportList('demo', 'orders')).items.map((i) => [String(i.ListDataID), Number(i.RowVersion)]));
const openOutbox = (world: World) => world.t.db('listsync.outbox').whereIn('status', ['pending', 'sending', 'conflict']);
const patchesOf = async (world: World) => (await world.emu.admin.requests()).filter((e) => e.method === 'PATCH');

describe('push', () => {
  it('an SQL UPDATE of three fields on 500 rows reaches the platform; versions move by one; a following pull rewrites nothing', async () => {
    w = await startWorld({
      emulator: { items: 800, rateLimit: { burst: 200, perSecond: 200 } },
      platform: { requestsPerSecond: 200, maxInFlight: 16 },
    });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const before = await versionsOf(w);
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(500).pluck('id')) as string[];
    await w.t.db.raw(
      `update mirror.orders set customer = 'Customer ' || right(id, 4), quantity = quantity + 1, paid = not coalesce(paid, false) where id = any(?)`,
      [ids],
    );
    expect(await openOutbox(w).count('* as n').first()).toEqual({ n: 500 });
    const local = new Map(((await w.t.db('mirror.orders').whereIn('id', ids)) as Row[]).map((r) => [r.id, r]));

    const r = await pushList(w.deps(), list);
    expect(r).toMatchObject({ applied: 500, conflicts: 0, failed: 0, retrying: 0 });

    const platform = new Map((await w.emu.admin.exportList('demo', 'orders')).items.map((i) => [String(i.ListDataID), i]));
    for (const id of ids) {
      const item = platform.get(id)!;
      const row = local.get(id)!;
      expect(item[F.customer]).toBe(row.customer);
      expect(item[F.quantity]).toBe(String(row.quantity));
      expect(item[F.paid]).toBe(row.paid ? '1' : '0');
      expect(Number(item.RowVersion)).toBe(before.get(id)! + 1);
    }
    const untouched = [...before.keys()].filter((id) => !ids.includes(id));
    expect(untouched.every((id) => Number(platform.get(id)!.RowVersion) === before.get(id))).toBe(true);
    // Only the changed fields were sent, with the base version.
    const patch = JSON.parse((await patchesOf(w))[0]!.body!) as { RowVersion: number; Data: Record<string, string> };
    expect(Object.keys(patch.Data).sort()).toEqual([F.customer, F.paid, F.quantity].sort());
    // The mirror holds the new versions; nothing is open or waiting for a re-read; the applied changes are kept for a look back.
    const mirrorVersions = new Map(
      ((await w.t.db('mirror.orders').whereIn('id', ids).select('id', 'row_version')) as Row[]).map((x) => [x.id, Number(x.row_version)]),
    );
    expect(ids.every((id) => mirrorVersions.get(id) === before.get(id)! + 1)).toBe(true);
    expect(await w.t.db('listsync.outbox').whereNot({ status: 'applied' }).count('* as n').first()).toEqual({ n: 0 });
    expect(await w.t.db('listsync.outbox').where({ status: 'applied', mirror_behind: false }).count('* as n').first()).toEqual({ n: 500 });
    const again = await pullList(w.deps(), list);
    expect(again.counters.rows_inserted + again.counters.rows_updated).toBe(0);
  });

  it("remote-wins: the mirror ends with the platform's values and a conflict record holds both sides", async () => {
    w = await startWorld({ emulator: { items: 50 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    const original = String((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]);
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'Local Co' });
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Remote Ltd' } });
    const r = await pushList(w.deps(), list);
    expect(r.conflicts).toBe(1);
    expect((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]).toBe('Remote Ltd');
    expect((await w.t.db('mirror.orders').where({ id }).first('customer')).customer).toBe('Remote Ltd');
    const c = (await w.t.db('listsync.conflicts').first()) as {
      status: string;
      resolution: string;
      local: Record<string, unknown>;
      remote: Record<string, unknown>;
      base: Record<string, unknown>;
    };
    expect(c).toMatchObject({ status: 'resolved', resolution: 'remote-wins', local: { customer: 'Local Co' } });
    expect(c.remote[F.customer]).toBe('Remote Ltd');
    expect(c.base[F.customer]).toBe(original);
    expect(await openOutbox(w).count('* as n').first()).toEqual({ n: 0 });
  });

  it('local-wins: the platform ends with the local values', async () => {
    w = await startWorld({ emulator: { items: 50 }, list: { conflictPolicy: 'local-wins' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'Local Co' });
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Remote Ltd', [F.notes]: 'remote note' } });
    const r = await pushList(w.deps(), list);
    expect(r.conflicts).toBe(1);
    const item = await w.emu.admin.getItem('demo', 'orders', id);
    expect(item[F.customer]).toBe('Local Co');
    expect(item[F.notes]).toBe('remote note'); // only the local change's fields were overwritten
    const row = (await w.t.db('mirror.orders').where({ id }).first()) as Row;
    expect(row.customer).toBe('Local Co');
    expect(Number(row.row_version)).toBe(Number(item.RowVersion));
    expect((await w.t.db('listsync.conflicts').first()).resolution).toBe('local-wins');
  });

  it('manual: nothing is sent until resolved through the CLI; show gives both sides field by field', async () => {
    w = await startWorld({ emulator: { items: 50 }, list: { conflictPolicy: 'manual' } });
    const list = w.config.lists[0]!;
    const env = { PLATFORM_API_KEY: w.emu.apiKey };
    await pullList(w.deps(), list);
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    const original = String((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]);
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'Local Co' });
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Remote Ltd' } });
    await w.emu.admin.clearRequests();

    const push1 = await runCli(['--config', w.configFile, 'push'], { env });
    expect(push1.stdout).toContain('1 conflict(s)');
    const second = await runCli(['--config', w.configFile, 'push'], { env });
    expect(second.stdout).toContain('0 applied');
    const patches = (await patchesOf(w)).filter((p) => p.path.endsWith(id));
    expect(patches).toHaveLength(1); // the first attempt, refused for its version; nothing since
    expect((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]).toBe('Remote Ltd');
    expect((await w.t.db('mirror.orders').where({ id }).first('customer')).customer).toBe('Local Co');

    // A pull does not overwrite the held row either.
    await pullList(w.deps(), list);
    expect((await w.t.db('mirror.orders').where({ id }).first('customer')).customer).toBe('Local Co');

    const listed = await runCli(['--config', w.configFile, 'conflicts'], { env });
    const cid = /^(\d+)\s+orders\s+\d+/m.exec(listed.stdout)![1]!;
    const shown = await runCli(['--config', w.configFile, 'conflicts', 'show', cid], { env });
    expect(shown.stdout).toMatch(new RegExp(`${F.customer}\\s+customer\\s+${original}\\s+Local Co\\s+Remote Ltd`));
    const status = await runCli(['--config', w.configFile, 'status'], { env });
    expect(status.stdout).toMatch(/orders\s.*\s1\s+\S+\s+-?\s*$/m);

    // Keep local sends at once: the platform holds it before any push runs.
    const resolved = await runCli(['--config', w.configFile, 'conflicts', 'resolve', cid, '--keep', 'local'], { env });
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toMatch(/sent at the platform's version \d+ and applied/);
    expect((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]).toBe('Local Co');
    const push3 = await runCli(['--config', w.configFile, 'push'], { env });
    expect(push3.stdout).toContain('0 applied');
    expect((await runCli(['--config', w.configFile, 'conflicts', 'resolve', cid, '--keep', 'remote'], { env })).code).toBe(2);
  });

  it("a pull that sees the platform move past a pending change turns it into a conflict (remote-wins keeps the platform's row)", async () => {
    w = await startWorld({ emulator: { items: 50 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'Local Co' });
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Remote Ltd' } });
    const r = await pullList(w.deps(), list);
    expect(r.counters.changes_conflicted).toBe(1);
    expect((await w.t.db('mirror.orders').where({ id }).first('customer')).customer).toBe('Remote Ltd');
    expect(await w.t.db('listsync.outbox').where({ status: 'superseded' }).count('* as n').first()).toEqual({ n: 1 });
    expect((await pushList(w.deps(), list)).applied).toBe(0);
  });

  it('an INSERT without an id is created on the platform and takes its ID; a DELETE is refused and removes nothing', async () => {
    w = await startWorld({ emulator: { items: 20 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const [inserted] = (await w.t
      .db('mirror.orders')
      .insert({ title: 'New from SQL', customer: 'Insert Co', quantity: 3, paid: true, tags: ['b', 'a'] })
      .returning('id')) as { id: string }[];
    expect(inserted!.id).toMatch(/^local-/);
    const r = await pushList(w.deps(), list);
    expect(r.created).toBe(1);
    const rows = (await w.t.db('mirror.orders').where({ customer: 'Insert Co' })) as Row[];
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toMatch(/^\d{19}$/);
    expect(Number(rows[0]!.row_version)).toBe(1);
    const item = await w.emu.admin.getItem('demo', 'orders', rows[0]!.id);
    expect(item).toMatchObject({
      Title: 'New from SQL',
      [F.customer]: 'Insert Co',
      [F.quantity]: '3',
      [F.paid]: '1',
      [F.tags]: '["b","a"]',
    });

    const count = await w.t.db('mirror.orders').count('* as n').first();
    await expect(w.t.db('mirror.orders').where({ id: rows[0]!.id }).delete()).rejects.toThrow(
      /deletes are not written back for list "orders" \(lists\[\]\.pushDeletes is off\)/,
    );
    expect(await w.t.db('mirror.orders').count('* as n').first()).toEqual(count);
    expect((await w.emu.admin.exportList('demo', 'orders')).count).toBe(21);
  });

  it('with 10% 5xx and dropped connections, every one of 1000 changes is applied exactly once or left pending with its error', async () => {
    w = await startWorld({
      emulator: { items: 1200, rateLimit: { burst: 200, perSecond: 200 } },
      platform: { requestsPerSecond: 200, maxInFlight: 16, timeoutMs: 2000, retries: 4 },
    });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const before = await versionsOf(w);
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(1000).pluck('id')) as string[];
    await w.t.db.raw(`update mirror.orders set notes = 'fault run ' || id where id = any(?)`, [ids]);
    await w.emu.admin.setFaults({ errorRate: 0.1, dropRate: 0.05, faultPaths: '/items' });
    const r = await pushList(w.deps(), list);
    await w.emu.admin.setFaults({ errorRate: 0, dropRate: 0, faultPaths: null });
    expect(r.applied + r.retrying + r.failed).toBe(1000);
    expect(r.applied).toBeGreaterThan(800);

    const check = async () => {
      const platform = new Map((await w!.emu.admin.exportList('demo', 'orders')).items.map((i) => [String(i.ListDataID), i]));
      const open = new Map(
        (
          (await w!.t.db('listsync.outbox').where({ list_name: 'orders' }).whereNot({ status: 'applied' })) as {
            item_id: string;
            status: string;
            last_error: string | null;
          }[]
        ).map((o) => [o.item_id, o]),
      );
      let applied = 0;
      for (const id of ids) {
        const item = platform.get(id)!;
        const moved = Number(item.RowVersion) - before.get(id)!;
        expect(moved, `item ${id} version moved`).toBeLessThanOrEqual(1);
        if (moved === 1) {
          expect(item[F.notes]).toBe(`fault run ${id}`);
          expect(open.has(id)).toBe(false);
          applied++;
        } else {
          const o = open.get(id);
          expect(o, `change of ${id} kept`).toBeDefined();
          expect(o!.last_error).toBeTruthy();
        }
      }
      return applied;
    };
    expect(await check()).toBe(r.applied);
    // The next push (backoff elapsed) settles the rest, still exactly once.
    await w.t.db('listsync.outbox').update({ next_attempt_at: w.t.db.raw("now() - interval '1 second'") });
    const r2 = await pushList(w.deps(), list);
    expect(r.applied + r2.applied).toBe(1000 - r2.failed - r.failed);
    expect(await check()).toBe(1000 - r.failed - r2.failed);
  });

  it('round trip: every field type written in SQL, pushed, and pulled back is identical', async () => {
    w = await startWorld({ emulator: { items: 20, timeZone: 'Asia/Shanghai' }, platform: { timeZone: 'Asia/Shanghai' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    const values = {
      title: 'Round trip ü 😀',
      customer: 'O\'Brien & "Sons"',
      status: 'Shipped',
      notes: null,
      quantity: '12345678901234567',
      amount: '0.000001',
      order_date: '2026-02-28',
      shipped_at: new Date('2026-03-01T16:05:09Z'),
      paid: false,
      tags: ['x, y', 'quote"d', 'ü'],
      owner: '1234567890123456789',
      website: 'https://example.com/a?b=c&d=e',
    };
    await w.t.db('mirror.orders').where({ id }).update(values);
    const r = await pushList(w.deps(), list);
    expect(r.applied).toBe(1);
    const item = await w.emu.admin.getItem('demo', 'orders', id);
    expect(item).toMatchObject({
      [F.notes]: '',
      [F.quantity]: '12345678901234567',
      [F.amount]: '0.000001',
      [F.orderDate]: '2026-02-28',
      [F.shippedAt]: '2026-03-02 00:05:09',
      [F.paid]: '0',
      [F.tags]: JSON.stringify(values.tags),
      [F.owner]: '1234567890123456789',
    });
    // Pulled back through a fresh full read: identical to what was written.
    await w.t.db.transaction(async (trx) => {
      await trx.raw("select set_config('listsync.writer', 'on', true)");
      await trx.raw('update mirror.orders set row_version = 0 where id = ?', [id]);
    });
    await pullList(w.deps(), list, { kind: 'backfill', from: '2000-01-01' });
    const row = (await w.t.db('mirror.orders').where({ id }).first()) as Record<string, unknown>;
    for (const [k, v] of Object.entries(values)) expect(row[k], k).toEqual(v);
    expect(Number(row.row_version)).toBe(Number(item.RowVersion));
  });
});
