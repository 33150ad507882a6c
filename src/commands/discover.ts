/** `listsync discover`: each list's fields, platform types, the columns they map to, and whether indexed. */
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { table } from '../format.js';
import { describeDuplicates } from './mirror-tables.js';
import { assignColumnNames, columnKindFor, columnSqlType, FIXED_COLUMNS } from '../mirror/index.js';

export async function runDiscover(ctx: Pick<AppContext, 'client'>, lists: readonly ListConfig[]): Promise<string> {
  const out: string[] = [];
  for (const list of lists) {
    const fields = await ctx.client.getFields(list.appID, list.listID);
    const fixed = new Map<string, [string, string]>([
      [list.idField, [FIXED_COLUMNS.id, 'text']],
      [list.versionField, [FIXED_COLUMNS.rowVersion, 'bigint']],
      ['Created', [FIXED_COLUMNS.createdAt, 'timestamptz']],
      ['Modified', [FIXED_COLUMNS.modifiedAt, 'timestamptz']],
    ]);
    const names = assignColumnNames(fields.filter((f) => !fixed.has(f.FieldName)).map((f) => f.FieldName));
    const role = (name: string) =>
      [name === list.cursorField && 'cursor', name === list.sortField && 'sort', name === list.idField && 'id', name === list.versionField && 'version'].filter(Boolean).join(',');
    out.push(`${list.name} (${list.appID}/${list.listID}): ${fields.length} fields -> table ${list.table ?? list.name}`);
    const duplicates = describeDuplicates(fields, `${list.appID}/${list.listID}`);
    if (duplicates) out.push(`WARNING: ${duplicates}`);
    out.push(
      table(
        ['field', 'platform type', 'column', 'column type', 'indexed', 'role'],
        fields.map((f) => {
          const [column, type] = fixed.get(f.FieldName) ?? [names.get(f.FieldName) ?? '?', columnSqlType(columnKindFor(f))];
          return [f.FieldName, `${f.FieldType}/${f.Type}`, column, type, f.IsIndex ? 'yes' : 'no', role(f.FieldName)];
        }),
      ),
    );
    out.push('');
  }
  return out.join('\n');
}
