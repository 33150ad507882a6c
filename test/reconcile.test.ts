/**
 * The full reconcile (`--full`, every ID) against the emulator over real HTTP
 * and a real Postgres: deletes on the platform become `_deleted_at`, rows seen
 * again are undeleted, and a broken sweep marks nothing. Reconcile by counts
 * is in test/sync/reconcile-counts.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../src/config.js';
import { createClient } from '../src/context.js';
import { createLogger } from '../src/logger.js';
import { PlatformClient, type PageOptions } from '../src/platform/client.js';
import type { Item, ItemQuery, Page } from '../src/platform/types.js';
import { pullList } from '../src/sync/pull.js';
import { reconcileList } from '../src/sync/reconcile.js';
import { refusal as guard } from '../src/sync/reconcile/refusal.js';
import { startEmulator, type RunningEmulator } from '../src/emulator/index.js';
import { runCli } from './helpers/cli.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

const logger = createLogger({ level: 'silent' });
const FULL = { full: true };
const APP = 'demo';
const LIST = 'orders';

describe('reconcile', () => {
  let t: TestDatabase;
  let emu: RunningEmulator;
  let config: Config;
  let client: PlatformClient;
  let ids: string[];

  const rawConfig = () => ({
    platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey, requestsPerSecond: 50 },
    database: { url: t.url },
    lists: [{ name: 'orders', appID: APP, listID: LIST }],
  });
  const deps = () => ({ db: t.db, client, config, logger });
  const list = () => config.lists[0]!;
  const deletedIds = async (): Promise<string[]> =>
    ((await t.db('mirror.orders').whereNotNull('_deleted_at').orderBy('id').pluck('id')) as string[]).map(String);
  const lastRun = async () =>
    (await t.db('listsync.sync_runs').where({ job: 'reconcile' }).orderBy('id', 'desc').first()) as {
      status: string;
      error: string | null;
      rows_deleted: number;
      rows_undeleted: number;
      requests: number;
      pages: number;
    };

  beforeAll(async () => {
    t = await createTestDatabase();
    emu = await startEmulator({ sample: true, items: 3000, rateLimit: { burst: 50, perSecond: 50 } });
    config = parseConfig(rawConfig());
    client = createClient(config, logger);
  });
  afterAll(async () => {
    await client?.close();
    await emu?.close();
    await t?.drop();
  });

  it('before any pull it fails and says to run pull first', async () => {
    await expect(reconcileList(deps(), list())).rejects.toThrow(/run listsync pull first/);
    const run = await lastRun();
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/run listsync pull first/);
  });

  it('marks exactly the items deleted on the platform, undeletes rows seen again, never touches local- rows', async () => {
    const pulled = await pullList(deps(), list());
    expect(pulled.status).toBe('succeeded');
    expect(pulled.counters.rows_inserted).toBe(3000);
    ids = (await emu.admin.exportList(APP, LIST)).items.map((i) => String(i.ListDataID));
    expect(ids).toHaveLength(3000);

    // 37 deletes spread over the list (first, last and pages in between).
    const doomed = Array.from({ length: 37 }, (_, k) => ids[Math.floor((k * (ids.length - 1)) / 36)]!);
    expect(new Set(doomed).size).toBe(37);
    for (const id of doomed) await emu.admin.deleteItem(APP, LIST, id);

    // A row marked deleted earlier that the platform still has: undeleted.
    const visibleAgain = ids[1500]!;
    await t.db.transaction(async (trx) => {
      await trx.raw("select set_config('listsync.writer', 'on', true)");
      await trx('mirror.orders').where({ id: visibleAgain }).update({ _deleted_at: trx.fn.now() });
    });
    // A row created locally and not yet pushed: never marked.
    await t.db('mirror.orders').insert({ id: 'local-test-1' });

    const r = await reconcileList(deps(), list(), FULL);
    expect(r.status).toBe('succeeded');
    expect(r.seen).toBe(3000 - 37);
    expect(r.deleted).toBe(37);
    expect(r.undeleted).toBe(1);
    expect(r.counters.pages).toBe(3);
    expect(await deletedIds()).toEqual([...doomed].sort());
    const local = (await t.db('mirror.orders').where({ id: 'local-test-1' }).first('_deleted_at')) as { _deleted_at: Date | null };
    expect(local._deleted_at).toBeNull();

    const run = await lastRun();
    expect(run).toMatchObject({ status: 'succeeded', rows_deleted: 37, rows_undeleted: 1, pages: 3 });
    expect(run.requests).toBeGreaterThanOrEqual(3);
    // The soft deletes were listsync's own writes: nothing captured into the outbox but the local create.
    const outbox = (await t.db('listsync.outbox').select('op', 'local_id')) as { op: string; local_id: string | null }[];
    expect(outbox).toEqual([{ op: 'create', local_id: 'local-test-1' }]);

    // Idempotent: a second run changes nothing.
    const again = await reconcileList(deps(), list(), FULL);
    expect(again).toMatchObject({ status: 'succeeded', deleted: 0, undeleted: 0 });
    expect(await deletedIds()).toEqual([...doomed].sort());
  });

  it('an empty page mid-sweep marks nothing; the run is recorded failed with the reason', async () => {
    const before = await deletedIds();
    const extra = ids.slice(100, 110);
    for (const id of extra) await emu.admin.deleteItem(APP, LIST, id);
    await emu.admin.setFaults({ emptyPages: [2] });
    try {
      await expect(reconcileList(deps(), list(), FULL)).rejects.toThrow(/refusing to mark deletes/);
    } finally {
      await emu.admin.setFaults({ emptyPages: null });
    }
    expect(await deletedIds()).toEqual(before);
    const run = await lastRun();
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/page 2 came back empty.*refusing to mark deletes; a broken or filtered response must not wipe the mirror/);
    expect(run.rows_deleted).toBe(0);

    // Once the platform answers properly again, the 10 are marked.
    const ok = await reconcileList(deps(), list(), FULL);
    expect(ok.deleted).toBe(10);
  });

  it('refuses when it sees fewer IDs than reconcileMinSeenRatio of the live rows', async () => {
    const before = await deletedIds();
    const live = 3000 - 47;
    // Delete 60% of what is left on the platform: the sweep sees 40% of the mirror.
    const alive = new Set((await emu.admin.exportList(APP, LIST)).items.map((i) => String(i.ListDataID)));
    const victims = [...alive].slice(0, Math.ceil(live * 0.6));
    for (const id of victims) await emu.admin.deleteItem(APP, LIST, id);
    const r = await reconcileList(deps(), list(), FULL);
    expect(r.status).toBe('refused');
    expect(r.message).toBe(
      `saw ${live - victims.length} of ${live} live rows (< 50%): refusing to mark deletes; a broken or filtered response must not wipe the mirror`,
    );
    expect(await deletedIds()).toEqual(before);
    const run = await lastRun();
    expect(run.status).toBe('failed');
    expect(run.error).toBe(r.message);
  });

  it('the CLI exits 1 when the guard refuses and prints why', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'listsync-reconcile-'));
    writeFileSync(
      join(dir, 'listsync.config.json'),
      JSON.stringify({ ...rawConfig(), platform: { baseUrl: emu.baseUrl, requestsPerSecond: 50 } }),
    );
    const r = await runCli(['reconcile', '--list', 'orders'], { cwd: dir, env: { PLATFORM_API_KEY: emu.apiKey } });
    expect(r.stderr).toMatch(/REFUSED[\s\S]*refusing to mark deletes/);
    expect(r.code).toBe(1);
    const unknown = await runCli(['reconcile', '--list', 'nope'], { cwd: dir, env: { PLATFORM_API_KEY: emu.apiKey } });
    expect(unknown.code).toBe(2);
  });
});

/** The real client, with a hook that runs after the consumer took page 1 (while later pages are still to be fetched). */
class HookedClient extends PlatformClient {
  afterPage1?: (items: Item[]) => Promise<void>;
  override pages(appID: string, listID: string, query?: ItemQuery, options?: PageOptions): AsyncGenerator<Page<Item>, void, undefined> {
    const inner = super.pages(appID, listID, query, options);
    const hook = this.afterPage1;
    return (async function* () {
      for await (const page of inner) {
        yield page;
        if (page.index === 1 && hook) await hook(page.items);
      }
    })();
  }
}

