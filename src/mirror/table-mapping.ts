/**
 * How one list maps onto its mirror table: which column holds which field,
 * with which kind. Built by `ensureMirrorTable`, or read back from the
 * registry with `loadTableMapping` (for code that must not run DDL, such as
 * the push engine).
 */
import type { ColumnKind } from './column-types.js';
import { qualifiedName } from './naming.js';
import type { SchemaChange } from '../schema-change.js';

export { FIXED_COLUMNS } from './own-columns.js';

/** Prefix of the provisional id a row inserted locally without an id gets. */
export const LOCAL_ID_PREFIX = 'local-';

export interface MappedColumn {
  /** The platform's field name (storage name, e.g. `Text1`). */
  field: string;
  /** The mirror column (lower snake_case, `[a-z0-9_]`). */
  column: string;
  /** The column's kind: the field's kind, or `text` after a widening. */
  kind: ColumnKind;
  /** The platform keeps its own value whatever a write sends (src/mirror/read-only.ts): edits are refused. */
  readOnly?: boolean;
  /** The field's display name, for messages. */
  displayName?: string;
}

export interface TableMappingData {
  schema: string;
  table: string;
  listName: string;
  idField: string;
  versionField: string;
  createdField: string;
  modifiedField: string;
  /** Field columns filled from the platform, in the platform's field order. */
  columns: MappedColumn[];
  /** Columns of fields that disappeared from the platform: kept with their data, no longer written. */
  removedColumns: MappedColumn[];
  /**
   * Keys of `_raw` a row rewritten from the platform keeps from what it held (unless the item has them
   * again): removed fields' names, and the keys retired fields' values were moved to (`<field>@<column>`).
   */
  keptRawKeys?: readonly string[];
  /**
   * The platform leaves empty values out of items (`platform.omitsEmptyValues`): a missing key is an
   * empty value (NULL). Otherwise a missing key leaves its column as it was, and is counted.
   */
  omitsEmptyValues?: boolean;
  /** What `ensureMirrorTable` changed in this call, as sentences (empty when the table was up to date or when loaded). */
  changes: string[];
  /** The same changes as data (`changes` is derived from them). */
  schemaChanges?: SchemaChange[];
  /** Their rows in `listsync.schema_changes`. */
  schemaChangeIds?: number[];
  /** The list keeps `<table>_history`: every write of a version records it there. */
  history?: boolean;
  /** Hash of the field metadata the mapping was built from. */
  fingerprint: string;
}

export interface TableMapping extends TableMappingData {
  /** `"schema"."table"`, quoted. */
  readonly qualifiedTable: string;
  /** The active column for a platform field name. */
  columnFor(field: string): MappedColumn | undefined;
  /** The active or removed column entry for a column name. */
  byColumn(column: string): (MappedColumn & { removed: boolean }) | undefined;
}

export function createTableMapping(data: TableMappingData): TableMapping {
  const byField = new Map(data.columns.map((c) => [c.field, c]));
  const byColumn = new Map<string, MappedColumn & { removed: boolean }>();
  for (const c of data.removedColumns) byColumn.set(c.column, { ...c, removed: true });
  for (const c of data.columns) byColumn.set(c.column, { ...c, removed: false });
  const mapping: TableMapping = {
    ...data,
    qualifiedTable: qualifiedName(data.schema, data.table),
    columnFor: (field) => byField.get(field),
    byColumn: (column) => byColumn.get(column),
  };
  return mapping;
}
