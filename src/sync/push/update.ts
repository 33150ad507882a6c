/**
 * One update: PATCH with RowVersion = the change's base and only the changed
 * fields. A write a stopped push left in flight is settled from the item read
 * back before anything is sent again; a base that is unknown is never sent
 * as RowVersion 0; a rejected or unanswered PATCH is settled from the item
 * read back (push/write-verdict.ts), sent at most twice
 * (test/sync/write-back-faults.test.ts; test/sync/latest-edit.test.ts).
 */
import { coerceError } from '../../errors.js';
import { heldItem } from '../../mirror/held-items.js';
import { itemVersionNumber, type Version } from '../../platform/item-identity.js';
import { AuthError, PlatformError } from '../../platform/platform-errors.js';
import type { Item } from '../../platform/types.js';
import type { OutboxRow } from '../../store/outbox.js';
import { noteFieldRefusal } from '../list-fields.js';
import { updateConflict } from './conflict.js';
import type { Outcome } from './outcome.js';
import { exactJsonOf, fail, markSending, settleApplied } from './record.js';
import { readItem } from './remote.js';
import type { ChangeContext } from './types.js';
import { removedFieldsError, splitRemoved, wireOrError } from './wire.js';
import { afterEarlierWrite, afterRejectedWrite, unknownBase, type WriteVerdict } from './write-verdict.js';

export async function pushUpdate(ctx: ChangeContext, row: OutboxRow): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  const { db, client } = deps;
  const itemId = row.item_id!;
  const held = await heldItem(db, mapping, itemId);
  if (row.status === 'sending' && row.sent_changes) {
    // A push stopped with this write in flight: the platform is asked what became of it before anything is sent again.
    const earlier = await settleEarlierWrite(ctx, row, held);
    if (earlier) return earlier;
    row = { ...row, sent_changes: null };
  }
  const { sendable: sent, removed } = splitRemoved(mapping, row.changes);
  if (Object.keys(sent).length === 0) return fail(db, row, removedFieldsError(mapping, removed), true, list.maxPushAttempts);
  const data = wireOrError(mapping, sent, deps.config.platform.timeZone, held, await exactJsonOf(db, mapping, row, 'changes'));
  if (!data.ok) return fail(db, row, data.error, true, list.maxPushAttempts);
  const known = await baseOf(ctx, row, held);
  if (known.kind !== 'base') return known.outcome;
  const base = known.base;
  const write = { mapping, id: itemId, data: data.value, removed };
  // A write whose answer was lost (a timeout) is read back before it is sent again, and sent at most twice.
  for (let sends = 1; ; sends++) {
    await markSending(db, row, sent);
    try {
      await client.updateItem(list.appID, list.listID, itemId, base, data.value);
      const version = base === 0 ? null : base + 1;
      await settleApplied(db, row, sent, version, { ...write, version });
      return { kind: 'applied', id: itemId, version };
    } catch (err) {
      if (err instanceof AuthError) throw err;
      if (!(err instanceof PlatformError)) return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
      // Any rejection: look at the item's current version before deciding.
      const verdict = afterRejectedWrite({
        remote: await readItem(deps, list, itemId),
        itemId,
        versionField: list.versionField,
        error: coerceError(err).message,
        maybeApplied: err.maybeApplied,
        base,
        sends,
        sent: { mapping, held, data: data.value },
      });
      if (verdict.kind === 'send') continue; // not applied: sent once more
      if (verdict.kind === 'refused') {
        await noteFieldRefusal(db, list, mapping, err);
        return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
      }
      if (verdict.kind === 'applied') {
        // Our own attempt was applied; the answer was lost, or a retry saw its echo.
        await settleApplied(db, row, sent, verdict.version, { ...write, version: verdict.version });
        return { kind: 'applied', id: itemId, version: verdict.version };
      }
      return settleVerdict(ctx, row, verdict, held);
    }
  }
}

/** A verdict that ends the change without a send: failed or a conflict. */
function settleVerdict(
  ctx: ChangeContext,
  row: OutboxRow,
  verdict: Extract<WriteVerdict, { kind: 'fail' | 'conflict' }>,
  held: Item | null,
): Promise<Outcome> {
  if (verdict.kind === 'fail') return fail(ctx.deps.db, row, verdict.error, verdict.final, ctx.list.maxPushAttempts);
  return updateConflict(ctx, row, { item: verdict.item, version: verdict.version }, held);
}

/**
 * A write a stopped push left in flight (`sent_changes`): applied when the item
 * is at base + 1 carrying what was sent (the edits made since stay pending
 * against it); not applied when it is still at the base (undefined: the whole
 * change is sent); otherwise the platform moved on, a conflict holding every
 * edit made since the base.
 */
async function settleEarlierWrite(ctx: ChangeContext, row: OutboxRow, held: Item | null): Promise<Outcome | undefined> {
  const { deps, list, mapping } = ctx;
  const { db } = deps;
  const base = itemVersionNumber(row.base_version);
  if (base === null || base === 0) return undefined;
  const { sendable, removed } = splitRemoved(mapping, row.sent_changes ?? {});
  const data = wireOrError(mapping, sendable, deps.config.platform.timeZone, held, await exactJsonOf(db, mapping, row, 'sent_changes'));
  if (!data.ok) return undefined;
  const itemId = row.item_id!;
  const remote = await readItem(deps, list, itemId);
  const verdict = afterEarlierWrite({ remote, itemId, versionField: list.versionField, base, sent: { mapping, held, data: data.value } });
  if (verdict.kind === 'send' || verdict.kind === 'refused') return undefined;
  if (verdict.kind === 'applied') {
    await settleApplied(db, row, sendable, verdict.version, { mapping, id: itemId, data: data.value, removed, version: verdict.version });
    return { kind: 'applied', id: itemId, version: verdict.version };
  }
  return settleVerdict(ctx, row, verdict, held);
}

type BaseOf = { kind: 'base'; base: Version } | { kind: 'settled'; outcome: Outcome };

/**
 * The version the change was made on. Unknown (NULL or a refill marker, from
 * a capture made before the mirror knew the item's version): the item is read
 * and its version is the base only when it still holds what the mirror last
 * saw of it (`_raw`); otherwise it is a conflict. Never RowVersion 0 by default.
 */
async function baseOf(ctx: ChangeContext, row: OutboxRow, held: Item | null): Promise<BaseOf> {
  const base = itemVersionNumber(row.base_version);
  if (base !== null) return { kind: 'base', base };
  const { deps, list, mapping } = ctx;
  const itemId = row.item_id!;
  const remote = await readItem(deps, list, itemId);
  const seen = remote.kind === 'found' ? await heldItem(deps.db, mapping, itemId) : null;
  const verdict = unknownBase({ remote, itemId, mapping, versionField: list.versionField, seen });
  if (verdict.kind === 'base') return verdict;
  return { kind: 'settled', outcome: await settleVerdict(ctx, row, verdict, held) };
}
