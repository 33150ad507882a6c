/**
 * The users directory's table: users from POST /users/search, one row per
 * UserID, rewritten only when its `_raw` changed.
 */
import type { Knex } from '../db.js';
import { itemId } from '../platform/item-identity.js';
import type { PlatformUser } from '../platform/types.js';
import { closestText, storableJson } from '../storable.js';
import { scalarString } from './convert.js';
import { USERS_COLUMNS } from './ddl.js';
import { qualifiedName, quoteIdent } from './naming.js';
import { withListsyncWriter } from './own-writes.js';
import { arrayLiteral } from './pg-text.js';
import { UPSERT_BATCH_SIZE } from './upsert-rows.js';

type Db = Knex | Knex.Transaction;

export interface UsersUpsertResult {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Users without a UserID: not written. */
  invalid: number;
}

const USER_FIELDS: Record<(typeof USERS_COLUMNS)[number], string> = {
  user_id: 'UserID',
  name: 'Name',
  email: 'Email',
  account: 'Account',
  photo: 'Photo',
  line_manager: 'LineManager',
};

/** Upserts users (POST /users/search results); a user is rewritten only when its `_raw` changed. */
export async function upsertUsers(
  db: Db,
  schema: string,
  table: string,
  users: readonly (PlatformUser | Record<string, unknown>)[],
): Promise<UsersUpsertResult> {
  const result: UsersUpsertResult = { inserted: 0, updated: 0, unchanged: 0, invalid: 0 };
  if (users.length === 0) return result;
  const t = qualifiedName(schema, table);
  const cols = [...USERS_COLUMNS];
  const sql = `
with up as (
  insert into ${t} as t (${[...cols, '_raw', '_synced_at'].map(quoteIdent).join(', ')})
  select ${cols.map((c) => `s.${quoteIdent(c)}`).join(', ')}, s._raw, now()
    from unnest(${cols.map(() => '?::text[]').join(', ')}, ?::jsonb[]) as s(${[...cols, '_raw'].map(quoteIdent).join(', ')})
  on conflict (${quoteIdent('user_id')}) do update set ${[...cols.slice(1), '_raw', '_synced_at'].map((c) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`).join(', ')}
   where t._raw is distinct from excluded._raw
  returning (t.xmax = 0) as inserted
)
select (select count(*) from up where inserted)::int as inserted, (select count(*) from up where not inserted)::int as updated`;
  await withListsyncWriter(db, async (trx) => {
    for (let start = 0; start < users.length; start += UPSERT_BATCH_SIZE) {
      const byId = new Map<string, Record<string, unknown>>();
      for (const u of users.slice(start, start + UPSERT_BATCH_SIZE)) {
        const id = itemId((u as Record<string, unknown>)?.UserID);
        if (id === null) result.invalid++;
        else byId.set(id, u as Record<string, unknown>);
      }
      if (byId.size === 0) continue;
      const values = cols.map(() => [] as (string | null)[]);
      const raws: string[] = [];
      for (const [id, u] of byId) {
        cols.forEach((c, i) => {
          const v = c === 'user_id' ? id : userText(u[USER_FIELDS[c]]);
          values[i]!.push(v);
        });
        raws.push(storableJson(u));
      }
      const res = (await trx.raw(sql, [...values.map(arrayLiteral), arrayLiteral(raws)])) as {
        rows: { inserted: number; updated: number }[];
      };
      const r = res.rows[0]!;
      result.inserted += r.inserted;
      result.updated += r.updated;
      result.unchanged += byId.size - r.inserted - r.updated;
    }
  });
  return result;
}

function userText(v: unknown): string | null {
  if (v === null || v === undefined || v === '') return null;
  const s = scalarString(v) ?? (typeof v === 'boolean' ? String(v) : JSON.stringify(v));
  return closestText(s);
}
