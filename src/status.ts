/**
 * What `listsync status`, `/healthz` and `/metrics` report, read from
 * Postgres: per list the last runs, watermark, lag, rows, changes and
 * conflicts and deletes (webhook activity: `webhookActivity` in
 * src/store/webhook-inbox.ts).
 *
 * Invariants (test/status.test.ts):
 * - a fixed number of queries however many lists: one for what listsync's own
 *   tables hold (src/store/status-facts.ts), one for the mirror tables' rows;
 * - the rows are exact (`count(*)`, a scan of each mirror table), so a caller
 *   that does not show them (`/healthz`) passes `{ rows: false }` and no
 *   mirror table is read.
 */
import type { Config, ListConfig } from './config.js';
import type { Knex } from './db.js';
import { mirrorSchemaOf } from './accounts.js';
import { readStatusFacts, type StatusFacts } from './store/status-facts.js';

export interface ListStatus {
  list: string;
  /** The account the list belongs to. */
  account: string;
  table: string;
  lastSuccessAt: Date | null;
  lastRunAt: Date | null;
  lastRunStatus: string | null;
  running: boolean;
  watermark: string | null;
  /** The last successful reconcile's heals by kind; null before the first. */
  lastReconcileHealed: { at: Date; deleted: number; undeleted: number; missing: number; behind: number } | null;
  /** Minutes since the start of the last successful pull (the mirror is at least that fresh); null before the first. */
  lagMinutes: number | null;
  /** Start of the last successful pull (what the lag is measured from); null before the first. */
  lastPullStartedAt: Date | null;
  rows: number | null;
  deletedRows: number | null;
  lastError: string | null;
  pendingChanges: number;
  failedChanges: number;
  openConflicts: number;
  resumeFromPage: number | null;
}

export interface StatusOptions {
  /**
   * Count each mirror table's live and deleted rows (a scan of the table); false leaves them null; a
   * RowCountCache counts only the tables whose counts may have moved. Default true.
   */
  rows?: boolean | RowCountCache;
}

interface RowCounts {
  live: number;
  deleted: number;
}

/**
 * Mirror row counts kept from one read to the next, for a reader that asks often (`/metrics`, scraped
 * every few seconds, would otherwise scan every mirror table each time). A table is counted again when
 * a run of its list started since its count, or ran during it or since, or when the count is older than
 * `maxAgeMs` (real-time edits change rows without a run; default 5 min).
 */
export class RowCountCache {
  /** Per table: when it was counted, what it held, and whether a run was writing to it then. */
  private readonly counts = new Map<string, { at: number; rows: RowCounts | undefined; running: boolean }>();

  constructor(readonly maxAgeMs = 5 * 60_000) {}

  /** The tables of `facts` to count now. */
  due(facts: readonly StatusFacts[], now: Date): string[] {
    const due = facts.filter((f) => {
      const kept = this.counts.get(f.table);
      if (!kept) return true;
      const lastRun = Math.max(
        ...[f.last_run_at, f.last_succeeded_at, f.last_failure_at, f.reconcile_at].map((d) => d?.getTime() ?? -Infinity),
      );
      return f.running || kept.running || lastRun >= kept.at || now.getTime() - kept.at >= this.maxAgeMs;
    });
    return existingTables(due);
  }

  /** Keeps what was counted now (a table found missing keeps no rows) and returns every table's counts known. */
  update(
    facts: readonly StatusFacts[],
    counted: ReadonlyMap<string, RowCounts>,
    asked: readonly string[],
    now: Date,
  ): Map<string, RowCounts> {
    for (const f of facts) if (!f.table_exists) this.counts.delete(f.table);
    const running = new Set(facts.filter((f) => f.running).map((f) => f.table));
    for (const table of asked) this.counts.set(table, { at: now.getTime(), rows: counted.get(table), running: running.has(table) });
    const known = new Map<string, RowCounts>();
    for (const [table, kept] of this.counts) if (kept.rows) known.set(table, kept.rows);
    return known;
  }
}

/** Every list's status, in the config's order: the two queries once per mirror schema (accounts may have their own). */
export async function listStatuses(db: Knex, config: Config, now: Date = new Date(), options: StatusOptions = {}): Promise<ListStatus[]> {
  const bySchema = new Map<string, ListConfig[]>();
  for (const l of config.lists) {
    const schema = mirrorSchemaOf(config, l);
    bySchema.set(schema, [...(bySchema.get(schema) ?? []), l]);
  }
  const found = new Map<string, ListStatus>();
  for (const [schema, lists] of bySchema) for (const s of await statusesIn(db, schema, lists, now, options)) found.set(s.list, s);
  return config.lists.flatMap((l) => found.get(l.name) ?? []);
}

