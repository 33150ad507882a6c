/**
 * Many small lists: 100 lists of 200 items in one application, a first
 * `listsync pull` of all of them (the CLI's runPulls: lists overlapped, the
 * titles one listing per application), then an idle pull, then an idle pull
 * whose kept field metadata has aged out (`lists[].fieldsMaxAgeMinutes`, as
 * after that many minutes). Prints requests per list and requests/s over each
 * whole run (the emulator's request log), and what an idle list costs a cycle
 * when pulled every minute (the metadata asked again once per age).
 * Bars (issues 31, 39): first pull ≤ 2.5 requests per list and ≥ 8 requests/s;
 * idle pull ≤ 1.1 requests per list, also a cycle with the metadata's age.
 *
 * The emulator runs at its default rate limit (10 requests/s), the client at
 * its defaults. Database: BENCH_DATABASE_URL, else DATABASE_URL, else the
 * local server; a database of its own is created and dropped.
 */
import { performance } from 'node:perf_hooks';
import { fieldsMaxAgeMs, parseConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { createClient } from '../src/context.js';
import { startEmulator } from '../src/emulator/index.js';
import { createLogger } from '../src/logger.js';
import { runPulls } from '../src/commands/pull-command.js';
import { fleetConfigLists, fleetSeed } from '../test/helpers/many-lists.js';
import { benchDatabase } from './support.js';

const LISTS = 100;
const ITEMS = 200;

export default async function manyListsPullBench(): Promise<Record<string, string | number>> {
  const b = await benchDatabase('manylists');
  const logger = createLogger({ level: 'warn' });
  const emu = await startEmulator({ sample: false, seed: fleetSeed(LISTS, ITEMS) });
  const config = parseConfig({
    platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey },
    database: { url: b.url },
    lists: fleetConfigLists(LISTS),
  });
  const client = createClient(config, logger, b.db);
  const failures: string[] = [];
  const ctx: AppContext = {
    config,
    logger,
    db: b.db,
    client,
    clientFor: () => client,
    io: { out: () => undefined, err: (t) => void failures.push(t), isTTY: false },
    close: async () => undefined,
  };
  const lists = config.lists;
  const run = async () => {
    await emu.admin.clearRequests();
    const t = performance.now();
    const code = await runPulls(ctx, lists, { kind: 'incremental' }, { wait: false });
    const seconds = (performance.now() - t) / 1000;
    if (code !== 0) throw new Error(`pull exited ${code}: ${failures.slice(0, 3).join('; ')}`);
    const log = await emu.admin.requests();
    const first = Math.min(...log.map((e) => e.startedAt));
    const last = Math.max(...log.map((e) => e.finishedAt ?? e.startedAt));
    return { seconds, requests: log.length, perList: log.length / lists.length, rate: log.length / seconds, span: (last - first) / 1000 };
  };
  try {
    const first = await run();
    const idle = await run();
    // As the kept metadata ages out: every list asks /fields once more.
    await b.db('listsync.lists').update({ field_meta_at: b.db.raw(`now() - interval '1 day'`) });
    const aged = await run();
    const ageMinutes = fieldsMaxAgeMs(lists[0]!) / 60_000;
    const perMinute = ageMinutes >= 1 ? ((ageMinutes - 1) * idle.perList + aged.perList) / ageMinutes : aged.perList;
    return {
      lists: LISTS,
      'items per list': ITEMS,
      'first pull: requests': first.requests,
      'first pull: requests per list': first.perList,
      'first pull: seconds': first.seconds,
      'first pull: requests/s over the whole run': first.rate,
      'idle pull: requests': idle.requests,
      'idle pull: requests per list': idle.perList,
      'idle pull: seconds': idle.seconds,
      'idle pull: requests/s over the whole run': idle.rate,
      'idle pull, metadata aged out: requests per list': aged.perList,
      'field metadata kept (minutes)': ageMinutes,
      'idle list pulled every minute: requests per list a cycle': Math.round(perMinute * 1000) / 1000,
    };
  } finally {
    await client.close();
    await emu.close();
    await b.drop();
  }
}
