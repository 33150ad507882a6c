/** Per-list sync state: the watermark (a platform calendar date) and the in-flight checkpoint. */
import type { Knex } from '../db.js';

export interface SyncState<C = Record<string, unknown>> {
  watermark: string | null;
  checkpoint: C | null;
  lastSuccessAt: Date | null;
}

export async function readState<C>(db: Knex, listName: string, job: string): Promise<SyncState<C>> {
  const row = (await db('listsync.sync_state').where({ list_name: listName, job }).first()) as
    | { watermark: string | null; checkpoint: C | null; last_success_at: Date | null }
    | undefined;
  return { watermark: row?.watermark ?? null, checkpoint: row?.checkpoint ?? null, lastSuccessAt: row?.last_success_at ?? null };
}

export async function writeCheckpoint(db: Knex, listName: string, job: string, checkpoint: object | null): Promise<void> {
  await db('listsync.sync_state')
    .insert({ list_name: listName, job, checkpoint: checkpoint === null ? null : JSON.stringify(checkpoint), updated_at: db.fn.now() })
    .onConflict(['list_name', 'job'])
    .merge(['checkpoint', 'updated_at']);
}

/** Ends a run successfully: the watermark moves (unless null = keep), the checkpoint is cleared. */
export async function completeState(db: Knex, listName: string, job: string, watermark: string | null): Promise<void> {
  const row: Record<string, unknown> = { list_name: listName, job, checkpoint: null, last_success_at: db.fn.now(), updated_at: db.fn.now() };
  const merge = ['checkpoint', 'last_success_at', 'updated_at'];
  if (watermark !== null) {
    row.watermark = watermark;
    merge.push('watermark');
  }
  await db('listsync.sync_state').insert(row).onConflict(['list_name', 'job']).merge(merge);
}
