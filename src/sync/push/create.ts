/**
 * One create: POST, then the mirror row takes the platform's ID. A create
 * whose answer was lost (or that a stopped push left 'sending') is looked for
 * on the platform first (push/lost-creates.ts): found → adopted, not found →
 * sent again, once; ambiguous → failed, naming the candidates
 * (push/lost-create-verdict.ts). A withdrawn create (its local row was
 * deleted) is looked for the same way and the item deleted if it was created
 * after all (test/sync/write-back-faults.test.ts).
 */
import { coerceError } from '../../errors.js';
import { adoptCreatedId } from '../../mirror/held-items.js';
import { recordWrite } from '../../mirror/write-results.js';
import { AuthError, PlatformError } from '../../platform/platform-errors.js';
import * as outbox from '../../store/outbox.js';
import type { OutboxRow } from '../../store/outbox.js';
import { lostAgainError, lostCreateVerdict, withdrawVerdict } from './lost-create-verdict.js';
import { findCreated, type LostCreateSearch } from './lost-creates.js';
import type { Outcome } from './outcome.js';
import { exactJsonOf, fail, markSending } from './record.js';
import { deleteOnPlatform } from './remote.js';
import { DEFAULT_REREAD_DELAYS_MS } from './settle-mirror.js';
import type { ChangeContext } from './types.js';
import { removedFieldsError, splitRemoved, wireOrError } from './wire.js';

/** The version of an item just created (the platform counts versions from 1; a later write is checked against it). */
const FIRST_VERSION = 1;

export async function pushCreate(ctx: ChangeContext, row: OutboxRow): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  const { db, client } = deps;
  // Columns of fields removed from the platform are never sent: the item is created with the rest (settleCreated).
  const { sendable: sent, removed } = splitRemoved(mapping, row.sent_changes ?? row.changes);
  if (Object.keys(sent).length === 0 && Object.keys(removed).length > 0)
    return fail(db, row, removedFieldsError(mapping, removed), true, list.maxPushAttempts);
  const exact = await exactJsonOf(db, mapping, row, row.sent_changes ? 'sent_changes' : 'changes');
  const data = wireOrError(mapping, sent, deps.config.platform.timeZone, null, exact);
  if (!data.ok) return fail(db, row, data.error, true, list.maxPushAttempts);

  // Sent before without a confirmed answer (a stopped push, an interrupted one): look before sending again.
  let resends = 1;
  if (row.sends > 0 && row.attempted_at) {
    const settled = await settleSearch(ctx, row, sent, await searchLostCreate(ctx, data.value, row.attempted_at), 'an earlier attempt');
    if (settled) return settled;
    resends = 0; // this send is the one resend
  }
  for (;;) {
    const attemptedAt = await markSending(db, row, sent, { create: true });
    try {
      const id = await client.createItem(list.appID, list.listID, data.value);
      return await settleCreated(ctx, row, sent, id);
    } catch (err) {
      if (err instanceof AuthError) throw err;
      if (!(err instanceof PlatformError && err.maybeApplied)) return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
      const search = await searchLostCreate(ctx, data.value, row.attempted_at ?? attemptedAt);
      const settled = await settleSearch(ctx, row, sent, search, `a create whose answer was lost (${err.message})`);
      if (settled) return settled;
      if (resends-- <= 0) return fail(db, row, lostAgainError(err.message), true, list.maxPushAttempts);
      row = { ...row, attempted_at: row.attempted_at ?? attemptedAt, sends: row.sends + 1 };
    }
  }
}

/** A lost create found (adopted), ambiguous (failed) or not found (undefined: the caller sends it). */
async function settleSearch(
  ctx: ChangeContext,
  row: OutboxRow,
  sent: Record<string, unknown>,
  search: LostCreateSearch,
  what: string,
): Promise<Outcome | undefined> {
  const verdict = lostCreateVerdict(search, what, row.local_id);
  if (verdict.kind === 'adopt') {
    ctx.deps.logger.info(
      { list: ctx.list.name, outbox: row.id, item: verdict.id },
      'a create whose answer was lost was found on the platform; the local row takes its ID',
    );
    return settleCreated(ctx, row, sent, verdict.id);
  }
  if (verdict.kind === 'fail') return fail(ctx.deps.db, row, verdict.error, true, ctx.list.maxPushAttempts);
  return undefined;
}

/** The lost create's search, repeated with backoff while nothing is found (the platform's queries may lag). */
async function searchLostCreate(ctx: ChangeContext, data: Record<string, string>, since: Date): Promise<LostCreateSearch> {
  const { deps, list, mapping } = ctx;
  const lookup = { db: deps.db, client: deps.client, zone: deps.config.platform.timeZone };
  let search = await findCreated(lookup, list, mapping, data, since);
  for (const delay of deps.rereadDelaysMs ?? DEFAULT_REREAD_DELAYS_MS) {
    if (search.kind !== 'none') break;
    await sleep(delay);
    search = await findCreated(lookup, list, mapping, data, since);
  }
  return search;
}

/** A create whose local row was deleted: nothing is left behind, on the platform either. */
export async function withdrawCreate(ctx: ChangeContext, row: OutboxRow): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  const data = wireOrError(mapping, row.sent_changes ?? row.changes, deps.config.platform.timeZone);
  const sentBefore = row.sends > 0 && row.attempted_at && data.ok;
  const verdict = withdrawVerdict(sentBefore ? await searchLostCreate(ctx, data.value, row.attempted_at!) : undefined);
  if (verdict.kind === 'fail') return fail(deps.db, row, verdict.error, true, list.maxPushAttempts);
  if (verdict.kind === 'delete') await deleteOnPlatform(deps, list, verdict.id);
  await outbox.supersede(deps.db, row.id, verdict.note);
  return { kind: 'withdrawn' };
}

/**
 * The item exists on the platform with `id`: the local row takes it (or, when
 * a pull already brought the item in, gives way to it). A create withdrawn
 * meanwhile (its row deleted while the create was in flight) deletes the item.
 */
async function settleCreated(ctx: ChangeContext, row: OutboxRow, sent: Record<string, unknown>, id: string): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  const data = wireOrError(mapping, sent, deps.config.platform.timeZone);
  // The part naming removed fields was never sent: kept as a failed change of the new item, saying why.
  const { removed } = splitRemoved(mapping, row.changes);
  const withdrawn = await deps.db.transaction(async (trx) => {
    if (await outbox.lockWithdrawn(trx, row.id)) return true;
    await adoptCreatedId(trx, mapping, row.local_id, id);
    // Edits made to the row while it was being created stay pending as an update of the new item.
    await outbox.settleSentCreate(trx, row.id, { ...sent, ...removed }, id, FIRST_VERSION);
    if (Object.keys(removed).length > 0) await outbox.keepUnsendable(trx, row.id, removed, removedFieldsError(mapping, removed));
    await recordWrite(trx, mapping, { id, version: FIRST_VERSION, data: data.ok ? data.value : {} });
    return false;
  });
  if (!withdrawn) return { kind: 'created', id };
  await deleteOnPlatform(deps, list, id);
  await outbox.supersede(
    deps.db,
    row.id,
    `withdrawn: the local row was deleted while it was being created; item ${id} was deleted on the platform`,
  );
  return { kind: 'withdrawn' };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
