/**
 * The temporary tables of one reconcile run, on its dedicated connection, and
 * the set-based SQL that decides what the run marks, undeletes and re-reads:
 *
 * - `reconcile_seen`: every ID the sweep received;
 * - `reconcile_missing`: live, non-provisional mirror rows not seen (yet): the candidates;
 * - `reconcile_was_deleted`: mirror rows marked deleted before the run;
 * - `reconcile_undelete`: those of them seen;
 * - `reconcile_heal`: IDs the mirror lacks and rows whose version is behind the platform's.
 *
 * The mirror is snapshotted in primary-key order in small steps between
 * pages: a step adds the live rows not seen so far to `missing` (and the
 * deleted rows already seen to `undelete`), and each page removes its IDs
 * from `missing` (and adds the deleted rows it names to `undelete`). So when
 * the sweep ends, both sets are exact without one large join. The list lock
 * keeps pulls and pushes out, so the mirror's IDs do not move meanwhile (local
 * inserts get `local-` ids, which are never candidates).
 *
 * Invariants (reconcile.test.ts, sync/reconcile-counts.test.ts,
 * sync/reconcile-heal.test.ts): a row with a provisional `local-` id is never
 * a candidate; a row with a local change write-back has not settled is neither
 * marked nor undeleted; the marks are one statement, in the caller's
 * transaction. The mirror table's name comes quoted from its mapping
 * (`qualifiedTable`); every value is a binding.
 */
import { performance } from 'node:perf_hooks';
import type { Knex } from '../db.js';
import { unsettledChangeExists } from '../store/outbox.js';
import { closeDeletedVersions, reopenVersions } from './history.js';
import { LOCAL_ID_PREFIX } from './table-mapping.js';

interface PgConnection {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/** Live, non-provisional mirror rows per platform calendar day (`YYYY-MM-DD`, ascending), and those without a created day. */
export interface MirrorDayCounts {
  days: { day: string; n: number }[];
  undated: number;
}

/** Platform calendar days `[from, to)`, `YYYY-MM-DD`; null is open. */
interface DaySpan {
  from: string | null;
  to: string | null;
}

const TEMP_BUFFERS = '128MB';
/** Mirror rows read per snapshot step (keyset over the primary key). */
const SNAPSHOT_CHUNK = 2000;

/**
 * A mirror row `m` with a local change write-back has not settled (an edit,
 * a delete, or a create under an id the user chose, unconfirmed): reconcile
 * leaves it alone. Binds the list's name.
 */
const OPEN_LOCAL_CHANGE = unsettledChangeExists('m.id');

/** Whether the mirror table (quoted, schema-qualified) exists. */
export async function mirrorTableExists(db: Knex, qualifiedTable: string): Promise<boolean> {
  const r = (await db.raw('select to_regclass(?) as t', [qualifiedTable])) as { rows: { t: string | null }[] };
  return Boolean(r.rows[0]?.t);
}

export class SweepTables {
  seen = 0;
  live = 0;
  missing = 0;
  private cursor = '';
  private snapshotDone = false;

  constructor(
    private readonly db: Knex,
    private readonly conn: PgConnection,
    private readonly table: string,
    private readonly listName: string,
  ) {}

  private raw(sql: string, bindings: readonly unknown[] = []): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }> {
    return this.db.raw(sql, bindings as Knex.RawBinding[]).connection(this.conn) as unknown as Promise<{
      rows: Record<string, unknown>[];
      rowCount: number | null;
    }>;
  }

  async create(): Promise<void> {
    // Room for a million IDs in local buffers instead of temp files. Postgres refuses the change
    // once the session used a temporary table (a reused pooled connection keeps its size: fine).
    await this.raw(`set temp_buffers = '${TEMP_BUFFERS}'`).catch(() => undefined);
    await this.drop();
    await this.raw('create temp table reconcile_seen (id text primary key)');
    await this.raw('create temp table reconcile_missing (id text primary key)');
    await this.raw('create temp table reconcile_was_deleted (id text primary key)');
    await this.raw('create temp table reconcile_undelete (id text primary key)');
    await this.raw('create temp table reconcile_heal (id text primary key)');
  }

