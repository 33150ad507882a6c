/** `listsync discover`: each list's fields, platform types, column types, and whether indexed. */
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { table } from '../format.js';
import { columnKindFor, columnSqlType } from '../mirror/index.js';

export async function runDiscover(ctx: Pick<AppContext, 'client'>, lists: readonly ListConfig[]): Promise<string> {
  const out: string[] = [];
  for (const list of lists) {
    const fields = await ctx.client.getFields(list.appID, list.listID);
    const role = (name: string) =>
      [name === list.cursorField && 'cursor', name === list.sortField && 'sort', name === list.idField && 'id', name === list.versionField && 'version'].filter(Boolean).join(',');
    out.push(`${list.name} (${list.appID}/${list.listID}): ${fields.length} fields`);
    out.push(
      table(
        ['field', 'platform type', 'column type', 'indexed', 'system', 'role'],
        fields.map((f) => [f.FieldName, `${f.FieldType}/${f.Type}`, columnSqlType(columnKindFor(f)), f.IsIndex ? 'yes' : 'no', f.IsSystem ? 'yes' : '', role(f.FieldName)]),
      ),
    );
    out.push('');
  }
  return out.join('\n');
}
