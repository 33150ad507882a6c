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
 */
import type { ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import { upsertItems, type TableMapping } from '../mirror/index.js';
import type { PlatformClient } from '../platform/client.js';
import { AuthError, PlatformError } from '../platform/errors.js';
import { queryItemsByIds, readItemOrGone } from '../platform/item-lookup.js';
import type { Item } from '../platform/types.js';
import * as outbox from '../store/outbox.js';

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
export async function settleMirror(deps: SettleDeps, list: ListConfig, mapping: TableMapping): Promise<string[]> {
  const ids = await outbox.behindItems(deps.db, list.name);
  if (ids.length === 0) return [];
  try {
    return await settleItems(deps, list, mapping, ids);
  } catch (err) {
    if (!(err instanceof PlatformError) || err instanceof AuthError) throw err;
    deps.logger.warn(
      { list: list.name, behind: ids.length, err: err.message },
      'the items written could not be re-read now; they stay flagged and the next push or pull re-reads them',
    );
    return ids;
  }
}

async function settleItems(deps: SettleDeps, list: ListConfig, mapping: TableMapping, ids: string[]): Promise<string[]> {
  const wanted = await knownVersions(deps.db, mapping, ids);
  const behind = await rereadUntilShown(deps, list, mapping, wanted);
  const stillBehind = new Set(behind);
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
  return behind;
}

/** The version each item's mirror row knows the platform to have (null: none known). */
async function knownVersions(db: Knex, mapping: TableMapping, ids: readonly string[]): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>(ids.map((id) => [id, null]));
  const rows = (await db.raw(
    `select t.id, listsync.mirror_base_version(to_jsonb(t.*), ?) as version from ${mapping.qualifiedTable} as t where t.id = any(?::text[])`,
    [mapping.versionField, [...ids]],
  )) as { rows: { id: string; version: string | null }[] };
  for (const r of rows.rows) out.set(r.id, r.version === null ? null : Number(r.version));
  return out;
}

/** Reads the items until each shows at least the version wanted (or is gone); returns those still behind. */
async function rereadUntilShown(
  deps: SettleDeps,
  list: ListConfig,
  mapping: TableMapping,
  wanted: ReadonlyMap<string, number | null>,
): Promise<string[]> {
  const upToDate = (item: Item | undefined, id: string): boolean => {
    if (!item) return false;
    const want = wanted.get(id);
    return want === null || want === undefined || Number(item[mapping.versionField]) >= want;
  };
  const store = (items: Item[]) => deps.db.transaction((trx) => upsertItems(trx, mapping, items, deps.zone));
  const ref = { appID: list.appID, listID: list.listID, idField: mapping.idField };

  let behind = [...wanted.keys()];
  for (const delay of [0, ...(deps.rereadDelaysMs ?? DEFAULT_REREAD_DELAYS_MS)]) {
    if (behind.length === 0) return [];
    if (delay > 0) await sleep(delay);
    const items = await queryItemsByIds(deps.client, ref, behind, { signal: deps.signal });
    await store(items);
    const byId = new Map(items.map((i) => [String(i[mapping.idField]).trim(), i]));
    behind = behind.filter((id) => !upToDate(byId.get(id), id));
  }
  const stillBehind: string[] = behind.slice(MAX_GET_REREADS);
  for (const id of behind.slice(0, MAX_GET_REREADS)) {
    const remote = await readItemOrGone(deps.client, ref, id, deps.signal);
    if (remote.kind === 'gone') continue;
    await store([remote.item]);
    if (!upToDate(remote.item, id)) stillBehind.push(id);
  }
  return stillBehind;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
