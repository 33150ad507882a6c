/**
 * Reconcile of a 1,000,000-item list (Created dates over three years) against
 * the emulator at its default rate limit (burst 10, 10 requests/s; 0 ms
 * latency), three ways, in this order on one mirror:
 *
 * 1. by counts, nothing deleted: bar ≤ 5 requests;
 * 2. by counts, 10 items deleted scattered over the list: bar ≤ 150
 *    requests, and every delete marked;
 * 3. the full sweep (`--full`), 100 more deletes: bar 1M IDs in at most
 *    110 s (1000 pages at 10/s is about 100 s), every delete marked.
 *
 * The mirror is filled first by a pull from a twin emulator (same seed and
 * reference date, so the same items) without a rate limit, so that only the
 * reconciles run against the limited one. Both emulators run in child
 * processes. BENCH_RECONCILE_ITEMS sets a smaller list; the full sweep's time
 * is then projected to 1,000,000 IDs.
 *
 * Database: BENCH_DATABASE_URL, else DATABASE_URL, else the local server; a
 * database of its own is created and dropped.
 */
import { performance } from 'node:perf_hooks';
import { createLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { reconcileList, type ReconcileResult } from '../src/sync/reconcile.js';
import { benchClient, benchConfig, benchDatabase, emulatorProcess } from './support.js';

const ITEMS = Number(process.env.BENCH_RECONCILE_ITEMS ?? 1_000_000);
const SPAN_DAYS = 3 * 365;
const COUNT_DELETES = 10;
const FULL_DELETES = 100;
const TARGET_IDS = 1_000_000;

export default async function reconcileBench(): Promise<Record<string, string | number>> {
  const data = ['--items', String(ITEMS), '--span-days', String(SPAN_DAYS), '--reference-date', '2026-01-01'];
  const fill = await emulatorProcess([...data, '--no-rate-limit']);
  const emu = await emulatorProcess(data);
  const admin = emu.admin;
  const b = await benchDatabase('reconcile');
  const logger = createLogger({ level: 'warn' });
  const fillConfig = benchConfig(fill.baseUrl, fill.apiKey, b.url, { requestsPerSecond: 1000, maxInFlight: 8 });
  const fillClient = benchClient(fillConfig, b.db);
  const config = benchConfig(emu.baseUrl, emu.apiKey, b.url);
  const client = benchClient(config, b.db);
  const list = config.lists[0]!;
  const deps = { db: b.db, client, config, logger };
  try {
    const filled = await pullList({ db: b.db, client: fillClient, config: fillConfig, logger }, fillConfig.lists[0]!);
    if (filled.counters.rows_inserted !== ITEMS)
      throw new Error(`the fill pull inserted ${filled.counters.rows_inserted} rows, expected ${ITEMS}`);

    /** IDs at evenly spread positions of the list, `offset` of the step into each. */
    const spread = async (n: number, offset: number): Promise<string[]> =>
      (
        (await b.db.raw(
          `select id from (select id, row_number() over (order by id) - 1 as i from mirror.orders) x
            where i % ? = ? order by id limit ?`,
          [Math.floor(ITEMS / n), offset, n],
        )) as { rows: { id: string }[] }
      ).rows.map((r) => r.id);
    const measure = async (full: boolean) => {
      await admin.clearRequests();
      const started = performance.now();
      const r = await reconcileList(deps, list, { full });
      const seconds = (performance.now() - started) / 1000;
      const stats = await admin.stats();
      return { r, seconds, stats };
    };
    const expectMarked = (r: ReconcileResult, n: number, what: string): void => {
      if (r.status !== 'succeeded' || r.deleted !== n)
        throw new Error(`${what}: reconcile ${r.status}: ${r.message ?? ''} (deleted ${r.deleted}, expected ${n})`);
    };

    const quiet = await measure(false);
    expectMarked(quiet.r, 0, 'by counts, nothing deleted');

    for (const id of await spread(COUNT_DELETES, 777)) await admin.deleteItem('demo', 'orders', id);
    const few = await measure(false);
    expectMarked(few.r, COUNT_DELETES, `by counts, ${COUNT_DELETES} deleted`);

    for (const id of await spread(FULL_DELETES, 333)) await admin.deleteItem('demo', 'orders', id);
    const full = await measure(true);
    expectMarked(full.r, FULL_DELETES, `full sweep, ${FULL_DELETES} more deleted`);
    // Projection: the sweep is paced by the request budget, so 1M IDs take this run's time plus the
    // extra pages at the steady interval between requests measured here (everything after the sweep
    // depends on the number of deletes, not on the list's size).
    const log = (await admin.requests()).filter((e) => e.route.includes('query'));
    const steady = log.slice(10);
    const intervalS =
      steady.length > 1
        ? (steady[steady.length - 1]!.startedAt - steady[0]!.startedAt) / 1000 / (steady.length - 1)
        : full.seconds / full.r.counters.pages;
    const projected = full.seconds + Math.max(0, Math.ceil(TARGET_IDS / 1000) - full.r.counters.pages) * intervalS;
    return {
      items: ITEMS,
      'Created span (days)': SPAN_DAYS,
      'by counts, nothing deleted: requests': quiet.r.counters.requests,
      'by counts, nothing deleted: s': round(quiet.seconds),
      [`by counts, ${COUNT_DELETES} deleted: requests`]: few.r.counters.requests,
      [`by counts, ${COUNT_DELETES} deleted: count requests / ranges swept / pages`]: `${few.r.counts!.requests} / ${few.r.counts!.swept.length} / ${few.r.counters.pages}`,
      [`by counts, ${COUNT_DELETES} deleted: marked`]: few.r.deleted,
      [`by counts, ${COUNT_DELETES} deleted: s`]: round(few.seconds),
      'full sweep: requests': full.r.counters.requests,
      'full sweep: pages': full.r.counters.pages,
      'full sweep: marked': full.r.deleted,
      'full sweep: s': round(full.seconds),
      'full sweep: sweep s / candidates s / confirm s / mark s': [
        full.r.timingsMs.sweep,
        full.r.timingsMs.candidates,
        full.r.timingsMs.confirm,
        full.r.timingsMs.mark,
      ]
        .map((ms) => round(ms / 1000))
        .join(' / '),
      'rate-limit rejections (429)': quiet.stats.rateLimited + few.stats.rateLimited + full.stats.rateLimited,
      'max requests in any second (counts, nothing deleted / 10 deleted / full)': [quiet, few, full]
        .map((m) => m.stats.maxPerSlidingSecond)
        .join(' / '),
      'steady request interval ms': Math.round(intervalS * 10000) / 10,
      'projected s for 1,000,000 IDs': round(projected),
    };
  } finally {
    await client.close();
    await fillClient.close();
    await emu.stop();
    await fill.stop();
    await b.drop();
  }
}

const round = (x: number): number => Math.round(x * 100) / 100;
