/**
 * Settling the mirror after writes: the items of applied changes flagged
 * `mirror_behind` (src/store/outbox.ts) are re-read and written to the mirror,
 * then the flag is cleared.
 *
 * A push calls this before it sends anything (so a run killed between a
 * write and its re-read is resolved first) and after each batch it sends.
 * The platform's queries may lag behind a write: items the `In` query does
 * not yet show at the version written are asked again with backoff, then
 * read one by one (a read by ID shows writes at once); what is still behind
 * keeps its flag for the next run. Items found gone (asked both ways, see
 * src/platform/item-lookup.ts) are settled: reconcile marks their rows.
 *
 * "Applied" means the platform holds it: an item re-read at exactly the
 * version the write produced whose value differs from the one sent did not
 * take it (a system or calculated field answers success and keeps its own):
 * the change ends failed, naming the fields, and the mirror shows the
 * platform's value (test/sync/not-taken.test.ts).
 */
import type { ListConfig } from '../../config.js';
import type { Knex } from '../../db.js';
import type { Logger } from '../../logger.js';
import { upsertItems, type TableMapping } from '../../mirror/index.js';
import { samePlatformValue } from '../../mirror/same-value.js';
import type { MappedColumn } from '../../mirror/table-mapping.js';
import type { PlatformClient } from '../../platform/client.js';
import { AuthError, PlatformError } from '../../platform/platform-errors.js';
import { queryItemsByIds, readItemOrGone } from '../../platform/item-lookup.js';
import type { Item } from '../../platform/types.js';
import * as outbox from '../../store/outbox.js';
import { knownVersions, type KnownItem } from '../../mirror/held-items.js';
import { itemId, versionOf, type Version } from '../../platform/item-identity.js';

export interface SettleDeps {
  db: Knex;
  client: PlatformClient;
  logger: Logger;
  zone: string;
  /** Pauses before each repeated query (default 250, 1000, 2000 ms). */
  rereadDelaysMs?: readonly number[];
  signal?: AbortSignal;
}

export const DEFAULT_REREAD_DELAYS_MS = [250, 1000, 2000] as const;
/** Items still behind after the repeated queries are read one by one, up to this many a call. */
const MAX_GET_REREADS = 200;

/**
 * Re-reads the list's items whose applied changes the mirror has not caught up
 * with; returns the IDs still behind. A platform that cannot answer now leaves
 * them flagged for the next run (the edits captured meanwhile already carry
 * the right base version); a refused key or a database error is thrown.
 */
export interface Settled {
  /** Items whose new version the platform's queries did not show yet. */
  behind: string[];
  /** Items where the platform did not take a value that was sent: their changes ended failed. */
  notTaken: string[];
}

export async function settleMirror(deps: SettleDeps, list: ListConfig, mapping: TableMapping): Promise<Settled> {
  const ids = await outbox.behindItems(deps.db, list.name);
  if (ids.length === 0) return { behind: [], notTaken: [] };
  try {
    return await settleItems(deps, list, mapping, ids);
  } catch (err) {
    if (!(err instanceof PlatformError) || err instanceof AuthError) throw err;
    deps.logger.warn(
      { list: list.name, behind: ids.length, err: err.message },
      'the items written could not be re-read now; they stay flagged and the next push or pull re-reads them',
    );
    return { behind: ids, notTaken: [] };
  }
}

async function settleItems(deps: SettleDeps, list: ListConfig, mapping: TableMapping, ids: string[]): Promise<Settled> {
  const wanted = await knownVersions(deps.db, mapping, ids);
  const sentColumns = await outbox.sentColumnsBehind(deps.db, list.name, ids);
  const { behind, seen } = await rereadUntilShown(deps, list, mapping, wanted);
  const stillBehind = new Set(behind);
  const notTaken: string[] = [];
  for (const [id, item] of seen) {
    const known = wanted.get(id);
    if (stillBehind.has(id) || !known?.raw || known.version === null) continue;
    const refused = notTakenColumns(mapping, { written: known.raw, sent: sentColumns.get(id) }, item, known.version, deps.zone);
    if (refused.length === 0) continue;
    notTaken.push(id);
    await outbox.markNotTaken(deps.db, list.name, id, notTakenError(mapping, refused, known.raw, item));
  }
  await outbox.clearBehind(
    deps.db,
    list.name,
    ids.filter((id) => !stillBehind.has(id)),
  );
  if (stillBehind.size)
    deps.logger.warn(
      { list: list.name, behind: stillBehind.size },
      "the platform's queries did not show the versions written yet; the next push or pull brings them",
    );
  if (notTaken.length)
    deps.logger.warn({ list: list.name, items: notTaken.length }, 'the platform did not take values that were sent; those changes failed');
  return { behind, notTaken };
}

