/**
 * `listsync discover`: each list's fields — display name, storage kind,
 * control — the column each maps to with its type and where that type came
 * from, whether the field is indexed, and (when the mirror exists) which
 * fields were renamed on the platform since their column was named.
 */
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { table } from '../format.js';
import { assignColumnNames, columnSqlType, describeField, FIXED_COLUMNS, preferredColumnName, type RegistryEntry } from '../mirror/index.js';
import type { FieldMeta } from '../platform/types.js';

/** The registry entry of a list, when a mirror exists for it (undefined otherwise or when the database is not reachable). */
export type RegistryReader = (listName: string) => Promise<RegistryEntry | undefined>;

export async function runDiscover(ctx: Pick<AppContext, 'client'>, lists: readonly ListConfig[], readRegistry: RegistryReader = async () => undefined): Promise<string> {
  const out: string[] = [];
  for (const list of lists) {
    const fields = await ctx.client.getFields(list.appID, list.listID);
    const registry = await readRegistry(list.name);
    out.push(`${list.name} (${list.appID}/${list.listID}): ${fields.length} fields -> table ${list.table ?? list.name}`);
    out.push(table(['field', 'display name', 'storage', 'control', 'column', 'column type', 'type from', 'indexed', 'role', 'note'], describeRows(list, fields, registry)));
    const duplicates = duplicateNames(fields);
    if (duplicates.length) out.push(`warning: the platform lists ${duplicates.join(', ')} more than once; only the first of each is mirrored`);
    out.push('');
  }
  return out.join('\n');
}

function describeRows(list: ListConfig, fields: readonly FieldMeta[], registry: RegistryEntry | undefined): string[][] {
  const fixed = new Map<string, [string, string]>([
    [list.idField, [FIXED_COLUMNS.id, 'text']],
    [list.versionField, [FIXED_COLUMNS.rowVersion, 'bigint']],
    ['Created', [FIXED_COLUMNS.createdAt, 'timestamptz']],
    ['Modified', [FIXED_COLUMNS.modifiedAt, 'timestamptz']],
  ]);
  const stored = new Map((registry?.fields ?? []).filter((e) => !e.fixed).map((e) => [e.field, e]));
  const names = assignColumnNames(
    fields.filter((f) => !fixed.has(f.FieldName)).map((f) => ({ field: f.FieldName, name: preferredColumnName(f, list.columnNames) })),
    new Map([...stored].map(([field, e]) => [field, e.column])),
    new Map(Object.entries(list.columns)),
  );
  const role = (name: string): string =>
    [name === list.cursorField && 'cursor', name === list.sortField && 'sort', name === list.idField && 'id', name === list.versionField && 'version'].filter(Boolean).join(',');
  return fields.map((f) => {
    const shape = describeField(f);
    const before = stored.get(f.FieldName);
    const [column, type] = fixed.get(f.FieldName) ?? [names.get(f.FieldName) ?? '?', columnSqlType(before?.kind ?? shape.kind)];
    const notes = [
      before === undefined && registry !== undefined && !fixed.has(f.FieldName) && 'new: the next pull adds the column',
      before?.displayName !== undefined && f.DisplayName && before.displayName !== f.DisplayName && `renamed on the platform (was "${before.displayName}"); the column keeps its name`,
      before !== undefined && before.kind !== shape.kind && `column is ${columnSqlType(before.kind)}; the platform now says ${columnSqlType(shape.kind)}`,
      list.columns[f.FieldName] !== undefined && 'pinned by lists[].columns',
    ].filter(Boolean);
    return [f.FieldName, f.DisplayName ?? '', shape.storage || '?', shape.control || '-', column, type, shape.source, f.IsIndex ? 'yes' : 'no', role(f.FieldName), notes.join('; ')];
  });
}

function duplicateNames(fields: readonly FieldMeta[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const f of fields) (seen.has(f.FieldName) ? dup : seen).add(f.FieldName);
  return [...dup];
}
