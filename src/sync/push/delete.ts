/**
 * One delete (lists[].pushDeletes): the item is read by ID first; gone counts
 * as applied; at the base version it is deleted; a version that moved is a
 * conflict (push/write-verdict.ts › deleteVerdict; push/conflict.ts ›
 * deleteConflict) (test/sync/write-back.test.ts).
 */
import { heldItem } from '../../mirror/held-items.js';
import { itemVersionNumber } from '../../platform/item-identity.js';
import type { OutboxRow } from '../../store/outbox.js';
import { deleteConflict } from './conflict.js';
import type { Outcome } from './outcome.js';
import { fail, markSending, settleApplied } from './record.js';
import { deleteOnPlatform, readItem } from './remote.js';
import type { ChangeContext } from './types.js';
import { deleteVerdict } from './write-verdict.js';

export async function pushDelete(ctx: ChangeContext, row: OutboxRow): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  const { db } = deps;
  const itemId = row.item_id!;
  await markSending(db, row, row.changes);
  const remote = await readItem(deps, list, itemId);
  // A base that is unknown is never an overwrite: the item must still hold what the mirror last saw.
  const seen = remote.kind === 'found' && itemVersionNumber(row.base_version) === null ? await heldItem(db, mapping, itemId) : null;
  const verdict = deleteVerdict({ remote, mapping, versionField: list.versionField, baseVersion: row.base_version, seen });
  if (verdict.kind === 'fail') return fail(db, row, verdict.error, verdict.final, list.maxPushAttempts);
  if (verdict.kind === 'conflict') return deleteConflict(ctx, row, { item: verdict.item, version: verdict.version });
  if (verdict.kind === 'delete') await deleteOnPlatform(deps, list, itemId);
  await settleApplied(db, row, row.changes, null);
  return { kind: 'deleted' };
}