  async drop(): Promise<void> {
    await this.raw(
      'drop table if exists pg_temp.reconcile_seen, pg_temp.reconcile_missing, pg_temp.reconcile_was_deleted, pg_temp.reconcile_undelete, pg_temp.reconcile_heal',
    );
  }

  /**
   * Records a page's IDs; they stop being candidates. With versions, IDs the mirror lacks and
   * rows whose version is behind are queued for healing (a primary-key lookup per ID).
   */
  async addSeen(ids: readonly string[], versions?: readonly (string | null)[]): Promise<void> {
    if (ids.length === 0) return;
    const r = await this.raw(
      `with page as (select * from unnest(?::text[], ?::text[]) as p(id, version)),
            ins as (insert into pg_temp.reconcile_seen (id) select id from page on conflict do nothing returning id),
            del as (delete from pg_temp.reconcile_missing x using ins where x.id = ins.id returning 1),
            und as (insert into pg_temp.reconcile_undelete (id) select w.id from pg_temp.reconcile_was_deleted w join ins on ins.id = w.id on conflict do nothing),
            heal as (insert into pg_temp.reconcile_heal (id)
                     select p.id from page p left join ${this.table} m on m.id = p.id
                      where p.version is not null
                        and (m.id is null or m.row_version is null or m.row_version < p.version::bigint)
                     on conflict do nothing)
       select (select count(*) from ins)::int as added, (select count(*) from del)::int as found`,
      [ids, versions ?? ids.map(() => null)],
    );
    const row = r.rows[0] as { added: number; found: number };
    this.seen += row.added;
    this.missing -= row.found;
  }

  /** Snapshot steps for about `budgetMs` (at least one while any is left). */
  async snapshotFor(budgetMs: number): Promise<void> {
    const until = performance.now() + Math.max(0, budgetMs);
    do {
      if (this.snapshotDone) return;
      await this.snapshotStep();
    } while (performance.now() < until);
  }

  private async snapshotStep(): Promise<void> {
    const r = await this.raw(
      `with chunk as (
         select m.id, m._deleted_at is null and not starts_with(m.id, ?) as live, m._deleted_at is not null as deleted
           from ${this.table} m where m.id > ? order by m.id limit ${SNAPSHOT_CHUNK}),
       ins as (
         insert into pg_temp.reconcile_missing (id)
         select c.id from chunk c where c.live and not exists (select 1 from pg_temp.reconcile_seen s where s.id = c.id)
         on conflict do nothing returning 1),
       dead as (
         insert into pg_temp.reconcile_was_deleted (id) select c.id from chunk c where c.deleted on conflict do nothing),
       back as (
         insert into pg_temp.reconcile_undelete (id)
         select c.id from chunk c where c.deleted and exists (select 1 from pg_temp.reconcile_seen s where s.id = c.id)
         on conflict do nothing)
       select max(c.id) as last, count(*)::int as n, (count(*) filter (where c.live))::int as live,
              (select count(*) from ins)::int as missing
         from chunk c`,
      [LOCAL_ID_PREFIX, this.cursor],
    );
    const row = r.rows[0] as { last: string | null; n: number; live: number; missing: number };
    this.live += row.live;
    this.missing += row.missing;
    if (row.last !== null) this.cursor = row.last;
    if (row.n < SNAPSHOT_CHUNK) this.snapshotDone = true;
  }

  /**
   * Live, non-provisional mirror rows per platform calendar day of `created_at` (in `zone`), and
   * how many have no `created_at`. Also the run's `live`.
   */
  async dayCounts(zone: string): Promise<MirrorDayCounts> {
    const r = await this.raw(
      `select to_char((m.created_at at time zone ?)::date, 'YYYY-MM-DD') as day, count(*)::int as n
         from ${this.table} m
        where m._deleted_at is null and not starts_with(m.id, ?)
        group by 1 order by 1`,
      [zone, LOCAL_ID_PREFIX],
    );
    let undated = 0;
    const days: { day: string; n: number }[] = [];
    for (const row of r.rows as { day: string | null; n: number }[]) {
      if (row.day === null) undated += row.n;
      else days.push({ day: row.day, n: row.n });
    }
    this.live = days.reduce((s, d) => s + d.n, undated);
    return { days, undated };
  }

