import { spawn } from 'node:child_process';
import { DateTime } from 'luxon';
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { readState } from '../../src/store/state.js';
import { BIN, childEnv, runCli } from '../helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

interface RunRow {
  id: number;
  job: string;
  status: string;
  pages: number;
  requests: number;
  rows_inserted: number;
  rows_updated: number;
  rows_unchanged: number;
  resumed: boolean;
  error: string | null;
}

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const runs = async (world: World): Promise<RunRow[]> => (await world.t.db('listsync.sync_runs').orderBy('id')) as RunRow[];

describe('pull', () => {
  it('mirrors a seeded list row for row; a second pull with no changes rewrites nothing', async () => {
    w = await startWorld({ emulator: { items: 2500 }, database: { pageWriters: 2 } });
    const list = w.config.lists[0]!;
    const first = await pullList(w.deps(), list);
    expect(first.status).toBe('succeeded');
    expect(first.windowFrom).toBeNull();
    expect(first.counters.rows_inserted).toBe(2500);
    // Each item counted once: the follow-up's second look at the newest item is no extra row.
    expect([first.counters.rows_updated, first.counters.rows_unchanged]).toEqual([0, 0]);
    expect(first.counters.pages).toBe(3);
    expect(await expectMirrorEqualsPlatform(w)).toBe(2500);

    const syncedBefore = await w.t.db('mirror.orders').max('_synced_at as m').first();
    const second = await pullList(w.deps(), list);
    expect(second.windowFrom).toBe(DateTime.fromISO(first.watermark!).minus({ days: 1 }).toISODate());
    expect(second.counters.rows_inserted + second.counters.rows_updated).toBe(0);
    expect(second.counters.rows_unchanged).toBeGreaterThan(0);
    expect(await w.t.db('mirror.orders').max('_synced_at as m').first()).toEqual(syncedBefore);

    const rows = await runs(w);
    expect(rows.map((r) => [r.job, r.status])).toEqual([
      ['pull', 'succeeded'],
      ['pull', 'succeeded'],
    ]);
    expect(rows[0]!.requests).toBeGreaterThanOrEqual(4); // fields + 3 pages (+ the last-page probe)
    expect(rows[0]!.rows_inserted).toBe(2500);
    expect([rows[0]!.rows_updated, rows[0]!.rows_unchanged]).toEqual([0, 0]);
  });

  it('sends the documented incremental query: the date filter from high-water − overlap, newest first, then the ID', async () => {
    w = await startWorld({ emulator: { items: 300 }, list: { overlapMinutes: 7 } });
    const list = w.config.lists[0]!;
    const first = await pullList(w.deps(), list);
    expect(first.highWater).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    await w.emu.admin.clearRequests();
    const r = await pullList(w.deps(), list);
    const queries = (await w.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query'));
    const body = JSON.parse(queries[0]!.body!) as { Filters: unknown[]; Sorts: unknown[]; PageSize: number };
    const from = DateTime.fromSQL(first.highWater!).minus({ minutes: 7 });
    expect(r.order).toBe('newest-first');
    expect(body.Filters).toEqual([{ Field: 'Modified', Type: 2, Value: from.toISODate() }]);
    expect(body.Sorts).toEqual([
      { Field: 'Modified', Desc: true },
      { Field: 'ListDataID', Desc: true },
    ]);
    expect(body.PageSize).toBe(1000);
    expect(queries).toHaveLength(1);
    const details = ((await w.t.db('listsync.sync_runs').orderBy('id', 'desc').first()) as { details: { stopBefore: string } }).details;
    expect(details.stopBefore).toBe(from.toFormat('yyyy-MM-dd HH:mm:ss'));
  });

  it('items edited, created and deleted while paging are all mirrored after that pull and one more', async () => {
    // Two pages written at once, so shifted duplicates may meet in concurrent transactions.
    w = await startWorld({
      emulator: { items: 3000, faults: { latencyMs: 40 } },
      list: { pageSize: 100 },
      platform: { maxInFlight: 4 },
      database: { pageWriters: 2 },
    });
    const list = w.config.lists[0]!;
    await w.emu.admin.setActivity({ appID: 'demo', listID: 'orders', editsPerSecond: 40, createsPerSecond: 10, deletesPerSecond: 10 });
    const first = await pullList(w.deps(), list);
    const activity = await w.emu.admin.setActivity(null);
    expect(activity.totals.edits + activity.totals.creates + activity.totals.deletes).toBeGreaterThan(10);
    expect(first.status).toBe('succeeded');
    // Deletes during paging may have hidden items behind a page boundary: the watermark is held.
    if (activity.totals.deletes > 0) expect(first.watermarkHeld).toBe(true);
    const second = await pullList(w.deps(), list);
    expect(second.status).toBe('succeeded');
    // Every live item with its latest version; rows deleted on the platform stay until reconcile.
    const rows = await expectMirrorEqualsPlatform(w, 'orders', 'demo', 'orders', { allowExtraRows: true });
    expect(rows - (await w.emu.admin.exportList('demo', 'orders')).count).toBeLessThanOrEqual(activity.totals.deletes);
  });

  it("a date-time zone other than UTC: an item modified just before midnight is not missed by the next day's run", async () => {
    const zone = 'America/Los_Angeles';
    const at = (s: string) => DateTime.fromFormat(s, 'yyyy-MM-dd HH:mm:ss', { zone }).toJSDate();
    let now = at('2026-03-10 23:58:00');
    w = await startWorld({
      emulator: { items: 200, timeZone: zone, now: () => now, referenceDate: at('2026-03-10 00:00:00') },
      platform: { timeZone: zone },
      list: { lookbackDays: 0 },
    });
    const list = w.config.lists[0]!;
    const deps = { ...w.deps(), clock: () => now };
    const first = await pullList(deps, list);
    expect(first.watermark).toBe('2026-03-10'); // the platform's date, not UTC's (already 2026-03-11 there)

    now = at('2026-03-10 23:59:30');
    const id = String((await w.emu.admin.exportList('demo', 'orders')).items[5]!.ListDataID);
    const version = await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Edited before midnight' } });
    expect((await w.emu.admin.getItem('demo', 'orders', id)).Modified).toBe('2026-03-10 23:59:30');

    now = at('2026-03-11 00:00:30');
    const second = await pullList(deps, list);
    expect(second.windowFrom! <= '2026-03-10').toBe(true);
    const row = (await w.t.db('mirror.orders').where({ id }).first()) as { customer: string; row_version: number };
    expect(row.customer).toBe('Edited before midnight');
    expect(row.row_version).toBe(version);
    await expectMirrorEqualsPlatform(w);
  });

  it('a pull killed with SIGKILL keeps the watermark; the rerun resumes from its checkpoint and ends equal', async () => {
    w = await startWorld({
      emulator: { items: 3000, faults: { latencyMs: 150 } },
      list: { pageSize: 100 },
      platform: { requestsPerSecond: 10, maxInFlight: 2 },
    });
    const env = { PLATFORM_API_KEY: w.emu.apiKey };
    const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'pull'], { env: childEnv(env), stdio: 'ignore' });
    // Wait until some pages are checkpointed, then kill without warning.
    for (let i = 0; i < 400; i++) {
      const s = await readState<{ nextPage: number }>(w.t.db, 'orders', 'pull');
      if ((s.checkpoint?.nextPage ?? 0) >= 6) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const killed = await readState<{ nextPage: number }>(w.t.db, 'orders', 'pull');
    expect(killed.watermark).toBeNull();
    const resumeAt = killed.checkpoint!.nextPage;
    expect(resumeAt).toBeGreaterThanOrEqual(6);
    expect(resumeAt).toBeLessThan(30);

    await w.emu.admin.clearRequests();
    const rerun = await runCli(['--config', w.configFile, 'pull'], { env, cwd: w.cwd });
    expect(rerun.stderr).toBe('');
    expect(rerun.code).toBe(0);
    expect(rerun.stdout).toMatch(/orders: succeeded \(full load, resumed\)/);
    const queries = (await w.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query'));
    // The full load's pages (no filter); the follow-up after it reads newest first from page 1 of a date filter.
    const pages = queries.filter((e) => !(JSON.parse(e.body ?? '{}') as { Filters?: unknown[] }).Filters?.length).map((e) => e.pageIndex);
    expect(Math.min(...(pages as number[]))).toBeGreaterThanOrEqual(resumeAt - 1);
    expect(pages).not.toContain(1);
    const after = await readState(w.t.db, 'orders', 'pull');
    expect(after.watermark).not.toBeNull();
    expect(after.checkpoint).toBeNull();
    await expectMirrorEqualsPlatform(w);
    const history = await runs(w);
    expect(history.map((r) => r.status)).toEqual(['failed', 'succeeded']);
    expect(history[0]!.error).toMatch(/abandoned/);
    expect(history[1]!.resumed).toBe(true);
  });

  it('two pulls of one list started together: one does the work, the other says so; sync_runs tells', async () => {
    w = await startWorld({ emulator: { items: 1500, faults: { latencyMs: 100 } }, list: { pageSize: 100 } });
    const env = { PLATFORM_API_KEY: w.emu.apiKey };
    const [a, b] = await Promise.all([
      runCli(['--config', w.configFile, 'pull'], { env }),
      runCli(['--config', w.configFile, 'pull'], { env }),
    ]);
    // The one that gave way did what it should: it says so and exits 0.
    const results = [a, b].sort((x) => (/orders: succeeded/.test(x.stdout) ? -1 : 1));
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    expect(results[0]!.stdout).toMatch(/orders: succeeded/);
    expect(results[1]!.stderr).toMatch(/orders: pull skipped: list:orders is already running/);
    const history = await runs(w);
    expect(history.map((r) => [r.job, r.status])).toEqual(
      expect.arrayContaining([
        ['pull', 'succeeded'],
        ['pull', 'skipped'],
      ]),
    );
    expect(history.filter((r) => r.status === 'succeeded')).toHaveLength(1);
    expect(history.find((r) => r.status === 'skipped')!.error).toMatch(/already running/);
    await expectMirrorEqualsPlatform(w);
  });

  it('a value that does not convert is NULL in its column, whole in _raw, and counted', async () => {
    w = await startWorld({ emulator: { items: 50 } });
    const id = String((await w.emu.admin.exportList('demo', 'orders')).items[0]!.ListDataID);
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.quantity]: 'about seven', [F.orderDate]: '2026-02-31' } });
    const r = await pullList(w.deps(), w.config.lists[0]!);
    expect(r.status).toBe('succeeded');
    expect(r.counters.rows_failed).toBe(2);
    const row = (await w.t.db('mirror.orders').where({ id }).first()) as {
      quantity: unknown;
      order_date: unknown;
      _raw: Record<string, unknown>;
    };
    expect(row.quantity).toBeNull();
    expect(row.order_date).toBeNull();
    expect(row._raw[F.quantity]).toBe('about seven');
    expect(row._raw[F.orderDate]).toBe('2026-02-31');
    expect((await runs(w))[0]!.status).toBe('succeeded');
  });

  it('a new platform field adds a column on the next pull', async () => {
    w = await startWorld({ emulator: { items: 20 } });
    await pullList(w.deps(), w.config.lists[0]!);
    const gone = String((await w.emu.admin.exportList('demo', 'orders')).items[0]!.ListDataID);
    await w.emu.admin.deleteItem('demo', 'orders', gone);
    await w.emu.admin.addField('demo', 'orders', {
      FieldName: 'Region',
      Type: 'input',
      FieldType: 'Text',
      IsIndex: false,
      DefaultValue: 'EMEA',
    });
    const r = await pullList(w.deps(), w.config.lists[0]!);
    expect(r.schemaChanges.join(' ')).toMatch(/region/);
    const cols = await w.t.db('information_schema.columns').where({ table_schema: 'mirror', table_name: 'orders' }).pluck('column_name');
    expect(cols).toContain('region');
    // Existing items got the field's default without a new version: the pull re-read them all.
    expect(r.windowFrom).toBeNull();
    expect(r.counters.rows_updated).toBe(19);
    await expectMirrorEqualsPlatform(w, 'orders', 'demo', 'orders', { allowExtraRows: true });
    // The item deleted meanwhile is not left waiting for a refill that cannot come.
    expect((await w.t.db('mirror.orders').where({ id: gone }).first('row_version')).row_version).toBeNull();
    const again = await pullList(w.deps(), w.config.lists[0]!);
    expect(again.windowFrom).not.toBeNull();
    expect(again.counters.rows_updated).toBe(0);
  });
});
