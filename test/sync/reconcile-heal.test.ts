/** Reconcile heals: rows a pull missed and rows behind a back-dated edit come back without a pull. */
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { markListsyncWriter } from '../../src/mirror/index.js';
import { pullList } from '../../src/sync/pull.js';
import { reconcileList } from '../../src/sync/reconcile.js';
import { runCli } from '../helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('reconcile heals', () => {
  it('items hidden from the full load and items edited with a back-dated Modified: reconcile alone brings the mirror equal, and says what it healed', async () => {
    w = await startWorld({ emulator: { items: 1500 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const ids = (await w.emu.admin.exportList('demo', 'orders')).items.map((it) => String(it.ListDataID));
    // Five rows the pull never brought in (as if a page had been lost).
    const hidden = [ids[10]!, ids[500]!, ids[900]!, ids[1200]!, ids[1499]!];
    await w.t.db.transaction(async (trx) => {
      await markListsyncWriter(trx);
      await trx('mirror.orders').whereIn('id', hidden).delete();
    });
    // Three late writes stamped long before the pull's mark: an incremental pull cannot see them.
    for (const id of [ids[20]!, ids[30]!, ids[40]!])
      await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'late write' }, Modified: '2020-01-02 03:04:05' });

    await w.emu.admin.clearRequests();
    const r = await reconcileList(w.deps(), list, { full: true });
    expect(r.status).toBe('succeeded');
    expect(r.healed).toEqual({ missing: 5, behind: 3, keptLocal: 0 });
    expect(r.deleted).toBe(0);
    await expectMirrorEqualsPlatform(w);
    // The sweep asks for the ID and the version; the heal re-reads by ID with In.
    const bodies = (await w.emu.admin.requests())
      .filter((e) => e.path.endsWith('/items/query'))
      .map((e) => JSON.parse(e.body!) as { Fields?: string[]; Filters?: { Type: number }[] });
    expect(bodies[0]!.Fields).toEqual(['ListDataID', 'RowVersion']);
    expect(bodies.some((b) => b.Filters?.some((f) => f.Type === 9))).toBe(true);

    const run = (await w.t.db('listsync.sync_runs').where({ job: 'reconcile' }).first()) as {
      rows_inserted: number;
      rows_updated: number;
      details: { healed: unknown };
    };
    expect(run.details.healed).toEqual({ missing: 5, behind: 3, keptLocal: 0 });
    expect(run.rows_inserted).toBe(5);
    expect(run.rows_updated).toBe(3);
    const status = await runCli(['--config', w.configFile, 'status'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
    expect(status.stdout).toMatch(/orders: the last reconcile .* healed 5 missing, 3 behind/);
  });

  it('a row with an open local change is left to write-back (manual policy: the local value stays)', async () => {
    w = await startWorld({ emulator: { items: 200 }, list: { conflictPolicy: 'manual' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const id = String((await w.emu.admin.exportList('demo', 'orders')).items[7]!.ListDataID);
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'local edit' });
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'platform edit' }, Modified: '2020-01-02 03:04:05' });
    const r = await reconcileList(w.deps(), list, { full: true });
    expect(r.healed.keptLocal).toBe(1);
    expect(r.healed.behind).toBe(0);
    expect(((await w.t.db('mirror.orders').where({ id }).first()) as { customer: string }).customer).toBe('local edit');
  });
});
