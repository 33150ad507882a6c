/**
 * `listsync.conflicts`: write-back conflicts with both sides (and the values
 * the change was made on), `open` until settled by the list's policy or by
 * `listsync conflicts resolve`.
 */
import type { Knex } from '../db.js';
import { decodeStorable, storableJson } from '../storable.js';
import type { Version } from '../platform/item-identity.js';
import type { Item } from '../platform/types.js';

export const CONFLICTS_TABLE = 'listsync.conflicts';

export type ConflictStatus = 'open' | 'resolved';

type Db = Knex | Knex.Transaction;

export interface ConflictRow {
  id: number;
  outbox_id: number | null;
  list_name: string;
  item_id: string;
  policy: string;
  /** What the local change was: an update of fields, or a delete of the row (`local` then holds its content). */
  op: 'update' | 'delete';
  /** The outbox's `base_version` as it was stored. */
  base_version: number | null;
  remote_version: Version | null;
  local: Record<string, unknown>;
  remote: Item | null;
  base: Item | null;
  status: ConflictStatus;
  resolution: string | null;
  created_at: Date;
  resolved_at: Date | null;
}

export interface NewConflict {
  outboxId: number;
  op: 'update' | 'delete';
  listName: string;
  itemId: string | null;
  policy: string;
  baseVersion: number | null;
  remoteVersion: Version | null;
  base: Item | null | undefined;
  local: Record<string, unknown>;
  remote: Item;
  status: ConflictStatus;
  resolution: string | null;
}

/** For the demo's walkthrough: the newest conflict's id. */
export const LATEST_CONFLICT_ID_SQL = `select max(id) as id from ${CONFLICTS_TABLE}`;

export async function insertConflict(db: Db, c: NewConflict): Promise<void> {
  await db(CONFLICTS_TABLE).insert({
    // The platform's strings as storable text (src/storable.ts); reads decode them.
    base: c.base ? storableJson(c.base) : null,
    outbox_id: c.outboxId,
    op: c.op,
    list_name: c.listName,
    item_id: c.itemId,
    policy: c.policy,
    base_version: c.baseVersion,
    remote_version: c.remoteVersion,
    local: storableJson(c.local),
    remote: storableJson(c.remote),
    status: c.status,
    resolution: c.resolution,
    resolved_at: c.status === 'resolved' ? db.fn.now() : null,
  });
}

export async function listConflicts(db: Db, options: { list?: string; all?: boolean } = {}): Promise<ConflictRow[]> {
  const q = db(CONFLICTS_TABLE).orderBy('id');
  if (options.list) q.where({ list_name: options.list });
  if (!options.all) q.where({ status: 'open' });
  return ((await q) as ConflictRow[]).map(decoded);
}

/** A conflict as it was recorded: strings stored escaped given back (`storableJson` on insert). */
function decoded(c: ConflictRow): ConflictRow {
  return {
    ...c,
    local: decodeStorable(c.local) as Record<string, unknown>,
    remote: c.remote === null ? null : (decodeStorable(c.remote) as Item),
    base: c.base === null ? null : (decodeStorable(c.base) as Item),
  };
}

export async function getConflict(db: Db, id: number): Promise<ConflictRow | undefined> {
  const c = (await db(CONFLICTS_TABLE).where({ id }).first()) as ConflictRow | undefined;
  return c && decoded(c);
}

export async function markResolved(db: Db, id: number, resolution: string): Promise<void> {
  await db(CONFLICTS_TABLE).where({ id }).update({ status: 'resolved', resolution, resolved_at: db.fn.now() });
}

/**
 * The platform's side of an item's open conflicts follows the platform: its
 * latest version and values, whenever listsync reads the item again (pull,
 * real time, the re-read before a resolve). Versions never go backwards.
 * Returns how many conflicts were brought up to date.
 */
export async function refreshOpenConflicts(
  db: Db,
  listName: string,
  itemId: string,
  remote: Item,
  remoteVersion: Version | null,
): Promise<number> {
  if (remoteVersion === null) return 0;
  return db(CONFLICTS_TABLE)
    .where({ list_name: listName, item_id: itemId, status: 'open' })
    .where((q) => q.whereNull('remote_version').orWhere('remote_version', '<', remoteVersion))
    .update({ remote: storableJson(remote), remote_version: remoteVersion });
}

/** A page of the open conflicts, oldest first, each with how many are open. */
export async function openConflictsPage(db: Db, page: { offset: number; limit: number }): Promise<(ConflictRow & { total: number })[]> {
  const rows = (await db(CONFLICTS_TABLE)
    .where({ status: 'open' })
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .select('*', db.raw('count(*) over () as total'))) as (ConflictRow & { total: string })[];
  return rows.map((r) => ({ ...r, total: Number(r.total) }));
}
