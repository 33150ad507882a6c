/**
 * Push rate when nothing else runs: 300 single-field edits made with SQL, sent
 * as version-checked PATCHes under the real limit (10 requests/s) at 50 ms
 * latency. Quality bar: >= 9.5 PATCH/s (0.95 of the ceiling).
 */
import { startEmulator } from '../src/emulator/index.js';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { pushList } from '../src/sync/push.js';
import { benchClient, benchConfig, benchDatabase } from './support.js';

export default async function run(): Promise<Record<string, string | number>> {
  const changes = 300;
  const emu = await startEmulator({ port: 0, sample: true, items: 2000, faults: { latencyMs: 50 } });
  const b = await benchDatabase('push');
  try {
    const config = benchConfig(emu.baseUrl, emu.apiKey, b.url);
    const client = benchClient(config, b.db);
    const deps = { db: b.db, client, config, logger: silentLogger() };
    await pullList(deps, config.lists[0]!);
    await b.db.raw(
      `update mirror.orders set notes = 'bench ' || id where id in (select id from mirror.orders order by id limit ${changes})`,
    );
    await emu.admin.clearRequests();
    const started = performance.now();
    const r = await pushList(deps, config.lists[0]!);
    const seconds = (performance.now() - started) / 1000;
    const log = await emu.admin.requests();
    const patches = log.filter((e) => e.method === 'PATCH');
    const patchSpan = (Math.max(...patches.map((p) => p.startedAt)) - Math.min(...patches.map((p) => p.startedAt))) / 1000;
    const stats = await emu.admin.stats();
    await client.close();
    return {
      'changes applied': r.applied,
      'seconds (push incl. re-read)': Number(seconds.toFixed(2)),
      'PATCH/s': Number(((patches.length - 1) / patchSpan).toFixed(2)),
      'requests (PATCH + re-read)': log.length,
      '429s (emulator)': stats.rateLimited,
      'max requests in a sliding second (emulator)': stats.maxPerSlidingSecond,
    };
  } finally {
    await emu.close();
    await b.drop();
  }
}
