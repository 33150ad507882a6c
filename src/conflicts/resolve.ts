/**
 * Settling one open conflict by hand: `listsync conflicts resolve` and the
 * console's buttons run this same operation, recorded the same way
 * (`listsync.conflicts.resolution` = the side kept).
 *
 * Invariants:
 * - under the list's lock, the conflict is read again: one settled meanwhile
 *   (by another operator, or a push) is refused, not settled twice;
 * - the platform is asked again (an `In` query by ID) before anything
 *   changes, and what it answers becomes the conflict's platform side (its
 *   latest version and values), so a refusal is always followed by a page
 *   that shows what is current (test/console/console-browser.test.ts);
 * - with `seenVersion` (the console carries the platform version its page
 *   showed), a version other than the one seen is refused with nothing else
 *   changed (test/console/console-http.test.ts › "an item that moved since the page was drawn is refused");
 * - a platform that cannot answer that read changes nothing: the error is
 *   thrown as it is (`ConflictReadError`) for the caller to say so;
 * - keeping local queues the change against the platform's current version
 *   and sends it at once; a platform that does not take it now leaves it
 *   queued with its error, and the sentence says when it will go
 *   (test/sync/field-merge.test.ts);
 * - keeping remote takes the platform's current row, not the one recorded.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { coerceError, UsageError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { TableMapping } from '../mirror/index.js';
import type { PlatformClient } from '../platform/client.js';
import { queryItemsByIds } from '../platform/item-lookup.js';
import type { Item } from '../platform/types.js';
import { itemId, versionOf, versionText, type Version } from '../platform/item-identity.js';
import { getConflict, refreshOpenConflicts, type ConflictRow } from '../store/conflicts.js';
import { resolveConflict } from './recording.js';
import { listLockName, withLock } from '../sync/lock.js';
import { loadMappingOrExplain } from '../sync/push/mapping.js';
import { rereadItems } from '../sync/push/remote.js';
import { sendResolved } from './send-resolved.js';

export interface SettleDeps {
  db: Knex;
  config: Config;
  client: PlatformClient;
  logger: Logger;
}

/** The item moved on the platform since the version the operator saw: nothing was changed. */
export class ConflictMovedError extends UsageError {
  readonly moved = true;
}

/** The platform could not be asked about the item before settling: nothing was changed. */
export class ConflictReadError extends Error {
  constructor(
    readonly conflictId: number,
    readonly itemId: string,
    cause: unknown,
  ) {
    super(
      `Conflict ${conflictId}: the platform could not be asked about item ${itemId} (${coerceError(cause).message}); nothing was changed, the conflict is as it was. Try again when the platform answers.`,
      { cause },
    );
    this.name = 'ConflictReadError';
  }
}

/**
 * An open conflict and its list, or a UsageError that says why not. Keeping local is also allowed on a
 * conflict remote-wins already settled: its local side is every edit the user made since the base
 * (test/sync/latest-edit.test.ts › "remote-wins: … resolve --keep local sends edit2 …").
 */
export async function openConflictOrExplain(
  db: Knex,
  config: Config,
  id: number,
  keep?: 'local' | 'remote',
): Promise<{ c: ConflictRow; list: ListConfig }> {
  const c = await getConflict(db, id);
  if (!c) throw new UsageError(`No conflict with id ${id}; "listsync conflicts" lists the open ones.`);
  const list = config.lists.find((l) => l.name === c.list_name);
  if (!list) throw new UsageError(`Conflict ${id} belongs to list "${c.list_name}", which is no longer in the config.`);
  const overridable = keep === 'local' && c.resolution === 'remote-wins' && c.op === 'update';
  if (c.status !== 'open' && !overridable) throw new UsageError(`Conflict ${id} is already resolved (${c.resolution ?? 'resolved'}).`);
  return { c, list };
}

/** Keeps the local change or the platform's version; returns the sentence that says what happened. */
export async function settleConflict(
  deps: SettleDeps,
  id: number,
  keep: 'local' | 'remote',
  options: { seenVersion?: Version } = {},
): Promise<string> {
  const { list } = await openConflictOrExplain(deps.db, deps.config, id, keep);
  const mapping = await loadMappingOrExplain(deps.db, deps.config, list);
  return withLock(deps.db, listLockName(list.name), { waitMs: 60_000 }, async () => {
    // Read again under the lock: a push or another operator may have settled it meanwhile.
    const { c } = await openConflictOrExplain(deps.db, deps.config, id, keep);
    const now = await currentItem(deps, list, c);
    if (options.seenVersion !== undefined) refuseIfMoved(list, c, now, options.seenVersion);
    if (keep === 'local') return keepLocal(deps, list, mapping, c, now);
    await resolveConflict(deps.db, mapping, deps.config, c, 'remote', now);
    if (!now) await rereadItems(deps, list, mapping, [c.item_id]);
    return `conflict ${id}: kept the platform's version; the local change is dropped and the mirror row updated.`;
  });
}

/** Keep local: queued against the platform's version now, then sent at once. */
async function keepLocal(
  deps: SettleDeps,
  list: ListConfig,
  mapping: TableMapping,
  c: ConflictRow,
  now: Item | undefined,
): Promise<string> {
  const against = (now ? versionOf(now, list.versionField) : null) ?? c.remote_version;
  await resolveConflict(deps.db, mapping, deps.config, c, 'local', undefined, against);
  const sent = await sendResolved(deps, list, mapping, c.outbox_id);
  if (sent.kind === 'applied')
    return `conflict ${c.id}: keeping the local change; it was sent at the platform's version ${against ?? '-'} and applied.`;
  const when = list.schedule.push
    ? `the next scheduled push (${list.schedule.push}) sends it`
    : `no push is scheduled for list ${list.name}: "listsync push --list ${list.name}" sends it`;
  return `conflict ${c.id}: keeping the local change; it is queued but not applied yet (${sent.detail}); ${when}.`;
}

/**
 * The item as the platform's query shows it now (undefined: it shows none);
 * what it shows becomes the open conflict's platform side. A platform that
 * cannot answer: ConflictReadError, nothing changed.
 */
async function currentItem(deps: SettleDeps, list: ListConfig, c: ConflictRow): Promise<Item | undefined> {
  let items: Item[];
  try {
    items = await queryItemsByIds(deps.client, { appID: list.appID, listID: list.listID, idField: list.idField }, [c.item_id]);
  } catch (err) {
    throw new ConflictReadError(c.id, c.item_id, err);
  }
  const now = items.find((i) => itemId(i[list.idField]) === c.item_id) ?? items[0];
  if (now) await refreshOpenConflicts(deps.db, list.name, c.item_id, now, versionOf(now, list.versionField));
  return now;
}

function refuseIfMoved(list: ListConfig, c: ConflictRow, now: Item | undefined, seen: Version): void {
  const version = now === undefined ? undefined : versionOf(now, list.versionField);
  if (version === seen) return;
  const where =
    version === undefined
      ? 'the platform shows no such item now'
      : `the platform is at version ${versionText(version)}, the page showed version ${seen}`;
  throw new ConflictMovedError(
    `Conflict ${c.id}: item ${c.item_id} changed on the platform since the page was drawn (${where}); nothing was changed. The page now shows the platform's current values: decide again.`,
  );
}
