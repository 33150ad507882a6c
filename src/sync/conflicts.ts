/**
 * Write-back conflicts: recorded with both sides, settled by the list's policy
 * (remote-wins, local-wins) or held for `listsync conflicts resolve` (manual).
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { upsertItems, type TableMapping, type UpsertResult } from '../mirror/index.js';
import type { Item } from '../platform/types.js';

export interface OutboxRow {
  id: number;
  list_name: string;
  op: 'update' | 'create' | 'delete';
  item_id: string | null;
  local_id: string | null;
  /** For a delete: the row's whole content (field columns). */
  changes: Record<string, unknown>;
  sent_changes: Record<string, unknown> | null;
  base_version: number | null;
  status: string;
  attempts: number;
  /** Creates: when first sent, and how many times. */
  attempted_at: Date | null;
  sends: number;
  /** Creates: the local row was deleted before the create was confirmed. */
  withdrawn_at: Date | null;
}

export async function supersede(trx: Knex.Transaction, outboxId: number, reason: string): Promise<void> {
  await trx('listsync.outbox').where({ id: outboxId }).update({ status: 'superseded', sent_changes: null, last_error: reason, updated_at: trx.fn.now() });
}

export async function recordConflict(
  trx: Knex.Transaction,
  list: ListConfig,
  row: Pick<OutboxRow, 'id' | 'item_id' | 'base_version'> & { op?: OutboxRow['op'] },
  local: Record<string, unknown>,
  remote: Item,
  remoteVersion: number,
  status: 'open' | 'resolved',
  resolution: string | null,
  mapping: TableMapping,
): Promise<void> {
  // The values the change was made on: the mirror row's _raw, before anything overwrites it.
  const base = row.item_id ? ((await trx.withSchema(mapping.schema).from(mapping.table).where({ id: row.item_id }).first('_raw')) as { _raw: Item | null } | undefined)?._raw : undefined;
  await trx('listsync.conflicts').insert({
    base: base ? JSON.stringify(base) : null,
    outbox_id: row.id,
    op: row.op === 'delete' ? 'delete' : 'update',
    list_name: list.name,
    item_id: row.item_id,
    policy: list.conflictPolicy,
    base_version: row.base_version,
    remote_version: remoteVersion,
    local: JSON.stringify(local),
    remote: JSON.stringify(remote),
    status,
    resolution,
    resolved_at: status === 'resolved' ? trx.fn.now() : null,
  });
}

/**
 * For the pull: rows it did not overwrite because a local change is open. When
 * the platform moved past the change's base version, the change is a conflict.
 */
export function pendingConflictHandler(config: Config, list: ListConfig) {
  return async (trx: Knex.Transaction, mapping: TableMapping, skipped: UpsertResult['skippedPending']): Promise<{ conflicts: number }> => {
    let conflicts = 0;
    const superseded: Item[] = [];
    for (const s of skipped) {
      if (s.remoteVersion === null || s.baseVersion === null || s.baseVersion === 0 || s.remoteVersion <= s.baseVersion) continue;
      const row = (await trx('listsync.outbox').where({ list_name: list.name, item_id: s.id, status: 'pending', op: 'update' }).first()) as OutboxRow | undefined;
      if (!row) continue;
      conflicts++;
      if (list.conflictPolicy === 'remote-wins') {
        await recordConflict(trx, list, row, row.changes, s.item, s.remoteVersion, 'resolved', 'remote-wins', mapping);
        await supersede(trx, row.id, "conflict: the platform's newer version won (remote-wins)");
        superseded.push(s.item);
      } else if (list.conflictPolicy === 'local-wins') {
        await recordConflict(trx, list, row, row.changes, s.item, s.remoteVersion, 'resolved', 'local-wins', mapping);
        // The next push overwrites the platform's version.
        await trx('listsync.outbox').where({ id: row.id }).update({ base_version: 0, updated_at: trx.fn.now() });
      } else {
        await recordConflict(trx, list, row, row.changes, s.item, s.remoteVersion, 'open', null, mapping);
        await trx('listsync.outbox')
          .where({ id: row.id })
          .update({ status: 'conflict', last_error: `conflict: the platform is at version ${s.remoteVersion}, the change was made on ${row.base_version}; settle it with "listsync conflicts resolve"`, updated_at: trx.fn.now() });
      }
    }
    if (superseded.length) await upsertItems(trx, mapping, superseded, config.platform.timeZone);
    return { conflicts };
  };
}


export interface ConflictRow {
  id: number;
  outbox_id: number | null;
  list_name: string;
  item_id: string;
  policy: string;
  /** What the local change was: an update of fields, or a delete of the row (`local` then holds its content). */
  op: 'update' | 'delete';
  base_version: number | null;
  remote_version: number | null;
  local: Record<string, unknown>;
  remote: Item | null;
  base: Item | null;
  status: 'open' | 'resolved';
  resolution: string | null;
  created_at: Date;
  resolved_at: Date | null;
}

export async function listConflicts(db: Knex, options: { list?: string; all?: boolean } = {}): Promise<ConflictRow[]> {
  const q = db('listsync.conflicts').orderBy('id');
  if (options.list) q.where({ list_name: options.list });
  if (!options.all) q.where({ status: 'open' });
  return (await q) as ConflictRow[];
}

export async function getConflict(db: Knex, id: number): Promise<ConflictRow | undefined> {
  return (await db('listsync.conflicts').where({ id }).first()) as ConflictRow | undefined;
}

export interface ConflictField {
  field: string;
  column: string;
  base: unknown;
  local: unknown;
  remote: unknown;
}

/** Field by field: the value the change was made on, the local value, the platform's. */
export function conflictFields(mapping: TableMapping, c: ConflictRow): ConflictField[] {
  const base = c.base ?? {};
  return Object.entries(c.local).map(([column, local]) => {
    const field = mapping.byColumn(column)?.field ?? column;
    return { field, column, base: base[field] ?? null, local, remote: c.remote?.[field] ?? null };
  });
}

/**
 * Settles an open conflict. `local`: the change goes back to pending against
 * the platform's version (the next push sends it; a newer edit there makes a
 * new conflict). `remote`: the change is dropped and the mirror row takes the
 * platform's values.
 */
export async function resolveConflict(db: Knex, mapping: TableMapping, config: Config, c: ConflictRow, keep: 'local' | 'remote', remoteNow?: Item): Promise<void> {
  await db.transaction(async (trx) => {
    if (keep === 'local') {
      await trx('listsync.outbox')
        .where({ id: c.outbox_id })
        .update({ status: 'pending', base_version: c.remote_version, attempts: 0, last_error: null, next_attempt_at: trx.fn.now(), updated_at: trx.fn.now() });
    } else {
      if (c.outbox_id !== null) await supersede(trx, c.outbox_id, 'conflict resolved: kept the platform\'s version');
      const remote = remoteNow ?? c.remote;
      if (remote) await upsertItems(trx, mapping, [remote], config.platform.timeZone);
    }
    await trx('listsync.conflicts').where({ id: c.id }).update({ status: 'resolved', resolution: keep, resolved_at: trx.fn.now() });
  });
}
