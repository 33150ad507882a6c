/**
 * A pending edit whose item a pull, real time or reconcile read at a version
 * past the edit's base, under `conflictScope` `field`: the edit is merged
 * field by field against the item read (src/conflicts/merge.ts), without
 * sending anything.
 *
 * - No field both changed differently: nothing to decide; the edit stays
 *   pending and the push sends its fields at the platform's version.
 * - remote-wins: the conflicting fields are decided now, as the push would:
 *   recorded (resolved, both sides kept) and taken out of the edit; an edit
 *   left empty is superseded and its row takes the platform's values.
 * - local-wins and manual: left to the push, which sends the user's fields
 *   (and holds or sends the conflicting ones) in one PATCH.
 * Tests: test/sync/field-merge.test.ts.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { heldItem } from '../mirror/held-items.js';
import type { TableMapping } from '../mirror/index.js';
import { samePlatformValue } from '../mirror/same-value.js';
import type { Version } from '../platform/item-identity.js';
import type { Item } from '../platform/types.js';
import { dropColumns, type OutboxRow } from '../store/outbox.js';
import { wireOrError } from '../sync/push/wire.js';
import { mergeFields } from './merge.js';
import { conflictLocalSide } from './sides.js';

/** The item as read, and the pending edit of it. */
export interface SeenItem {
  item: Item;
  version: Version;
  row: OutboxRow;
}

/** Decides the edit's conflicting fields under remote-wins; returns whether it conflicted and whether the edit is now empty. */
export async function conflictSeenOnRead(
  trx: Knex.Transaction,
  ctx: { config: Config; list: ListConfig; mapping: TableMapping },
  seen: SeenItem,
  record: (local: Record<string, unknown>) => Promise<void>,
): Promise<{ conflict: boolean; emptied: boolean }> {
  const { config, list, mapping } = ctx;
  const zone = config.platform.timeZone;
  const held = await heldItem(trx, mapping, seen.row.item_id!);
  const local = conflictLocalSide(mapping, seen.row.changes);
  const data = wireOrError(mapping, local, zone, held);
  if (!data.ok) return { conflict: false, emptied: false };
  const kinds = new Map(mapping.columns.map((c) => [c.field, c.kind]));
  const merge = mergeFields({
    local: Object.entries(data.value).map(([field, value]) => ({ field, local: value })),
    base: held,
    remote: seen.item,
    same: (field, a, b) => samePlatformValue(kinds.get(field) ?? 'text', a, b, zone),
  });
  if (merge.conflicts.length === 0 || list.conflictPolicy !== 'remote-wins') return { conflict: false, emptied: false };
  const fields = new Set(merge.conflicts.map((c) => c.field));
  const columns = Object.keys(local).filter((c) => fields.has(mapping.byColumn(c)?.field ?? ''));
  await record(Object.fromEntries(columns.map((c) => [c, local[c]])));
  const reason = `conflict in ${columns.join(', ')}: the platform's values were kept (remote-wins); the local values are kept in the conflict`;
  return { conflict: true, emptied: await dropColumns(trx, seen.row.id, columns, reason) };
}