/** Reads the items until each shows at least the version wanted (or is gone); returns those still behind. */
async function rereadUntilShown(
  deps: SettleDeps,
  list: ListConfig,
  mapping: TableMapping,
  wanted: ReadonlyMap<string, KnownItem>,
): Promise<{ behind: string[]; seen: Map<string, Item> }> {
  const seen = new Map<string, Item>();
  const upToDate = (item: Item | undefined, id: string): boolean => {
    if (!item) return false;
    seen.set(id, item);
    const want = wanted.get(id)?.version;
    const version = versionOf(item, mapping.versionField);
    return want === null || want === undefined || (version !== null && version >= want);
  };
  const store = (items: Item[]) => deps.db.transaction((trx) => upsertItems(trx, mapping, items, deps.zone));
  const ref = { appID: list.appID, listID: list.listID, idField: mapping.idField };

  let behind = [...wanted.keys()];
  for (const delay of [0, ...(deps.rereadDelaysMs ?? DEFAULT_REREAD_DELAYS_MS)]) {
    if (behind.length === 0) return { behind: [], seen };
    if (delay > 0) await sleep(delay);
    const items = await queryItemsByIds(deps.client, ref, behind, { signal: deps.signal });
    await store(items);
    const byId = new Map(items.map((i) => [itemId(i[mapping.idField]), i]));
    behind = behind.filter((id) => !upToDate(byId.get(id), id));
  }
  const stillBehind: string[] = behind.slice(MAX_GET_REREADS);
  for (const id of behind.slice(0, MAX_GET_REREADS)) {
    const remote = await readItemOrGone(deps.client, ref, id, deps.signal);
    if (remote.kind === 'gone') continue;
    await store([remote.item]);
    if (!upToDate(remote.item, id)) stillBehind.push(id);
  }
  return { behind: stillBehind, seen };
}

/**
 * The columns whose value the platform did not take: a column an applied
 * change sent (`sent`; a column not in the PATCH is never judged) whose value
 * in the item re-read at exactly the version the write produced differs from
 * what the write left in `_raw` (the values sent, in the platform's form:
 * storage escapes decoded by src/mirror/held-items.ts). Read-only columns are
 * the platform's own (ModifiedBy moves with every write); values are compared
 * as their column reads them (`["1"]` and `[1]` are the same array).
 */
function notTakenColumns(
  mapping: TableMapping,
  write: { written: Item; sent: ReadonlySet<string> | undefined },
  item: Item,
  version: Version,
  zone: string,
): MappedColumn[] {
  const { written, sent } = write;
  if (!sent || versionOf(item, mapping.versionField) !== version) return [];
  return mapping.columns.filter(
    (c) => !c.readOnly && sent.has(c.column) && c.field in written && !samePlatformValue(c.kind, written[c.field], item[c.field], zone),
  );
}

function notTakenError(mapping: TableMapping, columns: readonly MappedColumn[], written: Item, item: Item): string {
  const names = columns.map(
    (c) =>
      `${c.column} (field ${c.field}${c.displayName && c.displayName !== c.field ? `, "${c.displayName}"` : ''}): sent ${JSON.stringify(written[c.field] ?? '')}, the platform kept ${JSON.stringify(item[c.field] ?? '')}`,
  );
  return `not taken: the platform answered success but did not take ${names.join('; ')}. The mirror shows the platform's value; the field may be one the platform sets itself.`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
