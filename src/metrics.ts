/**
 * Prometheus metrics for `serve` (`GET /metrics`), on a registry of our own
 * (never prom-client's global one).
 *
 * Two sources:
 * - in process: platform requests (the client's `onRequest`: by endpoint and
 *   outcome, retries, 429s, durations) and webhook callbacks (accepted,
 *   duplicate, rejected by reason);
 * - Postgres, read at scrape time (one shared read per scrape; a scrape waits
 *   for it at most SCRAPE_WAIT_MS and otherwise answers the last values while
 *   the read finishes in the background, so /metrics answers in under 2 s
 *   however busy the database is): per list the
 *   lag (seconds since the start of the last successful pull), mirror rows
 *   (counted again only for lists a run may have changed since, and at least
 *   every 5 minutes: `RowCountCache`), pending/failed changes, open conflicts, a running run, a last error (from
 *   `listStatuses`); rows written by kind and runs by outcome summed over
 *   `listsync.sync_runs` (so they survive restarts and count the runs of
 *   every process; do not sum them across replicas); run durations observed
 *   from the runs that finished since this process started; per list and job
 *   the last successful run's rows changed, pages and requests, the failed
 *   runs since the last success, the last pull that changed rows, and the
 *   rows reconcile healed;
 * - serve's fires not written to `sync_runs` yet (the database was away):
 *   counted at once in runs by outcome, failed runs since the last success
 *   and the last run failed (test/serve-capacity.test.ts);
 * - the config: each list's lag limit and conflict policy, the account's
 *   request budget, so dashboards and alert rules compare against them
 *   without copying them.
 */
import { registerSchemaChangeMetrics } from './metrics-reporting.js';
import { registerEngineMetrics, type EngineEvents } from './engine/engine-metrics.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Config } from './config.js';
import type { Knex } from './db.js';
import type { Logger } from './logger.js';
import type { RequestEvent } from './platform/client.js';
import { listStatuses, RowCountCache, type ListStatus } from './status.js';
import {
  counterTotals,
  failureStreaks,
  lastChangingPulls,
  lastSucceededRuns,
  reconcileHeals,
  runCounts,
  runsFinishedAfter,
} from './store/runs.js';
import { webhookBacklog } from './store/webhook-inbox.js';
import { readLimiterState, type LimiterState } from './store/rate-budget.js';
import type { ReceiveOutcome } from './webhooks/receiver.js';
import type { FlushResult } from './realtime/applier.js';
import { realtimeStatuses, type RealtimeStatus } from './realtime/stats.js';
import type { FireOutcome } from './serve/run-outcomes.js';

/** How long a scrape waits for the Postgres read before answering the last values. */
export const SCRAPE_WAIT_MS = 1000;

export const ROW_KINDS = ['inserted', 'updated', 'unchanged', 'deleted', 'undeleted', 'failed', 'missing_keys', 'unstorable'] as const;

export interface MetricsOptions {
  db: Knex;
  config: Config;
  logger?: Logger;
  /** Also export Node process metrics (CPU, memory, event loop). Default true. */
  defaultMetrics?: boolean;
  now?: () => Date;
  /** serve's fires not recorded in `sync_runs` yet: counted as if they were. */
  unrecorded?: () => readonly FireOutcome[];
}

