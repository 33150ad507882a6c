/**
 * `listsync.lists`: the list registry, one row per mirrored list (its table,
 * field → column mapping, fingerprint, conversion settings). Parsing the
 * stored JSON into a `RegistryEntry` is `src/mirror/registry.ts`'s part.
 */
import type { Knex } from '../db.js';

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
