/**
 * Pull throughput against the account ceiling: the emulator at 200 ms latency
 * with the real limit (10 requests/s), 1000-item pages, a full load into
 * Postgres, timed from the first request (as the emulator logged it) to the
 * run's end, its last commit included (product.md's bar). Quality bar: >= 9,500 items/s sustained, zero 429s. Two figures:
 * the whole run (fields, title, two probes and the 200 ms answers at both
 * ends included: 104 requests for 100 pages) and the sustained rate between
 * the first and the last page's commit.
 *
 * The platform does not say how it keeps its limit, so the same full load
 * runs against each form the emulator offers (`--rate-model`): a strict
 * sliding second (the default figures), a token bucket and a fixed window,
 * each request counted when its handler runs, after the latency and a delay
 * that varies by up to 20 % of it (200-240 ms after arrival: `--rate-jitter
 * 40`), its answer's timing not showing when (`--rate-count-at hidden`, the
 * strictest form); then each again with a child process
 * keeping one core busy (a CPU hog). Any 429 is a failure of its run
 * ('runs with a 429'). Last, the sliding run with the emulator told to
 * answer one 429 at the 20th request: what that 429 cost the whole run.
 *
 * Figures depend on the machine being otherwise idle: the limiter spaces
 * sends by wall time. BENCH_PULL_MODELS (e.g. `sliding,bucket`) and
 * BENCH_PULL_HOG=0 / BENCH_PULL_ONE_429=0 run fewer variants; BENCH_PULL_RUNS=5
 * runs each five times, each on a fresh account (the slowest run's figures). IDs come as bare
 * JSON numbers (the stricter encoding; BENCH_PULL_IDS=strings for quoted ones).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { benchClient, benchConfig, benchDatabase, emulatorProcess } from './support.js';

type Model = 'sliding' | 'bucket' | 'fixed';
type Figures = Record<string, number>;

const LATENCY_MS = 200;
/** The handler delay varies by up to 20 % of the latency. */
const JITTER_MS = LATENCY_MS / 5;
const RATIO = 'items/s over the ceiling (10 req/s x 1000)';
const SUSTAINED = 'sustained items/s over the ceiling (page 1 to last page committed)';
const R429 = '429s (emulator)';
const SECONDS = 'seconds (full load, 200 ms latency)';
const MAX_SLIDING = 'max requests in a sliding second (emulator)';

export default async function run(): Promise<Record<string, string | number>> {
  const models = (process.env.BENCH_PULL_MODELS ?? 'sliding,bucket,fixed').split(',').map((m) => m.trim()) as Model[];
  const withHog = process.env.BENCH_PULL_HOG !== '0';
  const one429 = process.env.BENCH_PULL_ONE_429 !== '0';
  const runs = Math.max(1, Number(process.env.BENCH_PULL_RUNS ?? 1));
  const out: Record<string, string | number> = {};
  let failedRuns = 0;
  const count = (f: Figures): Figures => {
    if (f[R429]! > 0) failedRuns++;
    return f;
  };
  const plain: Partial<Record<Model, Figures>> = {};
  for (const model of models) {
    const idle = await repeated(runs, { model, hog: false }, count, out);
    plain[model] = idle;
    if (model === 'sliding') Object.assign(out, idle);
    else {
      out[`${RATIO}, ${model}`] = idle[RATIO]!;
      out[`${R429}, ${model}`] = idle[R429]!;
    }
  }
  if (withHog) {
    for (const model of models) {
      const hog = await repeated(runs, { model, hog: true }, count, out);
      const tag = model === 'sliding' ? '' : `, ${model}`;
      out[`items/s over the ceiling, one core busy (CPU hog)${tag}`] = hog[RATIO]!;
      out[`429s, one core busy (emulator)${tag}`] = hog[R429]!;
      if (model === 'sliding') {
        out['sustained over the ceiling, one core busy (CPU hog)'] = hog[SUSTAINED]!;
        out['max requests in a sliding second, one core busy (emulator)'] = hog[MAX_SLIDING]!;
      }
    }
  }
  out['runs with a 429 (each a failure)'] = failedRuns;
  const base = plain.sliding;
  if (one429 && base) {
    const hit = await measure({ model: 'sliding', hog: false, rateLimitAtRequest: 20 });
    out['seconds, one 429 answered at the 20th request'] = hit[SECONDS]!;
    out['429s with one answered at the 20th request (emulator)'] = hit[R429]!;
    out['s lost to one 429 at the 20th request (against the sliding run)'] = Number((hit[SECONDS]! - base[SECONDS]!).toFixed(2));
  }
  return out;
}

