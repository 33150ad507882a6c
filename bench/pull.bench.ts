/**
 * Pull throughput against the account ceiling: the emulator at 200 ms latency
 * with the real limit (10 requests/s), 1000-item pages, a full load into
 * Postgres. Quality bar: >= 9,500 items/s sustained, zero 429s. Two figures:
 * the whole run (fields, title, two probes and the 200 ms answers at both
 * ends included: 104 requests for 100 pages) and the sustained rate between
 * the first and the last page's commit. Figures depend on the machine being
 * otherwise idle: the limiter spaces sends by wall time. The same full load
 * runs again with a child process keeping one core busy (a CPU hog), and
 * its figures are printed beside the first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EmulatorAdminClient } from '../src/emulator/index.js';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { benchClient, benchConfig, benchDatabase, emulatorProcess } from './support.js';

export default async function run(): Promise<Record<string, string | number>> {
  // Side by side in one run: the machine idle (as far as this bench is concerned), then with one core kept busy.
  const idle = await measure(false);
  const hog = await measure(true);
  return {
    ...idle,
    'items/s over the ceiling, one core busy (CPU hog)': hog['items/s over the ceiling (10 req/s x 1000)']!,
    'sustained over the ceiling, one core busy (CPU hog)': hog['sustained items/s over the ceiling (page 1 to last page committed)']!,
    '429s, one core busy (emulator)': hog['429s (emulator)']!,
    'max requests in a sliding second, one core busy (emulator)': hog['max requests in a sliding second (emulator)']!,
  };
}

/** A child process that keeps one core busy until killed. */
function cpuHog(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

async function measure(withHog: boolean): Promise<Record<string, number>> {
  const items = 100_000;
  // The emulator runs in a child process: in-process, its page building would share our event loop.
  const emu = await emulatorProcess(['--items', String(items), '--latency', '200']);
  const admin = new EmulatorAdminClient(emu.adminUrl.replace(/\/_admin$/, ''));
  const b = await benchDatabase('pull');
  const hog = withHog ? cpuHog() : null;
  try {
    const config = benchConfig(emu.baseUrl, emu.apiKey, b.url);
    const client = benchClient(config, b.db);
    const started = performance.now();
    const commits: number[] = [];
    const r = await pullList(
      { db: b.db, client, config, logger: silentLogger(), onPage: () => commits.push(performance.now()) },
      config.lists[0]!,
    );
    const seconds = (performance.now() - started) / 1000;
    const stats = await admin.stats();
    await client.close();
    const pageRequests = r.counters.pages;
    return {
      'items pulled': r.counters.rows_inserted,
      'seconds (full load, 200 ms latency)': Number(seconds.toFixed(2)),
      'items/s': Math.round(items / seconds),
      'items/s over the ceiling (10 req/s x 1000)': Number((items / seconds / 10_000).toFixed(3)),
      // The steady state: the items of pages 2..100 over the time from page 1's commit to page 100's.
      'sustained items/s over the ceiling (page 1 to last page committed)': Number(
        (((commits.length - 1) * config.lists[0]!.pageSize) / ((commits.at(-1)! - commits[0]!) / 1000) / 10_000).toFixed(3),
      ),
      'requests sent': r.counters.requests,
      'achieved requests/s over the limit': Number((r.counters.requests / seconds / config.platform.requestsPerSecond).toFixed(3)),
      'page requests': pageRequests,
      '429s (emulator)': stats.rateLimited,
      'max requests in a sliding second (emulator)': stats.maxPerSlidingSecond,
      'max in flight (emulator)': stats.maxInFlight,
    };
  } finally {
    hog?.kill('SIGKILL');
    await emu.stop();
    await b.drop();
  }
}
