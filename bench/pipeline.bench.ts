/**
 * The whole pipeline with the account's rate limit lifted: fetch, parse,
 * convert and write a full load of typed columns into PostgreSQL, from the
 * first request to the last commit. Quality bar: three times the account's
 * ceiling (30,000 items/s), so listsync is never what holds a sync back.
 *
 * Also prints what it costs: CPU seconds per 1,000,000 items of listsync
 * (process.cpuUsage) and of PostgreSQL (the server processes' own CPU time
 * from /proc, when the server runs on this machine), and of the emulator,
 * which runs in a child process. A first load warms up and is not counted;
 * the figures are the mean of two loads with the default settings, measured
 * between two with one page writer, which show what the default of two gains
 * in the same run. Where the time goes: how busy listsync's
 * main thread was (event-loop utilization) and how many of the machine's
 * cores the three processes used together.
 *
 *   BENCH_PIPELINE_ITEMS=200000 npm run bench pipeline
 */
import { readdirSync, readFileSync } from 'node:fs';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { type GcFigures, watchGc } from './gc-watch.js';
import { benchClient, benchConfig, benchDatabase, emulatorProcess } from './support.js';

export default async function run(): Promise<Record<string, string | number>> {
  const items = Number(process.env.BENCH_PIPELINE_ITEMS ?? 200_000);
  const emu = await emulatorProcess(['--items', String(items), '--no-rate-limit']);
  try {
    // A first load warms up (compiled code, caches) and is not counted. Then one page writer
    // (database.pageWriters: 1) and the default in the order one, default, default, one, so that
    // neither gains from coming later (more WAL behind it, a bigger heap).
    await measure(emu, items);
    const [a1, m1, m2, a2] = [
      await measure(emu, items, { pageWriters: 1 }),
      await measure(emu, items),
      await measure(emu, items),
      await measure(emu, items, { pageWriters: 1 }),
    ];
    const m = mean(m1, m2);
    const one = mean(a1, a2);
    const perMillion = (s: number | undefined): number | string =>
      s === undefined ? 'n/a (server not on this machine)' : Math.round((s * 1_000_000 * 10) / items) / 10;
    return {
      items,
      'rows written': m.rowsWritten,
      'typed (non-text) columns': m.typedColumns,
      pages: m.pages,
      'seconds (mean of two loads)': Number(m.seconds.toFixed(2)),
      'items/s, first request to last commit': Math.round(items / m.seconds),
      'over 3x the ceiling (30,000 items/s)': Number((items / m.seconds / 30_000).toFixed(3)),
      'listsync CPU s per 1M items': perMillion(m.cpu.listsync),
      'PostgreSQL CPU s per 1M items': perMillion(m.cpu.postgres),
      'emulator CPU s per 1M items': perMillion(m.cpu.emulator),
      'full collections forced by the heap budget per 100k items': per100k(m.gc.forced, items),
      "the engine's own full collections per 100k items": per100k(m.gc.major, items),
      'young-generation collections per 100k items': per100k(m.gc.minor, items),
      'garbage collection pauses per 100k items, wall ms (inflated on a loaded machine)': per100k(m.gc.pauseMs, items),
      'listsync main thread busy (event-loop utilization)': Number(m.elu.toFixed(3)),
      'cores used by listsync, PostgreSQL and the emulator together': coresUsed(Object.values(m.cpu), m.seconds),
      'items/s with one page writer': Math.round(items / one.seconds),
      'default (two page writers) over one': Number((one.seconds / m.seconds).toFixed(2)),
    };
  } finally {
    await emu.stop();
  }
}

interface Measured {
  seconds: number;
  rowsWritten: number;
  pages: number;
  typedColumns: number;
  elu: number;
  gc: GcFigures;
  cpu: { listsync: number; postgres: number | undefined; emulator: number | undefined };
}

