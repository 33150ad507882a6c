/**
 * Write-back conflicts: recorded with both sides, settled by the list's policy
 * (remote-wins, local-wins) or held for `listsync conflicts resolve` (manual).
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { upsertItems, type TableMapping, type UpsertResult } from '../mirror/index.js';
import type { Version } from '../platform/item-identity.js';
import type { Item } from '../platform/types.js';
import { heldItem } from '../mirror/held-items.js';
import { heldConflictMessage, pullSeesConflict } from './sides.js';
import { conflictSeenOnRead } from './seen-on-read.js';
import { insertConflict, markResolved, refreshOpenConflicts, type ConflictRow, type ConflictStatus } from '../store/conflicts.js';
import { forceOverwrite, holdAsConflict, pendingUpdateOf, requeueAgainst, supersede, type OutboxRow } from '../store/outbox.js';

export async function recordConflict(
  trx: Knex.Transaction,
  list: ListConfig,
  row: Pick<OutboxRow, 'id' | 'item_id' | 'base_version'> & { op?: OutboxRow['op'] },
  local: Record<string, unknown>,
  remote: Item,
  remoteVersion: Version | null,
  status: ConflictStatus,
  resolution: string | null,
  mapping: TableMapping,
): Promise<void> {
  // The values the change was made on: the mirror row's _raw, before anything overwrites it.
  const base = row.item_id ? await heldItem(trx, mapping, row.item_id) : undefined;
  await insertConflict(trx, {
    base,
    outboxId: row.id,
    op: row.op === 'delete' ? 'delete' : 'update',
    listName: list.name,
    itemId: row.item_id,
    policy: list.conflictPolicy,
    baseVersion: row.base_version,
    remoteVersion,
    local,
    remote,
    status,
    resolution,
  });
}

/**
 * For the pull, real time and reconcile: rows they did not overwrite because
 * a local change is open. An open conflict of the item takes the platform's
 * latest version and values (so it can always be settled). When the platform
 * moved past a pending change's base: with `conflictScope` `item` the change
 * is a conflict now; with `field` it is merged field by field
 * (src/conflicts/seen-on-read.ts) and what is not decided there is merged by
 * the push against what the platform holds then (src/sync/push/field-merge.ts).
 */
export function pendingConflictHandler(config: Config, list: ListConfig) {
  return async (trx: Knex.Transaction, mapping: TableMapping, skipped: UpsertResult['skippedPending']): Promise<{ conflicts: number }> => {
    let conflicts = 0;
    const superseded: Item[] = [];
    for (const s of skipped) {
      if (s.remoteVersion !== null) await refreshOpenConflicts(trx, list.name, s.id, s.item, s.remoteVersion);
      if (!pullSeesConflict(s) || s.remoteVersion === null) continue;
      const row = await pendingUpdateOf(trx, list.name, s.id);
      if (!row) continue;
      if (list.conflictScope === 'field') {
        const remoteVersion = s.remoteVersion;
        const record = (local: Record<string, unknown>) =>
          recordConflict(trx, list, row, local, s.item, remoteVersion, 'resolved', 'remote-wins', mapping);
        const seen = await conflictSeenOnRead(trx, { config, list, mapping }, { item: s.item, version: remoteVersion, row }, record);
        if (seen.conflict) conflicts++;
        if (seen.emptied) superseded.push(s.item);
        continue;
      }
      conflicts++;
      if (list.conflictPolicy === 'remote-wins') {
        await recordConflict(trx, list, row, row.changes, s.item, s.remoteVersion, 'resolved', 'remote-wins', mapping);
        await supersede(trx, row.id, "conflict: the platform's newer version won (remote-wins)");
        superseded.push(s.item);
      } else if (list.conflictPolicy === 'local-wins') {
        await recordConflict(trx, list, row, row.changes, s.item, s.remoteVersion, 'resolved', 'local-wins', mapping);
        // The next push overwrites the platform's version.
        await forceOverwrite(trx, row.id);
      } else {
        await recordConflict(trx, list, row, row.changes, s.item, s.remoteVersion, 'open', null, mapping);
        await holdAsConflict(trx, row.id, heldConflictMessage('update', s.remoteVersion, row.base_version));
      }
    }
    if (superseded.length) await upsertItems(trx, mapping, superseded, config.platform.timeZone);
    return { conflicts };
  };
}

export interface ConflictField {
  field: string;
  /** The field's display name (the slot when it has none). */
  name: string;
  /** The display name with the slot beside it (`Note (Text2)`), or the slot alone. */
  label: string;
  column: string;
  base: unknown;
  local: unknown;
  remote: unknown;
}

/** Field by field: the value the change was made on, the local value, the platform's. */
export function conflictFields(mapping: TableMapping, c: ConflictRow): ConflictField[] {
  const base = c.base ?? {};
  return Object.entries(c.local).map(([column, local]) => {
    const col = mapping.byColumn(column);
    const field = col?.field ?? column;
    const label = col?.displayName && col.displayName !== field ? `${col.displayName} (${field})` : field;
    return { field, name: col?.displayName || field, label, column, base: base[field] ?? null, local, remote: c.remote?.[field] ?? null };
  });
}

/**
 * Settles a conflict (an open one, or for `local` one remote-wins settled).
 * `local`: the change goes back to pending against the platform's version
 * (`againstVersion`: the one read just now; else the recorded one), holding
 * the conflict's local side (every edit made since the base). `remote`: the
 * change is dropped and the mirror row takes the platform's values.
 */
export async function resolveConflict(
  db: Knex,
  mapping: TableMapping,
  config: Config,
  c: ConflictRow,
  keep: 'local' | 'remote',
  remoteNow?: Item,
  againstVersion?: number | null,
): Promise<void> {
  await db.transaction(async (trx) => {
    if (keep === 'local') {
      // What is sent is the conflict's local side: every edit made since the base (the outbox row may be superseded).
      await requeueAgainst(trx, c.outbox_id, againstVersion ?? c.remote_version, c.local);
    } else {
      if (c.outbox_id !== null) await supersede(trx, c.outbox_id, "conflict resolved: kept the platform's version");
      const remote = remoteNow ?? c.remote;
      if (remote) await upsertItems(trx, mapping, [remote], config.platform.timeZone);
    }
    await markResolved(trx, c.id, keep);
  });
}
