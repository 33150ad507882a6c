/**
 * A push that finds the platform moved past a change's base: the conflict is
 * recorded with both sides and settled as the list's policy says
 * (src/conflicts/policy.ts), each in one transaction with the
 * change's new state (test/sync/write-back.test.ts; test/sync/latest-edit.test.ts).
 */
import type { Knex } from '../../db.js';
import type { ListConfig } from '../../config.js';
import { upsertItems, type TableMapping } from '../../mirror/index.js';
import type { Version } from '../../platform/item-identity.js';
import type { Item } from '../../platform/types.js';
import * as outbox from '../../store/outbox.js';
import type { OutboxRow } from '../../store/outbox.js';
import { conflictAction } from '../../conflicts/policy.js';
import { recordConflict } from '../../conflicts/recording.js';
import { conflictLocalSide, heldConflictMessage } from '../../conflicts/sides.js';
import type { Outcome } from './outcome.js';
import { exactJsonOf, fail, settleApplied } from './record.js';
import { mergedUpdate } from './field-merge.js';
import { deleteOnPlatform } from './remote.js';
import type { ChangeContext, RemoteSide } from './types.js';
import { wireOrError } from './wire.js';

/**
 * An update's conflict. What it holds (and local-wins sends) is every edit
 * made since the base: the change as it is now in the outbox, never only the
 * part an interrupted write already delivered.
 */
export async function updateConflict(ctx: ChangeContext, row: OutboxRow, remote: RemoteSide, held: Item | null): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  // Field by field unless the list keeps whole-item conflicts.
  if (list.conflictScope === 'field' && row.op === 'update') return mergedUpdate(ctx, row, remote, held);
  const { db, client } = deps;
  const itemId = row.item_id!;
  const latest = { ...row, changes: (await outbox.changesOf(db, row.id)) ?? row.changes };
  const local = conflictLocalSide(mapping, latest.changes);
  const action = conflictAction(list.conflictPolicy, 'update');
  if (action.kind === 'overwrite') {
    const exact = await exactJsonOf(db, mapping, row, 'changes');
    const data = wireOrError(mapping, local, deps.config.platform.timeZone, held, exact);
    if (!data.ok) return fail(db, row, data.error, true, list.maxPushAttempts);
    await outbox.markSending(db, row.id, local, new Date());
    await client.updateItem(list.appID, list.listID, itemId, 0, data.value);
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, latest, local, remote.item, remote.version, 'resolved', 'local-wins', mapping);
      await settleApplied(trx, latest, local, remote.version + 1);
    });
    return { kind: 'conflict', id: itemId, reread: true, version: remote.version + 1, settled: true };
  }
  if (action.kind === 'keep-remote') await keepRemote(ctx, latest, local, remote, action.note);
  else await holdConflict(db, list, mapping, latest, local, remote);
  return { kind: 'conflict', id: itemId, reread: false, version: null, settled: action.kind === 'keep-remote' };
}

/** A delete's conflict: local-wins deletes anyway; remote-wins brings the row back as it is there; manual holds it. */
export async function deleteConflict(ctx: ChangeContext, row: OutboxRow, remote: RemoteSide<Version | null>): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  const itemId = row.item_id!;
  const action = conflictAction(list.conflictPolicy, 'delete');
  if (action.kind === 'overwrite') {
    await deleteOnPlatform(deps, list, itemId);
    await deps.db.transaction(async (trx) => {
      await recordConflict(trx, list, row, row.changes, remote.item, remote.version, 'resolved', 'local-wins', mapping);
      await settleApplied(trx, row, row.changes, null);
    });
  } else if (action.kind === 'keep-remote') {
    // The deleted content stays with the conflict.
    await keepRemote(ctx, row, row.changes, remote, action.note);
  } else {
    await holdConflict(deps.db, list, mapping, row, row.changes, remote);
  }
  return { kind: 'conflict', id: itemId, reread: false, version: null, settled: action.kind !== 'hold' };
}

/** remote-wins: the conflict recorded, the change superseded, the mirror row takes the platform's version. */
async function keepRemote(
  ctx: ChangeContext,
  row: OutboxRow,
  local: Record<string, unknown>,
  remote: RemoteSide<Version | null>,
  note: string,
): Promise<void> {
  const { deps, list, mapping } = ctx;
  await deps.db.transaction(async (trx) => {
    await recordConflict(trx, list, row, local, remote.item, remote.version, 'resolved', 'remote-wins', mapping);
    await outbox.supersede(trx, row.id, note);
    await upsertItems(trx, mapping, [remote.item], deps.config.platform.timeZone);
  });
}

/** conflictPolicy manual: the change waits for `listsync conflicts resolve`. */
async function holdConflict(
  db: Knex,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  local: Record<string, unknown>,
  remote: RemoteSide<Version | null>,
): Promise<void> {
  await db.transaction(async (trx) => {
    await recordConflict(trx, list, row, local, remote.item, remote.version, 'open', null, mapping);
    await outbox.holdAsConflict(trx, row.id, heldConflictMessage(row.op, remote.version, row.base_version), { clearSent: true });
  });
}
