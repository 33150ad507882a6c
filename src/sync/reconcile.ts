/**
 * Reconcile: heals the mirror against the platform. Items deleted there
 * (which leaves no tombstone) get `_deleted_at` on their mirror rows; rows
 * seen again are undeleted; IDs the mirror lacks and rows whose version is
 * behind the platform's (a pull missed them, or a back-dated `Modified` hid
 * an edit from the cursor) are re-read by ID and upserted through the pull's
 * path (open local changes are left to write-back). It records how many rows
 * it healed of each kind (`details.healed`, rows_inserted/rows_updated).
 *
 * Two ways to find what to look at (the run records which, `details.mode`):
 *
 * - **by counts** (the default): counts of `Created` ranges on the platform
 *   against the mirror's live rows, the ranges that differ split down to a
 *   day or a page, and only those swept by IDs (see reconcile-counts.ts). A
 *   mirror that agrees costs one request. Versions behind, and a delete
 *   cancelled out by a create the mirror never got in the same range, are
 *   left to the full sweep.
 * - **full** (`reconcile --full`, its own weekly schedule): every ID, below.
 *
 * The full sweep, under the list's lock, pages through the whole list asking only for the
 * ID and version fields (1000 items a request, sorted by the sortField then the ID), through
 * the same throttled client as every other request, and collects the IDs in
 * temporary tables on one dedicated connection (no JS set of a million
 * strings). While the request budget paces the pages, it snapshots the
 * mirror in small primary-key steps, so that when the last page arrives the
 * candidates (live rows not seen) are known without a large join: 1M IDs take
 * about as long as 1000 requests at the account's rate.
 *
 * Before it writes anything it checks that the sweep can be trusted; a broken
 * or filtered response must never wipe the mirror:
 *
 * - it saw at least `reconcileMinSeenRatio` of the mirror's live rows;
 * - no page came back empty or short before the last page, and every item
 *   carried an ID (an empty page inside TotalCount fails the paging itself);
 * - the IDs received agree with the TotalCount the platform reported (within
 *   `totalCountTolerance`, for items created or deleted while it paged).
 *
 * A sweep that fails a check marks nothing and the run is recorded failed
 * with the reason. Otherwise the candidates are confirmed missing with ID
 * lookups (operator In, 1000 IDs a request) — an item skipped because a
 * delete shifted the pages under the sweep is found there — and one statement
 * marks the missing rows and undeletes the rows seen again. Rows with a
 * provisional `local-` id (created locally, not yet on the platform) are
 * never marked. The writes run as listsync (`listsync.writer = on`), so the
 * capture triggers ignore them. The run is recorded in `sync_runs` (job
 * `reconcile`, rows_deleted, rows_undeleted) in the same transaction.
 */
