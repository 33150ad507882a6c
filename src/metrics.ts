/**
 * Prometheus metrics for `serve` (`GET /metrics`), on a registry of our own
 * (never prom-client's global one).
 *
 * Two sources:
 * - in process: platform requests (the client's `onRequest`: by endpoint and
 *   outcome, retries, 429s, durations) and webhook callbacks (accepted,
 *   duplicate, rejected by reason);
 * - Postgres, read at scrape time (one shared read per scrape): per list the
 *   lag (seconds since the start of the last successful pull), mirror rows,
 *   pending/failed changes, open conflicts, a running run, a last error (from
 *   `listStatuses`); rows written by kind and runs by outcome summed over
 *   `listsync.sync_runs` (so they survive restarts and count the runs of
 *   every process; do not sum them across replicas); run durations observed
 *   from the runs that finished since this process started; per list and job
 *   the last successful run's rows changed, pages and requests, the failed
 *   runs since the last success, the last pull that changed rows, and the
 *   rows reconcile healed;
 * - the config: each list's lag limit and conflict policy, the account's
 *   request budget, so dashboards and alert rules compare against them
 *   without copying them.
 */
import { registerSchemaChangeMetrics } from './metrics-reporting.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Config } from './config.js';
import type { Knex } from './db.js';
import type { Logger } from './logger.js';
import type { RequestEvent } from './platform/client.js';
import { listStatuses } from './status.js';
import { counterTotals, failureStreaks, lastChangingPulls, lastSucceededRuns, reconcileHeals, runCounts, runsFinishedAfter } from './store/runs.js';
import { webhookBacklog } from './store/webhook-inbox.js';
import type { ReceiveOutcome } from './webhooks/receiver.js';
import type { FlushResult } from './realtime/applier.js';
import { realtimeStatuses } from './realtime/stats.js';

export const ROW_KINDS = ['inserted', 'updated', 'unchanged', 'deleted', 'undeleted', 'failed'] as const;

export interface MetricsOptions {
  db: Knex;
  config: Config;
  logger?: Logger;
  /** Also export Node process metrics (CPU, memory, event loop). Default true. */
  defaultMetrics?: boolean;
  now?: () => Date;
}

export interface Metrics {
  registry: Registry;
  /** Pass as the PlatformClient's `onRequest`. */
  onRequest(event: RequestEvent): void;
  /** Pass as the webhook receiver's `onOutcome`. */
  onWebhook(outcome: ReceiveOutcome): void;
  /** Pass as the realtime applier's `onFlush`. */
  onRealtimeFlush(flush: FlushResult): void;
  /** Reads the Postgres-backed values now (scrapes do this themselves). */
  refresh(): Promise<void>;
  /** The `/metrics` route. */
  handler(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export function createMetrics(options: MetricsOptions): Metrics {
  const { db, config } = options;
  const now = options.now ?? (() => new Date());
  const registry = new Registry();
  if (options.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry, prefix: 'listsync_' });
    // prom-client names some gauges *_total (active handles, requests, resources), which promtool rejects: drop them.
    for (const m of registry.getMetricsAsArray()) if (m instanceof Gauge && m.name.endsWith('_total')) registry.removeSingleMetric(m.name);
  }