async function statusesIn(
  db: Knex,
  schema: string,
  lists: readonly ListConfig[],
  now: Date,
  options: StatusOptions,
): Promise<ListStatus[]> {
  const tables = lists.map((l) => ({ name: l.name, table: l.table ?? l.name }));
  const account = new Map(lists.map((l) => [l.name, l.account]));
  const facts = await readStatusFacts(db, schema, tables);
  const counts = await rowCounts(db, schema, facts, options.rows ?? true, now);
  return facts.map((f) => ({ ...statusOf(f, schema, counts.get(f.table), now), account: account.get(f.name)! }));
}

async function rowCounts(
  db: Knex,
  schema: string,
  facts: readonly StatusFacts[],
  rows: boolean | RowCountCache,
  now: Date,
): Promise<Map<string, RowCounts>> {
  if (rows === false) return new Map();
  if (rows === true) return countMirrorRows(db, schema, existingTables(facts));
  const due = rows.due(facts, now);
  return rows.update(facts, await countMirrorRows(db, schema, due), due, now);
}

export async function listStatus(
  db: Knex,
  config: Config,
  list: ListConfig,
  now: Date = new Date(),
  options: StatusOptions = {},
): Promise<ListStatus> {
  const [status] = await listStatuses(db, { ...config, lists: [list] }, now, options);
  return status!;
}

const existingTables = (facts: readonly StatusFacts[]): string[] => [...new Set(facts.filter((f) => f.table_exists).map((f) => f.table))];

/** Live and deleted rows of each mirror table, exact, in one statement. */
async function countMirrorRows(db: Knex, schema: string, tables: readonly string[]): Promise<Map<string, RowCounts>> {
  if (tables.length === 0) return new Map();
  const one =
    'select ?::text as tbl, count(*) filter (where _deleted_at is null) as live, count(*) filter (where _deleted_at is not null) as deleted from ??.??';
  const r = await db.raw<{ rows: { tbl: string; live: string; deleted: string }[] }>(
    tables.map(() => one).join(' union all '),
    tables.flatMap((t) => [t, schema, t]),
  );
  return new Map(r.rows.map((row) => [row.tbl, { live: Number(row.live), deleted: Number(row.deleted) }]));
}

function statusOf(f: StatusFacts, schema: string, rows: RowCounts | undefined, now: Date): Omit<ListStatus, 'account'> {
  return {
    list: f.name,
    table: `${schema}.${f.table}`,
    lastSuccessAt: f.last_success_at,
    lastRunAt: f.last_run_at,
    lastRunStatus: f.last_run_status,
    running: f.running,
    watermark: f.watermark,
    lagMinutes: f.last_pull_at ? Math.max(0, Math.round((now.getTime() - f.last_pull_at.getTime()) / 60_000)) : null,
    lastPullStartedAt: f.last_pull_at,
    rows: rows?.live ?? null,
    deletedRows: rows?.deleted ?? null,
    lastError: lastError(f),
    pendingChanges: f.pending,
    failedChanges: f.failed,
    openConflicts: f.open_conflicts,
    resumeFromPage: f.checkpoint?.nextPage ?? null,
    lastReconcileHealed: healedOf(f),
  };
}

/** The list's current failure (src/store/list-health.ts): it stays until a run of the failed job's family succeeds. */
function lastError(f: StatusFacts): string | null {
  return f.last_failure_at ? (f.last_failure_error ?? `${f.last_failure_job ?? 'a run'} failed`) : null;
}

/** What the last successful reconcile healed, by kind (all zero when the mirror was in line); null before the first. */
function healedOf(f: StatusFacts): ListStatus['lastReconcileHealed'] {
  if (!f.reconcile_at) return null;
  const h = (f.reconcile_details?.healed ?? {}) as { missing?: number; behind?: number };
  return {
    at: f.reconcile_at,
    deleted: Number(f.reconcile_deleted),
    undeleted: Number(f.reconcile_undeleted),
    missing: Number(h.missing ?? 0),
    behind: Number(h.behind ?? 0),
  };
}
