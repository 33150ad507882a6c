/**
 * Pulls that converge while the list changes under them (issue 26): a list
 * with a delete every 5 s, and one with 20 edits/s, each pulled three times in
 * a row while the activity runs. Every pull succeeds and moves its marks, the
 * second and third read newest first what changed (and at most 3 query
 * requests beyond the changes' pages), and once the activity stops one pull
 * and a reconcile leave the mirror equal to the platform.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pullList, type PullResult } from '../../src/sync/pull.js';
import { reconcileList } from '../../src/sync/reconcile.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.emu.admin.setActivity(null);
  await w?.close();
  w = undefined;
});

const PAGE = 250;
const ITEMS = 20_000;

/** A 20,000-item list read 250 a page at the account's 10 requests/s: a full load spans 80 pages and about 8 s. */
function busyWorld(): Promise<World> {
  return startWorld({
    emulator: { items: ITEMS, rateLimit: { burst: 10, perSecond: 10 } },
    list: { pageSize: PAGE },
    platform: { requestsPerSecond: 10, maxInFlight: 4 },
  });
}

async function queryRequests(world: World): Promise<number> {
  return (await world.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query')).length;
}

/** Pages the changes since the run's stop mark fill: what an incremental read cannot avoid. */
async function changesPages(world: World, r: PullResult): Promise<number> {
  const since = (await lastDetails(world)).stopBefore;
  const changed = (await world.emu.admin.exportList('demo', 'orders')).items.filter((it) => String(it.Modified) >= since).length;
  return Math.ceil(changed / PAGE) || (r.counters.pages > 0 ? 1 : 0);
}

async function lastDetails(world: World): Promise<{ stopBefore: string; gaps?: number; gapItems?: number; watermarkHeld: boolean }> {
  const row = (await world.t.db('listsync.sync_runs').where({ job: 'pull' }).orderBy('id', 'desc').first()) as {
    details: { stopBefore: string; gaps?: number; gapItems?: number; watermarkHeld: boolean };
  };
  return row.details;
}

/** Three pulls in a row under the running activity: each succeeds and moves its marks; the 2nd and 3rd are incremental and cheap. */
async function threePulls(world: World, onFirstPage?: (page: number) => Promise<void>): Promise<PullResult[]> {
  const list = world.config.lists[0]!;
  const results: PullResult[] = [];
  const pending: Promise<void>[] = [];
  const full = await pullList({ ...world.deps(), onPage: (p) => void pending.push(onFirstPage?.(p.page) ?? Promise.resolve()) }, list);
  await Promise.all(pending);
  results.push(full);
  expect(full.status).toBe('succeeded');
  expect(full.watermarkHeld, full.heldBecause ?? '').toBe(false);
  expect(full.watermark).not.toBeNull();
  for (let i = 0; i < 2; i++) {
    await world.emu.admin.clearRequests();
    const r = await pullList(world.deps(), list);
    results.push(r);
    expect(r.status).toBe('succeeded');
    expect(r.order).toBe('newest-first');
    expect(r.watermarkHeld, r.heldBecause ?? '').toBe(false);
    expect(await queryRequests(world)).toBeLessThanOrEqual((await changesPages(world, r)) + 3);
  }
  return results;
}

/** Activity stopped: one pull and a reconcile leave the mirror equal to the platform, row for row. */
async function settlesEqual(world: World): Promise<void> {
  await world.emu.admin.setActivity(null);
  const list = world.config.lists[0]!;
  expect((await pullList(world.deps(), list)).status).toBe('succeeded');
  expect((await reconcileList(world.deps(), list)).status).toBe('succeeded');
  await expectMirrorEqualsPlatform(world);
}

describe('pulls that converge under activity', () => {
  it('one delete every 5 s: three pulls succeed and move their marks, the gaps deletes open while paging are re-read', async () => {
    w = await busyWorld();
    const world = w;
    const ids = (await world.emu.admin.exportList('demo', 'orders')).items.map((it) => String(it.ListDataID));
    await world.emu.admin.setActivity({ appID: 'demo', listID: 'orders', deletesPerSecond: 0.2, seed: 7 });
    // Besides the random deletes, one delete of an item already read lands mid-read for certain.
    const [full] = await threePulls(world, async (page) => {
      if (page === 20) await world.emu.admin.deleteItem('demo', 'orders', ids[5]!);
    });
    const fullRun = (await world.t.db('listsync.sync_runs').where({ id: full!.runId }).first()) as {
      details: { gaps: number; gapItems: number };
    };
    expect(fullRun.details.gaps).toBeGreaterThanOrEqual(1);
    expect(fullRun.details.gapItems).toBeGreaterThanOrEqual(1);
    // Nothing the full load should have read is missing: every item alive now is in the mirror.
    await expectMirrorEqualsPlatform(world, 'orders', 'demo', 'orders', { allowExtraRows: true });
    expect((await world.emu.admin.activity()).totals.deletes).toBeGreaterThanOrEqual(1);
    await settlesEqual(world);
  }, 90_000);

  it('20 edits/s: three pulls succeed and move their marks, and the mirror ends equal once the edits stop', async () => {
    w = await busyWorld();
    await w.emu.admin.setActivity({ appID: 'demo', listID: 'orders', editsPerSecond: 20, seed: 11 });
    const results = await threePulls(w);
    expect((await w.emu.admin.activity()).totals.edits).toBeGreaterThan(50);
    // Each pull's high-water mark moves forward: what changed while it paged was read by its follow-up.
    const marks = results.map((r) => r.highWater!);
    expect([...marks].sort()).toEqual(marks);
    // The full load's follow-up read the items edited while it paged, and its mark is what that read saw first.
    const fullRun = (await w.t.db('listsync.sync_runs').where({ id: results[0]!.runId }).first()) as {
      details: { followUp?: { touched: number; newest: string; clean: boolean } };
    };
    expect(fullRun.details.followUp!.touched).toBeGreaterThan(0);
    expect(fullRun.details.followUp!.clean).toBe(true);
    expect(results[0]!.highWater).toBe(fullRun.details.followUp!.newest);
    await settlesEqual(w);
  }, 90_000);
});
