/**
 * Write-back never works from stale field metadata (src/sync/write-fields.ts, src/sync/pull.ts I7):
 * an edit of two columns, then one field removed on the platform (or its slot given to another
 * field): the PATCH never carries that field, the other column is applied, and the removed part of
 * the edit fails with a message saying the field was removed. Against the emulator over HTTP and a
 * real PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { runCli } from '../helpers/cli.js';
import { minutesLater } from '../helpers/later.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const fast = { rereadDelaysMs: [10, 20] };
const FIELDS_ROUTE = 'GET /v1/lists/{appID}/{listID}/fields';
const REMOVED = /notes \(field Text4\) belongs to a field that was removed from the platform/;

/** A pulled list and an SQL edit of two columns of one row; returns the row's ID. */
async function editTwoColumns(world: World): Promise<string> {
  await pullList(world.deps(), world.config.lists[0]!);
  const { id } = (await world.t.db('mirror.orders').orderBy('id').first('id')) as { id: string };
  await world.t.db('mirror.orders').where({ id }).update({ customer: 'sent', notes: 'not sendable' });
  await world.emu.admin.clearRequests();
  return id;
}

/** The push's PATCH bodies' `Data` keys, how often it asked /fields, its outcome and the failed part's error. */
async function push(world: World, clock?: () => Date) {
  const r = await pushList({ ...world.deps(), ...fast, ...(clock ? { clock } : {}) }, world.config.lists[0]!);
  const log = await world.emu.admin.requests();
  const patched = log.filter((e) => e.method === 'PATCH').map((e) => Object.keys((JSON.parse(e.body!) as { Data: object }).Data));
  const failed = (await world.t.db('listsync.outbox').where({ status: 'failed' })) as { changes: object; last_error: string }[];
  return { r, patched, fieldsAsked: log.filter((e) => e.route === FIELDS_ROUTE).length, failed };
}

async function expectApplied(world: World, id: string): Promise<void> {
  const item = await world.emu.admin.getItem('demo', 'orders', id);
  expect(item[F.customer]).toBe('sent');
  expect(item[F.notes]).not.toBe('not sendable');
}

