/**
 * What `listsync status`, `/healthz` and `/metrics` report, read from
 * Postgres: per list the last runs, watermark, lag, rows, changes and
 * conflicts and deletes (webhook activity: `webhookActivity` in
 * src/store/webhook-inbox.ts).
 */
import type { Config, ListConfig } from './config.js';
import type { Knex } from './db.js';
import { countOpenConflicts } from './store/conflicts.js';
import { countByStatus } from './store/outbox.js';
import { isListRunning, latestRun, type RunRow } from './store/runs.js';
import { readState } from './store/state.js';

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
  const state = await readState<{ nextPage?: number }>(db, list.name, 'pull');
  const lastRun = await latestRun(db, list.name, { jobs: ['pull', 'backfill'] });
  const lastFailure = await latestRun(db, list.name, { status: 'failed' });
  const lastSuccess = await latestRun(db, list.name, { status: 'succeeded' });
  const lastPull = await latestRun(db, list.name, { status: 'succeeded', jobs: ['pull'] });
  const lastReconcile = await latestRun(db, list.name, { status: 'succeeded', jobs: ['reconcile'] });
  const running = await isListRunning(db, list.name);
  const byStatus = await countByStatus(db, list.name);
  const openConflicts = await countOpenConflicts(db, list.name);

  let rows: number | null = null;
  let deletedRows: number | null = null;
  if (await tableExists(db, config.database.schema, table)) {
    const r = await db.raw(
      'select count(*) filter (where _deleted_at is null) as live, count(*) filter (where _deleted_at is not null) as deleted from ??.??',
      [config.database.schema, table],
    );
    const row = (r.rows as { live: string; deleted: string }[])[0]!;
    rows = Number(row.live);
    deletedRows = Number(row.deleted);
  }
  const lastError = lastFailure && (!lastSuccess || lastFailure.started_at > lastSuccess.started_at) ? lastFailure.error : null;
  return {
    list: list.name,
    table: `${config.database.schema}.${table}`,
    lastSuccessAt: state.lastSuccessAt,
    lastRunAt: lastRun?.started_at ?? null,
    lastRunStatus: lastRun?.status ?? null,
    running,
    watermark: state.watermark,
    lagMinutes: lastPull ? Math.max(0, Math.round((now.getTime() - lastPull.started_at.getTime()) / 60_000)) : null,
    lastPullStartedAt: lastPull?.started_at ?? null,
    rows,
    deletedRows,
    lastError,
    pendingChanges: (byStatus.pending ?? 0) + (byStatus.sending ?? 0),
    failedChanges: byStatus.failed ?? 0,
    openConflicts,
    resumeFromPage: state.checkpoint?.nextPage ?? null,
    lastReconcileHealed: lastReconcile ? healedOf(lastReconcile) : null,
  };
}

/** What the last reconcile healed, by kind (all zero when the mirror was in line). */
function healedOf(r: RunRow): ListStatus['lastReconcileHealed'] {
  const h = (r.details?.healed ?? {}) as { missing?: number; behind?: number };
  return {
    at: r.started_at,
    deleted: Number(r.rows_deleted),
    undeleted: Number(r.rows_undeleted),
    missing: Number(h.missing ?? 0),
    behind: Number(h.behind ?? 0),
  };
}
