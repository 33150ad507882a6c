/**
 * What a write to the platform is known to have produced, kept in the mirror
 * row until the item is re-read.
 *
 * After a PATCH with RowVersion B the item is at version B + 1 and holds the
 * values sent; after a create it is at its first version. That is written
 * into the row's `_raw` (the version field and the fields sent, as the
 * platform's strings, escaped where PostgreSQL cannot hold them: src/storable.ts) in the transaction that marks the change applied.
 * `row_version` and the typed columns stay as they are: the row still reads
 * as behind, so the re-read (and any pull) rewrites it whole, and the next
 * edit's base version (`listsync.mirror_base_version`, the greater of
 * `row_version` and `_raw`'s version) is the version the write produced,
 * never the stale one. Versions never go backwards: a row whose known
 * version is already as new is left alone.
 */
import type { Knex } from '../db.js';
import type { Version } from '../platform/item-identity.js';
import { storableJson } from '../storable.js';
import { markListsyncWriter } from './own-writes.js';
import type { TableMapping } from './table-mapping.js';

export interface KnownWrite {
  /** The item's ID on the platform. */
  id: string;
  /** The version the write produced. */
  version: Version;
  /** The fields sent, as the platform's strings. */
  data: Record<string, string>;
}

export async function recordWrite(trx: Knex.Transaction, mapping: TableMapping, write: KnownWrite): Promise<void> {
  await markListsyncWriter(trx);
  const patch = { ...write.data, [mapping.idField]: write.id, [mapping.versionField]: write.version };
  await trx.raw(
    `update ${mapping.qualifiedTable} as t
        set _raw = coalesce(t._raw, '{}'::jsonb) || ?::jsonb
      where t.id = ?
        and coalesce(listsync.mirror_base_version(to_jsonb(t.*), ?), -1) < ?`,
    [storableJson(patch), write.id, mapping.versionField, write.version],
  );
}