export interface Metrics {
  registry: Registry;
  /** Pass as the PlatformClient's `onRequest`. */
  onRequest(event: RequestEvent): void;
  /** Pass as the webhook receiver's `onOutcome`. */
  onWebhook(outcome: ReceiveOutcome): void;
  /** Pass as the realtime applier's `onFlush`. */
  onRealtimeFlush(flush: FlushResult): void;
  /** Pass as serve's `engineEvents`: the job queue's starts, retries and takeovers. */
  engine: EngineEvents;
  /** Reads the Postgres-backed values now (scrapes do this themselves). */
  refresh(): Promise<void>;
  /** The `/metrics` route. */
  handler(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

// ---- the declaration ----------------------------------------------------------

type Labels = Record<string, string>;

/** A metric as declared: its kind, name, help and label names. */
interface Declaration {
  kind: 'counter' | 'gauge' | 'histogram';
  name: string;
  help: string;
  labels?: readonly string[];
  buckets?: readonly number[];
}

/** What a reader writes: one metric's values (a counter's `add` after its reset rebuilds a total from the history). */
interface Values {
  set(labels: Labels, value: number): void;
  add(labels: Labels, value: number): void;
  observe(labels: Labels, value: number): void;
}

/** A metric whose values are read from a source (`S`) rather than counted as events happen. */
interface ReadMetric<S> extends Declaration {
  read(values: Values, source: S): void;
  /** Keep the values between reads (a histogram observing only what is new); default: reset before each read. */
  accumulates?: boolean;
}

/** Counted in process, as requests are made and webhooks arrive. */
const IN_PROCESS = {
  requests: {
    kind: 'counter',
    name: 'listsync_platform_requests_total',
    help: 'Platform API attempts by account, endpoint and outcome (ok, error, retry, rate_limited).',
    labels: ['account', 'endpoint', 'outcome'],
  },
  retries: {
    kind: 'counter',
    name: 'listsync_platform_retries_total',
    help: 'Platform API attempts that were retries.',
    labels: ['endpoint'],
  },
  rateLimited: {
    kind: 'counter',
    name: 'listsync_platform_rate_limited_total',
    help: 'Platform API attempts refused with 429 or a rate-limit envelope.',
    labels: ['endpoint'],
  },
  requestSeconds: {
    kind: 'histogram',
    name: 'listsync_platform_request_duration_seconds',
    help: 'Platform API attempt durations.',
    labels: ['endpoint'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  },
  webhookEvents: {
    kind: 'counter',
    name: 'listsync_webhook_events_total',
    help: 'Webhook callbacks: result accepted (reason new or duplicate), rejected (reason: method, unknown_token, channel, type, content_type, too_large, bad_body) or error.',
    labels: ['result', 'reason'],
  },
  realtimeFlushes: {
    kind: 'counter',
    name: 'listsync_realtime_flushes_total',
    help: 'Realtime applier flushes in this process (each coalesces the events queued for a list).',
    labels: ['list'],
  },
} as const satisfies Record<string, Declaration>;

/** What one scrape reads from Postgres (one shared read per scrape). */
interface Snapshot {
  at: Date;
  lists: ListStatus[];
  /** Per list: rows written by kind and changes pushed by outcome, summed over the run history. */
  sums: Record<string, string | number | null>[];
  runs: { list_name: string; job: string; status: string; n: string | number }[];
  /** Runs that finished since the last scrape. */
  finished: { job: string; status: string; seconds: number; cursor: string }[];
  lastRuns: { list_name: string; job: string; pages: number; requests: number; changed: string | number }[];
  streaks: { list_name: string; job: string; failed: string | number }[];
  changedPulls: { list_name: string; at: number }[];
  heals: { list_name: string; deleted: string | number; undeleted: string | number; missing: string | number; behind: string | number }[];
  hooks: { subs: number; unprocessed: number };
  realtime: RealtimeStatus[];
  /** Per account: what the request limiter learned from 429 answers (listsync.rate_budget). */
  limiter: LimiterState[];
}

const perList = (list: string) => ({ list });

/** What the request limiter learned per account (src/platform/learned-limits.ts), as a process starting now takes it. */
const LIMITER_GAUGES: readonly ReadMetric<Snapshot>[] = [
  {
    kind: 'gauge',
    name: 'listsync_request_limiter_bursts_allowed',
    help: 'Per account: 1 while requests may leave in bursts (no 429 lately), 0 while they are evenly spaced.',
    labels: ['account'],
    read: (v, s) => s.limiter.forEach((l) => v.set({ account: l.account }, l.burstsAllowed ? 1 : 0)),
  },
  {
    kind: 'gauge',
    name: 'listsync_request_limiter_margin_seconds',
    help: "Per account: the extra width of the request limiter's sliding window learned from 429s (on top of platform.rateMargin).",
    labels: ['account'],
    read: (v, s) => s.limiter.forEach((l) => v.set({ account: l.account }, l.marginMs / 1000)),
  },
  {
    kind: 'gauge',
    name: 'listsync_request_limiter_rate_limited',
    help: 'Per account: 429 answers the request limiter learned from, by every process of the account.',
    labels: ['account'],
    read: (v, s) => s.limiter.forEach((l) => v.set({ account: l.account }, l.throttledTotal)),
  },
  {
    kind: 'gauge',
    name: 'listsync_request_limiter_limit_too_high_timestamp_seconds',
    help: 'Per account: when 429s kept coming at the widened margin and the rate was halved (platform.requestsPerSecond looks too high); 0 never.',
    labels: ['account'],
    read: (v, s) => s.limiter.forEach((l) => v.set({ account: l.account }, (l.limitTooHighAt?.getTime() ?? 0) / 1000)),
  },
];

/** Read from Postgres at scrape time, each with its reader. */
const FROM_POSTGRES: readonly ReadMetric<Snapshot>[] = [
  { kind: 'gauge', name: 'listsync_database_up', help: '1 when the last scrape could read Postgres.', read: (v) => v.set({}, 1) },
  ...LIMITER_GAUGES,
  {
    kind: 'gauge',
    name: 'listsync_lag_seconds',
    help: 'Seconds since the start of the last successful pull of the list (absent before the first).',
    labels: ['list'],
    read: (v, s) => {
      for (const l of s.lists)
        if (l.lastPullStartedAt) v.set(perList(l.list), Math.max(0, (s.at.getTime() - l.lastPullStartedAt.getTime()) / 1000));
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_last_pull_success_timestamp_seconds',
    help: 'Start of the last successful pull (Unix seconds).',
    labels: ['list'],
    read: (v, s) => {
      for (const l of s.lists) if (l.lastPullStartedAt) v.set(perList(l.list), l.lastPullStartedAt.getTime() / 1000);
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_mirror_rows',
    help: 'Mirror rows by state (live, deleted).',
    labels: ['list', 'state'],
    read: (v, s) => {
      for (const l of s.lists) {
        if (l.rows !== null) v.set({ list: l.list, state: 'live' }, l.rows);
        if (l.deletedRows !== null) v.set({ list: l.list, state: 'deleted' }, l.deletedRows);
      }
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_changes',
    help: 'Local changes waiting in the outbox by state (pending, failed).',
    labels: ['list', 'state'],
    read: (v, s) => {
      for (const l of s.lists) {
        v.set({ list: l.list, state: 'pending' }, l.pendingChanges);
        v.set({ list: l.list, state: 'failed' }, l.failedChanges);
      }
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_conflicts_open',
    help: 'Open write-back conflicts.',
    labels: ['list'],
    read: (v, s) => s.lists.forEach((l) => v.set(perList(l.list), l.openConflicts)),
  },
  {
    kind: 'gauge',
    name: 'listsync_run_in_progress',
    help: '1 while a run of the list is in progress.',
    labels: ['list'],
    read: (v, s) => s.lists.forEach((l) => v.set(perList(l.list), l.running ? 1 : 0)),
  },
  {
    kind: 'gauge',
    name: 'listsync_last_run_failed',
    help: '1 while a job of the list failed and no run of that job succeeded since (the healthz "last error").',
    labels: ['list'],
    read: (v, s) => s.lists.forEach((l) => v.set(perList(l.list), l.lastError ? 1 : 0)),
  },
  {
    kind: 'counter',
    name: 'listsync_rows_total',
    help: 'Rows written by kind (inserted, updated, unchanged, deleted, undeleted, failed, missing_keys, unstorable), summed over the run history.',
    labels: ['list', 'kind'],
    read: (v, s) => {
      for (const sum of s.sums) for (const kind of ROW_KINDS) v.add({ list: String(sum.list_name), kind }, Number(sum[kind] ?? 0));
    },
  },
  {
    kind: 'counter',
    name: 'listsync_runs_total',
    help: 'Runs by job and outcome, from the run history.',
    labels: ['list', 'job', 'status'],
    read: (v, s) => s.runs.forEach((r) => v.add({ list: r.list_name, job: r.job, status: r.status }, Number(r.n))),
  },
  {
    kind: 'counter',
    name: 'listsync_changes_pushed_total',
    help: 'Local changes handled by push runs by outcome (applied, conflicted, failed).',
    labels: ['list', 'outcome'],
    read: (v, s) => {
      for (const sum of s.sums) {
        const list = String(sum.list_name);
        v.add({ list, outcome: 'applied' }, Number(sum.applied ?? 0));
        v.add({ list, outcome: 'conflicted' }, Number(sum.conflicted ?? 0));
        v.add({ list, outcome: 'failed' }, Number(sum.changes_failed ?? 0));
      }
    },
  },
  {
    kind: 'histogram',
    name: 'listsync_run_duration_seconds',
    help: 'Durations of the runs that finished since this process started, by job and status.',
    labels: ['job', 'status'],
    buckets: [0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    accumulates: true,
    read: (v, s) => s.finished.forEach((r) => v.observe({ job: r.job, status: r.status }, Math.max(0, Number(r.seconds)))),
  },
  { kind: 'gauge', name: 'listsync_webhook_subscriptions', help: 'Webhook subscriptions.', read: (v, s) => v.set({}, s.hooks.subs) },
  {
    kind: 'gauge',
    name: 'listsync_webhook_inbox_unprocessed',
    help: 'Stored webhook events not acted on yet.',
    read: (v, s) => v.set({}, s.hooks.unprocessed),
  },
  {
    kind: 'gauge',
    name: 'listsync_last_run_rows_changed',
    help: 'Rows inserted, updated, deleted or undeleted by the last successful run of the list, by job.',
    labels: ['list', 'job'],
    read: (v, s) => s.lastRuns.forEach((r) => v.set({ list: r.list_name, job: r.job }, Number(r.changed))),
  },
  {
    kind: 'gauge',
    name: 'listsync_last_run_pages',
    help: 'Pages read by the last successful run, by job.',
    labels: ['list', 'job'],
    read: (v, s) => s.lastRuns.forEach((r) => v.set({ list: r.list_name, job: r.job }, Number(r.pages))),
  },
  {
    kind: 'gauge',
    name: 'listsync_last_run_requests',
    help: 'Platform requests (retries included) sent by the last successful run, by job.',
    labels: ['list', 'job'],
    read: (v, s) => s.lastRuns.forEach((r) => v.set({ list: r.list_name, job: r.job }, Number(r.requests))),
  },
  {
    kind: 'gauge',
    name: 'listsync_consecutive_failed_runs',
    help: 'Failed runs since the last successful one, by job (0 once a run succeeds).',
    labels: ['list', 'job'],
    read: (v, s) => s.streaks.forEach((r) => v.set({ list: r.list_name, job: r.job }, Number(r.failed))),
  },
  {
    kind: 'gauge',
    name: 'listsync_last_pull_with_changes_timestamp_seconds',
    help: 'Start of the last successful pull that changed at least one row (Unix seconds; absent before the first).',
    labels: ['list'],
    read: (v, s) => s.changedPulls.forEach((r) => v.set(perList(r.list_name), Number(r.at))),
  },
  {
    kind: 'counter',
    name: 'listsync_reconcile_healed_total',
    help: 'Rows reconcile healed, by kind (deleted, undeleted, missing: re-read IDs the mirror lacked, behind: re-read rows whose version was behind), summed over the run history.',
    labels: ['list', 'kind'],
    read: (v, s) => {
      for (const r of s.heals) {
        v.add({ list: r.list_name, kind: 'deleted' }, Number(r.deleted));
        v.add({ list: r.list_name, kind: 'undeleted' }, Number(r.undeleted));
        v.add({ list: r.list_name, kind: 'missing' }, Number(r.missing));
        v.add({ list: r.list_name, kind: 'behind' }, Number(r.behind));
      }
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_realtime_events',
    help: 'Item events of realtime lists by state: received (stored), queued (not applied yet), applied; from Postgres, every process.',
    labels: ['list', 'state'],
    read: (v, s) => {
      for (const r of s.realtime) {
        v.set({ list: r.list, state: 'received' }, r.received);
        v.set({ list: r.list, state: 'queued' }, r.queued);
        v.set({ list: r.list, state: 'applied' }, r.applied);
      }
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_realtime_reread',
    help: 'Item IDs re-read through the API for realtime events (kind items) and the requests that took (kind requests).',
    labels: ['list', 'kind'],
    read: (v, s) => {
      for (const r of s.realtime) {
        v.set({ list: r.list, kind: 'items' }, r.reread);
        v.set({ list: r.list, kind: 'requests' }, r.rereadRequests);
      }
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_realtime_last_event_lag_seconds',
    help: 'Seconds from receiving the latest applied item event to applying it.',
    labels: ['list'],
    read: (v, s) => {
      for (const r of s.realtime) if (r.lastLagSeconds !== null) v.set(perList(r.list), r.lastLagSeconds);
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_realtime_oldest_unapplied_seconds',
    help: 'Age of the oldest item event of the list not applied yet (0 when none waits); past serve.realtimeStaleAfterSeconds /healthz is degraded.',
    labels: ['list'],
    read: (v, s) => {
      for (const r of s.realtime) v.set(perList(r.list), r.oldestUnappliedSeconds);
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_realtime_failing_events',
    help: 'Item events not applied yet whose apply failed at least once (retried with backoff).',
    labels: ['list'],
    read: (v, s) => {
      for (const r of s.realtime) v.set(perList(r.list), r.failing);
    },
  },
  {
    kind: 'gauge',
    name: 'listsync_realtime_last_applied_timestamp_seconds',
    help: 'When the latest item event of the list was applied (Unix seconds).',
    labels: ['list'],
    read: (v, s) => {
      for (const r of s.realtime) if (r.lastAppliedAt) v.set(perList(r.list), r.lastAppliedAt.getTime() / 1000);
    },
  },
];

/** From the config, set once: what dashboards and alert rules compare against. */
const FROM_CONFIG: readonly ReadMetric<Config>[] = [
  {
    kind: 'gauge',
    name: 'listsync_list_info',
    help: "Always 1; the labels carry each configured list's account, platform IDs and conflict policy.",
    labels: ['list', 'account', 'app_id', 'list_id', 'conflict_policy'],
    read: (v, c) =>
      c.lists.forEach((l) =>
        v.set({ list: l.name, account: l.account, app_id: l.appID, list_id: l.listID, conflict_policy: l.conflictPolicy }, 1),
      ),
  },
  {
    kind: 'gauge',
    name: 'listsync_lag_limit_seconds',
    help: 'The lag past which a list counts as stale (serve.maxLagMinutes).',
    labels: ['list'],
    read: (v, c) => c.lists.forEach((l) => v.set(perList(l.name), c.serve.maxLagMinutes * 60)),
  },
  {
    kind: 'gauge',
    name: 'listsync_realtime_stale_after_seconds',
    help: 'The age past which an unapplied item event makes /healthz degraded (serve.realtimeStaleAfterSeconds).',
    labels: ['list'],
    read: (v, c) => c.lists.filter((l) => l.realtime).forEach((l) => v.set(perList(l.name), c.serve.realtimeStaleAfterSeconds)),
  },
  {
    kind: 'gauge',
    name: 'listsync_request_budget_per_second',
    help: 'Per account: its request budget (platform.requestsPerSecond), shared by every process of the account.',
    labels: ['account'],
    read: (v, c) => c.accounts.forEach((a) => v.set({ account: a.name }, a.platform.requestsPerSecond)),
  },
];

// ---- the registry ---------------------------------------------------------------

type PromMetric = Counter | Gauge | Histogram;

function create(registry: Registry, d: Declaration, collect?: () => Promise<void>): PromMetric {
  const common = { name: d.name, help: d.help, labelNames: [...(d.labels ?? [])], registers: [registry], ...(collect ? { collect } : {}) };
  if (d.kind === 'counter') return new Counter(common);
  if (d.kind === 'gauge') return new Gauge(common);
  return new Histogram({ ...common, buckets: [...(d.buckets ?? [])] });
}

function valuesOf(metric: PromMetric, name: string): Values {
  const wrong = (what: string) => () => {
    throw new Error(`metric ${name} cannot ${what}`);
  };
  return {
    set: metric instanceof Gauge ? (labels, value) => metric.set(labels, value) : wrong('set'),
    add: metric instanceof Counter || metric instanceof Gauge ? (labels, value) => metric.inc(labels, value) : wrong('add'),
    observe: metric instanceof Histogram ? (labels, value) => metric.observe(labels, value) : wrong('observe'),
  };
}

/** Registers the read metrics; `apply(source)` rebuilds their values from a source. */
function readMetrics<S>(registry: Registry, defs: readonly ReadMetric<S>[], collect?: () => Promise<void>): (source: S) => void {
  const metrics = defs.map((d) => ({ def: d, metric: create(registry, d, collect) }));
  return (source) => {
    for (const { def, metric } of metrics) {
      if (!def.accumulates) metric.reset();
      def.read(valuesOf(metric, def.name), source);
    }
  };
}

// ---- the Postgres read ----------------------------------------------------------

async function readSnapshot(db: Knex, config: Config, at: Date, finishedAfter: string, rowCounts: RowCountCache): Promise<Snapshot> {
  // Mirror rows are counted again only where a run may have moved them (or every 5 minutes): not a scan of every table per scrape.
  const lists = await listStatuses(db, config, at, { rows: rowCounts });
  const sums = await counterTotals(db);
  const runs = await runCounts(db);
  const finished = await runsFinishedAfter(db, finishedAfter, 10_000);
  const lastRuns = await lastSucceededRuns(db);
  const streaks = await failureStreaks(db);
  const changedPulls = await lastChangingPulls(db);
  const heals = await reconcileHeals(db);
  const backlog = await webhookBacklog(db);
  const realtime = await realtimeStatuses(db, config);
  const limiter = await readLimiterState(db);
  return {
    at,
    lists,
    sums,
    runs,
    finished,
    lastRuns,
    streaks,
    changedPulls,
    heals,
    hooks: { subs: backlog.subscriptions, unprocessed: backlog.unprocessed },
    realtime,
    limiter,
  };
}

// ---- assembled ------------------------------------------------------------------

export function createMetrics(options: MetricsOptions): Metrics {
  const { db, config } = options;
  const now = options.now ?? (() => new Date());
  const registry = new Registry();
  if (options.defaultMetrics !== false) registerProcessMetrics(registry);

  const counted = registerInProcess(registry);

  /** One read per scrape: a scrape calls every collect() at once, and they share the read in flight and its deadline. */
  let pending: Promise<void> | undefined;
  let waited: Promise<void> | undefined;
  const shared = (): Promise<void> => {
    if (!pending) {
      pending = readPostgres().finally(() => {
        pending = undefined;
      });
      waited = Promise.race([pending.then(() => true), sleep(SCRAPE_WAIT_MS).then(() => false)]).then((fresh) => {
        if (!fresh) applyLast();
      });
    }
    return waited!;
  };
  const applySnapshot = readMetrics(registry, FROM_POSTGRES, shared);
  readMetrics(registry, FROM_CONFIG)(config);
  registerSchemaChangeMetrics(registry, db, options.logger);
  const engine = registerEngineMetrics(registry, db, options.logger);

  /** Runs that finished after this (Postgres text form of a timestamptz) were not observed yet. */
  let runCursor: string = now().toISOString();
  const databaseUp = registry.getSingleMetric('listsync_database_up') as Gauge;

  let last: Snapshot | undefined;
  const unrecorded = () => options.unrecorded?.() ?? [];

  /** The last snapshot again (runs already observed not twice), with the fires not recorded yet. */
  function applyLast(): void {
    const base: Snapshot = last ?? {
      at: now(),
      lists: [],
      sums: [],
      runs: [],
      finished: [],
      lastRuns: [],
      streaks: [],
      changedPulls: [],
      heals: [],
      hooks: { subs: 0, unprocessed: 0 },
      realtime: [],
      limiter: [],
    };
    applySnapshot(withUnrecorded({ ...base, finished: [] }, unrecorded()));
  }

  const rowCounts = new RowCountCache();
  async function readPostgres(): Promise<void> {
    try {
      const snapshot = await readSnapshot(db, config, now(), runCursor, rowCounts);
      last = snapshot;
      applySnapshot(withUnrecorded(snapshot, unrecorded()));
      if (snapshot.finished.length) runCursor = snapshot.finished[snapshot.finished.length - 1]!.cursor;
    } catch (err) {
      applyLast();
      databaseUp.set(0);
      options.logger?.warn({ err }, 'metrics: could not read Postgres; the Postgres-backed values are stale');
    }
  }

  return {
    registry,
    engine,
    onRequest(e) {
      counted.requests.inc({ account: e.account ?? config.accounts[0]!.name, endpoint: e.endpoint, outcome: e.outcome });
      if (e.attempt > 0) counted.retries.inc({ endpoint: e.endpoint });
      if (e.outcome === 'rate_limited') counted.rateLimited.inc({ endpoint: e.endpoint });
      counted.requestSeconds.observe({ endpoint: e.endpoint }, e.durationMs / 1000);
    },
    onWebhook(o) {
      if (o.result === 'accepted') counted.webhookEvents.inc({ result: 'accepted', reason: o.duplicate ? 'duplicate' : 'new' });
      else if (o.result === 'rejected') counted.webhookEvents.inc({ result: 'rejected', reason: o.reason });
      else counted.webhookEvents.inc({ result: 'error', reason: 'error' });
    },
    onRealtimeFlush(f) {
      counted.realtimeFlushes.inc({ list: f.list });
    },
    async refresh() {
      await shared();
    },
    handler: (req, res) => serveMetrics(registry, req, res),
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * The snapshot as it will read once the fires kept in memory are written: each counted in runs by
 * outcome, a failure in the list's streak and as its last error. A fire whose row is open (it could
 * not close it) counts as failed, not running.
 */
function withUnrecorded(s: Snapshot, fires: readonly FireOutcome[]): Snapshot {
  if (fires.length === 0) return s;
  const runs = s.runs.map((r) => ({ ...r }));
  const streaks = s.streaks.map((r) => ({ ...r }));
  const lists = s.lists.map((l) => ({ ...l }));
  for (const f of fires) {
    if (f.status === 'succeeded') continue;
    const run = runs.find((r) => r.list_name === f.list && r.job === f.job && r.status === f.status);
    if (run) run.n = Number(run.n) + 1;
    else runs.push({ list_name: f.list, job: f.job, status: f.status, n: 1 });
    if (f.status !== 'failed') continue;
    const streak = streaks.find((r) => r.list_name === f.list && r.job === f.job);
    if (streak) streak.failed = Number(streak.failed) + 1;
    else streaks.push({ list_name: f.list, job: f.job, failed: 1 });
    const list = lists.find((l) => l.list === f.list);
    if (list) list.lastError = f.reason ?? 'failed';
  }
  return { ...s, runs, streaks, lists };
}

/** Node process metrics (CPU, memory, event loop), less the gauges prom-client names *_total, which promtool rejects. */
function registerProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: 'listsync_' });
  for (const m of registry.getMetricsAsArray()) if (m instanceof Gauge && m.name.endsWith('_total')) registry.removeSingleMetric(m.name);
}

function registerInProcess(registry: Registry) {
  const c = (d: Declaration) => create(registry, d) as Counter;
  return {
    requests: c(IN_PROCESS.requests),
    retries: c(IN_PROCESS.retries),
    rateLimited: c(IN_PROCESS.rateLimited),
    requestSeconds: create(registry, IN_PROCESS.requestSeconds) as Histogram,
    webhookEvents: c(IN_PROCESS.webhookEvents),
    realtimeFlushes: c(IN_PROCESS.realtimeFlushes),
  };
}

async function serveMetrics(registry: Registry, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' });
    res.end('use GET\n');
    return;
  }
  // prom-client 15 writes NaN as "Nan" (e.g. the event-loop lag before its first sample); the format spells it NaN.
  const text = (await registry.metrics()).replace(/ Nan$/gm, ' NaN');
  res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(text) });
  res.end(req.method === 'HEAD' ? undefined : text);
}
