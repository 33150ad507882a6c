/**
 * What `ensureMirrorTable` changed in a list's table, as data: one
 * `SchemaChange` per step, its sentence derived from it (`describeSchemaChange`)
 * and each one kept in `listsync.schema_changes`, written in the same
 * transaction as the DDL it describes.
 *
 * Each row names the run that saw the change (the pull's run is open before
 * it touches the table).
 */

export type SchemaChangeKind =
  /** The mirror table was created. */
  | 'table-created'
  /** The list now mirrors into another table (lists[].table changed). */
  | 'retargeted'
  /** A column for a new field, or for a known field whose column was missing (`before: 'missing'`). */
  | 'added'
  /** A field disappeared from the platform; its column is kept. */
  | 'removed'
  /** A removed field is on the platform again. */
  | 'back'
  /** The field's display name changed on the platform. */
  | 'renamed'
  /** The column was renamed because `lists[].columns` pins another name, or (`detail: 'reserved'`) because listsync now uses its name itself. */
  | 'column-renamed'
  /**
   * The platform gave the field's slot to another field (another FieldID, or another control or storage kind
   * when no ID is given): the old field's column is kept with its data under a new name (`column`), its raw values
   * in `_raw` under `detail`; the new field gets a column of its own.
   */
  | 'slot-reused'
  /** The platform's type no longer fits the column: widened to text. */
  | 'widened'
  /** The platform's type differs from a text column, which stays text. */
  | 'kept-text'
  /** Columns re-derived from `_raw` (conversion settings changed, or widened). */
  | 'rederived'
  /** A fixed column (row_version, _raw...) was missing and added. */
  | 'fixed-column-added';

export interface SchemaChange {
  kind: SchemaChangeKind;
  /** The platform field name, when the change is about one field. */
  field?: string;
  /** The mirror column (or table, for table-level changes). */
  column?: string;
  before?: string;
  after?: string;
  /** Free detail that belongs in the sentence only (e.g. a row count). */
  detail?: string;
}

/** Kinds after which existing rows hold no value for a field: the next pull re-reads the list once. */
export const FIELD_APPEARED_KINDS: ReadonlySet<SchemaChangeKind> = new Set(['added', 'back']);

/** Kinds logged as warnings (data is kept, but someone may want to look). */
export const WARNING_KINDS: ReadonlySet<SchemaChangeKind> = new Set(['removed', 'widened', 'kept-text', 'slot-reused']);

/** The sentence for a change, as `ensureMirrorTable` has always logged it. */
export function describeSchemaChange(c: SchemaChange): string {
  const field = c.field ?? '';
  const column = c.column ?? '';
  switch (c.kind) {
    case 'table-created':
      return `created table ${column} with ${c.detail ?? '0'} field column(s)`;
    case 'retargeted':
      return `list now mirrors into ${c.after ?? ''} (was ${c.before ?? ''}); the old table is left as it is`;
    case 'added':
      return c.before === 'missing'
        ? `added column ${column} (${c.after ?? ''}) for field ${field} (the column was missing)`
        : `added column ${column} (${c.after ?? ''}) for new field ${field}`;
    case 'removed':
      return `field ${field} is no longer on the platform; column ${column} is kept with its data and no longer updated`;
    case 'back':
      return `field ${field} is back on the platform; column ${column} is written again`;
    case 'renamed':
      return `field ${field} is now called "${c.after ?? ''}" on the platform (was "${c.before ?? ''}"); column ${column} keeps its name (pin another with lists[].columns)`;
    case 'column-renamed':
      return c.detail === 'reserved'
        ? `renamed column ${c.before ?? ''} to ${c.after ?? ''} for field ${field}: listsync uses "${c.before ?? ''}" itself (in the table, its history or its views)`
        : `renamed column ${c.before ?? ''} to ${c.after ?? ''} for field ${field} (lists[].columns)`;
    case 'slot-reused':
      return `the platform reused slot ${field} for another field (${c.after ?? ''}; was ${c.before ?? ''}): the old field's column is kept with its data as ${column} (its raw values in _raw under "${c.detail ?? ''}"), the new field gets a column of its own`;
    case 'widened':
      return `field ${field} changed type (column ${column} was ${c.before ?? ''}, the platform now says ${c.after ?? ''}): column widened to text, no data dropped`;
    case 'kept-text':
      return `field ${field} is ${c.after ?? ''} on the platform but column ${column} is text; it stays text (values are stored as the platform's text)`;
    case 'rederived':
      return `re-derived ${column} of ${c.detail ?? ''}`;
    case 'fixed-column-added':
      return `added missing column ${column} (${c.after ?? ''})`;
  }
}
