/**
 * The run history as `listsync runs` reads it: runs newest first, filtered by list, status and start
 * time, and one run by id. (The rows are written by runs.ts; their traces by run-events.ts.)
 */
import type { Knex } from '../db.js';
import { RUNS_TABLE, type RunRow } from './runs.js';

export interface RunFilter {
  list?: string;
  failed?: boolean;
  /** Runs started at or after this instant. */
  since?: Date;
  limit: number;
}

/** A run's row with its window (platform dates, as text) and whether it resumed a checkpoint. */
export interface HistoryRun extends RunRow {
  window_from: string | null;
  window_to: string | null;
  resumed: boolean;
}

const columns = (db: Knex) => ['*', db.raw('window_from::text as window_from'), db.raw('window_to::text as window_to')];

export async function listRuns(db: Knex, filter: RunFilter): Promise<HistoryRun[]> {
  const q = db(RUNS_TABLE).select(columns(db));
  if (filter.list !== undefined) void q.where({ list_name: filter.list });
  if (filter.failed) void q.where({ status: 'failed' });
  if (filter.since) void q.where('started_at', '>=', filter.since);
  return (await q.orderBy('id', 'desc').limit(filter.limit)) as HistoryRun[];
}

export async function getRun(db: Knex, id: number): Promise<HistoryRun | undefined> {
  return (await db(RUNS_TABLE).where({ id }).first(columns(db))) as HistoryRun | undefined;
}
