/**
 * Reconcile of 200,000 IDs against the emulator at its default rate limit
 * (burst 10, 10 requests/s; 0 ms latency), projected to 1,000,000 IDs.
 * Quality bar: 1M IDs in at most 110 s (1000 pages at 10/s is about 100 s).
 *
 * The mirror is filled first by a pull from a twin emulator (same seed and
 * reference date, so the same items) without a rate limit, so that only the
 * reconcile runs against the limited one. 100 items are deleted on the
 * limited one, so the run also confirms and marks deletes.
 *
 * Database: BENCH_DATABASE_URL, else DATABASE_URL, else the local server; a
 * database of its own is created and dropped.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { parseConfig } from '../src/config.js';
import { createDb, migrateLatest } from '../src/db.js';
import { startEmulator } from '../src/emulator/index.js';
import { createLogger } from '../src/logger.js';
import { PlatformClient } from '../src/platform/client.js';
import { pullList } from '../src/sync/pull.js';
import { reconcileList } from '../src/sync/reconcile.js';

const ITEMS = Number(process.env.BENCH_RECONCILE_ITEMS ?? 200_000);
const DELETES = 100;
const TARGET_IDS = 1_000_000;

async function admin(url: string, sql: string): Promise<void> {
  const u = new URL(url);
  u.pathname = '/postgres';
  const c = new pg.Client({ connectionString: u.toString() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export default async function reconcileBench(): Promise<Record<string, string | number>> {
  const server = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `listsync_bench_reconcile_${process.pid}`;
  await admin(server, `drop database if exists "${name}" with (force)`);
  await admin(server, `create database "${name}"`);
  const u = new URL(server);
  u.pathname = `/${name}`;
  const db = createDb({ url: u.toString(), poolMax: 4 });
  const logger = createLogger({ level: 'warn' });
  const referenceDate = new Date(Date.UTC(2026, 0, 1));
  const fill = await startEmulator({ sample: true, items: ITEMS, rateLimit: false, referenceDate });
  const emu = await startEmulator({ sample: true, items: ITEMS, referenceDate });
  const fillClient = new PlatformClient({
    config: parseConfig({
      platform: { baseUrl: fill.baseUrl, apiKey: fill.apiKey, requestsPerSecond: 1000, maxInFlight: 8 },
      database: { url: u.toString() },
    }).platform,
    logger,
  });
  const config = parseConfig({
    platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey },
    database: { url: u.toString() },
    lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
  });
  const client = new PlatformClient({ config: config.platform, logger });
  try {
    await migrateLatest(db);
    const filled = await pullList({ db, client: fillClient, config, logger }, config.lists[0]!);
    if (filled.counters.rows_inserted !== ITEMS)
      throw new Error(`the fill pull inserted ${filled.counters.rows_inserted} rows, expected ${ITEMS}`);
    const ids = (await fill.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID));
    for (let k = 0; k < DELETES; k++) await emu.admin.deleteItem('demo', 'orders', ids[Math.floor((k * ids.length) / DELETES)]!);
    await emu.admin.clearRequests();

    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 200);
    const started = performance.now();
    const r = await reconcileList({ db, client, config, logger }, config.lists[0]!);
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    if (r.status !== 'succeeded' || r.deleted !== DELETES)
      throw new Error(`reconcile ${r.status}: ${r.message ?? ''} (deleted ${r.deleted}, expected ${DELETES})`);
    const stats = await emu.admin.stats();
    const idsPerSecond = r.seen / seconds;
    // Projection: the sweep is paced by the request budget, so 1M IDs take this run's time plus the
    // extra pages at the steady interval between requests measured here (everything after the sweep
    // depends on the number of deletes, not on the list's size). The linear one scales everything.
    const log = (await emu.admin.requests()).filter((e) => e.route.includes('query'));
    const steady = log.slice(10);
    const intervalS =
      steady.length > 1
        ? (steady[steady.length - 1]!.startedAt - steady[0]!.startedAt) / 1000 / (steady.length - 1)
        : seconds / r.counters.pages;
    const extraPages = Math.ceil(TARGET_IDS / 1000) - r.counters.pages;
    const projected = seconds + extraPages * intervalS;
    const linear = (seconds * TARGET_IDS) / ITEMS;
    return {
      ids: r.seen,
      pages: r.counters.pages,
      requests: r.counters.requests,
      retries: r.counters.retries,
      'rate-limit rejections (429)': stats.rateLimited,
      'max requests in any second': stats.maxPerSlidingSecond,
      seconds: Math.round(seconds * 100) / 100,
      'sweep s': r.timingsMs.sweep / 1000,
      'candidates s (snapshot left after the sweep)': r.timingsMs.candidates / 1000,
      'confirm s (In lookups)': r.timingsMs.confirm / 1000,
      'mark s (one statement)': r.timingsMs.mark / 1000,
      'marked deleted': r.deleted,
      'IDs/s': Math.round(idsPerSecond),
      'steady request interval ms': Math.round(intervalS * 10000) / 10,
      'projected s for 1,000,000 IDs': Math.round(projected * 10) / 10,
      'projected s, all linear (pessimistic)': Math.round(linear * 10) / 10,
      'bar (s)': 110,
      verdict: projected <= 110 ? 'PASS' : 'FAIL',
      'RSS growth MB': Math.round((rssPeak - rssBefore) / 1e5) / 10,
    };
  } finally {
    await client.close();
    await fillClient.close();
    await emu.close();
    await fill.close();
    await db.destroy();
    await admin(server, `drop database if exists "${name}" with (force)`);
  }
}
