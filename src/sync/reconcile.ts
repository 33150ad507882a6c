/**
 * Reconcile: finds items deleted on the platform (which leaves no tombstone)
 * and soft-deletes their mirror rows (`_deleted_at`); rows seen again are
 * undeleted.
 *
 * Under the list's lock it pages through the whole list asking only for the
 * ID field (1000 IDs a request, sorted by the sortField then the ID), through
 * the same throttled client as every other request, and collects the IDs in a
 * temporary table on one dedicated connection (no JS set of a million
 * strings). Before it writes anything it checks that the sweep can be
 * trusted; a broken or filtered response must never wipe the mirror:
 *
 * - it saw at least `reconcileMinSeenRatio` of the mirror's live rows;
 * - no page came back empty or short before the last page, and every item
 *   carried an ID;
 * - the IDs received agree with the TotalCount the platform reported (within
 *   a small tolerance for items created or deleted while it paged).
 *
 * A sweep that fails a check marks nothing and the run is recorded failed
 * with the reason. Otherwise the candidates (live rows not seen) are confirmed
 * missing with ID lookups (operator In, 1000 IDs a request) — an item skipped
 * because a delete shifted the pages under the sweep is found there — and one
 * statement marks the missing rows and undeletes the rows seen again. Rows
 * with a provisional `local-` id (created locally, not yet on the platform)
 * are never marked. The writes run as listsync (`listsync.writer = on`), so
 * the capture triggers ignore them.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import { LOCAL_ID_PREFIX, loadTableMapping, markListsyncWriter } from '../mirror/index.js';
import type { PlatformClient } from '../platform/client.js';
import { Operator, type Item, type ItemQuery } from '../platform/types.js';
import { withLock } from './lock.js';
import { listLockName } from './pull.js';
import { closeAbandonedRuns, describeRunning, finishRun, startRun, zeroCounters, type RunCounters } from './runs.js';

/** IDs a sweep request asks for, and IDs a confirming In lookup sends. */
export const RECONCILE_PAGE_SIZE = 1000;

export interface ReconcileDeps {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  /** Wait this long for another run of the list to finish instead of failing at once. */
  waitMs?: number;
  /** Aborted on shutdown: the sweep stops and nothing is marked. */
  signal?: AbortSignal;
}

export interface ReconcileResult {
  runId: number;
  list: string;
  /** `refused`: a guard found the sweep untrustworthy; nothing was marked and the run is recorded failed. */
  status: 'succeeded' | 'refused' | 'stopped';
  /** Why it refused or stopped. */
  message: string | null;
  /** Distinct IDs the sweep received. */
  seen: number;
  /** Live (not deleted, not provisional) mirror rows before the run. */
  live: number;
  /** The platform's TotalCount (the last one reported). */
  totalCount: number;
  pages: number;
  /** Candidates the ID lookups found still present (skipped by the sweep). */
  confirmedPresent: number;
  deleted: number;
  undeleted: number;
  counters: RunCounters;
}

/** Items created or deleted while the sweep pages may make the count and TotalCount differ by this much. */
export function totalCountTolerance(total: number): number {
  return Math.max(10, Math.ceil(total * 0.002));
}

