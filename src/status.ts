/**
 * What `listsync status`, `/healthz` and `/metrics` report, read from
 * Postgres: per list the last runs, watermark, lag, rows, changes and
 * conflicts, deletes, and webhook activity.
 */
import type { Config, ListConfig } from './config.js';
import type { Knex } from './db.js';

export interface ListStatus {
  list: string;
  table: string;
  lastSuccessAt: Date | null;
  lastRunAt: Date | null;
  lastRunStatus: string | null;
  running: boolean;
  watermark: string | null;
  /** The last successful reconcile's heals by kind; null before the first. */
  lastReconcileHealed: { at: Date; deleted: number; undeleted: number; missing: number; behind: number } | null;
  /** Minutes since the start of the last successful pull (the mirror is at least that fresh); null before the first. */
  lagMinutes: number | null;
  /** Start of the last successful pull (what the lag is measured from); null before the first. */
  lastPullStartedAt: Date | null;
  rows: number | null;
  deletedRows: number | null;
  lastError: string | null;
  pendingChanges: number;
  failedChanges: number;
  openConflicts: number;
  resumeFromPage: number | null;
}

export interface WebhookStatus {
  subscriptions: number;
  eventsLastDay: number;
  lastEventAt: Date | null;
}

interface RunRow {
  list_name: string;
  job: string;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  error: string | null;
}

export async function listStatuses(db: Knex, config: Config, now: Date = new Date()): Promise<ListStatus[]> {
  const out: ListStatus[] = [];
  for (const list of config.lists) out.push(await listStatus(db, config, list, now));
  return out;
}

async function tableExists(db: Knex, schema: string, table: string): Promise<boolean> {
  const r = await db.raw('select to_regclass(?) as t', [`"${schema}"."${table}"`]);
  return (r.rows as { t: string | null }[])[0]?.t != null;
}

export async function listStatus(db: Knex, config: Config, list: ListConfig, now: Date = new Date()): Promise<ListStatus> {
  const table = list.table ?? list.name;
  const state = (await db('listsync.sync_state').where({ list_name: list.name, job: 'pull' }).first()) as
    | { watermark: string | null; last_success_at: Date | null; checkpoint: { nextPage?: number } | null }
    | undefined;
  const lastRun = (await db('listsync.sync_runs').where({ list_name: list.name }).whereIn('job', ['pull', 'backfill']).orderBy('id', 'desc').first()) as RunRow | undefined;
  const lastFailure = (await db('listsync.sync_runs').where({ list_name: list.name, status: 'failed' }).orderBy('id', 'desc').first()) as RunRow | undefined;
  const lastSuccess = (await db('listsync.sync_runs').where({ list_name: list.name, status: 'succeeded' }).orderBy('id', 'desc').first()) as RunRow | undefined;
  const lastPull = (await db('listsync.sync_runs').where({ list_name: list.name, status: 'succeeded', job: 'pull' }).orderBy('id', 'desc').first()) as RunRow | undefined;
  const lastReconcile = (await db('listsync.sync_runs').where({ list_name: list.name, status: 'succeeded', job: 'reconcile' }).orderBy('id', 'desc').first()) as
    | (RunRow & { rows_deleted: number; rows_undeleted: number; details: { healed?: { missing?: number; behind?: number } } | null })
    | undefined;
  const running = Boolean(await db('listsync.sync_runs').where({ list_name: list.name, status: 'running' }).first());
  const changes = (await db('listsync.outbox').where({ list_name: list.name }).select('status').count<{ status: string; count: string }[]>('* as count').groupBy('status')) as { status: string; count: string | number }[];
  const byStatus = Object.fromEntries(changes.map((c) => [c.status, Number(c.count)]));
  const conflicts = (await db('listsync.conflicts').where({ list_name: list.name, status: 'open' }).count<{ count: string }[]>('* as count')) as { count: string | number }[];

  let rows: number | null = null;
  let deletedRows: number | null = null;
  if (await tableExists(db, config.database.schema, table)) {
    const r = await db.raw('select count(*) filter (where _deleted_at is null) as live, count(*) filter (where _deleted_at is not null) as deleted from ??.??', [config.database.schema, table]);
    const row = (r.rows as { live: string; deleted: string }[])[0]!;
    rows = Number(row.live);
    deletedRows = Number(row.deleted);
  }
  const lastError = lastFailure && (!lastSuccess || lastFailure.started_at > lastSuccess.started_at) ? lastFailure.error : null;
  return {
    list: list.name,
    table: `${config.database.schema}.${table}`,
    lastSuccessAt: state?.last_success_at ?? null,
    lastRunAt: lastRun?.started_at ?? null,
    lastRunStatus: lastRun?.status ?? null,
    running,
    watermark: state?.watermark ?? null,
    lagMinutes: lastPull ? Math.max(0, Math.round((now.getTime() - lastPull.started_at.getTime()) / 60_000)) : null,
    lastPullStartedAt: lastPull?.started_at ?? null,
    rows,
    deletedRows,
    lastError,
    pendingChanges: (byStatus.pending ?? 0) + (byStatus.sending ?? 0),
    failedChanges: byStatus.failed ?? 0,
    openConflicts: Number(conflicts[0]?.count ?? 0),
    resumeFromPage: state?.checkpoint?.nextPage ?? null,
    lastReconcileHealed: lastReconcile ? healedOf(lastReconcile) : null,
  };
}

/** What the last reconcile healed, by kind (all zero when the mirror was in line). */
function healedOf(r: { rows_deleted: number; rows_undeleted: number; started_at: Date; details: { healed?: { missing?: number; behind?: number } } | null }): ListStatus['lastReconcileHealed'] {
  const h = r.details?.healed ?? {};
  return { at: r.started_at, deleted: Number(r.rows_deleted), undeleted: Number(r.rows_undeleted), missing: Number(h.missing ?? 0), behind: Number(h.behind ?? 0) };
}

export async function webhookStatus(db: Knex): Promise<WebhookStatus> {
  const subs = (await db('listsync.webhook_subscriptions').count<{ count: string }[]>('* as count')) as { count: string | number }[];
  const events = (await db('listsync.webhook_inbox')
    .where('received_at', '>', db.raw("now() - interval '1 day'"))
    .count<{ count: string }[]>('* as count')) as { count: string | number }[];
  const last = (await db('listsync.webhook_inbox').max('received_at as at').first()) as { at: Date | null } | undefined;
  return { subscriptions: Number(subs[0]?.count ?? 0), eventsLastDay: Number(events[0]?.count ?? 0), lastEventAt: last?.at ?? null };
}