describe('reconcile while items are deleted under the sweep', () => {
  let t: TestDatabase;
  let emu: RunningEmulator;
  afterAll(async () => {
    await emu?.close();
    await t?.drop();
  });

  it('confirms the items a shifted page made it miss instead of marking them', async () => {
    t = await createTestDatabase();
    emu = await startEmulator({ sample: true, items: 3000, rateLimit: { burst: 50, perSecond: 50 } });
    // One page in flight at a time: page 3 is requested only after the delete.
    const config = parseConfig({
      platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey, requestsPerSecond: 50, maxInFlight: 1 },
      database: { url: t.url },
      lists: [{ name: 'orders', appID: APP, listID: LIST }],
    });
    const client = new HookedClient({ config: config.platform, logger });
    try {
      await pullList({ db: t.db, client, config, logger }, config.lists[0]!);
      let deleted: string | undefined;
      client.afterPage1 = async (items) => {
        deleted = String(items[0]![config.lists[0]!.idField]);
        await emu.admin.deleteItem(APP, LIST, deleted);
      };
      const r = await reconcileList({ db: t.db, client, config, logger }, config.lists[0]!, FULL);
      expect(deleted).toBeDefined();
      expect(r.status).toBe('succeeded');
      // The sweep missed one or two items that exist (page 2 may have been computed before or after the delete)...
      expect(r.confirmedPresent).toBeGreaterThanOrEqual(1);
      expect(r.confirmedPresent).toBeLessThanOrEqual(2);
      // ...and marked none of them; the deleted item was seen on page 1, so the next run marks it.
      expect(r.deleted).toBe(0);
      expect(await t.db('mirror.orders').whereNotNull('_deleted_at').count({ n: '*' })).toEqual([{ n: 0 }]);
      client.afterPage1 = undefined;
      const next = await reconcileList({ db: t.db, client, config, logger }, config.lists[0]!, FULL);
      expect(next).toMatchObject({ status: 'succeeded', deleted: 1, confirmedPresent: 0 });
      expect(await t.db('mirror.orders').whereNotNull('_deleted_at').pluck('id')).toEqual([deleted]);
    } finally {
      await client.close();
    }
  });
});

