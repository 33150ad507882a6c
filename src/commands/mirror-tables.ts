/**
 * Checks that keep listsync off tables it did not make: every configured
 * mirror table that exists must be the one listsync created for that list
 * (registered in listsync.lists, with listsync's own columns), and a list's
 * fields must have distinct names (two fields of one name would share a column).
 */
import { pinnedNames, type Config, type ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { listKeyPath, mirrorSchemaOf } from '../accounts.js';
import { readRegistry } from '../mirror/list-registry.js';
import { assignColumnNames, FIXED_COLUMNS, isReservedColumn, preferredColumnName } from '../mirror/index.js';
import type { FieldMeta } from '../platform/types.js';
import type { Finding } from './finding.js';

/** Columns every mirror table listsync makes has. */
const OWN_COLUMNS = [FIXED_COLUMNS.id, FIXED_COLUMNS.rowVersion, '_deleted_at'];

export async function mirrorTableFindings(db: Knex, config: Config): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const list of config.lists) {
    const schema = mirrorSchemaOf(config, list);
    const table = list.table ?? list.name;
    const columns = await columnsOf(db, schema, table);
    if (columns.length === 0) {
      findings.push({
        check: `mirror ${list.name}`,
        ok: true,
        message: `${schema}.${table} does not exist yet; the first pull creates it`,
      });
      continue;
    }
    const entry = await readRegistry(db, list.name);
    const missing = OWN_COLUMNS.filter((c) => !columns.includes(c));
    const problem =
      !entry || entry.table !== table
        ? `${schema}.${table} exists but listsync did not create it for list "${list.name}"${entry ? ` (its table is ${schema}.${entry.table})` : ''}`
        : missing.length
          ? `${schema}.${table} lacks listsync's columns ${missing.join(', ')}`
          : undefined;
    findings.push(
      problem
        ? {
            check: `mirror ${list.name}`,
            ok: false,
            severity: 2,
            message: `${problem}: a pull would add columns and triggers to it. Set ${listKeyPath(config, list)}.table to a new name (or move that table away).`,
          }
        : { check: `mirror ${list.name}`, ok: true, message: `${schema}.${table} is listsync's table for this list` },
    );
  }
  return findings;
}

/** Field names the platform lists more than once, with their counts. */
export function duplicateFieldNames(fields: readonly Pick<FieldMeta, 'FieldName'>[]): { name: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const f of fields) counts.set(f.FieldName, (counts.get(f.FieldName) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1).map(([name, count]) => ({ name, count }));
}

/** `field "Amount" is listed 2 times by the platform (one column would hold both)`, or undefined. */
export function describeDuplicates(fields: readonly Pick<FieldMeta, 'FieldName'>[], where: string): string | undefined {
  const dups = duplicateFieldNames(fields);
  if (dups.length === 0) return undefined;
  const what = dups.map((d) => `"${d.name}" ${d.count} times`).join(', ');
  return `the platform lists field(s) ${what} for ${where}; one column cannot hold two fields: ask the platform's admin to rename one`;
}

async function columnsOf(db: Knex, schema: string, table: string): Promise<string[]> {
  const rows = (await db('information_schema.columns').where({ table_schema: schema, table_name: table }).select('column_name')) as {
    column_name: string;
  }[];
  return rows.map((r) => r.column_name);
}

/**
 * Fields whose column would be named like a column listsync adds itself (`valid_from`, `synced_at`,
 * `row_version`...): each gets a suffixed column instead. One sentence per field, for check (discover
 * says it in its table).
 */
export function reservedNameNotes(
  fields: readonly FieldMeta[],
  list: Pick<ListConfig, 'columnNames' | 'idField' | 'versionField' | 'columns'>,
): string[] {
  const fixed = new Set([list.idField, list.versionField, 'Created', 'Modified']);
  const own = fields.filter((f) => !fixed.has(f.FieldName));
  const names = assignColumnNames(
    own.map((f) => ({ field: f.FieldName, name: preferredColumnName(f, list.columnNames) })),
    new Map(),
    new Map(Object.entries(pinnedNames(list.columns))),
  );
  return own
    .filter((f) => isReservedColumn(preferredColumnName(f, list.columnNames)))
    .map(
      (f) =>
        `field ${f.FieldName}${f.DisplayName ? ` ("${f.DisplayName}")` : ''} is named like listsync's own column ${preferredColumnName(f, list.columnNames)}, so its column is ${names.get(f.FieldName) ?? '?'}`,
    );
}
