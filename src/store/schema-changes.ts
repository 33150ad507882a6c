/**
 * `listsync.schema_changes`: every change listsync saw in a list's fields
 * (kinds and messages: src/schema-change.ts), written in the DDL's
 * transaction; read by `status` and `/metrics`.
 */
import type { Knex } from '../db.js';
import { closestText, escapeStorable, unescapeStorable } from '../storable.js';
import { describeSchemaChange, type SchemaChange, type SchemaChangeKind } from '../schema-change.js';

export const SCHEMA_CHANGES_TABLE = 'listsync.schema_changes';

/**
 * Writes the changes of one list to `listsync.schema_changes`; returns their
 * ids. Call inside the DDL's transaction.
 */
export async function recordSchemaChanges(
  trx: Knex.Transaction,
  listName: string,
  changes: readonly SchemaChange[],
  runId?: number | null,
): Promise<number[]> {
  if (changes.length === 0) return [];
  const rows = (await trx(SCHEMA_CHANGES_TABLE)
    .insert(
      changes.map((c) => ({
        list_name: listName,
        kind: c.kind,
        // The platform's strings (field and display names), kept exactly where PostgreSQL cannot hold them as they are.
        field: storableOrNull(c.field),
        column_name: c.column ?? null,
        before: storableOrNull(c.before),
        after: storableOrNull(c.after),
        message: closestText(describeSchemaChange(c)),
        run_id: runId ?? null,
      })),
    )
    .returning('id')) as { id: string | number }[];
  return rows.map((r) => Number(r.id));
}

function storableOrNull(s: string | undefined): string | null {
  return s === undefined ? null : escapeStorable(s);
}

export interface RecordedSchemaChange {
  list: string;
  kind: SchemaChangeKind;
  field: string | null;
  column: string | null;
  before: string | null;
  after: string | null;
  message: string;
  runId: number | null;
  seenAt: Date;
}

/** The latest changes, newest first (for `status`). */
export async function recentSchemaChanges(db: Knex, options: { list?: string; limit?: number } = {}): Promise<RecordedSchemaChange[]> {
  const q = db(SCHEMA_CHANGES_TABLE)
    .orderBy('id', 'desc')
    .limit(options.limit ?? 10);
  if (options.list !== undefined) void q.where({ list_name: options.list });
  const rows = (await q.select('list_name', 'kind', 'field', 'column_name', 'before', 'after', 'message', 'run_id', 'seen_at')) as {
    list_name: string;
    kind: SchemaChangeKind;
    field: string | null;
    column_name: string | null;
    before: string | null;
    after: string | null;
    message: string;
    run_id: string | number | null;
    seen_at: Date;
  }[];
  return rows.map((r) => ({
    list: r.list_name,
    kind: r.kind,
    field: r.field === null ? null : unescapeStorable(r.field),
    column: r.column_name,
    before: r.before === null ? null : unescapeStorable(r.before),
    after: r.after === null ? null : unescapeStorable(r.after),
    message: r.message,
    runId: r.run_id === null ? null : Number(r.run_id),
    seenAt: r.seen_at,
  }));
}

/** Changes recorded so far, by list and kind (for `/metrics`). */
export async function countSchemaChanges(db: Knex): Promise<{ list: string; kind: string; count: number }[]> {
  const rows = (await db(SCHEMA_CHANGES_TABLE).select('list_name', 'kind').count('* as count').groupBy('list_name', 'kind')) as {
    list_name: string;
    kind: string;
    count: string | number;
  }[];
  return rows.map((r) => ({ list: r.list_name, kind: r.kind, count: Number(r.count) }));
}
