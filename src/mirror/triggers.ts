/**
 * Change capture on the mirror tables. The trigger function
 * `listsync.mirror_capture()` lives in migration 20261122000100_mirror_support;
 * this module attaches it to a mirror table with the list's name, its field
 * columns and its numeric columns as arguments, and reads the captured
 * changes back (`pendingChanges` in src/store/outbox.ts).
 *
 * What users' statements do (writes by listsync itself, marked with
 * `markListsyncWriter`, are never captured):
 * - UPDATE of field columns → one open 'update' per item in the outbox,
 *   `changes` = `{column: newValue}` (numeric values as strings), `base_version`
 *   = the row's `row_version` before the first edit; later edits merge in.
 * - INSERT → a 'create' with `local_id` = the row's id (`local-<uuid>` by
 *   default); later edits of that row merge into it.
 * - DELETE of a row whose create is not confirmed → withdraws the create.
 * - DELETE of another row, with `pushDeletes` → an open 'delete' (base version
 *   and the row's whole content); the row stays, marked `_deleted_at`, until
 *   push settles it. Without `pushDeletes` → refused, naming the option.
 * - UPDATE of listsync's own columns (id, row_version, created_at,
 *   modified_at, _raw, _synced_at, _deleted_at), an INSERT that sets _raw,
 *   _synced_at or _deleted_at, TRUNCATE → refused with an exception
 *   (SQLSTATE P0001) whose message names the column and says why (migration
 *   20261130030000_own_columns_read_only).
 * - A write of a read-only field's column (system, auto-number, calculated:
 *   src/mirror/read-only.ts) or of a multi-value array holding a NULL element
 *   → refused, naming the field and the column (migration
 *   20261128000300_capture_read_only).
 */
import type { Knex } from '../db.js';
import { OperatorActionError } from '../errors.js';
import { qualifiedName, quoteLiteral } from './naming.js';
import { escapeStorable } from '../storable.js';
import type { MappedColumn } from './table-mapping.js';

export const CAPTURE_FUNCTION = 'listsync.mirror_capture';
export const TRIGGER_NAMES = { capture: 'listsync_capture', noDelete: 'listsync_no_delete', noTruncate: 'listsync_no_truncate' } as const;

/** The SQL condition that skips the trigger for listsync's own writes (no trigger event is even queued). */
const NOT_LISTSYNC_WRITER = `current_setting('listsync.writer', true) is distinct from 'on'`;

/** Throws a message that says what to run when the migration is missing. */
export async function assertCaptureFunction(db: Knex | Knex.Transaction): Promise<void> {
  const row = (await db.raw(`select to_regprocedure('listsync.mirror_capture()') is not null as present`)) as {
    rows: { present: boolean }[];
  };
  if (!row.rows[0]?.present) {
    throw new OperatorActionError(
      'The change-capture function listsync.mirror_capture() is missing from the database. Run "listsync migrate" first.',
    );
  }
}

export interface AttachTriggerOptions {
  schema: string;
  table: string;
  listName: string;
  /** The field columns whose edits are captured. */
  columns: readonly MappedColumn[];
  /** Columns of fields removed from the platform: an edit of one is refused (it could never be sent). */
  removedColumns?: readonly MappedColumn[];
  /** The platform's version field (e.g. `RowVersion`): an edit's base version is read from `_raw` when `row_version` is a refill marker. */
  versionField?: string;
  /** `lists[].pushDeletes`: a DELETE is captured (true) or refused (false, the default). */
  pushDeletes?: boolean;
}

/**
 * A PostgreSQL text-array literal of `names`, every element quoted, so that
 * any column name (`null`, `NULL`, `{a,b}`, quotes, backslashes, commas)
 * reads back as itself.
 */
export function textArrayLiteral(names: readonly string[]): string {
  return `{${names.map((n) => `"${n.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;
}

/** Whole-number fields: their slot says so (`Bigint1`). */
const isWholeNumberField = (c: MappedColumn): boolean => c.kind === 'numeric' && /^bigint/i.test(c.field.trim());

/** How a read-only field is named in the capture's refusal: `"Status" (field Text3)`. */
const fieldLabel = (c: MappedColumn): string =>
  c.displayName !== undefined && c.displayName !== c.field ? `"${c.displayName}" (field ${c.field})` : `field ${c.field}`;

