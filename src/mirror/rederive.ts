/**
 * Typed columns are derived from `_raw`, so they can be derived again: when a
 * setting that changes conversion changes (the platform's time zone, a
 * column's type), the affected columns are rewritten from each row's `_raw`
 * in the database, with no API requests. Rows are read in id order, a batch at
 * a time, converted with the same code as the pull, and written back with one
 * `UPDATE ... FROM unnest(...)` per batch, as listsync's own write (never
 * captured). Rows with an open local change keep their values: write-back
 * settles them, and the re-read after it brings the platform's values.
 */
import type { Knex } from '../db.js';
import { openItemChangeExists } from '../store/outbox.js';
import { parseJson } from '../platform/json.js';
import { SQL_TYPE, type ColumnKind } from './column-types.js';
import { fromPlatformToSql, NOT_CONVERTED } from './convert.js';
import { qualifiedName, quoteIdent } from './naming.js';
import { arrayLiteral } from './pg-text.js';
import { closestText, decodeStorable } from '../storable.js';
import { markListsyncWriter } from './own-writes.js';

export interface DerivedColumn {
  field: string;
  column: string;
  kind: ColumnKind;
}

export interface RederiveResult {
  rows: number;
  /** Values that did not convert under the new settings (stored NULL, kept in `_raw`). */
  failedValues: number;
}

const BATCH = 5000;

/** Rewrites `columns` of every row with a `_raw` from that `_raw`, converted in `zone`. Runs in the caller's transaction. */
export async function rederiveColumns(
  trx: Knex.Transaction,
  target: { schema: string; table: string; listName: string },
  columns: readonly DerivedColumn[],
  zone: string,
): Promise<RederiveResult> {
  const result: RederiveResult = { rows: 0, failedValues: 0 };
  if (columns.length === 0) return result;
  await markListsyncWriter(trx);
  const qtable = qualifiedName(target.schema, target.table);
  const select = `select t.id, t._raw::text as raw from ${qtable} t
    where t.id > ? and t._raw is not null
      and not exists ${openItemChangeExists('t.id')}
    order by t.id limit ${BATCH}`;
  const sets = columns.map((c, i) => `${quoteIdent(c.column)} = v.c${i}::${SQL_TYPE[c.kind]}`).join(', ');
  const unnest = ['?::text[]', ...columns.map(() => '?::text[]')].join(', ');
  const names = ['id', ...columns.map((_, i) => `c${i}`)].join(', ');
  const update = `update ${qtable} t set ${sets} from unnest(${unnest}) as v(${names}) where t.id = v.id`;
  for (let after = ''; ;) {
    const { rows } = (await trx.raw(select, [after, target.listName])) as { rows: { id: string; raw: string }[] };
    if (rows.length === 0) break;
    const values: (string | null)[][] = columns.map(() => []);
    for (const row of rows) {
      const item = decodeStorable(parseJson(row.raw)) as Record<string, unknown>;
      columns.forEach((c, i) => {
        const v = fromPlatformToSql(c.kind, item[c.field], zone);
        if (v === NOT_CONVERTED) result.failedValues++;
        values[i]!.push(v === NOT_CONVERTED ? null : v === null ? null : closestText(v));
      });
    }
    await trx.raw(update, [arrayLiteral(rows.map((r) => r.id)), ...values.map((v) => arrayLiteral(v))]);
    result.rows += rows.length;
    after = rows[rows.length - 1]!.id;
  }
  return result;
}
