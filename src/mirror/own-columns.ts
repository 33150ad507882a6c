/**
 * Every column listsync itself adds to a table or view it makes, in one
 * place: the mirror table's fixed columns, the reporting view's, the history
 * table's and view's, the directory tables'. Each table builder takes its
 * column names from here, and `RESERVED_COLUMNS` (all of them) is what field
 * columns are never named: a field called "Valid From" or "Synced At" gets a
 * suffixed column (`valid_from_2`), never one that clashes with listsync's
 * own in any table or view built from the mirror table.
 */

/** Columns every mirror table has, besides the field columns. */
export const FIXED_COLUMNS = {
  id: 'id',
  rowVersion: 'row_version',
  createdAt: 'created_at',
  modifiedAt: 'modified_at',
  raw: '_raw',
  syncedAt: '_synced_at',
  deletedAt: '_deleted_at',
} as const;

/** What the reporting view shows `_synced_at` as. */
export const VIEW_SYNCED_AT = 'synced_at';

/** The history table's (and view's) own columns besides `id` and `row_version`. */
export const HISTORY_COLUMNS = { validFrom: 'valid_from', validTo: 'valid_to' } as const;

/** The directory tables' own columns besides the entry's keys. */
export const DIRECTORY_OWN_COLUMNS = { raw: '_raw', syncedAt: '_synced_at' } as const;

/** The own columns of each relation built from a mirror table (a field column may never take one of these names there). */
export const OWN_COLUMNS_OF = {
  mirror: Object.values(FIXED_COLUMNS) as readonly string[],
  liveView: [FIXED_COLUMNS.id, FIXED_COLUMNS.createdAt, FIXED_COLUMNS.modifiedAt, VIEW_SYNCED_AT] as readonly string[],
  history: [FIXED_COLUMNS.id, FIXED_COLUMNS.rowVersion, HISTORY_COLUMNS.validFrom, HISTORY_COLUMNS.validTo] as readonly string[],
  directory: Object.values(DIRECTORY_OWN_COLUMNS) as readonly string[],
} as const;

/** Reserved for listsync's own use (a marker kept free in mirror tables). */
const INTERNAL_COLUMNS = ['_local'];

/** Every column listsync adds anywhere: no field column is ever named one of these. */
export const RESERVED_COLUMNS: readonly string[] = [...new Set([...Object.values(OWN_COLUMNS_OF).flat(), ...INTERNAL_COLUMNS])];
