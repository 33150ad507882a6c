/**
 * Real time under faults, end to end (emulator over HTTP, real Postgres):
 * items gone on a platform that answers unknown items with its own Status, a
 * platform failing for a while, one item that keeps failing, and a mirror
 * write that keeps failing for one row. No event is dropped, none blocks the
 * others, and /healthz says degraded while events wait.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runStatus } from '../../src/commands/status-command.js';
import { SAMPLE_FIELDS } from '../../src/emulator/index.js';
import { expectMirrorEqualsPlatform } from '../helpers/world.js';
import { APP, closeRunning, LIST, liveIds, openEvents, settled, start, until, type Running } from './support.js';

afterEach(closeRunning);

interface Health {
  status: string;
  realtime: { waiting: { list: string; events: number; failing: number; lastError: string | null; stale: boolean }[] };
}

const health = async (r: Running): Promise<Health> => (await fetch(`${r.serve.url}/healthz`).then((x) => x.json())) as Health;

/** Posts an item event to the list's own subscription, as the platform would. */
async function postEvent(r: Running, type: 3 | 4, body: unknown): Promise<void> {
  const sub = (await r.w.t.db('listsync.webhook_subscriptions').where({ list_name: LIST, type }).first()) as { token: string };
  const res = await fetch(`${r.serve.url}/hooks/${sub.token}`, {
    method: 'POST',
    headers: { Channel: 'listsync', Type: String(type), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

/** Deletes an item on the platform without its delete event reaching listsync. */
async function deleteUnseen(r: Running, id: string): Promise<Record<string, unknown>> {
  const before = (await r.w.emu.admin.getItem(APP, LIST, id)) as unknown as Record<string, unknown>;
  await r.w.emu.admin.setItemDelivery({ lossRate: 1 });
  await r.w.emu.admin.deleteItem(APP, LIST, id);
  await until('the delete event to be lost', async () => (await r.w.emu.admin.itemHooks()).stats.lost > 0);
  await r.w.emu.admin.setItemDelivery({ lossRate: 0 });
  return before;
}

async function deletedIds(r: Running, ids: readonly string[]): Promise<string[]> {
  return (await r.w.t
    .db('mirror.orders')
    .whereIn('id', [...ids])
    .whereNotNull('_deleted_at')
    .orderBy('id')
    .pluck('id')) as string[];
}

async function failedEvents(r: Running): Promise<{ attempts: number; last_error: string | null; processed_at: Date | null }[]> {
  return (await r.w.t.db('listsync.webhook_inbox').where('attempts', '>', 0).select('attempts', 'last_error', 'processed_at')) as {
    attempts: number;
    last_error: string | null;
    processed_at: Date | null;
  }[];
}

describe('realtime under faults', () => {
  it('with unknown items answered HTTP 200 and Status 123456, events for gone items mark the rows deleted after asking both ways', async () => {
    const r = await start();
    await r.w.emu.admin.setSettings({ unknownItem: { httpStatus: 200, status: 123456 } });
    const ids = await liveIds(r);
    const deleted = ids.slice(0, 5);
    for (const id of deleted) await r.w.emu.admin.deleteItem(APP, LIST, id);
    // A modified event that arrives after its item was deleted (the delete's own event lost).
    const late = ids[5]!;
    const before = await deleteUnseen(r, late);
    await r.w.emu.admin.clearRequests();
    await postEvent(r, 3, { ...before, RowVersion: Number(before['RowVersion']) + 1 });
    await settled(r);

    expect(await deletedIds(r, [...deleted, late])).toEqual([...deleted, late].sort());
    // The gone item was asked about by ID (refused with 123456) and by an In query.
    const asked = await r.w.emu.admin.requests();
    expect(asked.filter((q) => q.method === 'GET' && q.path.endsWith(`/items/${late}`)).map((q) => q.envelopeStatus)).toEqual([123456]);
    expect(asked.some((q) => q.path.endsWith('/items/query'))).toBe(true);
    expect(await failedEvents(r)).toEqual([]);
    await expectMirrorEqualsPlatform(r.w);
    expect((await health(r)).status).toBe('ok');
  });

  it('a failing platform, then one item that keeps failing: events wait (healthz degraded), then all are applied without a restart; the bad one alone waits, with its error', async () => {
    const r = await start({
      platform: { retries: 0 },
      serve: { realtimeStaleAfterSeconds: 1 },
      applier: { retryDelayMs: 200, maxRetryDelayMs: 1000 },
    });
    const ids = await liveIds(r);
    const poison = ids[0]!;
    const edited = ids.slice(1, 11);
    const before = await deleteUnseen(r, poison);

    // The platform fails every item read.
    await r.w.emu.admin.setFaults({ errorRate: 1, faultPaths: '/items' });
    for (const id of edited) await r.w.emu.admin.editItem(APP, LIST, id, { Data: { [SAMPLE_FIELDS.status]: `during the outage ${id}` } });
    await postEvent(r, 3, { ...before, RowVersion: Number(before['RowVersion']) + 1 });
    await until('events failing twice', async () => (await failedEvents(r)).filter((e) => e.attempts >= 2).length >= 11);
    const during = await until('healthz degraded', async () => {
      const h = await health(r);
      return h.status === 'degraded' ? h : undefined;
    });
    expect(during.realtime.waiting[0]).toMatchObject({ list: LIST, events: 11, failing: 11, stale: true });
    expect(during.realtime.waiting[0]!.lastError).toMatch(/50\d/);

    // The outage ends, but the poisoned item's read by ID keeps failing.
    await r.w.emu.admin.setFaults({ errorRate: 1, faultPaths: `/items/${poison}$` });
    await until('the other events applied', async () => (await openEvents(r)) === 1, 20_000);
    for (const id of edited) {
      const row = (await r.w.t.db('mirror.orders').where({ id }).first('status')) as { status: string };
      expect(row.status).toBe(`during the outage ${id}`);
    }
    const waiting = (await r.w.t.db('listsync.webhook_inbox').whereNull('processed_at').first()) as {
      attempts: number;
      last_error: string;
      body: Record<string, unknown>;
    };
    expect(String(waiting.body['ListDataID'])).toBe(poison);
    expect(waiting.last_error).toMatch(/50\d/);
    const h = await health(r);
    expect(h.status).toBe('degraded');
    expect(h.realtime.waiting).toMatchObject([{ list: LIST, events: 1, failing: 1 }]);
    const io = { out: () => undefined, err: () => undefined, isTTY: false };
    const status = await runStatus({
      db: r.w.t.db,
      client: r.client,
      clientFor: () => r.client,
      config: r.config,
      logger: r.w.logger,
      io,
      close: async () => undefined,
    });
    expect(status).toMatch(new RegExp(`${LIST}: 1 item event\\(s\\) failed and are retried with backoff; .*last error: .*50\\d`));

    // Once the item can be read again, its event is applied too: the row is marked deleted.
    await r.w.emu.admin.setFaults({ errorRate: 0, faultPaths: null });
    await settled(r, 20_000);
    expect(await deletedIds(r, [poison])).toEqual([poison]);
    await expectMirrorEqualsPlatform(r.w);
    expect((await health(r)).status).toBe('ok');
  });

  it('a mirror write that fails for one row: the chunk is split until that row is alone, the others are applied', async () => {
    const r = await start({ applier: { retryDelayMs: 100, maxRetryDelayMs: 400 } });
    const ids = await liveIds(r);
    const bad = ids[0]!;
    const edited = ids.slice(0, 12);
    await r.w.t.db.raw(`create function public.refuse_row() returns trigger language plpgsql as $$
      begin
        if new.id = '${bad}' then raise exception 'row % refused by a test trigger', new.id; end if;
        return new;
      end $$`);
    await r.w.t.db.raw('create trigger zz_refuse_row before update on mirror.orders for each row execute function public.refuse_row()');
    await r.rt.close(); // events gather while stopped, then are replayed as one chunk
    for (const id of edited) await r.w.emu.admin.editItem(APP, LIST, id, { Data: { [SAMPLE_FIELDS.status]: `split ${id}` } });
    await until('events stored', async () => (await openEvents(r)) === 12);
    await r.restart();

    await until('all but the refused row applied', async () => (await openEvents(r)) === 1, 20_000);
    for (const id of edited.slice(1)) {
      const row = (await r.w.t.db('mirror.orders').where({ id }).first('status')) as { status: string };
      expect(row.status).toBe(`split ${id}`);
    }
    const failed = await failedEvents(r);
    const stuck = failed.filter((e) => e.processed_at === null);
    expect(stuck).toHaveLength(1);
    expect(stuck[0]!.attempts).toBeGreaterThanOrEqual(3); // whole chunk, a half, ... down to the row alone
    expect(stuck[0]!.last_error).toContain(`row ${bad} refused by a test trigger`);

    await r.w.t.db.raw('drop trigger zz_refuse_row on mirror.orders');
    await settled(r, 20_000);
    await expectMirrorEqualsPlatform(r.w);
  });
});
