/**
 * Quality bars (product brief, "Quality bars"): which figure of which
 * benchmark is held to what. `npm run bench` ends with one table of them:
 * each figure, its bar, the ratio, met or not.
 */
export interface Bar {
  /** The benchmark (file name without `.bench.ts`). */
  bench: string;
  /** The figure's key in what the benchmark returns. */
  figure: string;
  bar: number;
  better: 'higher' | 'lower';
}

/**
 * Pull: the brief's bar is the whole run of a fresh account, from the first request to the last
 * commit: ≥ 0.86 of the ceiling (≥ 0.84 with one core busy) against a strict sliding second counted
 * when the handler runs 200–240 ms after arrival, and against a token bucket and a fixed window; no
 * 429 in any run. Such a platform allows about 0.89 for a 105-request run without risk: each window
 * is a second plus the margin plus the handler delay's variation (~40 ms), which no answer shows
 * before it is seen (issue 39; the sustained rate is still printed, with no bar of its own).
 */
export const BARS: readonly Bar[] = [
  { bench: 'pull', figure: 'items/s over the ceiling (10 req/s x 1000)', bar: 0.86, better: 'higher' },
  { bench: 'pull', figure: 'items/s over the ceiling, one core busy (CPU hog)', bar: 0.84, better: 'higher' },
  { bench: 'pull', figure: 'max requests in a sliding second, one core busy (emulator)', bar: 10, better: 'lower' },
  { bench: 'pull', figure: '429s (emulator)', bar: 0, better: 'lower' },
  // The same run against a token bucket and a fixed window; any 429 in any run fails it; one 429 costs about one window.
  { bench: 'pull', figure: 'items/s over the ceiling (10 req/s x 1000), bucket', bar: 0.86, better: 'higher' },
  { bench: 'pull', figure: 'items/s over the ceiling (10 req/s x 1000), fixed', bar: 0.86, better: 'higher' },
  { bench: 'pull', figure: 'items/s over the ceiling, one core busy (CPU hog), bucket', bar: 0.84, better: 'higher' },
  { bench: 'pull', figure: 'items/s over the ceiling, one core busy (CPU hog), fixed', bar: 0.84, better: 'higher' },
  { bench: 'pull', figure: 'runs with a 429 (each a failure)', bar: 0, better: 'lower' },
  { bench: 'pull', figure: 's lost to one 429 at the 20th request (against the sliding run)', bar: 1.5, better: 'lower' },
  { bench: 'pull', figure: 'max requests in a sliding second (emulator)', bar: 10, better: 'lower' },
  { bench: 'pipeline', figure: 'items/s, first request to last commit', bar: 30_000, better: 'higher' },
  { bench: 'many-lists-pull', figure: 'first pull: requests per list', bar: 2.5, better: 'lower' },
  { bench: 'many-lists-pull', figure: 'first pull: requests/s over the whole run', bar: 8, better: 'higher' },
  { bench: 'many-lists-pull', figure: 'idle pull: requests per list', bar: 1.1, better: 'lower' },
  { bench: 'many-lists-pull', figure: 'idle list pulled every minute: requests per list a cycle', bar: 1.1, better: 'lower' },
  { bench: 'realtime-burst', figure: 'slowest /healthz answer (ms)', bar: 1000, better: 'lower' },
  { bench: 'realtime-burst', figure: 'deliveries refused', bar: 0, better: 'lower' },
  { bench: 'realtime-burst', figure: 'deliveries given up', bar: 0, better: 'lower' },
  { bench: 'realtime-burst', figure: 'seconds until the mirror equals the platform', bar: 60, better: 'lower' },
  { bench: 'realtime-restart', figure: 'SIGTERM to exit (ms)', bar: 10_000, better: 'lower' },
  { bench: 'realtime-restart', figure: 'seconds from the restart until the mirror equals the platform', bar: 120, better: 'lower' },
  { bench: 'realtime-restart', figure: 'events left unapplied', bar: 0, better: 'lower' },
  { bench: 'realtime-restart', figure: 'EMFILE in the log', bar: 0, better: 'lower' },
  { bench: 'realtime-restart', figure: 'log lines naming a duplicate delivery', bar: 0, better: 'lower' },
  { bench: 'upsert', figure: 'first load rows/s, as a pull writes (default page writers)', bar: 50_000, better: 'higher' },
  { bench: 'backfill-memory', figure: 'peak RSS, process maxRSS (MB)', bar: 250, better: 'lower' },
  { bench: 'push', figure: 'PATCH/s', bar: 9.5, better: 'higher' },
  { bench: 'reconcile', figure: 'projected s for 1,000,000 IDs', bar: 110, better: 'lower' },
  { bench: 'reconcile', figure: 'by counts, nothing deleted: requests', bar: 5, better: 'lower' },
  { bench: 'reconcile', figure: 'by counts, 10 deleted: requests', bar: 150, better: 'lower' },
  { bench: 'incremental', figure: 'query requests of the steady-state pull (50 edits)', bar: 2, better: 'lower' },
  { bench: 'freshness', figure: 'p95 s', bar: 2, better: 'lower' },
  { bench: 'fair-share', figure: "s to the push's first PATCH (bar <= 2)", bar: 2, better: 'lower' },
  { bench: 'freshness', figure: 'requests/s (bar <= 2)', bar: 2, better: 'lower' },
  // Issue 35: the console's overview with 500 lists.
  { bench: 'console', figure: 'overview p95 ms (500 lists)', bar: 300, better: 'lower' },
  // Issue 31: serve with many lists, every list on "* * * * *", default pool.
  ...['100x1000', '500x100'].flatMap((shape): Bar[] => [
    { bench: 'many-lists', figure: `${shape}: succeeded %`, bar: 95, better: 'higher' },
    { bench: 'many-lists', figure: `${shape}: failed`, bar: 0, better: 'lower' },
    { bench: 'many-lists', figure: `${shape}: pool timeouts in the log`, bar: 0, better: 'lower' },
    { bench: 'many-lists', figure: `${shape}: max /healthz ms`, bar: 1000, better: 'lower' },
    { bench: 'many-lists', figure: `${shape}: max /metrics ms`, bar: 2000, better: 'lower' },
    { bench: 'many-lists', figure: `${shape}: max s edit to mirror`, bar: 120, better: 'lower' },
  ]),
  // Issue 40: three serve workers, two accounts of 30 lists, every list every minute.
  { bench: 'workers', figure: 'fires run exactly once %', bar: 98, better: 'higher' },
  { bench: 'workers', figure: 'smallest share of runs of a worker %', bar: 20, better: 'higher' },
  { bench: 'workers', figure: 'max requests in a sliding second (emulator 1)', bar: 10, better: 'lower' },
  { bench: 'workers', figure: 'max requests in a sliding second (emulator 2)', bar: 10, better: 'lower' },
  { bench: 'workers', figure: '429s (emulator 1)', bar: 0, better: 'lower' },
  { bench: 'workers', figure: '429s (emulator 2)', bar: 0, better: 'lower' },
  { bench: 'workers', figure: 'fire to start p95 s', bar: 20, better: 'lower' },
];

export interface BarResult extends Bar {
  value: number | undefined;
  /** value/bar when higher is better, bar/value when lower is; ≥ 1 is met. */
  ratio: number | undefined;
  met: boolean | undefined;
}

export function judge(bar: Bar, figures: Readonly<Record<string, string | number>> | undefined): BarResult {
  const raw = figures?.[bar.figure];
  const value = typeof raw === 'number' && Number.isFinite(raw) ? raw : undefined;
  if (value === undefined) return { ...bar, value, ratio: undefined, met: undefined };
  const met = bar.better === 'higher' ? value >= bar.bar : value <= bar.bar;
  const ratio = bar.better === 'higher' ? value / bar.bar : value === 0 ? (bar.bar === 0 ? 1 : Infinity) : bar.bar / value;
  return { ...bar, value, ratio, met };
}
