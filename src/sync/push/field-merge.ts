/**
 * An update whose base the platform moved past, merged field by field
 * (`lists[].conflictScope` `field`, the default): the three-way merge and the
 * policy are src/conflicts/merge.ts and policy.ts; this carries them out.
 *
 * - One PATCH, at the platform's current version, with the fields only the
 *   user changed (and, under local-wins, the conflicting ones); nothing is
 *   sent when there is nothing to send.
 * - That PATCH refused because the item moved again: the item is read and
 *   merged again (at most MAX_MERGES times), a write whose answer was lost is
 *   recognised as ours (push/write-verdict.ts), so nothing is applied twice.
 * - Then, in one transaction: the conflict of the fields both changed
 *   recorded with those fields alone (src/conflicts/recording.ts), the sent and
 *   same-valued fields settled as applied with what the write produced in the
 *   mirror row, and the conflicting rest superseded (remote-wins) or held
 *   (manual). A process that dies before it re-reads the item and merges
 *   again: the platform then holds the user's values, the same value on both
 *   sides, so nothing is a conflict.
 * Tests: test/sync/field-merge.test.ts.
 */
import { mergeFields, type FieldMerge } from '../../conflicts/merge.js';
import { planFields, policyResolution, type FieldPlan } from '../../conflicts/policy.js';
import { recordConflict } from '../../conflicts/recording.js';
import { conflictLocalSide, heldConflictMessage } from '../../conflicts/sides.js';
import { coerceError } from '../../errors.js';
import { upsertItems, type TableMapping } from '../../mirror/index.js';
import { samePlatformValue } from '../../mirror/same-value.js';
import { recordWrite } from '../../mirror/write-results.js';
import type { Version } from '../../platform/item-identity.js';
import { AuthError, PlatformError } from '../../platform/platform-errors.js';
import type { Item } from '../../platform/types.js';
import * as outbox from '../../store/outbox.js';
import type { OutboxRow } from '../../store/outbox.js';
import type { Outcome } from './outcome.js';
import { exactJsonOf, fail, markSending } from './record.js';
import { readItem } from './remote.js';
import type { ChangeContext, RemoteSide } from './types.js';
import { removedFieldsError, splitRemoved, wireOrError } from './wire.js';
import { afterRejectedWrite } from './write-verdict.js';

/** Merges against an item that keeps moving: after this many, the change is left pending with its error. */
const MAX_MERGES = 3;

/** Whether two platform values of a field are the same, as its column reads them. */
export function sameAs(mapping: TableMapping, zone: string): (field: string, a: unknown, b: unknown) => boolean {
  const kinds = new Map(mapping.columns.map((c) => [c.field, c.kind]));
  return (field, a, b) => samePlatformValue(kinds.get(field) ?? 'text', a, b, zone);
}

interface Merged {
  latest: OutboxRow;
  /** The change's columns now (less removed fields'), and the part naming removed fields. */
  local: Record<string, unknown>;
  removed: Record<string, unknown>;
  merge: FieldMerge;
  plan: FieldPlan;
}

export async function mergedUpdate(
  ctx: ChangeContext,
  row: OutboxRow,
  remote: RemoteSide,
  held: Item | null,
  merges = 1,
): Promise<Outcome> {
  const { deps, list } = ctx;
  const m = await mergeNow(ctx, row, remote, held);
  if ('error' in m) return fail(deps.db, row, m.error, true, list.maxPushAttempts);
  const sentFields = Object.keys(m.plan.send);
  let version = remote.version;
  if (sentFields.length > 0) {
    const sent = await sendMerged(ctx, m, remote);
    if (sent.kind === 'moved' && merges < MAX_MERGES) return mergedUpdate(ctx, row, sent.remote, held, merges + 1);
    if (sent.kind !== 'applied')
      return fail(deps.db, row, sent.kind === 'moved' ? movedError(merges) : sent.error, false, list.maxPushAttempts);
    version = sent.version;
  }
  await settleMerged(ctx, m, remote, sentFields.length > 0 ? version : null);
  const merged = Object.keys(m.merge.send).length;
  if (m.merge.conflicts.length === 0) return { kind: 'applied', id: row.item_id!, version: sentFields.length ? version : null, merged };
  return { kind: 'conflict', id: row.item_id!, reread: false, version: null, merged, settled: m.plan.conflicts !== 'held' };
}

const movedError = (merges: number): string =>
  `the item kept changing on the platform while its fields were merged (${merges} times); the change stays pending and is merged again by the next push`;

