/**
 * Write-back that finishes every story: deletes written back (opt-in), local
 * rows withdrawn, lost creates found, a preview before sending, and exit codes
 * and states a scheduler can trust. Real Postgres, the emulator over HTTP.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { reconcileList } from '../../src/sync/reconcile.js';
import { runCli } from '../helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

type Row = Record<string, unknown> & { id: string; row_version: string | number; _deleted_at: Date | null };
type Outbox = {
  id: number;
  op: string;
  status: string;
  attempts: number;
  last_error: string | null;
  item_id: string | null;
  local_id: string | null;
  changes: Record<string, unknown>;
};

const platformItems = async (world: World) => (await world.emu.admin.exportList('demo', 'orders')).items;
const firstIds = async (world: World, n: number) => (await world.t.db('mirror.orders').orderBy('id').limit(n).pluck('id')) as string[];
const outbox = async (world: World) => (await world.t.db('listsync.outbox').orderBy('id')) as Outbox[];
/** Requests that change something on the platform (queries are POSTs too, but read). */
const writesOf = async (world: World) =>
  (await world.emu.admin.requests()).filter((e) => e.method !== 'GET' && !e.path.endsWith('/items/query'));
const noDelay = { rereadDelaysMs: [] as number[] };

describe('deletes written back (lists[].pushDeletes)', () => {
  it('five rows deleted in SQL are gone from the platform; a sixth edited there meanwhile comes back at its version with a conflict holding the deleted content', async () => {
    w = await startWorld({ emulator: { items: 40 }, list: { pushDeletes: true } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = await firstIds(w, 6);
    const sixth = ids[5]!;
    const sixthBefore = (await w.t.db('mirror.orders').where({ id: sixth }).first()) as Row;
    const editedVersion = await w.emu.admin.editItem('demo', 'orders', sixth, { Data: { [F.customer]: 'Edited There' } });

    expect(await w.t.db('mirror.orders').whereIn('id', ids).delete()).toBe(0); // kept, marked, until push settles them
    const marked = (await w.t.db('mirror.orders').whereIn('id', ids)) as Row[];
    expect(marked.every((r) => r._deleted_at !== null)).toBe(true);
    const captured = await outbox(w);
    expect(captured.map((o) => [o.op, o.item_id, o.status])).toEqual(ids.map((id) => ['delete', id, 'pending']));
    expect(captured[5]!.changes.customer).toBe(sixthBefore.customer); // the whole row's content

    const r = await pushList({ ...w.deps(), ...noDelay }, list);
    expect(r).toMatchObject({ deleted: 5, conflicts: 1, failed: 0, retrying: 0 });

    const remaining = new Map((await platformItems(w)).map((i) => [String(i.ListDataID), i]));
    for (const id of ids.slice(0, 5)) expect(remaining.has(id), `item ${id} deleted`).toBe(false);
    expect(remaining.get(sixth)?.[F.customer]).toBe('Edited There');
    const back = (await w.t.db('mirror.orders').where({ id: sixth }).first()) as Row;
    expect(back._deleted_at).toBeNull();
    expect(Number(back.row_version)).toBe(editedVersion);
    expect(back.customer).toBe('Edited There');
    const gone = (await w.t.db('mirror.orders').whereIn('id', ids.slice(0, 5))) as Row[];
    expect(gone.every((g) => g._deleted_at !== null)).toBe(true);

    const c = (await w.t.db('listsync.conflicts').first()) as {
      item_id: string;
      op: string;
      resolution: string;
      local: Record<string, unknown>;
      remote: Record<string, unknown>;
    };
    expect(c).toMatchObject({ item_id: sixth, op: 'delete', resolution: 'remote-wins' });
    expect(c.local.customer).toBe(sixthBefore.customer);
    expect(c.local.title).toBe(sixthBefore.title);
    expect(c.remote[F.customer]).toBe('Edited There');
    expect((await outbox(w)).filter((o) => ['pending', 'sending', 'conflict'].includes(o.status))).toEqual([]);
  });

  it('manual: a delete whose item moved is held, the row stays marked deleted, and neither pull nor reconcile bring it back', async () => {
    w = await startWorld({ emulator: { items: 30 }, list: { pushDeletes: true, conflictPolicy: 'manual' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const [id] = await firstIds(w, 1);
    await w.emu.admin.editItem('demo', 'orders', id!, { Data: { [F.customer]: 'Moved' } });
    await w.t.db('mirror.orders').where({ id }).delete();

    const r = await pushList({ ...w.deps(), ...noDelay }, list);
    expect(r).toMatchObject({ deleted: 0, conflicts: 1 });
    expect((await outbox(w))[0]).toMatchObject({ op: 'delete', status: 'conflict' });
    expect((await platformItems(w)).some((i) => String(i.ListDataID) === id)).toBe(true);

    await pullList(w.deps(), list, { kind: 'backfill', from: '2000-01-01' });
    await reconcileList(w.deps(), list);
    const row = (await w.t.db('mirror.orders').where({ id }).first()) as Row;
    expect(row._deleted_at).not.toBeNull();
    expect(row.customer).not.toBe('Moved');
  });

  it('turning the option on or off takes effect at the next push', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const [a, b] = await firstIds(w, 2);
    await pushList(w.deps(), { ...list, pushDeletes: true });
    await w.t.db('mirror.orders').where({ id: a }).delete();
    expect((await pushList(w.deps(), { ...list, pushDeletes: true })).deleted).toBe(1);
    expect((await platformItems(w)).some((i) => String(i.ListDataID) === a)).toBe(false);
    await pushList(w.deps(), list);
    await expect(w.t.db('mirror.orders').where({ id: b }).delete()).rejects.toThrow(/pushDeletes is off/);
  });

  it('without the option a DELETE fails naming lists[].pushDeletes and nothing changes', async () => {
    w = await startWorld({ emulator: { items: 20 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const [id] = await firstIds(w, 1);
    await expect(w.t.db('mirror.orders').where({ id }).delete()).rejects.toThrow(/lists\[\]\.pushDeletes/);
    expect(((await w.t.db('mirror.orders').where({ id }).first()) as Row)._deleted_at).toBeNull();
    expect(await outbox(w)).toEqual([]);
    await w.emu.admin.clearRequests();
    const r = await pushList(w.deps(), list);
    expect(r).toMatchObject({ applied: 0, deleted: 0 });
    expect(await writesOf(w)).toEqual([]);
    expect((await platformItems(w)).length).toBe(20);
  });
});

describe('creates: lost answers and withdrawn rows', () => {
  it('a create whose answer the platform dropped ends as one item and one mirror row carrying its ID', async () => {
    w = await startWorld({ emulator: { items: 20 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    await w.t.db('mirror.orders').insert({ title: 'Lost answer', customer: 'Lost Co', quantity: 2 });
    await w.emu.admin.setFaults({ loseWriteAnswers: 1 });
    await w.emu.admin.clearRequests();

    const r = await pushList({ ...w.deps(), ...noDelay }, list);
    expect(r).toMatchObject({ created: 1, failed: 0, retrying: 0 });
    const onPlatform = (await platformItems(w)).filter((i) => i[F.customer] === 'Lost Co');
    expect(onPlatform).toHaveLength(1);
    const rows = (await w.t.db('mirror.orders').where({ customer: 'Lost Co' })) as Row[];
    expect(rows.map((x) => x.id)).toEqual([String(onPlatform[0]!.ListDataID)]);
    expect(Number(rows[0]!.row_version)).toBe(1);
    expect((await writesOf(w)).filter((e) => e.method === 'POST')).toHaveLength(1); // found, not resent
  });

  it('a local row whose create failed after reaching the platform can be deleted: nothing is left on either side', async () => {
    // Queries lag a minute, so the lost create cannot be found at first; the resend then fails with a 500.
    w = await startWorld({ emulator: { items: 20, queryLagMs: 60_000 }, platform: { retries: 0 }, list: { maxPushAttempts: 1 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const [inserted] = (await w.t.db('mirror.orders').insert({ title: 'Ghost', customer: 'Ghost Co' }).returning('id')) as { id: string }[];
    await w.emu.admin.setFaults({ loseWriteAnswers: 1, errorRate: 1, faultPaths: '/items$' });
    const r = await pushList({ ...w.deps(), ...noDelay }, list);
    await w.emu.admin.clearFaults();
    expect(r).toMatchObject({ created: 0, failed: 1 });
    expect((await outbox(w))[0]).toMatchObject({ op: 'create', status: 'failed', local_id: inserted!.id });
    expect((await platformItems(w)).filter((i) => i[F.customer] === 'Ghost Co')).toHaveLength(1); // it did arrive

    await w.t.db('mirror.orders').where({ id: inserted!.id }).delete(); // no pushDeletes needed
    expect(await w.t.db('mirror.orders').where({ id: inserted!.id }).first()).toBeUndefined();
    await w.emu.admin.setClock(new Date(Date.now() + 120_000)); // the platform's queries catch up
    const r2 = await pushList({ ...w.deps(), ...noDelay }, list);
    expect(r2).toMatchObject({ withdrawn: 1, failed: 0 });
    expect((await platformItems(w)).filter((i) => i[F.customer] === 'Ghost Co')).toEqual([]);
    expect(await w.t.db('mirror.orders').where({ customer: 'Ghost Co' })).toEqual([]);
    expect((await outbox(w)).filter((o) => ['pending', 'sending', 'conflict', 'failed'].includes(o.status))).toEqual([]);
  });

  it('a row deleted before its create was sent is withdrawn without a request', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const [inserted] = (await w.t.db('mirror.orders').insert({ title: 'Never mind' }).returning('id')) as { id: string }[];
    await w.t.db('mirror.orders').where({ id: inserted!.id }).delete();
    expect((await outbox(w))[0]).toMatchObject({ op: 'create', status: 'superseded' });
    await w.emu.admin.clearRequests();
    await pushList(w.deps(), list);
    expect(await writesOf(w)).toEqual([]);
  });

  it("reconcile leaves a row inserted with an id of the user's choosing alone while its create is pending", async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    await w.t.db('mirror.orders').insert({ id: 'order-from-erp-17', title: 'Mine' });
    await reconcileList(w.deps(), list);
    expect(((await w.t.db('mirror.orders').where({ id: 'order-from-erp-17' }).first()) as Row)._deleted_at).toBeNull();
    const r = await pushList(w.deps(), list);
    expect(r.created).toBe(1);
    expect(await w.t.db('mirror.orders').where({ title: 'Mine' }).pluck('id')).toEqual([expect.stringMatching(/^\d{19}$/)]);
  });
});

describe('push --dry-run', () => {
  it('20 changes, 3 of them conflicting: 17 would apply and 3 would conflict; no write is sent and nothing changes locally', async () => {
    w = await startWorld({ emulator: { items: 40 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = await firstIds(w, 20);
    await w.t.db('mirror.orders').whereIn('id', ids).update({ customer: 'Preview Co' });
    for (const id of ids.slice(0, 3)) await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Platform Co' } });
    const before = await outbox(w);
    const runsBefore = await w.t.db('listsync.sync_runs').count('* as n').first();
    await w.emu.admin.clearRequests();

    const res = await runCli(['--config', w.configFile, 'push', '--dry-run'], { env: { PLATFORM_API_KEY: w.emu.apiKey } });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('orders: push --dry-run — 17 would apply, 3 would conflict, 0 would fail; nothing was sent');
    expect(res.stdout.match(/PATCH, would conflict/g)).toHaveLength(3);
    expect(res.stdout.match(/PATCH, would apply/g)).toHaveLength(17);
    // Field by field: the field, its column, the value the change was made on, what would be sent, the platform's now.
    expect(res.stdout).toMatch(new RegExp(`${F.customer}\\s+customer\\s+\\S.*\\s+Preview Co\\s+Platform Co`));

    expect(await writesOf(w)).toEqual([]);
    const queries = (await w.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query'));
    expect(queries).toHaveLength(1); // one In query for the 20 IDs
    expect(await outbox(w)).toEqual(before);
    expect(await w.t.db('listsync.sync_runs').count('* as n').first()).toEqual(runsBefore);
  });
});

describe('exit codes and states a scheduler can trust (through the CLI)', () => {
  it('all applied: 0; one left pending with an error: 1; a refused key: 2 with the change pending, its error recorded and its attempt counted', async () => {
    w = await startWorld({ emulator: { items: 20 }, platform: { retries: 0 } });
    const list = w.config.lists[0]!;
    const env = { PLATFORM_API_KEY: w.emu.apiKey };
    await pullList(w.deps(), list);
    const [a, b, c] = await firstIds(w, 3);

    await w.t.db('mirror.orders').where({ id: a }).update({ customer: 'All good' });
    const ok = await runCli(['--config', w.configFile, 'push'], { env });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('1 applied');

    await w.t.db('mirror.orders').where({ id: b }).update({ customer: 'Will fail' });
    await w.emu.admin.setFaults({ errorRate: 1, faultPaths: `/items/${b}$` });
    const pending = await runCli(['--config', w.configFile, 'push'], { env });
    await w.emu.admin.clearFaults();
    expect(pending.code).toBe(1);
    expect(pending.stdout).toContain('1 left pending with an error');
    expect(pending.stdout).toContain('retried by the next push');
    expect((await outbox(w)).find((o) => o.item_id === b)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: expect.stringMatching(/\S/),
    });

    await w.t.db('mirror.orders').where({ id: c }).update({ customer: 'Refused key' });
    const refused = await runCli(['--config', w.configFile, 'push'], { env: { PLATFORM_API_KEY: 'not-the-key' } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).not.toContain('not-the-key');
    const change = (await outbox(w)).find((o) => o.item_id === c)!;
    expect(change).toMatchObject({ status: 'pending', attempts: 1 });
    expect(change.last_error).toMatch(/401|api ?key/i);
    expect(change.last_error).not.toContain('not-the-key');
  });
});

describe('query lag', () => {
  it("with queries lagging a minute, a push followed by a pull leaves no row at an older version than the platform's", async () => {
    w = await startWorld({ emulator: { items: 30, queryLagMs: 60_000 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = await firstIds(w, 10);
    await w.t.db('mirror.orders').whereIn('id', ids).update({ notes: 'lagging' });
    await w.t.db('mirror.orders').insert({ title: 'Lag create', customer: 'Lag Co' });

    const r = await pushList({ ...w.deps(), rereadDelaysMs: [20] }, list);
    expect(r).toMatchObject({ applied: 10, created: 1, behind: 0 });
    await pullList(w.deps(), list);
    await expectMirrorEqualsPlatform(w);
  });
});
