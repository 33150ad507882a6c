/**
 * The mirror table a push writes back from: its mapping, or a UsageError that
 * says to pull first; and the delete trigger following `lists[].pushDeletes`.
 */
import type { Config, ListConfig } from '../../config.js';
import type { Knex } from '../../db.js';
import { UsageError } from '../../errors.js';
import { attachCaptureTriggers, loadTableMapping, type TableMapping } from '../../mirror/index.js';

export async function loadMappingOrExplain(db: Knex, config: Config, list: ListConfig): Promise<TableMapping> {
  const mapping = await loadTableMapping(db, config.database.schema, list.name);
  if (!mapping) throw new UsageError(`List "${list.name}" has no mirror table yet: run "listsync pull --list ${list.name}" first.`);
  return mapping;
}

/** The delete trigger follows `lists[].pushDeletes` (a pull sets it too; this covers a config changed since). */
export async function syncDeleteCapture(db: Knex, mapping: TableMapping, list: ListConfig): Promise<void> {
  await db.transaction((trx) =>
    attachCaptureTriggers(trx, {
      schema: mapping.schema,
      table: mapping.table,
      listName: list.name,
      columns: mapping.columns,
      removedColumns: mapping.removedColumns,
      versionField: mapping.versionField,
      pushDeletes: list.pushDeletes,
    }),
  );
}