interface PgConnection {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

export async function reconcileList(deps: ReconcileDeps, list: ListConfig): Promise<ReconcileResult> {
  return withLock(
    deps.db,
    listLockName(list.name),
    { waitMs: deps.waitMs ?? 0, describeHolder: () => describeRunning(deps.db, list.name, ['pull', 'backfill', 'push', 'reconcile']) },
    () => reconcileLocked(deps, list),
  );
}

async function reconcileLocked(deps: ReconcileDeps, list: ListConfig): Promise<ReconcileResult> {
  const { db, client, config } = deps;
  await closeAbandonedRuns(db, list.name, ['reconcile']);
  const runId = await startRun(db, list.name, 'reconcile');
  const log = deps.logger.child({ list: list.name, runId, job: 'reconcile' });
  const schema = config.database.schema;
  const mapping = await loadTableMapping(db, schema, list.name);
  const tableName = mapping?.table ?? list.table ?? list.name;

  const counters = zeroCounters();
  const statsMark = client.stats();
  const takeRequests = (): void => {
    const s = client.stats();
    counters.requests = s.requests - statsMark.requests;
    counters.retries = s.retries - statsMark.retries;
  };
  const base = { runId, list: list.name, seen: 0, live: 0, totalCount: 0, pages: 0, confirmedPresent: 0, deleted: 0, undeleted: 0, counters };

  const exists = mapping ? ((await db.raw('select to_regclass(?) as t', [mapping.qualifiedTable])) as { rows: { t: string | null }[] }).rows[0]?.t : null;
  if (!mapping || !exists) {
    const message = `no mirror table ${schema}.${tableName} for list ${list.name} yet: run listsync pull first (reconcile compares the mirror with the platform)`;
    await finishRun(db, runId, 'failed', { error: message, counters });
    log.error(message);
    throw new Error(message);
  }

  const table = mapping.qualifiedTable;
  log.info({ table: `${schema}.${tableName}` }, 'reconcile started');
  const conn = (await db.client.acquireConnection()) as PgConnection;
  try {
    await db.raw('create temp table if not exists reconcile_seen (id text primary key)').connection(conn);
    await db.raw('truncate pg_temp.reconcile_seen').connection(conn);

    const live = await countLive(db, conn, table);
    base.live = live;

    // ---- sweep ----------------------------------------------------------
    const query: ItemQuery = {
      Fields: [list.idField],
      Sorts: [
        { Field: list.sortField, Desc: false },
        { Field: list.idField, Desc: false },
      ],
      PageSize: RECONCILE_PAGE_SIZE,
    };
    let minTotal = Number.POSITIVE_INFINITY;
    let maxTotal = 0;
    let lastTotal = 0;
    let received = 0;
    const anomalies: string[] = [];
    try {
      for await (const page of client.pages(list.appID, list.listID, query, { pageSize: RECONCILE_PAGE_SIZE, signal: deps.signal })) {
        counters.pages++;
        minTotal = Math.min(minTotal, page.totalCount);
        maxTotal = Math.max(maxTotal, page.totalCount);
        lastTotal = page.totalCount;
        if (page.index < page.pageCount && page.items.length < RECONCILE_PAGE_SIZE) {
          anomalies.push(`page ${page.index} of ${page.pageCount} held ${page.items.length} of ${RECONCILE_PAGE_SIZE} items`);
        }
        const ids: string[] = [];
        let missing = 0;
        for (const item of page.items) {
          const id = idOf(item, list.idField);
          if (id === undefined) missing++;
          else ids.push(id);
        }
        if (missing) anomalies.push(`page ${page.index}: ${missing} item(s) without ${list.idField}`);
        received += ids.length;
        if (ids.length) await db.raw('insert into pg_temp.reconcile_seen (id) select unnest(?::text[]) on conflict do nothing', [ids]).connection(conn);
        if (deps.signal?.aborted) throw deps.signal.reason ?? new Error('aborted');
      }
    } catch (err) {
      takeRequests();
      if (deps.signal?.aborted) {
        const message = 'stopped by shutdown before the sweep ended; nothing was marked';
        await finishRun(db, runId, 'failed', { error: message, counters });
        log.warn(message);
        return { ...base, status: 'stopped', message, totalCount: lastTotal, pages: counters.pages };
      }
      const message = `${(err as Error).message}; refusing to mark deletes; a broken or filtered response must not wipe the mirror`;
      await finishRun(db, runId, 'failed', { error: message, counters, details: { received, live } });
      log.error({ err }, `reconcile failed; nothing was marked`);
      throw new Error(message, { cause: err });
    }
    takeRequests();
    const seen = await count(db, conn, 'select count(*)::bigint as n from pg_temp.reconcile_seen');
    const total = minTotal === Number.POSITIVE_INFINITY ? 0 : lastTotal;
    Object.assign(base, { seen, totalCount: total, pages: counters.pages });

    // ---- guards ---------------------------------------------------------
    const refusal = guard({ seen, live, ratio: list.reconcileMinSeenRatio, anomalies, minTotal: Number.isFinite(minTotal) ? minTotal : 0, maxTotal });
    const details = { seen, received, live, totalCount: total, minTotal: Number.isFinite(minTotal) ? minTotal : 0, maxTotal };
    if (refusal) {
      await finishRun(db, runId, 'failed', { error: refusal, counters, details });
      log.error(details, refusal);
      return { ...base, status: 'refused', message: refusal };
    }

    // ---- confirm the candidates, then mark in one statement ---------------
    const confirmedPresent = await confirmCandidates(deps, list, conn, table);
    takeRequests();
    if (deps.signal?.aborted) {
      const message = 'stopped by shutdown before marking; nothing was marked';
      await finishRun(db, runId, 'failed', { error: message, counters, details });
      return { ...base, status: 'stopped', message, confirmedPresent };
    }
    await db.raw('analyze pg_temp.reconcile_seen').connection(conn);
    const { deleted, undeleted } = await db.transaction(
      async (trx) => {
        await markListsyncWriter(trx);
        const r = (await trx.raw(
          `with del as (
             update ${table} m set _deleted_at = now()
              where m._deleted_at is null
                and not starts_with(m.id, ?)
                and not exists (select 1 from pg_temp.reconcile_seen s where s.id = m.id)
             returning 1),
           undel as (
             update ${table} m set _deleted_at = null
               from pg_temp.reconcile_seen s
              where s.id = m.id and m._deleted_at is not null
             returning 1)
           select (select count(*) from del)::bigint as deleted, (select count(*) from undel)::bigint as undeleted`,
          [LOCAL_ID_PREFIX],
        )) as { rows: { deleted: number; undeleted: number }[] };
        const row = r.rows[0]!;
        counters.rows_deleted = Number(row.deleted);
        counters.rows_undeleted = Number(row.undeleted);
        await finishRun(trx, runId, 'succeeded', { counters, details: { ...details, confirmedPresent } });
        return { deleted: counters.rows_deleted, undeleted: counters.rows_undeleted };
      },
      { connection: conn },
    );
    log.info({ ...details, confirmedPresent, deleted, undeleted, requests: counters.requests, retries: counters.retries }, 'reconcile finished');
    return { ...base, status: 'succeeded', message: null, confirmedPresent, deleted, undeleted };
  } catch (err) {
    // Anything not recorded yet (database errors): the run failed, nothing was committed.
    const row = (await db('listsync.sync_runs').where({ id: runId }).first('status').catch(() => undefined)) as { status: string } | undefined;
    if (row?.status === 'running') await finishRun(db, runId, 'failed', { error: (err as Error).message, counters }).catch(() => undefined);
    throw err;
  } finally {
    await db
      .raw('drop table if exists pg_temp.reconcile_seen')
      .connection(conn)
      .catch(() => undefined);
    await db.client.releaseConnection(conn);
  }
}

/** The reason to refuse marking, or null when the sweep can be trusted. */
export function guard(s: { seen: number; live: number; ratio: number; anomalies: readonly string[]; minTotal: number; maxTotal: number }): string | null {
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

/**
 * Looks up the live rows the sweep did not see (1000 IDs a request, operator
 * In): those the platform still has were skipped by the sweep (pages shifted
 * by a delete while it paged) and are added to the seen set. Returns how many.
 */
async function confirmCandidates(deps: ReconcileDeps, list: ListConfig, conn: PgConnection, table: string): Promise<number> {
  const { db, client } = deps;
  let after = '';
  let found = 0;
  for (;;) {
    if (deps.signal?.aborted) return found;
    const r = (await db
      .raw(
        `select m.id from ${table} m
          where m._deleted_at is null and not starts_with(m.id, ?) and m.id > ?
            and not exists (select 1 from pg_temp.reconcile_seen s where s.id = m.id)
          order by m.id limit ${RECONCILE_PAGE_SIZE}`,
        [LOCAL_ID_PREFIX, after],
      )
      .connection(conn)) as { rows: { id: string }[] };
    const ids = r.rows.map((x) => x.id);
    if (ids.length === 0) return found;
    after = ids[ids.length - 1]!;
    // Only platform-shaped IDs are looked up; an In filter with anything else is refused by the platform.
    const lookup = ids.filter((id) => /^\d{1,20}$/.test(id));
    if (lookup.length) {
      const { items } = await client.queryItems(
        list.appID,
        list.listID,
        { Fields: [list.idField], Filters: [{ Field: list.idField, Type: Operator.In, Value: JSON.stringify(lookup) }], PageIndex: 1, PageSize: RECONCILE_PAGE_SIZE },
        deps.signal,
      );
      const present = items.map((it) => idOf(it, list.idField)).filter((x): x is string => x !== undefined);
      if (present.length) {
        await db.raw('insert into pg_temp.reconcile_seen (id) select unnest(?::text[]) on conflict do nothing', [present]).connection(conn);
        found += present.length;
      }
    }
    if (ids.length < RECONCILE_PAGE_SIZE) return found;
  }
}

async function countLive(db: Knex, conn: PgConnection, table: string): Promise<number> {
  const r = (await db.raw(`select count(*)::bigint as n from ${table} where _deleted_at is null and not starts_with(id, ?)`, [LOCAL_ID_PREFIX]).connection(conn)) as {
    rows: { n: number }[];
  };
  return Number(r.rows[0]?.n ?? 0);
}

async function count(db: Knex, conn: PgConnection, sql: string): Promise<number> {
  const r = (await db.raw(sql).connection(conn)) as { rows: { n: number }[] };
  return Number(r.rows[0]?.n ?? 0);
}

function idOf(item: Item, idField: string): string | undefined {
  const v = item[idField];
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  return undefined;
}