/**
 * The capture function's arguments, the same for every trigger of a table:
 * list name, field columns, numeric columns, the delete option, the version
 * field, removed fields' columns, whole-number columns, read-only fields'
 * columns and their names (for the refusal), multi-value columns (an array
 * with a NULL element is refused).
 */
export function captureArguments(options: Omit<AttachTriggerOptions, 'schema' | 'table'>): string[] {
  const columns = options.columns;
  const readOnly = columns.filter((c) => c.readOnly === true);
  return [
    options.listName,
    textArrayLiteral(columns.map((c) => c.column)),
    textArrayLiteral(columns.filter((c) => c.kind === 'numeric').map((c) => c.column)),
    options.pushDeletes ? 'push-deletes' : 'refuse-deletes',
    options.versionField ?? '',
    textArrayLiteral((options.removedColumns ?? []).map((c) => c.column)),
    textArrayLiteral(columns.filter(isWholeNumberField).map((c) => c.column)),
    textArrayLiteral(readOnly.map((c) => c.column)),
    textArrayLiteral(readOnly.map((c) => escapeStorable(fieldLabel(c)))),
    textArrayLiteral(columns.filter((c) => c.kind === 'text[]').map((c) => c.column)),
  ];
}

/**
 * Creates (or re-creates, when their arguments changed) the capture triggers
 * on a mirror table. Returns true when anything was (re)created.
 */
export async function attachCaptureTriggers(db: Knex | Knex.Transaction, options: AttachTriggerOptions): Promise<boolean> {
  const table = qualifiedName(options.schema, options.table);
  const existing = await readTriggerArguments(db, options.schema, options.table);
  const captureArgs = captureArguments(options);
  const guardArgs = [options.listName];
  const wanted: { name: string; args: string[]; sql: (args: string) => string }[] = [
    {
      name: TRIGGER_NAMES.capture,
      args: captureArgs,
      sql: (args) =>
        `create trigger ${TRIGGER_NAMES.capture} after insert or update on ${table} for each row when (${NOT_LISTSYNC_WRITER}) execute function ${CAPTURE_FUNCTION}(${args})`,
    },
    {
      name: TRIGGER_NAMES.noDelete,
      args: captureArgs,
      sql: (args) =>
        `create trigger ${TRIGGER_NAMES.noDelete} before delete on ${table} for each row when (${NOT_LISTSYNC_WRITER}) execute function ${CAPTURE_FUNCTION}(${args})`,
    },
    {
      name: TRIGGER_NAMES.noTruncate,
      args: guardArgs,
      sql: (args) =>
        `create trigger ${TRIGGER_NAMES.noTruncate} before truncate on ${table} for each statement execute function ${CAPTURE_FUNCTION}(${args})`,
    },
  ];
  let changed = false;
  for (const t of wanted) {
    const have = existing.get(t.name);
    if (have && have.length === t.args.length && have.every((a, i) => a === t.args[i])) continue;
    if (have) await db.raw(`drop trigger if exists ${t.name} on ${table}`);
    await db.raw(t.sql(t.args.map(quoteLiteral).join(', ')));
    changed = true;
  }
  return changed;
}

/** The arguments of each non-internal trigger on a table, by trigger name. */
export async function readTriggerArguments(db: Knex | Knex.Transaction, schema: string, table: string): Promise<Map<string, string[]>> {
  const res = (await db.raw(
    `select t.tgname as name, t.tgnargs as nargs, t.tgargs as args
       from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ? and c.relname = ? and not t.tgisinternal`,
    [schema, table],
  )) as { rows: { name: string; nargs: number; args: Buffer }[] };
  const out = new Map<string, string[]>();
  for (const r of res.rows) {
    const parts = Buffer.from(r.args).toString('utf8').split('\0').slice(0, r.nargs);
    out.set(r.name, parts);
  }
  return out;
}

/** The list name a mirror table's capture trigger was attached for, if any. */
export async function tableOwner(db: Knex | Knex.Transaction, schema: string, table: string): Promise<string | undefined> {
  return (await readTriggerArguments(db, schema, table)).get(TRIGGER_NAMES.capture)?.[0];
}