describe('an edit of a field removed on the platform', () => {
  it('removed, then a plain pull, then a push: the PATCH carries only the other field; the removed part fails saying so', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const id = await editTwoColumns(w);
    await w.emu.admin.deleteField('demo', 'orders', F.notes);
    await pullList(w.deps(), w.config.lists[0]!);
    await w.emu.admin.clearRequests();

    const { r, patched, failed } = await push(w);
    expect(patched).toEqual([[F.customer]]);
    expect(r).toMatchObject({ applied: 1 });
    await expectApplied(w, id);
    expect(failed).toEqual([
      expect.objectContaining({ changes: { notes: 'not sendable' }, last_error: expect.stringMatching(REMOVED) as string }),
    ]);
  });

  it('removed with no pull since, the kept metadata minutes old: the push asks /fields first and never sends the field', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const id = await editTwoColumns(w);
    await w.emu.admin.deleteField('demo', 'orders', F.notes);

    const { r, patched, fieldsAsked, failed } = await push(w, minutesLater(6));
    expect(fieldsAsked).toBe(1);
    expect(patched).toEqual([[F.customer]]);
    expect(r).toMatchObject({ applied: 1 });
    await expectApplied(w, id);
    expect(failed).toEqual([
      expect.objectContaining({ changes: { notes: 'not sendable' }, last_error: expect.stringMatching(REMOVED) as string }),
    ]);
    // The next pull asks the field metadata again and keeps the column as removed.
    await w.emu.admin.clearRequests();
    await pullList(w.deps(), w.config.lists[0]!);
    expect((await w.emu.admin.requests()).filter((e) => e.route === FIELDS_ROUTE)).toHaveLength(1);
  });

  it('the slot given to another field meanwhile: the edit of the old field is never written into the new one', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const id = await editTwoColumns(w);
    await w.emu.admin.reuseSlot('demo', 'orders', F.notes, { FieldType: 'Text', Type: 'radio', DisplayName: 'Priority' });

    const { r, patched, failed } = await push(w, minutesLater(6));
    expect(patched).toEqual([[F.customer]]);
    expect(r).toMatchObject({ applied: 1 });
    const item = await w.emu.admin.getItem('demo', 'orders', id);
    expect(item[F.customer]).toBe('sent');
    expect(item[F.notes]).toBe('');
    expect(failed).toEqual([
      expect.objectContaining({ changes: { notes: 'not sendable' }, last_error: expect.stringMatching(REMOVED) as string }),
    ]);
  });

  it('metadata asked minutes ago: a push asks no field metadata; a push with nothing to write asks nothing', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    await editTwoColumns(w);
    expect((await push(w)).fieldsAsked).toBe(0);
    await w.emu.admin.clearRequests();
    const idle = await push(w, minutesLater(6));
    expect(idle.fieldsAsked).toBe(0);
  });

  it('keep local of a conflict on a field removed since, the kept metadata minutes old: the resolve asks /fields and never sends it', async () => {
    w = await startWorld({ emulator: { items: 10 }, list: { conflictPolicy: 'manual' } });
    await pullList(w.deps(), w.config.lists[0]!);
    const { id } = (await w.t.db('mirror.orders').orderBy('id').first('id')) as { id: string };
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.notes]: 'remote note' } });
    await w.t.db('mirror.orders').where({ id }).update({ notes: 'local note' });
    const env = { env: { PLATFORM_API_KEY: w.emu.apiKey } };
    expect((await runCli(['--config', w.configFile, 'push'], env)).code).toBe(0);
    expect(await w.t.db('listsync.conflicts').where({ status: 'open' })).toHaveLength(1);
    await w.emu.admin.deleteField('demo', 'orders', F.notes);
    await w.t.db('listsync.lists').update({ field_meta_at: w.t.db.raw("now() - interval '6 minutes'") });
    await w.emu.admin.clearRequests();

    const r = await runCli(['--config', w.configFile, 'conflicts', 'resolve', '1', '--keep', 'local'], env);
    const log = await w.emu.admin.requests();
    expect(log.filter((e) => e.route === FIELDS_ROUTE)).toHaveLength(1);
    expect(log.filter((e) => e.method === 'PATCH')).toEqual([]);
    expect(r.stdout + r.stderr).toMatch(/queued but not applied yet \(.*belongs to a field that was removed from the platform/);
  });

  it('push --dry-run, the kept metadata minutes old: it asks /fields as the push would, shows the removed field not sent, and marks nothing', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const id = await editTwoColumns(w);
    await w.emu.admin.deleteField('demo', 'orders', F.notes);
    await w.t.db('listsync.lists').update({ field_meta_at: w.t.db.raw("now() - interval '6 minutes'") });
    const keptBefore = (await w.t.db('listsync.lists').first('field_meta_at')) as { field_meta_at: Date };
    await w.emu.admin.clearRequests();

    const r = await runCli(['--config', w.configFile, 'push', '--dry-run'], { env: { PLATFORM_API_KEY: w.emu.apiKey } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('0 would apply, 0 would conflict, 1 would fail; nothing was sent');
    expect(r.stdout).toMatch(
      new RegExp(`change \\d+: update item ${id} — PATCH, would fail: not sent: ${REMOVED.source}; the rest of the change would be sent`),
    );
    expect(r.stdout).toContain('(not sent: the field was removed from the platform)');
    expect(r.stdout).not.toContain('cannot convert');
    const log = await w.emu.admin.requests();
    expect(log.filter((e) => e.route === FIELDS_ROUTE)).toHaveLength(1);
    expect(log.filter((e) => e.method !== 'GET' && e.route !== 'POST /v1/lists/{appID}/{listID}/items/query')).toEqual([]);
    // Nothing local changed: the kept metadata's time, the outbox.
    expect(await w.t.db('listsync.lists').first('field_meta_at')).toEqual(keptBefore);
    expect(await w.t.db('listsync.outbox').whereNot({ status: 'pending' })).toEqual([]);
  });
});

describe('a new row naming a field removed on the platform', () => {
  it('the dry run says that part would fail; the push creates the item with the rest and keeps that part failed, saying why', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    await pullList(w.deps(), w.config.lists[0]!);
    await w.emu.admin.deleteField('demo', 'orders', F.notes);
    await w.t.db('listsync.lists').update({ field_meta_at: w.t.db.raw("now() - interval '6 minutes'") });
    await w.t.db('mirror.orders').insert({ title: 'New order', customer: 'New Co', notes: 'for a removed field' });
    await w.emu.admin.clearRequests();

    const dry = await runCli(['--config', w.configFile, 'push', '--dry-run'], { env: { PLATFORM_API_KEY: w.emu.apiKey } });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('0 would apply, 0 would conflict, 1 would fail; nothing was sent');
    expect(dry.stdout).toMatch(
      new RegExp(
        `change \\d+: create of local row \\S+ — POST, would fail: not sent: ${REMOVED.source}; the rest of the change would be sent`,
      ),
    );
    expect((await w.emu.admin.requests()).filter((e) => e.method !== 'GET' && !e.route.endsWith('/items/query'))).toEqual([]);

    await w.emu.admin.clearRequests();
    const { r, failed } = await push(w);
    expect(r).toMatchObject({ created: 1 });
    const posts = (await w.emu.admin.requests()).filter((e) => e.method === 'POST' && e.route.endsWith('/items'));
    expect(posts.map((e) => (JSON.parse(e.body!) as { Data: Record<string, string> }).Data)).toEqual([
      expect.not.objectContaining({ [F.notes]: expect.anything() as unknown }),
    ]);
    const row = (await w.t.db('mirror.orders').where({ title: 'New order' }).first('id')) as { id: string };
    expect((await w.emu.admin.getItem('demo', 'orders', row.id))[F.customer]).toBe('New Co');
    expect(failed).toEqual([
      expect.objectContaining({
        changes: { notes: 'for a removed field' },
        item_id: row.id,
        last_error: expect.stringMatching(REMOVED) as string,
      }),
    ]);
  });
});
