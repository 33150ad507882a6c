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
 *   any queue.
 *
 * `drainBy` and `pullWaitMs` are pure; `estimatePullPages` reads the list's
 * pull state and the mirror's row count; `listLockFree` tries the list's lock.
 */
import type { ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { qualifiedName, quoteIdent, FIXED_COLUMNS, type TableMapping } from '../mirror/index.js';
import { readState } from '../store/state.js';
import { acquireLock, listLockName } from '../sync/lock.js';

/** IDs per `In` query (the platform's largest page). */
export const REREAD_BATCH = 1000;

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