describe('reconcile guard', () => {
  const ok = { seen: 1000, live: 1000, ratio: 0.5, anomalies: [], minTotal: 1000, maxTotal: 1000 };
  it('passes a sweep that agrees with the mirror and TotalCount', () => {
    expect(guard(ok)).toBeNull();
    expect(guard({ ...ok, seen: 990 })).toBeNull();
    expect(guard({ ...ok, live: 0, seen: 0, minTotal: 0, maxTotal: 0 })).toBeNull();
  });
  it('refuses a sweep that saw too little of the mirror', () => {
    expect(guard({ ...ok, seen: 0, live: 5000, minTotal: 0, maxTotal: 0 })).toBe(
      'saw 0 of 5000 live rows (< 50%): refusing to mark deletes; a broken or filtered response must not wipe the mirror',
    );
  });
  it('refuses short pages and a count that disagrees with TotalCount', () => {
    expect(guard({ ...ok, anomalies: ['page 2 of 3 held 10 of 1000 items'] })).toMatch(
      /page 2 of 3 held 10 of 1000 items.*refusing to mark deletes/,
    );
    expect(guard({ ...ok, seen: 800, minTotal: 1000, maxTotal: 1000 })).toMatch(
      /received 800 distinct IDs but the platform reported TotalCount 1000/,
    );
  });
});
