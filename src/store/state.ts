/**
 * Per-list sync state (`listsync.sync_state`): the watermark (a platform calendar date), the pull's
 * high-water modification time (platform-local `YYYY-MM-DD HH:mm:ss`) and the
 * in-flight checkpoint.
 */
import type { Knex } from '../db.js';

export const STATE_TABLE = 'listsync.sync_state';

export interface SyncState<C = Record<string, unknown>> {
  watermark: string | null;
  highWater: string | null;
  checkpoint: C | null;
  lastSuccessAt: Date | null;
}

export async function readState<C>(db: Knex, listName: string, job: string): Promise<SyncState<C>> {
  const row = (await db(STATE_TABLE).where({ list_name: listName, job }).first()) as
    { watermark: string | null; high_water?: string | null; checkpoint: C | null; last_success_at: Date | null } | undefined;
  return {
    watermark: row?.watermark ?? null,
    highWater: row?.high_water ?? null,
    checkpoint: row?.checkpoint ?? null,
    lastSuccessAt: row?.last_success_at ?? null,
  };
}

/**
 * Records the in-flight checkpoint. A checkpoint with a `nextPage` never moves an
 * existing one of the same run backwards (pages commit out of order when written in parallel).
 */
export async function writeCheckpoint(
  db: Knex,
  listName: string,
  job: string,
  checkpoint: { runId?: number; nextPage?: number; [key: string]: unknown } | null,
): Promise<void> {
  await db.raw(
    `insert into ${STATE_TABLE} (list_name, job, checkpoint, updated_at) values (?, ?, ?::jsonb, now())
     on conflict (list_name, job) do update set checkpoint = excluded.checkpoint, updated_at = now()
      where excluded.checkpoint is null or sync_state.checkpoint is null
         or (sync_state.checkpoint->>'runId') is distinct from (excluded.checkpoint->>'runId')
         or coalesce((sync_state.checkpoint->>'nextPage')::int, 0) <= coalesce((excluded.checkpoint->>'nextPage')::int, 0)`,
    [listName, job, checkpoint === null ? null : JSON.stringify(checkpoint)],
  );
}

/** Ends a run successfully: the watermark and high-water mark move (unless null = keep), the checkpoint is cleared. */
export async function completeState(
  db: Knex,
  listName: string,
  job: string,
  watermark: string | null,
  highWater: string | null = null,
): Promise<void> {
  const row: Record<string, unknown> = {
    list_name: listName,
    job,
    checkpoint: null,
    last_success_at: db.fn.now(),
    updated_at: db.fn.now(),
  };
  const merge = ['checkpoint', 'last_success_at', 'updated_at'];
  if (watermark !== null) {
    row.watermark = watermark;
    merge.push('watermark');
  }
  if (highWater !== null) {
    row.high_water = highWater;
    merge.push('high_water');
  }
  await db(STATE_TABLE).insert(row).onConflict(['list_name', 'job']).merge(merge);
}

/** A list's state per job (pull, backfill, reconcile...), as `listsync state` shows it. */
export interface JobState {
  job: string;
  watermark: string | null;
  highWater: string | null;
  checkpoint: Record<string, unknown> | null;
  lastSuccessAt: Date | null;
  updatedAt: Date;
}

export async function readListStates(db: Knex, listName: string): Promise<JobState[]> {
  const rows = (await db(STATE_TABLE)
    .where({ list_name: listName })
    .orderBy('job')
    .select('job', db.raw('watermark::text as watermark'), 'high_water', 'checkpoint', 'last_success_at', 'updated_at')) as {
    job: string;
    watermark: string | null;
    high_water: string | null;
    checkpoint: Record<string, unknown> | null;
    last_success_at: Date | null;
    updated_at: Date;
  }[];
  return rows.map((r) => ({
    job: r.job,
    watermark: r.watermark,
    highWater: r.high_water,
    checkpoint: r.checkpoint,
    lastSuccessAt: r.last_success_at,
    updatedAt: r.updated_at,
  }));
}

/**
 * Forgets where a list's jobs got to (watermark, high-water mark, checkpoint), so the next pull reads
 * the whole list. The caller holds the list's lock (no run of the list may write them meanwhile).
 * Returns the jobs whose state was cleared.
 */
export async function clearListState(db: Knex, listName: string): Promise<string[]> {
  const rows = (await db(STATE_TABLE)
    .where({ list_name: listName })
    .update({ watermark: null, high_water: null, checkpoint: null, updated_at: db.fn.now() })
    .returning('job')) as { job: string }[];
  return rows.map((r) => r.job).sort();
}
