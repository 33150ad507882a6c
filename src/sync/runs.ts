/**
 * Run history (`listsync.sync_runs`): a row when a run starts, counters as
 * pages land (in the page's own transaction), and the outcome at the end.
 */
import { hostname } from 'node:os';
import type { Knex } from '../db.js';

export type Job = 'pull' | 'backfill' | 'push' | 'reconcile' | 'users' | 'directory';
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'skipped';

export interface RunCounters {
  pages: number;
  requests: number;
  retries: number;
  rows_inserted: number;
  rows_updated: number;
  rows_unchanged: number;
  rows_deleted: number;
  rows_undeleted: number;
  rows_failed: number;
  rows_skipped_pending: number;
  changes_applied: number;
  changes_conflicted: number;
  changes_failed: number;
}

export const zeroCounters = (): RunCounters => ({
  pages: 0,
  requests: 0,
  retries: 0,
  rows_inserted: 0,
  rows_updated: 0,
  rows_unchanged: 0,
  rows_deleted: 0,
  rows_undeleted: 0,
  rows_failed: 0,
  rows_skipped_pending: 0,
  changes_applied: 0,
  changes_conflicted: 0,
  changes_failed: 0,
});

export const HOLDER = `${hostname()}:${process.pid}`;

export async function startRun(db: Knex, listName: string, job: Job, extra: { windowFrom?: string | null; windowTo?: string | null; resumed?: boolean; details?: object } = {}): Promise<number> {
  const [row] = (await db('listsync.sync_runs')
    .insert({
      list_name: listName,
      job,
      status: 'running',
      holder: HOLDER,
      window_from: extra.windowFrom ?? null,
      window_to: extra.windowTo ?? null,
      resumed: extra.resumed ?? false,
      details: JSON.stringify(extra.details ?? {}),
    })
    .returning('id')) as { id: number }[];
  return row!.id;
}

/** Sets what a run found out after it opened: its window, whether it resumed, details. */
export async function describeRun(db: Knex, runId: number, extra: { windowFrom?: string | null; windowTo?: string | null; resumed?: boolean; details?: object }): Promise<void> {
  await db('listsync.sync_runs')
    .where({ id: runId })
    .update({ window_from: extra.windowFrom ?? null, window_to: extra.windowTo ?? null, resumed: extra.resumed ?? false, details: JSON.stringify(extra.details ?? {}) });
}

/** True while the run has no outcome recorded. */
export async function isRunOpen(db: Knex, runId: number): Promise<boolean> {
  return Boolean(await db('listsync.sync_runs').where({ id: runId, status: 'running' }).first('id'));
}

/** Adds to a run's counters (use the page's transaction). */
export async function addToRun(db: Knex, runId: number, delta: Partial<RunCounters>): Promise<void> {
  const entries = Object.entries(delta).filter(([, v]) => typeof v === 'number' && v !== 0);
  if (entries.length === 0) return;
  const update: Record<string, Knex.Raw> = {};
  for (const [k, v] of entries) update[k] = db.raw('?? + ?', [k, v]);
  await db('listsync.sync_runs').where({ id: runId }).update(update);
}

export async function finishRun(db: Knex, runId: number, status: Exclude<RunStatus, 'running'>, extra: { error?: string; details?: object; counters?: Partial<RunCounters> } = {}): Promise<void> {
  const update: Record<string, unknown> = { status, finished_at: db.fn.now(), error: extra.error ?? null };
  if (extra.details) update.details = db.raw(`details || ?::jsonb`, [JSON.stringify(extra.details)]);
  for (const [k, v] of Object.entries(extra.counters ?? {})) update[k] = v;
  await db('listsync.sync_runs').where({ id: runId }).update(update);
}

/** Runs left 'running' by a process that died are closed as failed (called at start by the next run). */
export async function closeAbandonedRuns(db: Knex, listName: string, jobs: readonly Job[]): Promise<number> {
  return db('listsync.sync_runs')
    .where({ list_name: listName, status: 'running' })
    .whereIn('job', [...jobs])
    .update({ status: 'failed', finished_at: db.fn.now(), error: 'abandoned: the process running it stopped before it finished (its checkpoint is kept)' });
}

export async function describeRunning(db: Knex, listName: string, jobs: readonly Job[]): Promise<string | undefined> {
  const row = (await db('listsync.sync_runs').where({ list_name: listName, status: 'running' }).whereIn('job', [...jobs]).orderBy('id', 'desc').first()) as
    | { id: number; job: string; holder: string; started_at: Date }
    | undefined;
  return row ? `${row.job} run ${row.id} by ${row.holder} since ${row.started_at.toISOString()}` : undefined;
}