import { performance } from 'node:perf_hooks';
import type { ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { LOCAL_ID_PREFIX, loadTableMapping, markListsyncWriter, upsertItems, type TableMapping } from '../mirror/index.js';
import { closeDeletedVersions, reopenVersions } from '../mirror/history.js';
import { pendingConflictHandler } from './conflicts.js';
import { Operator, type Filter, type Item, type ItemQuery } from '../platform/types.js';
import { platformDate } from '../platform/dates.js';
import { DayCounts, describeRange, rangeFilters, searchByCounts, type DayRange } from './reconcile-counts.js';
import { LIST_JOBS, listLockName } from './exclusive.js';
import { runJob, type ActiveRun, type JobDeps, type PageDone } from './run-job.js';
import { unsettledChangeExists } from '../store/outbox.js';
import { finishRun, zeroCounters, type RunCounters } from '../store/runs.js';
import { coerceError } from '../errors.js';

/** IDs a sweep request asks for, and IDs a confirming In lookup sends. */
export const RECONCILE_PAGE_SIZE = 1000;

/** `signal`: the sweep stops and nothing is marked. */
export type ReconcileDeps = JobDeps & { onPage?: (p: PageDone) => void };

export interface ReconcileOptions {
  /** Sweep every ID (the default compares counts of Created ranges first and sweeps only where they differ). */
  full?: boolean;
}

/** What a reconcile by counts asked and found (null for a full sweep). */
export interface CountReport {
  /** Count requests (PageSize 1) sent. */
  requests: number;
  /** The whole list's count: the platform's TotalCount and the mirror's live rows. */
  platformTotal: number;
  mirrorTotal: number;
  /** The ranges of platform days whose counts differed and that were swept by IDs. */
  swept: string[];
}

export interface ReconcileResult {
  runId: number;
  list: string;
  /** `counts`: counts of Created ranges, then the IDs of the ranges that differ; `full`: every ID. */
  mode: 'counts' | 'full';
  /** `refused`: a guard found the sweep untrustworthy; nothing was marked and the run is recorded failed. */
  status: 'succeeded' | 'refused' | 'stopped';
  /** Why it refused or stopped. */
  message: string | null;
  /** Distinct IDs the sweep received. */
  seen: number;
  /** Live (not deleted, not provisional) mirror rows before the run. */
  live: number;
  /** The platform's TotalCount (the last one reported; the whole list's). */
  totalCount: number;
  pages: number;
  /** Candidates the ID lookups found still present (skipped by the sweep). */
  confirmedPresent: number;
  deleted: number;
  undeleted: number;
  /** Rows re-read and upserted: IDs the mirror lacked, rows whose version was behind, rows left to write-back. */
  healed: { missing: number; behind: number; keptLocal: number };
  counts: CountReport | null;
  counters: RunCounters;
  /** Where the time went: the sweep (counts, paging + collecting IDs), finding the candidates, confirming them on the platform, marking. */
  timingsMs: { sweep: number; candidates: number; confirm: number; heal: number; mark: number };
}

/** Items created or deleted while the sweep pages may make the count and TotalCount differ by this much. */
export function totalCountTolerance(total: number): number {
  return Math.max(10, Math.ceil(total * 0.002));
}

interface PgConnection {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

export async function reconcileList(deps: ReconcileDeps, list: ListConfig, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  return runJob(
    deps,
    {
      list: list.name,
      job: 'reconcile',
      lockName: listLockName(list.name),
      waitMs: deps.waitMs ?? 0,
      holderJobs: LIST_JOBS,
      recordSkipped: false,
    },
    (run) => reconcileLocked(deps, list, run, options.full === true ? 'full' : 'counts'),
  );
}

/** One run's working parts, handed to its steps. */
interface RunParts {
  runId: number;
  deps: ReconcileDeps;
  list: ListConfig;
  mapping: TableMapping;
  work: SweepTables;
  counters: RunCounters;
  timingsMs: ReconcileResult['timingsMs'];
  /** Milliseconds since the last call (the phase that just ended). */
  phaseEnd: () => number;
}

/** What a sweep (full or by counts) leaves for the steps after it. */
interface SweepOutcome {
  seen: number;
  live: number;
  totalCount: number;
  /** Recorded with the run. */
  details: Record<string, unknown>;
  /** Why marking must not go ahead, or null. */
  refusal: string | null;
  counts: CountReport | null;
}

async function reconcileLocked(deps: ReconcileDeps, list: ListConfig, run: ActiveRun, mode: 'counts' | 'full'): Promise<ReconcileResult> {
  const { db, client, config } = deps;
  const { runId, log } = run;
  const schema = config.database.schema;
  const mapping = await loadTableMapping(db, schema, list.name);
  const tableName = mapping?.table ?? list.table ?? list.name;

  const counters = zeroCounters();
  const statsMark = run.statsAtStart;
  const takeRequests = (): void => {
    const s = client.stats();
    counters.requests = s.requests - statsMark.requests;
    counters.retries = s.retries - statsMark.retries;
  };
  const timingsMs = { sweep: 0, candidates: 0, confirm: 0, heal: 0, mark: 0 };
  const healed = { missing: 0, behind: 0, keptLocal: 0 };
  const base = {
    runId,
    list: list.name,
    mode,
    seen: 0,
    live: 0,
    totalCount: 0,
    pages: 0,
    confirmedPresent: 0,
    deleted: 0,
    undeleted: 0,
    healed,
    counts: null as CountReport | null,
    counters,
    timingsMs,
  };
  let phaseStart = performance.now();
  const phaseEnd = (): number => {
    const now = performance.now();
    const ms = Math.round(now - phaseStart);
    phaseStart = now;
    return ms;
  };

  const exists = mapping
    ? ((await db.raw('select to_regclass(?) as t', [mapping.qualifiedTable])) as { rows: { t: string | null }[] }).rows[0]?.t
    : null;
  if (!mapping || !exists) {
    const message = `no mirror table ${schema}.${tableName} for list ${list.name} yet: run listsync pull first (reconcile compares the mirror with the platform)`;
    await finishRun(db, runId, 'failed', { error: message, counters });
    log.error(message);
    throw new Error(message);
  }

  log.info({ table: `${schema}.${tableName}`, mode }, mode === 'full' ? 'reconcile (full sweep) started' : 'reconcile (by counts) started');
  const conn = (await db.client.acquireConnection()) as PgConnection;
  const work = new SweepTables(db, conn, mapping.qualifiedTable, mapping.listName);
  const parts: RunParts = { runId, deps, list, mapping, work, counters, timingsMs, phaseEnd };
  try {
    await work.create();

    // ---- sweep: every ID, or the IDs of the ranges whose counts differ ----
    let outcome: SweepOutcome;
    try {
      outcome = mode === 'full' ? await sweepWholeList(parts) : await sweepByCounts(parts);
    } catch (err) {
      takeRequests();
      if (deps.signal?.aborted) {
        const message = 'stopped by shutdown before the sweep ended; nothing was marked';
        await finishRun(db, runId, 'failed', { error: message, counters, details: { mode } });
        log.warn(message);
        return { ...base, status: 'stopped', message, pages: counters.pages };
      }
      const message = `${coerceError(err).message}; refusing to mark deletes; a broken or filtered response must not wipe the mirror`;
      await finishRun(db, runId, 'failed', { error: message, counters, details: { mode } });
      log.error({ err }, `reconcile failed; nothing was marked`);
      throw new Error(message, { cause: err });
    }
    takeRequests();
    const details = { mode, ...outcome.details };
    Object.assign(base, {
      seen: outcome.seen,
      live: outcome.live,
      totalCount: outcome.totalCount,
      pages: counters.pages,
      counts: outcome.counts,
    });
    if (outcome.refusal) {
      await finishRun(db, runId, 'failed', { error: outcome.refusal, counters, details });
      log.error(details, outcome.refusal);
      return { ...base, status: 'refused', message: outcome.refusal };
    }

    // ---- confirm the candidates, heal, then mark in one statement ---------
    const confirmedPresent = await confirmCandidates(deps, list, work);
    timingsMs.confirm = phaseEnd();
    Object.assign(healed, await healRows(deps, list, mapping, work, counters));
    timingsMs.heal = phaseEnd();
    takeRequests();
    if (deps.signal?.aborted) {
      const message = 'stopped by shutdown before marking; nothing was marked';
      await finishRun(db, runId, 'failed', { error: message, counters, details });
      return { ...base, status: 'stopped', message, confirmedPresent };
    }
    const { deleted, undeleted } = await db.transaction(
      async (trx) => {
        await markListsyncWriter(trx);
        const r = await work.mark(trx);
        if (mapping.history) await recordMarksInHistory(trx, mapping);
        counters.rows_deleted = r.deleted;
        counters.rows_undeleted = r.undeleted;
        await finishRun(trx, runId, 'succeeded', { counters, details: { ...details, confirmedPresent, healed } });
        return r;
      },
      { connection: conn },
    );
    timingsMs.mark = phaseEnd();
    // Marking deletes is reconcile's job (info); rows missing or behind mean a pull missed something (warn).
    const pullMissed = healed.missing + healed.behind;
    (pullMissed ? log.warn.bind(log) : log.info.bind(log))(
      { ...details, confirmedPresent, deleted, undeleted, healed, requests: counters.requests, retries: counters.retries, timingsMs },
      pullMissed
        ? 'reconcile finished and healed rows the pulls had not brought in line: worth a look (cursor field, clock skew, back-dated edits)'
        : 'reconcile finished',
    );
    return { ...base, status: 'succeeded', message: null, confirmedPresent, deleted, undeleted };
  } finally {
    await work.drop().catch(() => undefined);
    await db.client.releaseConnection(conn);
  }
}

/** Pages of one query, each page's IDs recorded as seen; `afterPage` runs between pages. */
async function collectIds(
  parts: RunParts,
  query: ItemQuery,
  anomalies: string[],
  label: string,
  afterPage?: (pageStart: number) => Promise<void>,
): Promise<{ received: number; minTotal: number; maxTotal: number; lastTotal: number }> {
  const { deps, list, work, counters } = parts;
  let minTotal = Number.POSITIVE_INFINITY;
  let maxTotal = 0;
  let lastTotal = 0;
  let received = 0;
  for await (const page of deps.client.pages(list.appID, list.listID, query, { pageSize: RECONCILE_PAGE_SIZE, signal: deps.signal })) {
    const pageStart = performance.now();
    counters.pages++;
    minTotal = Math.min(minTotal, page.totalCount);
    maxTotal = Math.max(maxTotal, page.totalCount);
    lastTotal = page.totalCount;
    if (page.index < page.pageCount && page.items.length < RECONCILE_PAGE_SIZE) {
      anomalies.push(`${label}page ${page.index} of ${page.pageCount} held ${page.items.length} of ${RECONCILE_PAGE_SIZE} items`);
    }
    const ids: string[] = [];
    const versions: (string | null)[] = [];
    let missing = 0;
    for (const item of page.items) {
      const id = idOf(item, list.idField);
      if (id === undefined) missing++;
      else {
        ids.push(id);
        versions.push(versionOf(item, list.versionField));
      }
    }
    if (missing) anomalies.push(`${label}page ${page.index}: ${missing} item(s) without ${list.idField}`);
    received += ids.length;
    await work.addSeen(ids, versions);
    deps.onPage?.({
      list: list.name,
      runId: parts.runId,
      page: page.index,
      pageCount: page.pageCount,
      totalCount: page.totalCount,
      items: page.items.length,
      itemsSoFar: work.seen,
    });
    if (afterPage) await afterPage(pageStart);
    if (deps.signal?.aborted) throw deps.signal.reason ?? new Error('aborted');
  }
  return { received, minTotal: Number.isFinite(minTotal) ? minTotal : 0, maxTotal, lastTotal };
}

/** The sweep sorted by the sortField then the ID, asking only for the ID and version fields. */
function sweepQuery(list: ListConfig, filters?: Filter[]): ItemQuery {
  return {
    Fields: [list.idField, list.versionField],
    ...(filters && filters.length ? { Filters: filters } : {}),
    Sorts: [
      { Field: list.sortField, Desc: false },
      { Field: list.idField, Desc: false },
    ],
    PageSize: RECONCILE_PAGE_SIZE,
  };
}

/** Every ID of the list; the mirror is snapshotted between pages. */
async function sweepWholeList(parts: RunParts): Promise<SweepOutcome> {
  const { list, work, timingsMs, phaseEnd } = parts;
  const anomalies: string[] = [];
  const got = await collectIds(parts, sweepQuery(list), anomalies, '', (pageStart) =>
    // Snapshot the mirror's rows while the request budget paces the pages: no big join at the end.
    work.snapshotFor(SNAPSHOT_MS_PER_PAGE - (performance.now() - pageStart)),
  );
  timingsMs.sweep = phaseEnd();
  await work.snapshotFor(Number.POSITIVE_INFINITY);
  timingsMs.candidates = phaseEnd();
  const { seen, live } = work;
  const refusal = guard({ seen, live, ratio: list.reconcileMinSeenRatio, anomalies, minTotal: got.minTotal, maxTotal: got.maxTotal });
  const details = {
    seen,
    received: got.received,
    live,
    candidates: work.missing,
    totalCount: got.lastTotal,
    minTotal: got.minTotal,
    maxTotal: got.maxTotal,
  };
  return { seen, live, totalCount: got.lastTotal, details, refusal, counts: null };
}

/**
 * Counts of Created ranges on both sides (see reconcile-counts.ts), then the IDs of the ranges
 * that differ; the mirror rows of those ranges that were not seen are the candidates.
 */
async function sweepByCounts(parts: RunParts): Promise<SweepOutcome> {
  const { deps, list, mapping, work, timingsMs, phaseEnd } = parts;
  const zone = deps.config.platform.timeZone;
  const mirror = await work.dayCounts(zone);
  const search = await searchByCounts({
    mirror,
    today: platformDate(new Date(), zone),
    pageSize: RECONCILE_PAGE_SIZE,
    signal: deps.signal,
    count: async (range) => {
      const query = { Fields: [list.idField], Filters: rangeFilters(range, mapping.createdField), PageIndex: 1, PageSize: 1 };
      return (await deps.client.queryItems(list.appID, list.listID, query, deps.signal)).totalCount;
    },
  });
  const anomalies: string[] = [];
  let received = 0;
  for (const { range } of search.toSweep) {
    const label = `${describeRange(range)}: `;
    const before = work.seen;
    const got = await collectIds(parts, sweepQuery(list, rangeFilters(range, mapping.createdField)), anomalies, label);
    received += got.received;
    const seen = work.seen - before;
    const tol = totalCountTolerance(got.maxTotal);
    if (seen < got.minTotal - tol || seen > got.maxTotal + tol)
      anomalies.push(`${label}received ${seen} distinct IDs but the platform reported TotalCount ${got.lastTotal}`);
  }
  timingsMs.sweep = phaseEnd();
  await work.scopeToRanges(
    search.toSweep.map((r) => r.range),
    zone,
  );
  timingsMs.candidates = phaseEnd();
  const counts: CountReport = {
    requests: search.requests,
    platformTotal: search.platformTotal,
    mirrorTotal: search.mirrorTotal,
    swept: search.toSweep.map((r) => describeRange(r.range)),
  };
  // The whole list's counts stand for "seen" and "live": a filtered or broken answer must not wipe the mirror.
  const refusal = guard({
    seen: search.platformTotal,
    live: search.mirrorTotal,
    ratio: list.reconcileMinSeenRatio,
    anomalies,
    minTotal: search.platformTotal,
    maxTotal: search.platformTotal,
  });
  const details = { ...counts, seen: work.seen, received, candidates: work.missing, totalCount: search.platformTotal };
  return { seen: work.seen, live: search.mirrorTotal, totalCount: search.platformTotal, details, refusal, counts };
}

/** Time per page the sweep spends snapshotting the mirror (pages arrive about every 100 ms at 10 requests/s). */
const SNAPSHOT_MS_PER_PAGE = 25;
const TEMP_BUFFERS = '128MB';
/** Mirror rows read per snapshot step (keyset over the primary key). */
const SNAPSHOT_CHUNK = 2000;

/**
 * The temporary tables of one run, on its dedicated connection:
 *
 * - `reconcile_seen`: every ID the sweep received;
 * - `reconcile_missing`: live, non-provisional mirror rows not seen (yet);
 * - `reconcile_was_deleted`: mirror rows marked deleted before the run;
 * - `reconcile_undelete`: those of them seen.
 *
 * The mirror is snapshotted in primary-key order in small steps between
 * pages: a step adds the live rows not seen so far to `missing` (and the
 * deleted rows already seen to `undelete`), and each page removes its IDs
 * from `missing` (and adds the deleted rows it names to `undelete`). So when
 * the sweep ends, both sets are exact without one large join. The list lock keeps
 * pulls and pushes out, so the mirror's IDs do not move meanwhile (local
 * inserts get `local-` ids, which are never candidates).
 */
/**
 * A mirror row `m` with a local change write-back has not settled (an edit,
 * a delete, or a create under an id the user chose, unconfirmed): reconcile
 * leaves it alone. Binds the list's name.
 */
const OPEN_LOCAL_CHANGE = unsettledChangeExists('m.id');

class SweepTables {
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
  async dayCounts(zone: string): Promise<DayCounts> {
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
    const counts = new DayCounts(days, undated);
    this.live = counts.total;
    return counts;
  }

  /**
   * After the ranges were swept: their live, non-provisional rows not seen become the
   * candidates, and deleted rows seen are to be undeleted. The range bounds are platform days,
   * turned into instants in `zone` so that the index on `created_at` serves.
   */
  async scopeToRanges(ranges: readonly DayRange[], zone: string): Promise<void> {
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

  /** Up to 1000 candidates after `after`, in ID order. */
  async candidates(after: string): Promise<string[]> {
    const r = await this.raw(`select id from pg_temp.reconcile_missing where id > ? order by id limit ${RECONCILE_PAGE_SIZE}`, [after]);
    return r.rows.map((x) => String(x.id));
  }

  /** Up to 1000 IDs to heal after `after`, in ID order. */
  async toHeal(after: string): Promise<string[]> {
    const r = await this.raw(`select id from pg_temp.reconcile_heal where id > ? order by id limit ${RECONCILE_PAGE_SIZE}`, [after]);
    return r.rows.map((x) => String(x.id));
  }

  /** Candidates the platform still has: seen after all. */
  async confirmed(ids: readonly string[]): Promise<void> {
    await this.addSeen(ids);
  }

  /** The one statement: marks the missing rows deleted and undeletes the rows seen again. */
  async mark(trx: Knex.Transaction): Promise<{ deleted: number; undeleted: number }> {
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
    return { deleted: Number(row.deleted), undeleted: Number(row.undeleted) };
  }
}

/**
 * Looks up the candidates (live rows the sweep did not see; 1000 IDs a
 * request, operator In): those the platform still has were skipped by the
 * sweep (pages shifted by a delete while it paged); they leave the candidate
 * set. Returns how many.
 */
async function confirmCandidates(deps: ReconcileDeps, list: ListConfig, work: SweepTables): Promise<number> {
  let after = '';
  let found = 0;
  for (;;) {
    if (deps.signal?.aborted) return found;
    const ids = await work.candidates(after);
    if (ids.length === 0) return found;
    after = ids[ids.length - 1]!;
    const items = await readByIds(deps, list, ids, [list.idField]);
    if (items.length) {
      const present = items.map((it) => idOf(it, list.idField)).filter((x): x is string => x !== undefined);
      if (present.length) {
        await work.confirmed(present);
        found += present.length;
      }
    }
    if (ids.length < RECONCILE_PAGE_SIZE) return found;
  }
}

/**
 * Re-reads the rows queued for healing (1000 IDs a request, operator In) and upserts them as a
 * pull would, in one transaction per request: rows with open local changes are left to
 * write-back (the pull's conflict handling). Returns what it healed.
 */
async function healRows(
  deps: ReconcileDeps,
  list: ListConfig,
  mapping: TableMapping,
  work: SweepTables,
  counters: RunCounters,
): Promise<{ missing: number; behind: number; keptLocal: number }> {
  const healed = { missing: 0, behind: 0, keptLocal: 0 };
  const onPending = pendingConflictHandler(deps.config, list);
  const zone = deps.config.platform.timeZone;
  for (let after = ''; ;) {
    if (deps.signal?.aborted) return healed;
    const ids = await work.toHeal(after);
    if (ids.length === 0) return healed;
    after = ids[ids.length - 1]!;
    const items = await readByIds(deps, list, ids);
    if (items.length) {
      await deps.db.transaction(async (trx) => {
        const r = await upsertItems(trx, mapping, items, zone);
        const conflicts = r.skippedPending.length ? (await onPending(trx, mapping, r.skippedPending)).conflicts : 0;
        healed.missing += r.inserted;
        healed.behind += r.updated;
        healed.keptLocal += r.skippedPending.length;
        counters.rows_inserted += r.inserted;
        counters.rows_updated += r.updated;
        counters.rows_failed += r.failedValues;
        counters.rows_skipped_pending += r.skippedPending.length;
        counters.changes_conflicted += conflicts;
      });
    }
    if (ids.length < RECONCILE_PAGE_SIZE) return healed;
  }
}

/**
 * The items of up to RECONCILE_PAGE_SIZE IDs, in one `In` query (all fields, or `fields`). Only
 * platform-shaped IDs are looked up: an In filter with anything else is refused by the platform.
 */
async function readByIds(deps: ReconcileDeps, list: ListConfig, ids: readonly string[], fields?: string[]): Promise<Item[]> {
  const lookup = ids.filter((id) => /^\d{1,20}$/.test(id));
  if (lookup.length === 0) return [];
  const query = {
    ...(fields ? { Fields: fields } : {}),
    Filters: [{ Field: list.idField, Type: Operator.In, Value: JSON.stringify(lookup) }],
    PageIndex: 1,
    PageSize: RECONCILE_PAGE_SIZE,
  };
  return (await deps.client.queryItems(list.appID, list.listID, query, deps.signal)).items;
}

/** The reason to refuse marking, or null when the sweep can be trusted. */
export function guard(s: {
  seen: number;
  live: number;
  ratio: number;
  anomalies: readonly string[];
  minTotal: number;
  maxTotal: number;
}): string | null {
  const why = 'refusing to mark deletes; a broken or filtered response must not wipe the mirror';
  if (s.anomalies.length) {
    const shown = s.anomalies.slice(0, 3).join('; ') + (s.anomalies.length > 3 ? `; and ${s.anomalies.length - 3} more` : '');
    return `the sweep looks broken (${shown}): ${why}`;
  }
  if (s.live > 0 && s.seen < s.ratio * s.live) {
    const pct = Math.round(s.ratio * 100);
    return `saw ${s.seen} of ${s.live} live rows (< ${pct}%): ${why}`;
  }
  const tol = totalCountTolerance(s.maxTotal);
  if (s.seen < s.minTotal - tol || s.seen > s.maxTotal + tol) {
    const reported = s.minTotal === s.maxTotal ? `${s.maxTotal}` : `${s.minTotal}..${s.maxTotal}`;
    return `received ${s.seen} distinct IDs but the platform reported TotalCount ${reported} (tolerance ${tol}): ${why}`;
  }
  return null;
}

function versionOf(item: Item, versionField: string): string | null {
  const v = item[versionField];
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'string' && /^\d{1,18}$/.test(v)) return v;
  return null;
}

function idOf(item: Item, idField: string): string | undefined {
  const v = item[idField];
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  return undefined;
}

/** With history: a delete closes the item's open version; an item seen again at the same version has it reopened. */
async function recordMarksInHistory(trx: Knex.Transaction, mapping: { schema: string; table: string }): Promise<void> {
  await closeDeletedVersions(trx, mapping);
  const back = (await trx.raw('select id from pg_temp.reconcile_undelete')) as { rows: { id: string }[] };
  await reopenVersions(
    trx,
    mapping,
    back.rows.map((x) => x.id),
  );
}
