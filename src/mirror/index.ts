/** The Postgres side of listsync: mirror tables, value conversion, upserts, change capture. */
export {
  columnKindFor,
  describeField,
  slotPrefix,
  type FieldShape,
  type KindSource,
  columnSqlType,
  parseRules,
  isColumnKind,
  COLUMN_KINDS,
  SQL_TYPE,
  type ColumnKind,
} from './column-types.js';
export {
  baseColumnName,
  preferredColumnName,
  type ColumnNaming,
  type ColumnRequest,
  assignColumnNames,
  quoteIdent,
  quoteLiteral,
  qualifiedName,
  assertIdentifier,
  objectName,
  isReservedColumn,
  freeColumnName,
  RESERVED_COLUMNS,
  MAX_IDENTIFIER_BYTES,
} from './naming.js';
export {
  fromPlatform,
  fromPlatformToSql,
  NOT_CONVERTED,
  toPlatform,
  plainDecimal,
  scalarString,
  WIRE_DATE_FORMAT,
  WIRE_DATETIME_FORMAT,
  type Converted,
} from './convert.js';
export { ensureMirrorTable, ensureUsersTable, USERS_COLUMNS, type EnsureMirrorTableOptions, type MirrorListRef } from './ddl.js';
export {
  createTableMapping,
  FIXED_COLUMNS,
  LOCAL_ID_PREFIX,
  type TableMapping,
  type TableMappingData,
  type MappedColumn,
} from './table-mapping.js';
export { rederiveColumns, type DerivedColumn, type RederiveResult } from './rederive.js';
export { readRegistry, writeRegistry, loadTableMapping, type RegistryEntry, type RegistryField } from './list-registry.js';
export {
  upsertItems,
  upsertUsers,
  emptyUpsertResult,
  UPSERT_BATCH_SIZE,
  MAX_LISTED_FAILURES,
  type UpsertOptions,
  type UpsertResult,
  type UpsertFailure,
  type SkippedPending,
  type UsersUpsertResult,
} from './upsert.js';
export { markListsyncWriter, withListsyncWriter, isTransaction, WRITER_SETTING } from './own-writes.js';
export {
  attachCaptureTriggers,
  assertCaptureFunction,
  captureArguments,
  readTriggerArguments,
  tableOwner,
  CAPTURE_FUNCTION,
  TRIGGER_NAMES,
} from './triggers.js';
export { pendingChanges, OPEN_STATUSES, type OutboxChange } from '../store/outbox.js';
export { describeSchemaChange, FIELD_APPEARED_KINDS, type SchemaChange, type SchemaChangeKind } from '../schema-change.js';
export { recordSchemaChanges, recentSchemaChanges, countSchemaChanges, type RecordedSchemaChange } from '../store/schema-changes.js';
export { decodeStorable, escapeStorable, unescapeStorable, storableValue, closestText, STORABLE_MARK } from '../storable.js';
export { historyTableName, ensureHistoryTable, closeDeletedVersions, reopenVersions } from './history.js';
export { tableComment, fieldColumnComment, SYSTEM_COLUMN_COMMENTS, ensureView, liveViewSpec, historyViewSpec } from './reporting.js';
