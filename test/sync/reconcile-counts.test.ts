/**
 * Reconcile by counts against the emulator over real HTTP and a real
 * Postgres: a 20,000-item list with Created dates over three years, in a
 * platform time zone eight hours off UTC (so a day counted in UTC would
 * disagree with the platform's day almost everywhere). Requests are counted
 * from the emulator's request log.
 *
 * The cases run in order on one world (each starts from the state the one
 * before left): no deletes, scattered deletes, a delete under an open local
 * change, the full sweep, and the CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pullList } from '../../src/sync/pull.js';
import { reconcileList } from '../../src/sync/reconcile.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

const ITEMS = 20_000;
const ZONE = 'Asia/Shanghai';

describe('reconcile by counts (sequential: each case builds on the last)', () => {
  let w: World;
  let items: { id: string; created: string }[];
  const doomed: string[] = [];

  const queryRequests = async (): Promise<number> => (await w.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query')).length;
  const deletedIds = async (): Promise<string[]> =>
    ((await w.t.db('mirror.orders').whereNotNull('_deleted_at').orderBy('id').pluck('id')) as unknown[]).map(String);
  const deleteOnPlatform = async (ids: readonly string[]): Promise<void> => {
    for (const id of ids) await w.emu.admin.deleteItem('demo', 'orders', id);
  };

  beforeAll(async () => {
    w = await startWorld({
      emulator: { items: ITEMS, spanDays: 3 * 365, timeZone: ZONE, referenceDate: '2026-06-01' },
      platform: { timeZone: ZONE },
    });
    const pulled = await pullList(w.deps(), w.config.lists[0]!);
    expect(pulled.counters.rows_inserted).toBe(ITEMS);
    items = (await w.emu.admin.exportList('demo', 'orders')).items.map((i) => ({ id: String(i.ListDataID), created: String(i.Created) }));
    expect(items[0]!.created < '2023-06-03').toBe(true);
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  it('with nothing deleted, one count request and nothing marked', async () => {
    await w.emu.admin.clearRequests();
    const r = await reconcileList(w.deps(), w.config.lists[0]!);
    expect(r).toMatchObject({ status: 'succeeded', mode: 'counts', deleted: 0, undeleted: 0 });
    expect(r.counts).toMatchObject({ requests: 1, platformTotal: ITEMS, mirrorTotal: ITEMS, swept: [] });
    expect(await queryRequests()).toBeLessThanOrEqual(5);
    expect(await queryRequests()).toBe(1);
  });

  it('10 scattered deletes, some in the small hours of the platform day (the previous day in UTC): each marked, at a fraction of the full sweep', async () => {
    // Spread over the list; where the pick's Created is at 08:00 or later, the nearest item before 08:00 on a later position.
    for (let k = 0; k < 10; k++) {
      let i = Math.floor(((k + 0.5) * items.length) / 10);
      if (k % 2 === 0) while (Number(items[i]!.created.slice(11, 13)) >= 8) i++;
      doomed.push(items[i]!.id);
    }
    expect(doomed.filter((id) => Number(items.find((x) => x.id === id)!.created.slice(11, 13)) < 8).length).toBeGreaterThanOrEqual(5);
    await deleteOnPlatform(doomed);
    await w.emu.admin.clearRequests();

    const r = await reconcileList(w.deps(), w.config.lists[0]!);
    expect(r).toMatchObject({ status: 'succeeded', mode: 'counts', deleted: 10, undeleted: 0, confirmedPresent: 0 });
    expect(await deletedIds()).toEqual([...doomed].sort());
    const requests = await queryRequests();
    expect(requests).toBe(r.counters.requests);
    // Counts: at most ~log2(1095 days) per delete; sweeps: one page per range; one In lookup to confirm
    // (the seeded data is the same every run: 25 + 10 + 1 = 36 here). The full sweep takes 20 pages.
    expect(requests).toBeLessThanOrEqual(10 * Math.ceil(Math.log2(3 * 365)) + 10 + 1);
    expect(requests).toBeLessThanOrEqual(40);
    // The full sweep reads 20 pages: with 20 items a day, a range of up to 1000 items is swept rather than split.
    expect(r.counts!.swept.length).toBeLessThanOrEqual(10);
    const run = (await w.t.db('listsync.sync_runs').where({ id: r.runId }).first()) as { rows_deleted: number; details: { mode: string } };
    expect(run.rows_deleted).toBe(10);
    expect(run.details.mode).toBe('counts');

    // Again: the counts agree now, one request.
    await w.emu.admin.clearRequests();
    const again = await reconcileList(w.deps(), w.config.lists[0]!);
    expect(again).toMatchObject({ status: 'succeeded', deleted: 0 });
    expect(await queryRequests()).toBe(1);
  });

  it('a row with an open local change is left to write-back; items the mirror lacks in a swept range are read in', async () => {
    const edited = items[7_001]!.id;
    const gone = items[7_002]!.id;
    const hidden = items[15_003]!.id;
    // A local edit of a row whose item is then deleted on the platform: write-back settles it, not reconcile.
    await w.t.db('mirror.orders').where({ id: edited }).update({ customer: 'edited locally' });
    await deleteOnPlatform([edited, gone]);
    // A row the mirror lost (as if a page had been missed): the counts differ, the sweep finds it, it is read in.
    await w.t.db.transaction(async (trx) => {
      await trx.raw("select set_config('listsync.writer', 'on', true)");
      await trx('mirror.orders').where({ id: hidden }).delete();
    });

    const r = await reconcileList(w.deps(), w.config.lists[0]!);
    expect(r).toMatchObject({ status: 'succeeded', mode: 'counts', deleted: 1 });
    expect(r.healed.missing).toBe(1);
    expect(await deletedIds()).toEqual([...doomed, gone].sort());
    const kept = (await w.t.db('mirror.orders').where({ id: edited }).first()) as { _deleted_at: Date | null; customer: string };
    expect(kept).toMatchObject({ _deleted_at: null, customer: 'edited locally' });
    const back = (await w.t.db('mirror.orders').where({ id: hidden }).first()) as { _deleted_at: Date | null } | undefined;
    expect(back?._deleted_at).toBeNull();
  });

  it('--full still sweeps every ID, and the CLI says which reconcile it ran', async () => {
    await w.emu.admin.clearRequests();
    const full = await reconcileList(w.deps(), w.config.lists[0]!, { full: true });
    expect(full).toMatchObject({ status: 'succeeded', mode: 'full', counts: null, deleted: 0 });
    expect(full.seen).toBe(ITEMS - 12);
    expect(full.counters.pages).toBe(Math.ceil((ITEMS - 12) / 1000));

    const env = { PLATFORM_API_KEY: w.emu.apiKey };
    const byCounts = await runCli(['reconcile', '--list', 'orders'], { cwd: w.cwd, env });
    expect(byCounts.code).toBe(0);
    // The row left to write-back is still live in the mirror and gone on the platform: its range differs until a push settles it.
    expect(byCounts.stdout).toMatch(/orders: reconcile \(by counts\) succeeded — \d+ count request\(s\), swept 1 range\(s\) \(2024-/);
    const sweep = await runCli(['reconcile', '--list', 'orders', '--full'], { cwd: w.cwd, env });
    expect(sweep.code).toBe(0);
    expect(sweep.stdout).toMatch(/orders: reconcile \(full sweep\) succeeded — saw 19,988 IDs in 20 pages/);
  });
});
