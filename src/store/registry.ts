/**
 * `listsync.lists`: the list registry, one row per mirrored list (its table,
 * field → column mapping, fingerprint, conversion settings). Parsing the
 * stored JSON into a `RegistryEntry` is `src/mirror/list-registry.ts`'s part.
 *
 * Beside it, the field metadata a pull last asked for (`field_meta`,
 * `field_meta_at`, `item_keys`), so a pull asks `/fields` only when it has a
 * reason to (src/sync/list-fields.ts):
 * - The metadata is recorded only after the mirror table was set up from it,
 *   so what is kept is what the table reflects (a run that dies between the
 *   two asks again). (many-lists: an idle pull asks no field metadata.)
 * - Marking it stale never loses a reason to ask: it clears the time, and the
 *   next run asks. (many-lists: a key the mirror does not know.)
 * - `item_keys` only grows: keys whose presence or absence in items says
 *   nothing of the fields: keys items carry that are not fields (the version
 *   field, the platform's own), so they are not taken for new fields again,
 *   and fields items were seen to leave out while `/fields` still listed them,
 *   so they are not taken for removed fields again (src/sync/pull/schema-signals.ts).
 */
import type { Knex } from '../db.js';
import type { FieldMeta } from '../platform/types.js';
import { decodeStorable, escapeStorable, storableValue, unescapeStorable } from '../storable.js';

export const REGISTRY_TABLE = 'listsync.lists';

type Db = Knex | Knex.Transaction;

/** A registry row as stored (`fields` and `conversion` jsonb, or text from older writers). */
export interface RegistryRow {
  name: string;
  app_id: string;
  list_id: string;
  table_name: string;
  fields: unknown;
  fingerprint: string;
  conversion: unknown;
  history: boolean | null;
  title: string | null;
}

export async function selectRegistryRow(db: Db, listName: string, options: { forUpdate?: boolean } = {}): Promise<RegistryRow | undefined> {
  const q = db(REGISTRY_TABLE)
    .where({ name: listName })
    .first('name', 'app_id', 'list_id', 'table_name', 'fields', 'fingerprint', 'conversion', 'history', 'title');
  return (await (options.forUpdate ? q.forUpdate() : q)) as RegistryRow | undefined;
}

/** Inserts or replaces a list's row (`fields` and `conversion` as JSON text). */
export async function upsertRegistryRow(
  db: Db,
  row: Omit<RegistryRow, 'fields' | 'conversion' | 'history'> & { fields: string; conversion: string; history: boolean },
): Promise<void> {
  await db(REGISTRY_TABLE)
    .insert({ ...row, updated_at: db.fn.now() })
    .onConflict('name')
    .merge(['app_id', 'list_id', 'table_name', 'fields', 'fingerprint', 'conversion', 'history', 'title', 'updated_at']);
}

export interface KeptFieldMeta {
  fields: FieldMeta[];
  /** When `/fields` was last asked; null: asked again on the next run. */
  askedAt: Date | null;
  /** Keys items carry that are not fields. */
  itemKeys: string[];
  /** The fingerprint of the field metadata the list's table is set up from now (src/mirror/field-identity.ts). */
  fingerprint: string;
}

export async function readFieldMeta(db: Db, listName: string): Promise<KeptFieldMeta | undefined> {
  const row = (await db(REGISTRY_TABLE).where({ name: listName }).first('field_meta', 'field_meta_at', 'item_keys', 'fingerprint')) as
    { field_meta: unknown; field_meta_at: Date | null; item_keys: unknown; fingerprint: string } | undefined;
  if (!row || !Array.isArray(row.field_meta)) return undefined;
  return {
    fields: decodeStorable(row.field_meta) as FieldMeta[],
    askedAt: row.field_meta_at,
    itemKeys: Array.isArray(row.item_keys) ? row.item_keys.map((k) => unescapeStorable(String(k))) : [],
    fingerprint: row.fingerprint,
  };
}

/** The metadata just asked for (and set the table up from), asked at `at`. */
export async function recordFieldMeta(db: Db, listName: string, fields: readonly FieldMeta[], at: Date): Promise<void> {
  await db(REGISTRY_TABLE)
    .where({ name: listName })
    .update({
      field_meta: JSON.stringify(storableValue(fields), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
      field_meta_at: at,
    });
}

/** Keys items carry that are not fields; with `stale`, the metadata is asked again on the next run. */
export async function noteItemKeys(db: Db, listName: string, keys: readonly string[], stale: boolean): Promise<void> {
  await db(REGISTRY_TABLE)
    .where({ name: listName })
    .update({
      item_keys: db.raw(
        `(select coalesce(jsonb_agg(distinct k order by k), '[]'::jsonb) from (select jsonb_array_elements_text(item_keys) k union select unnest(?::text[])) s)`,
        [keys.map(escapeStorable)],
      ),
      ...(stale ? { field_meta_at: null } : {}),
    });
}

/** The metadata is asked again on the next run (a write refused for a field, an operator's request). */
export async function markFieldMetaStale(db: Db, listName: string): Promise<void> {
  await db(REGISTRY_TABLE).where({ name: listName }).update({ field_meta_at: null });
}
