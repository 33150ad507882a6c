/**
 * How a backlog of item events is drained: by re-reading its items by ID
 * (`In` queries of up to 1000 IDs through the shared budget), or by one
 * incremental pull of the list when that costs no more requests and can
 * start at once.
 *
 * Invariants:
 * - the applier never waits behind a pull that cannot run: a pull is taken
 *   only when `canStart` says none of the list's runs is open (in this
 *   process or another) and a worker is free; otherwise the items are re-read;
 * - a pull taken is waited for at most `pullWaitMs` (its pages at the budget's
 *   pace, twice over, plus 15 s); past that the items are re-read
 *   while it goes on (burst.test.ts: a backlog pull that never ends does not
 *   hold the events back);
 * - the pull is asked through `BacklogPuller` alone, so serve may run it on
 *   any queue;
 * - the drain is decided once per backlog: callbacks of edits the pull
 *   brought keep arriving after it, and settle from the stored rows without
 *   requests (deletes and items the pull did not bring are re-read as always).
 *
 * `drainBy` and `pullWaitMs` are pure; `estimatePullPages` reads the list's
 * pull state and the mirror's row count; `listLockFree` tries the list's lock;
 * `pullIfBacklog` decides and runs the pull for the applier.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import { qualifiedName, quoteIdent, FIXED_COLUMNS, type TableMapping } from '../mirror/index.js';
import { readState } from '../store/state.js';
import { acquireLock, listLockName } from '../sync/lock.js';

/** IDs per `In` query (the platform's largest page). */
export const REREAD_BATCH = 1000;

/** Queued events of one list from which one incremental pull is asked instead of re-reading each item. */
export const BACKLOG_PULL_EVENTS = 5 * REREAD_BATCH;

/** How long one backlog's drain decision holds: the callbacks of one bulk edit arrive over many seconds. */
const BACKLOG_DECISION_MS = 30_000;

/** What the applier needs to run one incremental pull of a list (serve: its job queue). */
export interface BacklogPuller {
  /** Whether a pull of the list would start at once: none of its runs open anywhere, a worker free. */
  canStart(list: string): Promise<boolean>;
  /** Runs one incremental pull of the list; resolves once it ended, true when it succeeded. */
  run(list: string): Promise<boolean>;
}

export interface DrainInput {
  /** Items the backlog names (at most its events). */
  items: number;
  /** Pages the incremental pull would read. */
  pullPages: number;
  pullCanStart: boolean;
}

/**
 * 'pull' when the pull can start now and reads no more pages than the re-reads take requests (at
 * equal cost the pull wins: it also brings the items whose callbacks have not arrived yet).
 */
export function drainBy(i: DrainInput): 'pull' | 'reread' {
  if (!i.pullCanStart) return 'reread';
  return i.pullPages <= Math.ceil(i.items / REREAD_BATCH) ? 'pull' : 'reread';
}

/** Slack beyond its pages a backlog pull is given: its start, its writes, a busy machine. */
const PULL_WAIT_SLACK_MS = 15_000;

/** The longest wait for a backlog pull of `pages` pages at `requestsPerSecond`: twice its pace, plus PULL_WAIT_SLACK_MS. */
export function pullWaitMs(pages: number, requestsPerSecond: number): number {
  return Math.ceil(((pages + 2) * 1000) / Math.max(0.1, requestsPerSecond)) * 2 + PULL_WAIT_SLACK_MS;
}

/**
 * Pages an incremental pull of the list would read for a backlog of `items` items: after a
 * successful pull it reads what changed since (newest first), at least the backlog; without one
 * (a first load, an interrupted run), every row of the mirror.
 */
export async function estimatePullPages(db: Knex, list: ListConfig, mapping: TableMapping, items: number): Promise<number> {
  const state = await readState(db, list.name, 'pull');
  if (state.watermark !== null && state.highWater !== null && state.checkpoint === null) return Math.ceil(items / list.pageSize);
  const t = qualifiedName(mapping.schema, mapping.table);
  const r = (await db.raw(`select count(*)::bigint as n from ${t} where ${quoteIdent(FIXED_COLUMNS.deletedAt)} is null`)) as {
    rows: { n: string }[];
  };
  return Math.max(1, Math.ceil(Math.max(items, Number(r.rows[0]!.n)) / list.pageSize));
}

/** Whether no run of the list (in any process) holds its lock now: taken and given back at once, never waited for. */
export async function listLockFree(db: Knex, list: string): Promise<boolean> {
  try {
    await (await acquireLock(db, listLockName(list))).release();
    return true;
  } catch {
    return false;
  }
}

export interface BacklogDeps {
  db: Knex;
  config: Config;
  puller: BacklogPuller | undefined;
  /** Queued events from which a pull replaces the re-reads. */
  threshold: number;
  log: Logger;
  /** The applier closing: a pull is no longer waited for. */
  signal: AbortSignal;
}

/** A list's queue as the backlog decision reads it; `backlogDecidedAt` (0: none) is when the current backlog's drain was decided. */
export interface BacklogQueue {
  list: ListConfig;
  inbox: ReadonlySet<number>;
  backlogDecidedAt: number;
}

/**
 * A backlog past the threshold, asked once per backlog: drained by re-reading its items, or by one
 * incremental pull when that costs no more and can start now. The events stay queued; the flushes
 * after the pull mark those the mirror now holds at their announced version as applied, without a
 * request. A pull slower than its pages should be is not waited for: the re-reads go on beside it.
 */
export async function pullIfBacklog(deps: BacklogDeps, q: BacklogQueue, mapping: TableMapping): Promise<void> {
  if (q.inbox.size < deps.threshold) {
    if (Date.now() - q.backlogDecidedAt > BACKLOG_DECISION_MS) q.backlogDecidedAt = 0;
    return;
  }
  const puller = deps.puller;
  if (q.backlogDecidedAt > 0 || !puller) return;
  q.backlogDecidedAt = Date.now();
  const { list } = q;
  const events = q.inbox.size;
  const pages = await estimatePullPages(deps.db, list, mapping, events);
  const pullCanStart = await puller.canStart(list.name).catch(() => false);
  if (drainBy({ items: events, pullPages: pages, pullCanStart }) === 'reread') {
    const why = pullCanStart ? `a pull would read ${pages} pages` : 'a pull of the list cannot start now';
    deps.log.info({ list: list.name, events }, `a backlog of item events: re-read by ID (${why})`);
    return;
  }
  deps.log.info({ list: list.name, events, pages }, 'a backlog of item events: one incremental pull instead of re-reading each item');
  const waitMs = pullWaitMs(pages, deps.config.platform.requestsPerSecond);
  const ended = await within(
    puller.run(list.name).catch(() => false),
    waitMs,
    deps.signal,
  );
  if (ended === 'timeout')
    deps.log.info(
      { list: list.name, waitedMs: waitMs },
      'the backlog pull takes longer than its pages should; the items are re-read beside it',
    );
  else if (!ended) deps.log.info({ list: list.name }, 'the backlog pull did not succeed; the items are re-read');
}

/** `p`'s value, or 'timeout' once `ms` passed or `signal` aborts. */
function within<T>(p: Promise<T>, ms: number, signal: AbortSignal): Promise<T | 'timeout'> {
  return new Promise((resolve) => {
    const done = (v: T | 'timeout'): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const onAbort = (): void => done('timeout');
    const timer = setTimeout(onAbort, ms);
    if (signal.aborted) return done('timeout');
    signal.addEventListener('abort', onAbort);
    void p.then(done);
  });
}
