/**
 * The busy list: 30,000 items, about 20,000 of them touched by a nightly job
 * (33,000 random edits over the two hours before now), a full load, then 50
 * edits and the steady-state pull. Prints the query requests of each pull.
 * Bar: the steady-state pull sends at most 2 query requests.
 *
 * The emulator runs at its default rate limit (10 requests/s). Database:
 * BENCH_DATABASE_URL, else DATABASE_URL, else the local server; a database
 * of its own is created and dropped.
 */
import { performance } from 'node:perf_hooks';
import { parseConfig } from '../src/config.js';
import { SAMPLE_FIELDS, startEmulator } from '../src/emulator/index.js';
import { createLogger } from '../src/logger.js';
import { PlatformClient } from '../src/platform/client.js';
import { pullList } from '../src/sync/pull.js';
import { runNightlyJob } from '../test/helpers/busy-list.js';
import { benchDatabase } from './support.js';

const ITEMS = 30_000;
const EDITS = 50;

export default async function incrementalBench(): Promise<Record<string, string | number>> {
  const b = await benchDatabase('incremental');
  const db = b.db;
  const logger = createLogger({ level: 'warn' });
  const emu = await startEmulator({ sample: true, items: ITEMS });
  const config = parseConfig({
    platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey },
    database: { url: b.url },
    lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
  });
  const client = new PlatformClient({ config: config.platform, logger });
  const deps = { db, client, config, logger };
  const list = config.lists[0]!;
  const queries = async () => (await emu.admin.requests()).filter((e) => e.path.endsWith('/items/query')).length;
  try {
    await runNightlyJob(emu.admin, { appID: 'demo', listID: 'orders', edits: 33_000, hours: 2 });
    // The emulator's zone is UTC: Modified is UTC wall time. Counted over the job's three hours, not "today",
    // which at 00:30 holds none of them (the old date-granular cursor re-read them all the same: it read from yesterday).
    const since = new Date(Date.now() - 3 * 3600_000).toISOString().replace('T', ' ').slice(0, 19);
    const touched = (await emu.admin.exportList('demo', 'orders')).items.filter((it) => String(it.Modified) >= since).length;

    await emu.admin.clearRequests();
    let t = performance.now();
    const full = await pullList(deps, list);
    const fullS = (performance.now() - t) / 1000;
    const fullQueries = await queries();

    const items = (await emu.admin.exportList('demo', 'orders')).items;
    for (let i = 0; i < EDITS; i++)
      await emu.admin.editItem('demo', 'orders', String(items[(i * 601) % items.length]!.ListDataID), {
        Data: { [SAMPLE_FIELDS.customer]: `bench edit ${i}` },
      });
    await emu.admin.clearRequests();
    t = performance.now();
    const steady = await pullList(deps, list);
    const steadyS = (performance.now() - t) / 1000;
    const steadyQueries = await queries();
    if (steady.counters.rows_updated !== EDITS)
      throw new Error(`the steady-state pull updated ${steady.counters.rows_updated} rows, expected ${EDITS}`);
    if (steadyQueries > 2) throw new Error(`the steady-state pull sent ${steadyQueries} query requests; the bar is 2`);
    return {
      items: ITEMS,
      'touched by the nightly job (last 3 hours)': touched,
      'full load: query requests': fullQueries,
      'full load: rows': full.counters.rows_inserted,
      'full load: s': Math.round(fullS * 10) / 10,
      'query requests of the steady-state pull (50 edits)': steadyQueries,
      'steady-state pull: rows updated': steady.counters.rows_updated,
      'steady-state pull: read order': steady.order,
      'steady-state pull: s': Math.round(steadyS * 100) / 100,
    };
  } finally {
    await client.close();
    await emu.close();
    await b.drop();
  }
}
