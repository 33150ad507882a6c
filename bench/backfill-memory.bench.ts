/**
 * Memory stays flat: a 1,000,000-item backfill into Postgres, with the
 * emulator in a child process (its memory is not ours) serving IDs as bare
 * 19-digit JSON numbers at up to 500 requests/s with 2 ms latency, as the
 * real platform was seen to. Quality bar: peak RSS at most 250 MB, whatever
 * the ratio of source speed to database speed, so two cases run, each in a
 * process of its own (a process's peak RSS is its own):
 *
 * - `fast database`: the database as it is; the source is still faster;
 * - `slow database`: a statement trigger on the mirror table sleeps
 *   (`pg_sleep`) before every statement that writes it, so pages wait for
 *   the database far longer than they take to fetch.
 *
 * The memory held by a pull is bounded by design (pages fetched ahead:
 * platform.maxInFlight and platform.maxBytesAhead; pages parsed and waiting:
 * the same pages; rows waiting for the database: database.pageWriters
 * pages), so the two peaks should be about the same.
 *
 * BENCH_BACKFILL_ITEMS sets a smaller list; BENCH_BACKFILL_SLEEP_MS the
 * slow case's sleep per statement (default 50).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { benchClient, benchConfig, benchDatabase, emulatorProcess, mb } from './support.js';

type Figures = Record<string, string | number>;
const CASES = ['fast database', 'slow database'] as const;
type Case = (typeof CASES)[number];

export default async function run(): Promise<Figures> {
  const out: Figures = {};
  const peaks: number[] = [];
  for (const which of CASES) {
    const figures = await inChild(which);
    for (const [k, v] of Object.entries(figures)) out[`${which}: ${k}`] = v;
    peaks.push(Number(figures['peak RSS, process maxRSS (MB)']));
  }
  out['peak RSS, process maxRSS (MB)'] = Math.max(...peaks);
  out['slow / fast peak'] = Math.round((peaks[1]! / peaks[0]!) * 100) / 100;
  return out;
}

/** One case in a fresh process: `tsx bench/backfill-memory.bench.ts <case>` prints its figures as JSON. */
function inChild(which: Case): Promise<Figures> {
  const self = fileURLToPath(import.meta.url);
  const tsx = fileURLToPath(new URL('../node_modules/tsx/dist/cli.mjs', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsx, self, which], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.once('exit', (code) => {
      const line = text.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`backfill-memory case "${which}" exited with ${code}: ${text}`));
      try {
        resolve(JSON.parse(line) as Figures);
      } catch (err) {
        reject(new Error(`backfill-memory case "${which}" printed no figures: ${text}`, { cause: err }));
      }
    });
  });
}

async function runCase(which: Case): Promise<Figures> {
  const items = Number(process.env.BENCH_BACKFILL_ITEMS ?? 1_000_000);
  const sleepMs = Number(process.env.BENCH_BACKFILL_SLEEP_MS ?? 50);
  const emu = await emulatorProcess(['--items', String(items), '--ids-as-numbers', '--rate-limit', '500', '--latency', '2']);
  const b = await benchDatabase(`backfill_${which.split(' ')[0]}`);
  try {
    const config = benchConfig(emu.baseUrl, emu.apiKey, b.url, { requestsPerSecond: 500 });
    const client = benchClient(config, b.db);
    const list = config.lists[0]!;
    const deps = { db: b.db, client, config, logger: silentLogger() };
    if (which === 'slow database') {
      // The table exists after a backfill of a range with no items; then every write statement sleeps.
      await pullList(deps, list, { kind: 'backfill', from: '2100-01-01' });
      await b.db.raw(`create function mirror.bench_slow() returns trigger language plpgsql as $$
        begin perform pg_sleep(${sleepMs / 1000}); return null; end $$`);
      await b.db.raw(
        'create trigger bench_slow before insert or update on mirror.orders for each statement execute function mirror.bench_slow()',
      );
    }
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    let atPeak = process.memoryUsage();
    const sample = (): void => {
      const m = process.memoryUsage();
      if (m.rss > peak) [peak, atPeak] = [m.rss, m];
    };
    const timer = setInterval(sample, 50);
    const started = performance.now();
    const r = await pullList({ ...deps, onPage: sample }, list, { kind: 'backfill', from: '2000-01-01' });
    const seconds = (performance.now() - started) / 1000;
    clearInterval(timer);
    const stats = client.stats();
    await client.close();
    const rows = (await b.db('mirror.orders').count('* as n').first()) as { n: number };
    if (Number(rows.n) !== items) throw new Error(`${which}: the mirror holds ${rows.n} rows, expected ${items}`);
    return {
      items,
      'rows in the mirror': Number(rows.n),
      pages: r.counters.pages,
      requests: stats.requests,
      seconds: Number(seconds.toFixed(1)),
      'items/s end to end': Math.round(items / seconds),
      ...(which === 'slow database' ? { 'sleep per write statement (ms)': sleepMs } : {}),
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const which = process.argv[2] as Case;
  if (!CASES.includes(which)) {
    console.error(`usage: backfill-memory.bench.ts "${CASES.join('" | "')}"`);
    process.exit(2);
  }
  runCase(which).then(
    (figures) => {
      console.log(JSON.stringify(figures));
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