  /**
   * After the ranges were swept: their live, non-provisional rows not seen become the
   * candidates, and deleted rows seen are to be undeleted. The range bounds are platform days,
   * turned into instants in `zone` so that the index on `created_at` serves.
   */
  async scopeToRanges(ranges: readonly DaySpan[], zone: string): Promise<void> {
    if (ranges.length > 0) {
      const r = await this.raw(
        `with ranges as (select * from unnest(?::date[], ?::date[]) as r(lo, hi)),
         ins as (
           insert into pg_temp.reconcile_missing (id)
           select m.id from ranges r
             join ${this.table} m
               on (r.lo is null or m.created_at >= (r.lo::timestamp at time zone ?))
              and (r.hi is null or m.created_at < (r.hi::timestamp at time zone ?))
            where m._deleted_at is null and not starts_with(m.id, ?)
              and not exists (select 1 from pg_temp.reconcile_seen s where s.id = m.id)
           on conflict do nothing returning 1)
         select count(*)::int as n from ins`,
        [ranges.map((x) => x.from), ranges.map((x) => x.to), zone, zone, LOCAL_ID_PREFIX],
      );
      this.missing += (r.rows[0] as { n: number }).n;
    }
    await this.raw(
      `insert into pg_temp.reconcile_undelete (id)
       select s.id from pg_temp.reconcile_seen s join ${this.table} m on m.id = s.id
        where m._deleted_at is not null
       on conflict do nothing`,
    );
  }

  /** Up to `limit` candidates after `after`, in ID order. */
  async candidates(after: string, limit: number): Promise<string[]> {
    const r = await this.raw(`select id from pg_temp.reconcile_missing where id > ? order by id limit ?`, [after, limit]);
    return r.rows.map((x) => String(x.id));
  }

  /** Up to `limit` IDs to heal after `after`, in ID order. */
  async toHeal(after: string, limit: number): Promise<string[]> {
    const r = await this.raw(`select id from pg_temp.reconcile_heal where id > ? order by id limit ?`, [after, limit]);
    return r.rows.map((x) => String(x.id));
  }

  /** Candidates the platform still has: seen after all. */
  async confirmed(ids: readonly string[]): Promise<void> {
    await this.addSeen(ids);
  }

  /**
   * The one statement: marks the missing rows deleted and undeletes the rows seen again. With
   * `history`, a delete closes the item's open version; an item seen again has it reopened.
   */
  async mark(trx: Knex.Transaction, history?: { schema: string; table: string }): Promise<{ deleted: number; undeleted: number }> {
    const r = (await trx.raw(
      `with del as (
         update ${this.table} m set _deleted_at = now()
           from pg_temp.reconcile_missing x
          where x.id = m.id
            and m._deleted_at is null
            and not starts_with(m.id, ?)
            and not exists (select 1 from pg_temp.reconcile_seen s where s.id = m.id)
            and not exists ${OPEN_LOCAL_CHANGE}
         returning 1),
       undel as (
         update ${this.table} m set _deleted_at = null
           from pg_temp.reconcile_undelete u
          where u.id = m.id
            and m._deleted_at is not null
            and not exists ${OPEN_LOCAL_CHANGE}
         returning 1)
       select (select count(*) from del)::int as deleted, (select count(*) from undel)::int as undeleted`,
      [LOCAL_ID_PREFIX, this.listName, this.listName],
    )) as { rows: { deleted: number; undeleted: number }[] };
    const row = r.rows[0]!;
    if (history) {
      await closeDeletedVersions(trx, history);
      const back = (await trx.raw('select id from pg_temp.reconcile_undelete')) as { rows: { id: string }[] };
      await reopenVersions(
        trx,
        history,
        back.rows.map((x) => x.id),
      );
    }
    return { deleted: Number(row.deleted), undeleted: Number(row.undeleted) };
  }
}
