/**
 * Memory stays flat: a 1,000,000-item backfill into Postgres, with the
 * emulator in a child process (its memory is not ours). Quality bar: peak RSS
 * under 300 MB. The emulator's rate limit is off here and the client's raised,
 * so the run measures memory and end-to-end write speed, not the API ceiling.
 */
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { benchClient, benchConfig, benchDatabase, emulatorProcess, mb } from './support.js';

export default async function run(): Promise<Record<string, string | number>> {
  const items = Number(process.env.BENCH_BACKFILL_ITEMS ?? 1_000_000);
  const emu = await emulatorProcess(['--items', String(items), '--no-rate-limit']);
  const b = await benchDatabase('backfill');
  try {
    const config = benchConfig(emu.baseUrl, emu.apiKey, b.url, { requestsPerSecond: 1000, maxInFlight: 4 });
    const client = benchClient(config, b.db);
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    let atPeak = process.memoryUsage();
    const sample = (): void => {
      const m = process.memoryUsage();
      if (m.rss > peak) [peak, atPeak] = [m.rss, m];
    };
    const timer = setInterval(sample, 50);
    const started = performance.now();
    const r = await pullList({ db: b.db, client, config, logger: silentLogger(), onPage: sample }, config.lists[0]!, {
      kind: 'backfill',
      from: '2000-01-01',
    });
    const seconds = (performance.now() - started) / 1000;
    clearInterval(timer);
    await client.close();
    const rows = (await b.db('mirror.orders').count('* as n').first()) as { n: number };
    return {
      items,
      'rows in the mirror': Number(rows.n),
      pages: r.counters.pages,
      seconds: Number(seconds.toFixed(1)),
      'items/s end to end (no API limit)': Math.round(items / seconds),
      'RSS before (MB)': mb(rssBefore),
      'peak RSS, sampled (MB)': mb(peak),
      'at the peak: JS heap total / used (MB)': `${mb(atPeak.heapTotal)} / ${mb(atPeak.heapUsed)}`,
      'at the peak: external / array buffers (MB)': `${mb(atPeak.external)} / ${mb(atPeak.arrayBuffers)}`,
      'peak RSS, process maxRSS (MB)': Math.round(process.resourceUsage().maxRSS / 1024),
    };
  } finally {
    await emu.stop();
    await b.drop();
  }
}
