/**
 * The `row_version` a mirror table holds for some item IDs: what a pull
 * wrote last. Read outside any write, through the primary key.
 */
import type { Knex } from '../db.js';
import type { TableMapping } from './table-mapping.js';
import { FIXED_COLUMNS } from './own-columns.js';

/** Each ID's stored version as decimal digits (null: no version); IDs without a row are absent. */
export async function storedVersions(db: Knex, mapping: TableMapping, ids: readonly string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  if (ids.length === 0) return out;
  const r = (await db.raw(`select id, ?? as version from ${mapping.qualifiedTable} where id = any(?::text[])`, [
    FIXED_COLUMNS.rowVersion,
    [...ids],
  ])) as { rows: { id: string; version: string | null }[] };
  for (const row of r.rows) out.set(row.id, row.version);
  return out;
}