  // ---- in process -------------------------------------------------------
  const requests = new Counter({
    name: 'listsync_platform_requests_total',
    help: 'Platform API attempts by endpoint and outcome (ok, error, retry, rate_limited).',
    labelNames: ['endpoint', 'outcome'] as const,
    registers: [registry],
  });
  const retries = new Counter({ name: 'listsync_platform_retries_total', help: 'Platform API attempts that were retries.', labelNames: ['endpoint'] as const, registers: [registry] });
  const rateLimited = new Counter({
    name: 'listsync_platform_rate_limited_total',
    help: 'Platform API attempts refused with 429 or a rate-limit envelope.',
    labelNames: ['endpoint'] as const,
    registers: [registry],
  });
  const requestSeconds = new Histogram({
    name: 'listsync_platform_request_duration_seconds',
    help: 'Platform API attempt durations.',
    labelNames: ['endpoint'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const webhookEvents = new Counter({
    name: 'listsync_webhook_events_total',
    help: 'Webhook callbacks: result accepted (reason new or duplicate), rejected (reason: method, unknown_token, channel, type, content_type, too_large, bad_body) or error.',
    labelNames: ['result', 'reason'] as const,
    registers: [registry],
  });

  // ---- from Postgres, at scrape time --------------------------------------
  let pending: Promise<void> | undefined;
  /** One read per scrape: a scrape calls every collect() at once, and they share the read in flight. */
  const shared = (): Promise<void> => {
    pending ??= readPostgres().finally(() => {
      pending = undefined;
    });
    return pending;
  };
  const collect = async (): Promise<void> => shared();

  const databaseUp = new Gauge({ name: 'listsync_database_up', help: '1 when the last scrape could read Postgres.', registers: [registry], collect });
  const lag = new Gauge({
    name: 'listsync_lag_seconds',
    help: 'Seconds since the start of the last successful pull of the list (absent before the first).',
    labelNames: ['list'] as const,
    registers: [registry],
    collect,
  });
  const lastSuccess = new Gauge({
    name: 'listsync_last_pull_success_timestamp_seconds',
    help: 'Start of the last successful pull (Unix seconds).',
    labelNames: ['list'] as const,
    registers: [registry],
    collect,
  });
  const mirrorRows = new Gauge({ name: 'listsync_mirror_rows', help: 'Mirror rows by state (live, deleted).', labelNames: ['list', 'state'] as const, registers: [registry], collect });
  const changes = new Gauge({
    name: 'listsync_changes',
    help: 'Local changes waiting in the outbox by state (pending, failed).',
    labelNames: ['list', 'state'] as const,
    registers: [registry],
    collect,
  });
  const conflicts = new Gauge({ name: 'listsync_conflicts_open', help: 'Open write-back conflicts.', labelNames: ['list'] as const, registers: [registry], collect });
  const running = new Gauge({ name: 'listsync_run_in_progress', help: '1 while a run of the list is in progress.', labelNames: ['list'] as const, registers: [registry], collect });
  const lastError = new Gauge({
    name: 'listsync_last_run_failed',
    help: '1 when the most recent outcome of the list was a failure (the healthz "last error").',
    labelNames: ['list'] as const,
    registers: [registry],
    collect,
  });
  const rowsTotal = new Counter({
    name: 'listsync_rows_total',
    help: 'Rows written by kind (inserted, updated, unchanged, deleted, undeleted, failed), summed over the run history.',
    labelNames: ['list', 'kind'] as const,
    registers: [registry],
    collect,
  });
  const runsTotal = new Counter({ name: 'listsync_runs_total', help: 'Runs by job and outcome, from the run history.', labelNames: ['list', 'job', 'status'] as const, registers: [registry], collect });
  const changesTotal = new Counter({
    name: 'listsync_changes_pushed_total',
    help: 'Local changes handled by push runs by outcome (applied, conflicted, failed).',
    labelNames: ['list', 'outcome'] as const,
    registers: [registry],
    collect,
  });
  const runSeconds = new Histogram({
    name: 'listsync_run_duration_seconds',
    help: 'Durations of the runs that finished since this process started, by job and status.',
    labelNames: ['job', 'status'] as const,
    buckets: [0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [registry],
    collect,
  });
  const webhookSubs = new Gauge({ name: 'listsync_webhook_subscriptions', help: 'Webhook subscriptions.', registers: [registry], collect });
  const webhookUnprocessed = new Gauge({
    name: 'listsync_webhook_inbox_unprocessed',
    help: 'Stored webhook events not acted on yet.',
    registers: [registry],
    collect,
  });
  const realtimeFlushes = new Counter({
    name: 'listsync_realtime_flushes_total',
    help: 'Realtime applier flushes in this process (each coalesces the events queued for a list).',
    labelNames: ['list'] as const,
    registers: [registry],
  });
  const realtimeEvents = new Gauge({
    name: 'listsync_realtime_events',
    help: 'Item events of realtime lists by state: received (stored), queued (not applied yet), applied; from Postgres, every process.',
    labelNames: ['list', 'state'] as const,
    registers: [registry],
    collect,
  });
  const realtimeReread = new Gauge({
    name: 'listsync_realtime_reread',
    help: 'Item IDs re-read through the API for realtime events (kind items) and the requests that took (kind requests).',
    labelNames: ['list', 'kind'] as const,
    registers: [registry],
    collect,
  });
  const realtimeFreshness = new Gauge({
    name: 'listsync_realtime_last_event_lag_seconds',
    help: 'Seconds from receiving the latest applied item event to applying it.',
    labelNames: ['list'] as const,
    registers: [registry],
    collect,
  });
  const realtimeLastApplied = new Gauge({
    name: 'listsync_realtime_last_applied_timestamp_seconds',
    help: 'When the latest item event of the list was applied (Unix seconds).',
    labelNames: ['list'] as const,
    registers: [registry],
    collect,
  });

  const listInfo = new Gauge({
    name: 'listsync_list_info',
    help: 'Always 1; the labels carry each configured list\'s platform IDs and conflict policy.',
    labelNames: ['list', 'app_id', 'list_id', 'conflict_policy'] as const,
    registers: [registry],
  });
  const lagLimit = new Gauge({
    name: 'listsync_lag_limit_seconds',
    help: 'The lag past which a list counts as stale (serve.maxLagMinutes).',
    labelNames: ['list'] as const,
    registers: [registry],
  });
  const budgetLimit = new Gauge({
    name: 'listsync_request_budget_per_second',
    help: 'The account\'s request budget (platform.requestsPerSecond), shared by every process of the account.',
    registers: [registry],
  });
  const lastRunChanged = new Gauge({
    name: 'listsync_last_run_rows_changed',
    help: 'Rows inserted, updated, deleted or undeleted by the last successful run of the list, by job.',
    labelNames: ['list', 'job'] as const,
    registers: [registry],
    collect,
  });
  const lastRunPages = new Gauge({ name: 'listsync_last_run_pages', help: 'Pages read by the last successful run, by job.', labelNames: ['list', 'job'] as const, registers: [registry], collect });
  const lastRunRequests = new Gauge({
    name: 'listsync_last_run_requests',
    help: 'Platform requests (retries included) sent by the last successful run, by job.',
    labelNames: ['list', 'job'] as const,
    registers: [registry],
    collect,
  });
  const failedStreak = new Gauge({
    name: 'listsync_consecutive_failed_runs',
    help: 'Failed runs since the last successful one, by job (0 once a run succeeds).',
    labelNames: ['list', 'job'] as const,
    registers: [registry],
    collect,
  });
  const lastChange = new Gauge({
    name: 'listsync_last_pull_with_changes_timestamp_seconds',
    help: 'Start of the last successful pull that changed at least one row (Unix seconds; absent before the first).',
    labelNames: ['list'] as const,
    registers: [registry],
    collect,
  });
  const healed = new Counter({
    name: 'listsync_reconcile_healed_total',
    help: 'Rows reconcile healed, by kind (deleted, undeleted, missing: re-read IDs the mirror lacked, behind: re-read rows whose version was behind), summed over the run history.',
    labelNames: ['list', 'kind'] as const,
    registers: [registry],
    collect,
  });
  setConfigValues();

  function setConfigValues(): void {
    budgetLimit.set(config.platform.requestsPerSecond);
    for (const l of config.lists) {
      listInfo.set({ list: l.name, app_id: l.appID, list_id: l.listID, conflict_policy: l.conflictPolicy }, 1);
      lagLimit.set({ list: l.name }, config.serve.maxLagMinutes * 60);
    }
  }

  /** Per list and job: the last successful run, the failures since, the last pull that changed rows, rows healed by reconcile. */
  async function readLastRuns(): Promise<void> {
    const last = await lastSucceededRuns(db);
    const streaks = await failureStreaks(db);
    const changes = await lastChangingPulls(db);
    const heals = await reconcileHeals(db);

    for (const g of [lastRunChanged, lastRunPages, lastRunRequests, failedStreak, lastChange, healed]) g.reset();
    for (const r of last) {
      const labels = { list: r.list_name, job: r.job };
      lastRunChanged.set(labels, Number(r.changed));
      lastRunPages.set(labels, Number(r.pages));
      lastRunRequests.set(labels, Number(r.requests));
    }
    for (const r of streaks) failedStreak.set({ list: r.list_name, job: r.job }, Number(r.failed));
    for (const r of changes) lastChange.set({ list: r.list_name }, Number(r.at));
    for (const r of heals) {
      healed.inc({ list: r.list_name, kind: 'deleted' }, Number(r.deleted));
      healed.inc({ list: r.list_name, kind: 'undeleted' }, Number(r.undeleted));
      healed.inc({ list: r.list_name, kind: 'missing' }, Number(r.missing));
      healed.inc({ list: r.list_name, kind: 'behind' }, Number(r.behind));
    }
  }
  registerSchemaChangeMetrics(registry, db, options.logger);

  /** Per realtime list: events received, queued and applied, re-reads, the latest event's freshness. */
  async function readRealtime(): Promise<void> {
    const rts = await realtimeStatuses(db, config);
    for (const g of [realtimeEvents, realtimeReread, realtimeFreshness, realtimeLastApplied]) g.reset();
    for (const r of rts) {
      realtimeEvents.set({ list: r.list, state: 'received' }, r.received);
      realtimeEvents.set({ list: r.list, state: 'queued' }, r.queued);
      realtimeEvents.set({ list: r.list, state: 'applied' }, r.applied);
      realtimeReread.set({ list: r.list, kind: 'items' }, r.reread);
      realtimeReread.set({ list: r.list, kind: 'requests' }, r.rereadRequests);
      if (r.lastLagSeconds !== null) realtimeFreshness.set({ list: r.list }, r.lastLagSeconds);
      if (r.lastAppliedAt) realtimeLastApplied.set({ list: r.list }, r.lastAppliedAt.getTime() / 1000);
    }
  }

  /** Runs that finished after this (Postgres text form of a timestamptz) were not observed yet. */
  let runCursor: string = now().toISOString();

  async function readPostgres(): Promise<void> {
    try {
      const at = now();
      const lists = await listStatuses(db, config, at);
      for (const g of [lag, lastSuccess, mirrorRows, changes, conflicts, running, lastError]) g.reset();
      for (const l of lists) {
        if (l.lastPullStartedAt) {
          lag.set({ list: l.list }, Math.max(0, (at.getTime() - l.lastPullStartedAt.getTime()) / 1000));
          lastSuccess.set({ list: l.list }, l.lastPullStartedAt.getTime() / 1000);
        }
        if (l.rows !== null) mirrorRows.set({ list: l.list, state: 'live' }, l.rows);
        if (l.deletedRows !== null) mirrorRows.set({ list: l.list, state: 'deleted' }, l.deletedRows);
        changes.set({ list: l.list, state: 'pending' }, l.pendingChanges);
        changes.set({ list: l.list, state: 'failed' }, l.failedChanges);
        conflicts.set({ list: l.list }, l.openConflicts);
        running.set({ list: l.list }, l.running ? 1 : 0);
        lastError.set({ list: l.list }, l.lastError ? 1 : 0);
      }

      const sums = await counterTotals(db);
      rowsTotal.reset();
      changesTotal.reset();
      for (const s of sums) {
        const list = String(s.list_name);
        for (const kind of ROW_KINDS) rowsTotal.inc({ list, kind }, Number(s[kind] ?? 0));
        changesTotal.inc({ list, outcome: 'applied' }, Number(s.applied ?? 0));
        changesTotal.inc({ list, outcome: 'conflicted' }, Number(s.conflicted ?? 0));
        changesTotal.inc({ list, outcome: 'failed' }, Number(s.changes_failed ?? 0));
      }
      const runs = await runCounts(db);
      runsTotal.reset();
      for (const r of runs) runsTotal.inc({ list: r.list_name, job: r.job, status: r.status }, Number(r.n));

      const finished = await runsFinishedAfter(db, runCursor, 10_000);
      for (const r of finished) runSeconds.observe({ job: r.job, status: r.status }, Math.max(0, Number(r.seconds)));
      if (finished.length) runCursor = finished[finished.length - 1]!.cursor;
      await readLastRuns();

      const hooks = await webhookBacklog(db);
      webhookSubs.set(hooks.subscriptions);
      webhookUnprocessed.set(hooks.unprocessed);
      await readRealtime();
      databaseUp.set(1);
    } catch (err) {
      databaseUp.set(0);
      options.logger?.warn({ err }, 'metrics: could not read Postgres; the Postgres-backed values are stale');
    }
  }

  return {
    registry,
    onRequest(e) {
      requests.inc({ endpoint: e.endpoint, outcome: e.outcome });
      if (e.attempt > 0) retries.inc({ endpoint: e.endpoint });
      if (e.outcome === 'rate_limited') rateLimited.inc({ endpoint: e.endpoint });
      requestSeconds.observe({ endpoint: e.endpoint }, e.durationMs / 1000);
    },
    onWebhook(o) {
      if (o.result === 'accepted') webhookEvents.inc({ result: 'accepted', reason: o.duplicate ? 'duplicate' : 'new' });
      else if (o.result === 'rejected') webhookEvents.inc({ result: 'rejected', reason: o.reason });
      else webhookEvents.inc({ result: 'error', reason: 'error' });
    },
    onRealtimeFlush(f) {
      realtimeFlushes.inc({ list: f.list });
    },
    async refresh() {
      await shared();
    },
    async handler(req, res) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' });
        res.end('use GET\n');
        return;
      }
      // prom-client 15 writes NaN as "Nan" (e.g. the event-loop lag before its first sample); the format spells it NaN.
      const text = (await registry.metrics()).replace(/ Nan$/gm, ' NaN');
      res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(text) });
      res.end(req.method === 'HEAD' ? undefined : text);
    },
  };
}
