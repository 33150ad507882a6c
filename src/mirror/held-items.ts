/**
 * What a mirror row holds of its platform item, for the write-back: the item
 * as last read (`_raw`), the version the row knows, and a created item's ID
 * taken by its local row. The push's SQL on mirror tables, kept with the
 * mirror's other SQL (test/store-ownership.test.ts keeps listsync's own
 * tables the same way).
 *
 * - `_raw` is given back in the platform's form (storage escapes decoded).
 * - `knownVersions` is `listsync.mirror_base_version`: the greater of
 *   `row_version` and the version a write left in `_raw` (src/mirror/write-results.ts).
 * - `adoptCreatedId` runs in the transaction that settles the create, as the
 *   listsync writer (no change captured): the local row takes the platform's
 *   ID, or gives way to the row a pull already brought for it
 *   (test/sync/write-back-faults.test.ts).
 */
import type { Knex } from '../db.js';
import type { Item } from '../platform/types.js';
import { itemVersionNumber, type Version } from '../platform/item-identity.js';
import type { TableMapping } from './table-mapping.js';
import { markListsyncWriter } from './own-writes.js';
import { decodeStorable } from '../storable.js';

/**
 * `_raw` in the platform's form: strings PostgreSQL cannot hold are kept
 * escaped there (src/storable.ts) and given back as the platform sent them,
 * so that no comparison ever sees listsync's storage escape.
 */
const platformForm = (raw: Item | null | undefined): Item | null => (raw ? (decodeStorable(raw) as Item) : null);

/** The item as the mirror last read it (`_raw`), or null. */
export async function heldItem(db: Knex | Knex.Transaction, mapping: TableMapping, id: string): Promise<Item | null> {
  const r = (await db.withSchema(mapping.schema).from(mapping.table).where({ id }).first('_raw')) as { _raw: Item | null } | undefined;
  return platformForm(r?._raw);
}

/** The `_raw` of each row among `ids` that has one (1000 IDs a query). */
export async function heldItems(db: Knex, mapping: TableMapping, ids: readonly string[]): Promise<Map<string, Item>> {
  const out = new Map<string, Item>();
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = (await db
      .withSchema(mapping.schema)
      .from(mapping.table)
      .whereIn('id', ids.slice(i, i + 1000))
      .select('id', '_raw')) as { id: string; _raw: Item | null }[];
    for (const r of rows) if (r._raw) out.set(r.id, platformForm(r._raw)!);
  }
  return out;
}

export interface KnownItem {
  version: Version | null;
  /** `_raw` before the re-read: after a write, the values sent at the version the write produced. */
  raw: Item | null;
}

/** The version each item's mirror row knows the platform to have (null: none known), and its `_raw`. */
export async function knownVersions(db: Knex, mapping: TableMapping, ids: readonly string[]): Promise<Map<string, KnownItem>> {
  const out = new Map<string, KnownItem>(ids.map((id) => [id, { version: null, raw: null }]));
  const rows = (await db.raw(
    `select t.id, listsync.mirror_base_version(to_jsonb(t.*), ?) as version, t._raw from ${mapping.qualifiedTable} as t where t.id = any(?::text[])`,
    [mapping.versionField, [...ids]],
  )) as { rows: { id: string; version: number | string | null; _raw: Item | null }[] };
  for (const r of rows.rows) out.set(r.id, { version: itemVersionNumber(r.version), raw: platformForm(r._raw) });
  return out;
}

/** The local row of a create takes the platform's ID `id`; when a pull already brought that item in, the local row gives way to it. */
export async function adoptCreatedId(trx: Knex.Transaction, mapping: TableMapping, localId: string | null, id: string): Promise<void> {
  await markListsyncWriter(trx);
  const table = `${mapping.schema}.${mapping.table}`;
  const taken = (await trx.raw('select 1 from ?? where id = ?', [table, id])) as { rows: unknown[] };
  if (taken.rows.length > 0) await trx.raw('delete from ?? where id = ?', [table, localId]);
  else await trx.raw('update ?? set id = ? where id = ?', [table, id, localId]);
}