/** One full load into a fresh database: wall time from first request to last commit, and what each process spent. */
async function measure(
  emu: Awaited<ReturnType<typeof emulatorProcess>>,
  items: number,
  database: Record<string, unknown> = {},
): Promise<Measured> {
  const b = await benchDatabase('pipeline');
  try {
    const config = benchConfig(emu.baseUrl, emu.apiKey, b.url, { requestsPerSecond: 1000, maxInFlight: 4 }, {}, database);
    const client = benchClient(config, b.db);
    const pgBefore = postgresCpuSeconds();
    const emuBefore = processCpuSeconds(emu.child.pid);
    const cpuBefore = process.cpuUsage();
    const eluBefore = performance.eventLoopUtilization();
    const gcWatch = watchGc();
    const started = performance.now();
    const r = await pullList({ db: b.db, client, config, logger: silentLogger() }, config.lists[0]!);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const elu = performance.eventLoopUtilization(eluBefore);
    const gc = gcWatch.stop();
    const pgCpu = pgBefore === undefined ? undefined : (postgresCpuSeconds() ?? pgBefore) - pgBefore;
    const emuCpu = emuBefore === undefined ? undefined : (processCpuSeconds(emu.child.pid) ?? emuBefore) - emuBefore;
    await client.close();
    if (r.counters.rows_inserted !== items) throw new Error(`expected ${items} rows written, the pull wrote ${r.counters.rows_inserted}`);
    const columns = (await b.db.raw(
      `select count(*)::int as n from information_schema.columns where table_schema = 'mirror' and table_name = 'orders' and data_type <> 'text'`,
    )) as { rows: { n: number }[] };
    return {
      seconds,
      rowsWritten: r.counters.rows_inserted,
      pages: r.counters.pages,
      typedColumns: columns.rows[0]!.n,
      elu: elu.utilization,
      gc,
      cpu: { listsync: (cpu.user + cpu.system) / 1e6, postgres: pgCpu, emulator: emuCpu },
    };
  } finally {
    await b.drop();
  }
}

/** Two measurements as one: seconds and CPU averaged. */
function mean(x: Measured, y: Measured): Measured {
  const avg = (p: number | undefined, q: number | undefined): number | undefined =>
    p === undefined || q === undefined ? undefined : (p + q) / 2;
  return {
    ...x,
    seconds: (x.seconds + y.seconds) / 2,
    elu: (x.elu + y.elu) / 2,
    gc: {
      forced: (x.gc.forced + y.gc.forced) / 2,
      major: (x.gc.major + y.gc.major) / 2,
      minor: (x.gc.minor + y.gc.minor) / 2,
      pauseMs: (x.gc.pauseMs + y.gc.pauseMs) / 2,
    },
    cpu: {
      listsync: (x.cpu.listsync + y.cpu.listsync) / 2,
      postgres: avg(x.cpu.postgres, y.cpu.postgres),
      emulator: avg(x.cpu.emulator, y.cpu.emulator),
    },
  };
}

/** A count or a time for the whole load, per 100,000 items, one decimal. */
function per100k(n: number, items: number): number {
  return Math.round((n * 100_000 * 10) / items) / 10;
}

/** CPU seconds of every process over the wall time; 'n/a' when one of them could not be measured. */
function coresUsed(cpuSeconds: (number | undefined)[], wallSeconds: number): number | string {
  if (cpuSeconds.some((s) => s === undefined)) return 'n/a (a process could not be measured)';
  const total = cpuSeconds.reduce<number>((sum, s) => sum + s!, 0);
  return Number((total / wallSeconds).toFixed(2));
}

const TICKS_PER_SECOND = 100;

/** utime + stime of a process, in seconds (Linux /proc); undefined where /proc is not there. */
function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** CPU seconds of every `postgres` process on this machine (backends come and go; the pool keeps ours open). */
function postgresCpuSeconds(): number | undefined {
  let total = 0;
  let found = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('postgres')) continue;
    } catch {
      continue;
    }
    const s = processCpuSeconds(Number(entry));
    if (s === undefined) continue;
    total += s;
    found = true;
  }
  return found ? total : undefined;
}