async function mergeNow(ctx: ChangeContext, row: OutboxRow, remote: RemoteSide, held: Item | null): Promise<Merged | { error: string }> {
  const { deps, list, mapping } = ctx;
  const zone = deps.config.platform.timeZone;
  const latest = { ...row, changes: (await outbox.changesOf(deps.db, row.id)) ?? row.changes };
  const local = conflictLocalSide(mapping, latest.changes);
  const { removed } = splitRemoved(mapping, latest.changes);
  const data = wireOrError(mapping, local, zone, held, await exactJsonOf(deps.db, mapping, row, 'changes'));
  if (!data.ok) return { error: data.error };
  const fields = Object.entries(data.value).map(([field, value]) => ({ field, local: value }));
  const merge = mergeFields({ local: fields, base: held, remote: remote.item, same: sameAs(mapping, zone) });
  return { latest, local, removed, merge, plan: planFields(list.conflictPolicy, merge) };
}

type Sent = { kind: 'applied'; version: Version } | { kind: 'moved'; remote: RemoteSide } | { kind: 'failed'; error: string };

/** The merged PATCH at the platform's version; a lost answer is read back, an item that moved again is merged again. */
async function sendMerged(ctx: ChangeContext, m: Merged, remote: RemoteSide): Promise<Sent> {
  const { deps, list, mapping } = ctx;
  const itemId = m.latest.item_id!;
  await markSending(deps.db, m.latest, columnsOf(mapping, m.local, Object.keys(m.plan.send)));
  for (let sends = 1; ; sends++) {
    try {
      await deps.client.updateItem(list.appID, list.listID, itemId, remote.version, m.plan.send);
      return { kind: 'applied', version: remote.version + 1 };
    } catch (err) {
      if (err instanceof AuthError || !(err instanceof PlatformError)) throw err;
      const verdict = afterRejectedWrite({
        remote: await readItem(deps, list, itemId),
        itemId,
        versionField: list.versionField,
        error: coerceError(err).message,
        maybeApplied: err.maybeApplied,
        base: remote.version,
        sends,
        sent: { mapping, held: remote.item, data: m.plan.send },
      });
      if (verdict.kind === 'send') continue;
      if (verdict.kind === 'applied') return { kind: 'applied', version: verdict.version };
      if (verdict.kind === 'conflict') return { kind: 'moved', remote: { item: verdict.item, version: verdict.version } };
      return { kind: 'failed', error: verdict.kind === 'fail' ? verdict.error : coerceError(err).message };
    }
  }
}

/** The merge's outcome written in one transaction: conflict recorded, sent and same fields applied, the rest superseded or held. */
async function settleMerged(ctx: ChangeContext, m: Merged, remote: RemoteSide, writtenVersion: Version | null): Promise<void> {
  const { deps, list, mapping } = ctx;
  const itemId = m.latest.item_id!;
  const conflictFields = m.merge.conflicts.map((c) => c.field);
  const settled = columnsOf(mapping, m.local, [...Object.keys(m.plan.send), ...m.merge.same]);
  await deps.db.transaction(async (trx) => {
    // The conflict first: its base is the mirror row's _raw before the write is recorded there.
    if (conflictFields.length) {
      const status = m.plan.conflicts === 'held' ? 'open' : 'resolved';
      const local = columnsOf(mapping, m.local, conflictFields);
      const side = platformSide(list.versionField, m, remote, writtenVersion);
      await recordConflict(trx, list, m.latest, local, side.item, side.version, status, policyResolution(m.plan.conflicts), mapping);
    }
    if (Object.keys(settled).length) await outbox.settleSentEdit(trx, m.latest.id, settled, writtenVersion ?? remote.version);
    if (writtenVersion !== null) await recordWrite(trx, mapping, { id: itemId, version: writtenVersion, data: m.plan.send });
    if (Object.keys(m.removed).length) await outbox.keepUnsendable(trx, m.latest.id, m.removed, removedFieldsError(mapping, m.removed));
    if (m.plan.conflicts === 'kept-remote') {
      await outbox.supersede(
        trx,
        m.latest.id,
        `conflict in ${conflictFields.join(', ')}: the platform's values were kept (remote-wins); the local values are kept in the conflict`,
      );
      if (writtenVersion === null) await upsertItems(trx, mapping, [remote.item], deps.config.platform.timeZone);
    } else if (m.plan.conflicts === 'held') {
      await outbox.holdAsConflict(trx, m.latest.id, heldConflictMessage('update', remote.version, m.latest.base_version), {
        clearSent: true,
      });
    }
  });
}

/**
 * The conflict's platform side: what the platform holds once the merged write
 * went through (its version, the fields sent), so a page drawn from it offers
 * the version a resolve will find; under local-wins the values the write
 * overwrote, which is what the conflict is there to keep.
 */
function platformSide(versionField: string, m: Merged, remote: RemoteSide, writtenVersion: Version | null): RemoteSide {
  if (writtenVersion === null || m.plan.conflicts === 'sent') return remote;
  return { item: { ...remote.item, ...m.plan.send, [versionField]: writtenVersion }, version: writtenVersion };
}

/** The change's columns whose fields are among `fields`. */
function columnsOf(mapping: TableMapping, local: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const wanted = new Set(fields);
  return Object.fromEntries(Object.entries(local).filter(([column]) => wanted.has(mapping.byColumn(column)?.field ?? '')));
}