/**
 * `runs` fresh-account runs of one variant (a new emulator and database each): the figures of the
 * slowest, its 429s the total of all, and every run's ratio and 429s listed when there is more than one.
 */
async function repeated(runs: number, v: Variant, count: (f: Figures) => Figures, out: Record<string, string | number>): Promise<Figures> {
  const all: Figures[] = [];
  for (let i = 0; i < runs; i++) all.push(count(await measure(v)));
  const slowest = all.reduce((a, b) => (b[RATIO]! < a[RATIO]! ? b : a));
  if (runs > 1) {
    const tag = `${v.model}${v.hog ? ', one core busy (CPU hog)' : ''}`;
    out[`each run: items/s over the ceiling, ${tag}`] = all.map((f) => f[RATIO]!.toFixed(3)).join(' ');
    out[`each run: 429s, ${tag}`] = all.map((f) => String(f[R429])).join(' ');
  }
  return { ...slowest, [R429]: all.reduce((n, f) => n + f[R429]!, 0) };
}

/** A child process that keeps one core busy until killed. */
function cpuHog(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

interface Variant {
  model: Model;
  hog: boolean;
  /** The emulator answers this request (1 = the first) with a 429, once. */
  rateLimitAtRequest?: number;
}

async function measure(v: Variant): Promise<Figures> {
  const items = 100_000;
  // The emulator runs in a child process: in-process, its page building would share our event loop.
  const emu = await emulatorProcess([
    '--items',
    String(items),
    '--latency',
    String(LATENCY_MS),
    '--rate-model',
    v.model,
    '--rate-jitter',
    String(JITTER_MS),
    // Counted when the handler runs, 200-240 ms after arrival, the answer's timing not showing when.
    '--rate-count-at',
    'hidden',
    // IDs as bare JSON numbers, the stricter encoding (parsed losslessly); BENCH_PULL_IDS=strings for quoted ones.
    ...(process.env.BENCH_PULL_IDS === 'strings' ? [] : ['--ids-as-numbers']),
  ]);
  const admin = emu.admin;
  if (v.rateLimitAtRequest !== undefined) await admin.setFaults({ rateLimitAtRequest: v.rateLimitAtRequest });
  const b = await benchDatabase('pull');
  const hog = v.hog ? cpuHog() : null;
  try {
    const config = benchConfig(emu.baseUrl, emu.apiKey, b.url);
    const client = benchClient(config, b.db);
    const started = performance.now();
    const commits: number[] = [];
    const r = await pullList(
      // As `listsync pull --list orders` runs it: one list, its start probes asked with its first page.
      { db: b.db, client, config, logger: silentLogger(), onPage: () => commits.push(performance.now()), startProbesEarly: true },
      config.lists[0]!,
    );
    const ended = performance.timeOrigin + performance.now();
    const stats = await admin.stats();
    // From the first request (as the emulator received it) to the run's end, its last commit included (product.md).
    const firstRequest = Math.min(...(await admin.requests()).map((e) => e.startedAt));
    const seconds = (ended - Math.max(firstRequest, performance.timeOrigin + started)) / 1000;
    await client.close();
    const pageRequests = r.counters.pages;
    return {
      'items pulled': r.counters.rows_inserted,
      [SECONDS]: Number(seconds.toFixed(2)),
      'items/s': Math.round(items / seconds),
      [RATIO]: Number((items / seconds / 10_000).toFixed(3)),
      // The steady state: the items of pages 2..100 over the time from page 1's commit to page 100's.
      [SUSTAINED]: Number(
        (((commits.length - 1) * config.lists[0]!.pageSize) / ((commits.at(-1)! - commits[0]!) / 1000) / 10_000).toFixed(3),
      ),
      'requests sent': r.counters.requests,
      'achieved requests/s over the limit': Number((r.counters.requests / seconds / config.platform.requestsPerSecond).toFixed(3)),
      'page requests': pageRequests,
      [R429]: stats.rateLimited,
      [MAX_SLIDING]: stats.maxPerSlidingSecond,
      'max in flight (emulator)': stats.maxInFlight,
    };
  } finally {
    hog?.kill('SIGKILL');
    await emu.stop();
    await b.drop();
  }
}
