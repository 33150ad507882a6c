/**
 * Real time end to end: the emulator's list item events delivered over HTTP
 * (with delays, duplicates and reordering) to serve's receiver, applied by the
 * realtime applier to a real Postgres mirror, with no pull in between.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pullList } from '../../src/sync/pull.js';
import { expectMirrorEqualsPlatform } from '../helpers/world.js';
import { SAMPLE_FIELDS } from '../../src/emulator/index.js';
import { APP, closeRunning, LIST, liveIds, settled, start, until, type Running } from './support.js';

afterEach(closeRunning);

/** Records any mirror update that moves a row's version backwards. */
async function watchVersions(r: Running): Promise<() => Promise<number>> {
  const db = r.w.t.db;
  await db.raw('create table public.version_regressions (id text, old_version bigint, new_version bigint)');
  await db.raw(`create function public.note_regression() returns trigger language plpgsql as $$
    begin
      if new.row_version < old.row_version then insert into public.version_regressions values (new.id, old.row_version, new.row_version); end if;
      return new;
    end $$`);
  await db.raw('create trigger zz_note_regression before update on mirror.orders for each row execute function public.note_regression()');
  return async () => Number(((await db('public.version_regressions').count({ n: '*' })) as { n: string }[])[0]!.n);
}

describe('realtime: list item events keep the mirror fresh', () => {
  it('subscribes created-or-modified and deleted once, and reuses them after a restart', async () => {
    const r = await start({ pull: false });
    const hooks = await r.w.emu.admin.itemHooks();
    expect(hooks.subscriptions.map((h) => h.EventType).sort()).toEqual([3, 4]);
    expect(hooks.subscriptions.every((h) => h.Channel === 'listsync' && h.CallbackUrl.startsWith(`${r.serve.url}/hooks/`))).toBe(true);
    await r.restart();
    await r.restart();
    expect((await r.w.emu.admin.itemHooks()).subscriptions).toHaveLength(2);
    const stored = (await r.w.t.db('listsync.webhook_subscriptions').whereNotNull('list_name').count({ n: '*' })) as {
      n: string | number;
    }[];
    expect(Number(stored[0]!.n)).toBe(2);
    const health = (await fetch(`${r.serve.url}/healthz`).then((x) => x.json())) as { realtime: { missingSubscriptions: string[] } };
    expect(health.realtime.missingSubscriptions).toEqual([]);
  });

  it('500 edits, 50 creates and 20 deletes with delays, duplicates and reordering: the mirror equals the platform without a pull, versions never go back', async () => {
    const r = await start({ idsAsNumbers: true });
    const regressions = await watchVersions(r);
    await r.w.emu.admin.setItemDelivery({ delayMs: 20, jitterMs: 300, duplicateRate: 0.3 });
    const admin = r.w.emu.admin;
    const ids = await liveIds(r);
    const deleted = new Set(ids.slice(0, 20));
    const edited = ids.slice(20, 120);
    const work: (() => Promise<unknown>)[] = [];
    for (let i = 0; i < 500; i++)
      work.push(() => admin.editItem(APP, LIST, edited[i % edited.length]!, { Data: { [SAMPLE_FIELDS.status]: `S${i}` } }));
    for (let i = 0; i < 50; i++) work.push(() => admin.createItem(APP, LIST, { Data: { Title: `new ${i}` } }));
    for (const id of deleted) work.push(() => admin.deleteItem(APP, LIST, id));
    // Interleaved, 10 at a time.
    work.sort((a, b) => ((work.indexOf(a) * 7919) % work.length) - ((work.indexOf(b) * 7919) % work.length));
    for (let i = 0; i < work.length; i += 10) await Promise.all(work.slice(i, i + 10).map((f) => f()));

    await settled(r, 90_000); // 570 changes: slow on a shared machine
    await expectMirrorEqualsPlatform(r.w);
    const gone = (await r.w.t
      .db('mirror.orders')
      .whereIn('id', [...deleted])
      .whereNotNull('_deleted_at')
      .count({ n: '*' })) as { n: string }[];
    expect(Number(gone[0]!.n)).toBe(20);
    expect(await regressions()).toBe(0);
    const pulls = (await r.w.t.db('listsync.sync_runs').where({ job: 'pull' }).count({ n: '*' })) as { n: string }[];
    expect(Number(pulls[0]!.n)).toBe(1); // the first pull only
    const { stats } = await r.w.emu.admin.itemHooks();
    expect(stats.duplicated).toBeGreaterThan(0);
    const status = (await r.w.t.db('listsync.realtime_stats').where({ list_name: LIST }).first()) as {
      events_applied: string;
      reread_requests: string;
    };
    expect(Number(status.events_applied)).toBeGreaterThan(500);
  }, 150_000);

  it('lost deliveries leave the mirror behind; the next pull repairs it', async () => {
    const r = await start();
    await r.w.emu.admin.setItemDelivery({ lossRate: 1 });
    const ids = await liveIds(r);
    for (const id of ids.slice(0, 30)) await r.w.emu.admin.editItem(APP, LIST, id, { Data: { [SAMPLE_FIELDS.status]: 'lost edit' } });
    await r.w.emu.admin.createItem(APP, LIST, { Data: { Title: 'lost create' } });
    await settled(r);
    expect((await r.w.emu.admin.itemHooks()).stats.lost).toBe(31);
    const stale = (await r.w.t.db('mirror.orders').where({ id: ids[0] }).first()) as { row_version: string };
    expect(Number(stale.row_version)).toBe(1);
    await pullList({ db: r.w.t.db, client: r.client, config: r.config, logger: r.w.logger }, r.config.lists[0]!);
    await expectMirrorEqualsPlatform(r.w);
  });

  it('refused deliveries are retried by the platform and applied', async () => {
    const r = await start();
    await r.w.emu.admin.setItemDelivery({ retryDelayMs: 100 });
    // The receiver refuses while the database is unreachable for it: here, while serve is down.
    const ids = await liveIds(r);
    await r.serve.server.close();
    r.serve.server.closeAllConnections();
    await r.w.emu.admin.editItem(APP, LIST, ids[0]!, { Data: { [SAMPLE_FIELDS.status]: 'after a refusal' } });
    await until('a refused attempt', async () => (await r.w.emu.admin.itemHooks()).stats.refused > 0);
    await new Promise<void>((resolve) => r.serve.server.listen(Number(new URL(r.serve.url).port), '127.0.0.1', () => resolve()));
    await settled(r);
    expect((await r.w.emu.admin.itemHooks()).stats.delivered).toBe(1);
    await expectMirrorEqualsPlatform(r.w);
  });

  it('with the default trust, a forged newer version or a forged delete leaves the mirror equal to the platform', async () => {
    const r = await start();
    const sub = (await r.w.t.db('listsync.webhook_subscriptions').where({ list_name: LIST, type: 3 }).first()) as { token: string };
    const del = (await r.w.t.db('listsync.webhook_subscriptions').where({ list_name: LIST, type: 4 }).first()) as { token: string };
    const [a, b] = await liveIds(r);
    const item = await r.w.emu.admin.getItem(APP, LIST, a!);
    const post = (token: string, type: number, body: unknown) =>
      fetch(`${r.serve.url}/hooks/${token}`, {
        method: 'POST',
        headers: { Channel: 'listsync', Type: String(type), 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post(sub.token, 3, { ...item, RowVersion: 999, [SAMPLE_FIELDS.status]: 'forged' })).status).toBe(200);
    expect((await post(del.token, 4, { ListDataID: b, RowVersion: 1 })).status).toBe(200);
    await settled(r);
    await expectMirrorEqualsPlatform(r.w);
    const row = (await r.w.t.db('mirror.orders').where({ id: b }).first()) as { _deleted_at: Date | null };
    expect(row._deleted_at).toBeNull();
    const forged = (await r.w.t.db('mirror.orders').where({ id: a }).first()) as { row_version: string; _raw: Record<string, unknown> };
    expect(Number(forged.row_version)).toBe(1);
    expect(forged._raw[SAMPLE_FIELDS.status]).not.toBe('forged');
  });

  it('accepts item callbacks in other plausible shapes: no Channel/Type headers, Type 1 or 2 on a created-or-modified subscription, the item wrapped in Data', async () => {
    const r = await start();
    const sub = (await r.w.t.db('listsync.webhook_subscriptions').where({ list_name: LIST, type: 3 }).first()) as { token: string };
    const [a, b, c] = await liveIds(r);
    const edit = async (id: string) => {
      await r.w.emu.admin.editItem(APP, LIST, id, { Data: { [SAMPLE_FIELDS.status]: `shape ${id.slice(-4)}` } });
      return r.w.emu.admin.getItem(APP, LIST, id);
    };
    const post = (headers: Record<string, string>, body: unknown) =>
      fetch(`${r.serve.url}/hooks/${sub.token}`, { method: 'POST', headers, body: JSON.stringify(body) });
    expect((await post({}, await edit(a!))).status).toBe(200);
    expect((await post({ Type: '2', 'Content-Type': 'application/json' }, await edit(b!))).status).toBe(200);
    expect((await post({ Channel: 'listsync', 'Content-Type': 'application/json' }, { Data: await edit(c!) })).status).toBe(200);
    // A type the subscription does not cover, or another channel, is still refused.
    expect((await post({ Type: '4', 'Content-Type': 'application/json' }, await r.w.emu.admin.getItem(APP, LIST, a!))).status).toBe(400);
    expect(
      (await post({ Channel: 'someone-else', 'Content-Type': 'application/json' }, await r.w.emu.admin.getItem(APP, LIST, a!))).status,
    ).toBe(403);
    await settled(r);
    for (const id of [a!, b!, c!]) {
      const row = (await r.w.t.db('mirror.orders').where({ id }).first('status')) as { status: string };
      expect(row.status).toBe(`shape ${id.slice(-4)}`);
    }
  });

  it('with realtimeTrust "body", a newer body is applied without a request; deletes are still confirmed', async () => {
    const r = await start({ trust: 'body' });
    const ids = await liveIds(r);
    await r.w.emu.admin.clearRequests();
    await r.w.emu.admin.editItem(APP, LIST, ids[0]!, { Data: { [SAMPLE_FIELDS.status]: 'from the body' } });
    await settled(r);
    await expectMirrorEqualsPlatform(r.w);
    expect(await r.w.emu.admin.requests()).toHaveLength(0);
    await r.w.emu.admin.deleteItem(APP, LIST, ids[1]!);
    await settled(r);
    expect((await r.w.emu.admin.requests()).length).toBeGreaterThan(0);
    const row = (await r.w.t.db('mirror.orders').where({ id: ids[1] }).first()) as { _deleted_at: Date | null };
    expect(row._deleted_at).not.toBeNull();
  });

  it('a re-read older than the event (query lag) is re-read later, never applied backwards', async () => {
    const r = await start();
    const regressions = await watchVersions(r);
    await r.w.emu.admin.setSettings({ queryLagMs: 400 });
    const [id] = await liveIds(r);
    for (let i = 0; i < 3; i++) await r.w.emu.admin.editItem(APP, LIST, id!, { Data: { [SAMPLE_FIELDS.status]: `lagged ${i}` } });
    await settled(r);
    const row = (await r.w.t.db('mirror.orders').where({ id }).first()) as { row_version: string };
    expect(Number(row.row_version)).toBe(4);
    expect(await regressions()).toBe(0);
    await expectMirrorEqualsPlatform(r.w);
  });

  it('events stored but not applied before a stop are applied at the next start; no subscription is duplicated', async () => {
    const r = await start();
    await r.rt.close(); // "crash": the receiver still stores, nothing applies
    const ids = await liveIds(r);
    await r.w.emu.admin.editItem(APP, LIST, ids[0]!, { Data: { [SAMPLE_FIELDS.status]: 'while stopped' } });
    await r.w.emu.admin.deleteItem(APP, LIST, ids[1]!);
    await until('events stored', async () => (await r.w.emu.admin.itemHooks()).stats.delivered === 2);
    const open = (await r.w.t.db('listsync.webhook_inbox').whereNull('processed_at').count({ n: '*' })) as { n: string }[];
    expect(Number(open[0]!.n)).toBe(2);
    await r.restart();
    await settled(r);
    await expectMirrorEqualsPlatform(r.w);
    expect((await r.w.emu.admin.itemHooks()).subscriptions).toHaveLength(2);
  });

  it('/healthz is degraded while a realtime list lacks its subscriptions', async () => {
    const r = await start({ pull: false });
    await r.w.t.db('listsync.webhook_subscriptions').where({ list_name: LIST, type: 4 }).delete();
    const health = (await fetch(`${r.serve.url}/healthz`).then((x) => x.json())) as {
      status: string;
      realtime: { missingSubscriptions: string[] };
    };
    expect(health.status).toBe('degraded');
    expect(health.realtime.missingSubscriptions).toEqual([LIST]);
  });
});
