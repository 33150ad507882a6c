/**
 * The realtime applier inside `serve`: list item events, already stored in
 * `listsync.webhook_inbox`, brought into the mirror within about a second.
 *
 * Per list, queued events are coalesced (at most FLUSH_EVENTS a flush; a
 * backlog is drained flush after flush, at the pace the budget allows): a flush starts `windowMs` after the
 * first event, and no sooner than `minIntervalMs` after the previous flush of
 * the list (longer while the shared request budget is busy), so a steady
 * stream of edits costs about one request a second. A flush:
 *
 * 1. reads the queued events' bodies and merges them per item (a delete
 *    claim, the highest announced version);
 * 2. decides per item from the stored row: an announced version the mirror
 *    already holds needs nothing (duplicates, reordering); with
 *    `realtimeTrust: "body"` a newer body is applied as sent;
 * 3. re-reads the rest with `In` queries (up to 1000 IDs each) through the
 *    shared client; an ID the query does not find, or a delete claim, is read
 *    by ID: an item is gone when the read is refused (any Status) and an `In`
 *    query does not return it (src/platform/item-lookup.ts);
 * 4. writes in one transaction: the upsert of the pull (same conversion,
 *    version guard, open local changes left alone and settled by the pull's
 *    conflict rules), `_deleted_at` for confirmed deletes, the events marked
 *    processed, the list's counters in `listsync.realtime_stats`.
 *
 * A backlog of BACKLOG_PULL_EVENTS or more events of one list is drained by
 * re-reading its items by ID, or by one incremental pull when that costs no
 * more and can start at once (src/realtime/backlog-pull.ts); the flushes
 * after it settle from the stored rows every claim the pull brought to its
 * announced version. The applier never waits behind a pull that cannot run,
 * and waits for one it took only as long as its pages should take.
 * (burst: a backlog past the threshold; a backlog pull that never ends.)
 *
 * `close()` aborts the requests in flight: their events stay unprocessed and
 * are replayed at the next start.
 *
 * Versions only move forward: a re-read older than the version an event
 * announced (the platform's queries can lag behind a write) is re-read again
 * later by ID, up to `maxRechecks` times; a row marked deleted is never
 * brought back by a query that may lag. Events stay unprocessed until applied,
 * so a stop at any point replays them at the next start.
 *
 * No event is dropped: a chunk of claims that fails (the platform or the
 * database failing, or one item that cannot be read or written) stays queued
 * here and unprocessed in the inbox, with its attempts and last error, and is
 * tried again after a doubling backoff, split in smaller chunks each time so
 * that one bad item ends up alone and the others are applied. An item whose
 * read by ID fails (5xx, transport) fails alone, the rest of its chunk is
 * applied. Two chunks failing in a row stop the flush: the list backs off.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import {
  FIXED_COLUMNS,
  LOCAL_ID_PREFIX,
  loadTableMapping,
  markListsyncWriter,
  qualifiedName,
  quoteIdent,
  upsertItems,
  type TableMapping,
} from '../mirror/index.js';
import { arrayLiteral } from '../mirror/pg-text.js';
import type { PlatformClient } from '../platform/client.js';
import { withRequestSource } from '../platform/request-source.js';
import type { PlatformError } from '../platform/platform-errors.js';
import { confirmAbsent, isPlatformId, isRefusalAnswer, queryItemsByIds } from '../platform/item-lookup.js';
import { itemId, itemVersionNumber } from '../platform/item-identity.js';
import { parseJson } from '../platform/json.js';
import type { Item } from '../platform/types.js';
import { addFlush } from '../store/realtime-stats.js';
import {
  markProcessed,
  markUnprocessedDone,
  recordEventFailure,
  unappliedItemEvents,
  unprocessedEvents,
  type ItemEventRow,
} from '../store/webhook-inbox.js';
import { pendingConflictHandler } from '../conflicts/recording.js';
import { drainBy, estimatePullPages, pullWaitMs, REREAD_BATCH, type BacklogPuller } from './backlog-pull.js';
import { ITEM_EVENT } from './subscriptions.js';

export { REREAD_BATCH };

/** Queued events one flush takes at most: two `In` queries' worth; the rest follow in the next flushes. */
export const FLUSH_EVENTS = 2 * REREAD_BATCH;

/** Queued events of one list from which one incremental pull is asked instead of re-reading each item. */
export const BACKLOG_PULL_EVENTS = 5 * REREAD_BATCH;

/** How long one backlog's drain decision holds: the callbacks of one bulk edit arrive over many seconds. */
const BACKLOG_DECISION_MS = 30_000;

/** Failed chunks in a row after which a flush stops trying the rest (the platform is failing, not one item). */
const FAILED_CHUNKS_TO_STOP = 2;

export interface ApplierOptions {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  /** Wait after the first queued event before a flush. Default 150 ms. */
  windowMs?: number;
  /** Least time between two flushes of a list. Default 900 ms. */
  minIntervalMs?: number;
  /** Wait before re-reading an item whose re-read was older than announced. Default 500 ms (doubling). */
  recheckDelayMs?: number;
  /** Re-reads of such an item before leaving it to the scheduled pull. Default 5. */
  maxRechecks?: number;
  /** Wait before trying failed events again: doubles per failed attempt. Default 1 s. */
  retryDelayMs?: number;
  /** Longest wait between two attempts of failed events. Default 30 s. */
  maxRetryDelayMs?: number;
  /** A list that has no mirror table yet: asks for a pull (which reads everything). */
  requestPull?: (list: string) => void;
  /**
   * A list whose queued events reach `backlogPullEvents`: one incremental pull of it, when it can
   * start now and costs no more than the re-reads. The flushes after it find most items at the
   * version their events announced and need no re-read.
   */
  backlogPuller?: BacklogPuller;
  /** Queued events of one list from which a pull replaces the re-reads. Default BACKLOG_PULL_EVENTS. */
  backlogPullEvents?: number;
  /** Called after each flush with what it did (metrics, tests). */
  onFlush?: (r: FlushResult) => void;
}

export interface FlushResult {
  list: string;
  events: number;
  applied: number;
  /** IDs re-read through the API. */
  reread: number;
  requests: number;
  fromBody: number;
  deleted: number;
  /** IDs left for a later re-read. */
  recheck: number;
  /** Items whose events failed and wait for a retry. */
  failed: number;
}

interface Claim {
  id: string;
  inboxIds: number[];
  deleteClaimed: boolean;
  /** The highest version an upsert event announced (null: none). */
  announced: number | null;
  /** The body with the highest version (trust "body"). */
  body: Item | null;
  receivedAt: Date;
  /** Re-reads already made because the platform showed an older version. */
  rechecks: number;
  /** Failed attempts to apply this item's events. */
  attempts: number;
  /** When a failed claim is tried again (epoch ms). */
  retryAt: number;
}

interface ListQueue {
  list: ListConfig;
  inbox: Set<number>;
  rechecks: Map<string, Claim>;
  /** Claims whose apply failed, by item ID: tried again from `retryAt`, in ever smaller chunks. */
  retry: Map<string, Claim>;
  timer: NodeJS.Timeout | null;
  timerAt: number;
  running: Promise<void> | null;
  lastFlushAt: number;
  /** Flushes in a row that failed as a whole (the platform or the database failing): the list backs off. */
  failedFlushes: number;
  backoffUntil: number;
  /**
   * When the current backlog's drain was decided (0: none). Decided again only once the backlog fell
   * below the threshold and BACKLOG_DECISION_MS passed since.
   */
  backlogDecidedAt: number;
}

export class RealtimeApplier {
  private readonly queues = new Map<string, ListQueue>();
  private readonly log: Logger;
  private closed = false;
  private readonly windowMs: number;
  private readonly minIntervalMs: number;
  private readonly recheckDelayMs: number;
  private readonly maxRechecks: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  private recentRequests: { at: number; requests: number } = { at: Date.now(), requests: 0 };
  /** Aborted by `close()`: requests in flight stop, their events stay queued in the inbox. */
  private readonly closing = new AbortController();

  constructor(private readonly opts: ApplierOptions) {
    this.log = opts.logger.child({ component: 'realtime' });
    this.windowMs = opts.windowMs ?? 150;
    this.minIntervalMs = opts.minIntervalMs ?? 900;
    this.recheckDelayMs = opts.recheckDelayMs ?? 500;
    this.maxRechecks = opts.maxRechecks ?? 5;
    this.retryDelayMs = opts.retryDelayMs ?? 1000;
    this.maxRetryDelayMs = opts.maxRetryDelayMs ?? 30_000;
  }

  /** The configured list an item subscription's resource (`lists/{appID}/{listID}`) belongs to. */
  listForResource(resource: string): ListConfig | undefined {
    return this.opts.config.lists.find((l) => resource === `lists/${l.appID}/${l.listID}`);
  }

  /** Queues a stored event of the list; the flush marks it processed. */
  enqueue(listName: string, inboxId: number): void {
    const q = this.queue(listName);
    if (!q || this.closed) return;
    q.inbox.add(inboxId);
    this.arm(q, this.windowMs);
  }

  /** Queues the item events a previous process stored but did not apply. Returns how many. */
  async replay(): Promise<number> {
    const rows = await unappliedItemEvents(this.opts.db);
    for (const r of rows) {
      const list = this.listForResource(r.resource) ?? this.opts.config.lists.find((l) => l.name === r.list_name);
      if (list) this.enqueue(list.name, Number(r.id));
    }
    return rows.length;
  }

  /** Runs every queued flush now, failed events included, and waits for them (tests, shutdown). */
  async flushAll(): Promise<void> {
    for (const q of this.queues.values()) {
      this.disarm(q);
      await q.running;
      q.backoffUntil = 0;
      for (const c of q.retry.values()) c.retryAt = 0;
      if (q.inbox.size || q.rechecks.size || q.retry.size) await this.run(q);
      // A backlog takes a flush per FLUSH_EVENTS (a flush that fails leaves its events queued: not tried again here).
      let rounds = Math.ceil(q.inbox.size / FLUSH_EVENTS);
      while (q.inbox.size > 0 && rounds-- > 0) {
        this.disarm(q);
        await this.run(q);
      }
    }
  }

  /** Whether anything is queued, waiting for a retry, or running. */
  busy(): boolean {
    return [...this.queues.values()].some((q) => q.inbox.size > 0 || q.rechecks.size > 0 || q.retry.size > 0 || q.running !== null);
  }

  /** Items whose events failed and wait for a retry, per list. */
  failing(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, q] of this.queues) if (q.retry.size) out[name] = q.retry.size;
    return out;
  }

  /** Stops the timers and waits for a flush in flight; what is queued stays unprocessed in the inbox. */
  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    for (const q of this.queues.values()) this.disarm(q);
    await Promise.allSettled([...this.queues.values()].map((q) => q.running));
  }

  private queue(listName: string): ListQueue | undefined {
    let q = this.queues.get(listName);
    if (q) return q;
    const list = this.opts.config.lists.find((l) => l.name === listName);
    if (!list) return undefined;
    q = {
      list,
      inbox: new Set(),
      rechecks: new Map(),
      retry: new Map(),
      timer: null,
      timerAt: 0,
      running: null,
      lastFlushAt: 0,
      failedFlushes: 0,
      backoffUntil: 0,
      backlogDecidedAt: 0,
    };
    this.queues.set(listName, q);
    return q;
  }

  private disarm(q: ListQueue): void {
    if (q.timer) clearTimeout(q.timer);
    q.timer = null;
  }

  /**
   * Schedules the list's next flush: after `delayMs`, no sooner than the
   * (widened) interval since the last, and not while the list backs off. An
   * earlier time replaces a later one already set.
   */
  private arm(q: ListQueue, delayMs: number): void {
    if (q.running || this.closed) return;
    const now = Date.now();
    const at = Math.max(now + delayMs, q.lastFlushAt + this.minIntervalMs * this.budgetFactor(), q.backoffUntil);
    if (q.timer && q.timerAt <= at) return;
    this.disarm(q);
    q.timerAt = at;
    q.timer = setTimeout(() => {
      q.timer = null;
      void this.run(q);
    }, at - now);
  }

  /** The next flush after one: new events soon, re-checks and retries when due. */
  private rearm(q: ListQueue): void {
    if (this.closed) return;
    const now = Date.now();
    const delays: number[] = [];
    if (q.inbox.size) delays.push(this.windowMs);
    if (q.rechecks.size) delays.push(this.recheckDelayMs);
    for (const c of q.retry.values()) delays.push(Math.max(0, c.retryAt - now));
    if (delays.length) this.arm(q, Math.min(...delays));
  }

  /**
   * 1 while the budget is free; up to 4 when the shared limiter throttles, or
   * when this process used most of the account's rate in the last second.
   */
  private budgetFactor(): number {
    const { client, config } = this.opts;
    const now = Date.now();
    const total = client.stats().requests;
    if (now - this.recentRequests.at >= 1000) this.recentRequests = { at: now, requests: total };
    const recent = total - this.recentRequests.requests;
    const share = recent / Math.max(1, config.platform.requestsPerSecond);
    const throttled = client.rateFactor() < 1 ? 1 / Math.max(0.25, client.rateFactor()) : 1;
    return Math.min(4, Math.max(throttled, share > 0.7 ? 2 : 1));
  }

  /** The wait before attempt `attempts + 1`: doubling from `retryDelayMs`, at most `maxRetryDelayMs`. */
  private backoff(attempts: number): number {
    return Math.min(this.maxRetryDelayMs, this.retryDelayMs * 2 ** Math.max(0, Math.min(30, attempts - 1)));
  }

  private run(q: ListQueue): Promise<void> {
    if (q.running) return q.running;
    q.running = (async () => {
      try {
        await this.flush(q);
      } catch (err) {
        // Nothing was taken off the queue (reading the inbox or the mirror failed): the whole flush is tried again.
        q.failedFlushes++;
        q.backoffUntil = Date.now() + this.backoff(q.failedFlushes);
        this.log.error(
          { list: q.list.name, err: coerceError(err), retryInMs: this.backoff(q.failedFlushes) },
          'applying item events failed; they stay queued and are tried again',
        );
      } finally {
        q.lastFlushAt = Date.now();
        q.running = null;
        this.rearm(q);
      }
    })();
    return q.running;
  }

  /**
   * New events (and re-checks) as one chunk, then failed claims whose retry
   * is due, split in 2^attempts chunks so that one item failing every time
   * ends up alone. Every chunk is applied on its own; a failing one goes back
   * to the retry queue; two failing in a row stop the flush (the platform is
   * failing), and what is left waits for the list's backoff.
   */
  private async flush(q: ListQueue): Promise<void> {
    const { db, config } = this.opts;
    const list = q.list;
    const mapping = await loadTableMapping(db, config.database.schema, list.name);
    if (mapping) await this.pullIfBacklog(q, mapping);
    // A backlog is taken in steps of a few `In` queries: each flush's work (and each of its event-loop turns) stays short.
    const inboxIds = [...q.inbox].slice(0, FLUSH_EVENTS);
    const rows = inboxIds.length ? await unprocessedEvents(db, inboxIds) : [];
    if (!mapping) {
      // No mirror yet: the first pull reads every item, these included.
      const all = [...inboxIds, ...[...q.retry.values()].flatMap((c) => c.inboxIds)];
      this.log.info({ list: list.name, events: all.length }, 'item events for a list not pulled yet: asking for a pull');
      this.opts.requestPull?.(list.name);
      await markProcessed(db, all);
      for (const id of inboxIds) q.inbox.delete(id);
      q.rechecks.clear();
      q.retry.clear();
      return;
    }
    const fresh = mergeClaims(rows, [...q.rechecks.values()], mapping, list);
    for (const id of inboxIds) q.inbox.delete(id);
    q.rechecks.clear();
    const now = Date.now();
    // A new event of an item that waits for a retry waits with it.
    for (const [id, c] of fresh) {
      const waiting = q.retry.get(id);
      if (!waiting) continue;
      absorb(waiting, c);
      fresh.delete(id);
    }
    const due = [...q.retry.values()].filter((c) => c.retryAt <= now);
    for (const c of due) q.retry.delete(c.id);

    const chunks = [...(fresh.size ? [[...fresh.values()]] : []), ...retryChunks(due)];
    let failedInRow = 0;
    let freshFailed = false;
    let succeeded = false;
    for (const [i, chunk] of chunks.entries()) {
      if (failedInRow >= FAILED_CHUNKS_TO_STOP) {
        // Not tried: back to the queue as they were.
        for (const rest of chunks.slice(i)) for (const c of rest) this.waitForRetry(q, c, now + this.backoff(q.failedFlushes + 1));
        break;
      }
      try {
        await this.applyChunk(q, mapping, chunk, rows);
        failedInRow = 0;
        succeeded = true;
      } catch (err) {
        failedInRow++;
        if (i === 0 && fresh.size) freshFailed = true;
        await this.chunkFailed(q, chunk, coerceError(err));
      }
    }
    this.settleBackoff(q, { stopped: failedInRow >= FAILED_CHUNKS_TO_STOP || freshFailed, succeeded });
  }

  /**
   * A backlog past the threshold, asked once per backlog: drained by re-reading its items, or by one
   * incremental pull when that costs no more and can start now (backlog-pull.ts). The events stay
   * queued; the flushes after the pull mark those the mirror now holds at their announced version as
   * applied, without a request (deletes and items the pull did not bring are re-read as always). A
   * pull slower than its pages should be is not waited for: the re-reads go on beside it.
   */
  private async pullIfBacklog(q: ListQueue, mapping: TableMapping): Promise<void> {
    const threshold = this.opts.backlogPullEvents ?? BACKLOG_PULL_EVENTS;
    // Decided once per burst: callbacks of edits the pull brought keep arriving after it, and settle without requests.
    if (q.inbox.size < threshold) {
      if (Date.now() - q.backlogDecidedAt > BACKLOG_DECISION_MS) q.backlogDecidedAt = 0;
      return;
    }
    const puller = this.opts.backlogPuller;
    if (q.backlogDecidedAt > 0 || !puller) return;
    q.backlogDecidedAt = Date.now();
    const list = q.list;
    const events = q.inbox.size;
    const pages = await estimatePullPages(this.opts.db, list, mapping, events);
    const pullCanStart = await puller.canStart(list.name).catch(() => false);
    if (drainBy({ items: events, pullPages: pages, pullCanStart }) === 'reread') {
      const why = pullCanStart ? `a pull would read ${pages} pages` : 'a pull of the list cannot start now';
      this.log.info({ list: list.name, events }, `a backlog of item events: re-read by ID (${why})`);
      return;
    }
    this.log.info({ list: list.name, events, pages }, 'a backlog of item events: one incremental pull instead of re-reading each item');
    const waitMs = pullWaitMs(pages, this.opts.config.platform.requestsPerSecond);
    const ended = await this.within(
      puller.run(list.name).catch(() => false),
      waitMs,
    );
    if (ended === 'timeout')
      this.log.info(
        { list: list.name, waitedMs: waitMs },
        'the backlog pull takes longer than its pages should; the items are re-read beside it',
      );
    else if (!ended) this.log.info({ list: list.name }, 'the backlog pull did not succeed; the items are re-read');
  }

  /** `p`'s value, or 'timeout' once `ms` passed or the applier closes. */
  private within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
    return new Promise((resolve) => {
      const done = (v: T | 'timeout'): void => {
        clearTimeout(timer);
        this.closing.signal.removeEventListener('abort', onAbort);
        resolve(v);
      };
      const onAbort = (): void => done('timeout');
      const timer = setTimeout(onAbort, ms);
      if (this.closing.signal.aborted) return done('timeout');
      this.closing.signal.addEventListener('abort', onAbort);
      void p.then(done);
    });
  }

  /**
   * New events failing, or chunks failing in a row, make the list back off
   * (doubling). Once a chunk is applied again after that, the platform
   * answers: every waiting claim is tried at the next flush, not at the end
   * of its own backoff. One item that keeps failing alone backs off alone.
   */
  private settleBackoff(q: ListQueue, flush: { stopped: boolean; succeeded: boolean }): void {
    const now = Date.now();
    if (flush.stopped) {
      q.failedFlushes++;
      q.backoffUntil = now + this.backoff(q.failedFlushes);
    } else if (flush.succeeded && q.failedFlushes > 0) {
      q.failedFlushes = 0;
      q.backoffUntil = 0;
      for (const c of q.retry.values()) c.retryAt = Math.min(c.retryAt, now);
    }
  }

  /** Re-reads and writes one chunk of claims; claims whose own read failed go to the retry queue. */
  private async applyChunk(q: ListQueue, mapping: TableMapping, claims: Claim[], rows: readonly ItemEventRow[]): Promise<void> {
    const list = q.list;
    const plan = await this.plan(mapping, claims, list.realtimeTrust === 'body');
    const read = await this.reread(list, mapping, plan.reread, plan.recheckById);
    const ids = new Set(claims.flatMap((c) => c.inboxIds));
    const result = await this.write(
      list,
      mapping,
      claims,
      plan,
      read,
      rows.filter((r) => ids.has(Number(r.id))),
    );
    for (const c of read.recheck) {
      c.rechecks++;
      q.rechecks.set(c.id, c);
    }
    for (const [id, err] of read.failed)
      await this.chunkFailed(
        q,
        claims.filter((c) => c.id === id),
        err,
      );
    this.opts.onFlush?.(result);
    this.log.debug({ ...result }, 'item events applied');
  }

  /** The claims' events stay unprocessed: counted and their error recorded in the inbox, retried after a backoff. */
  private async chunkFailed(q: ListQueue, claims: Claim[], err: Error): Promise<void> {
    // Stopped by close(): nothing failed, the events stay unprocessed and are replayed at the next start.
    if (this.closing.signal.aborted) return;
    const now = Date.now();
    for (const c of claims) {
      c.attempts++;
      this.waitForRetry(q, c, now + this.backoff(c.attempts));
    }
    const inboxIds = claims.flatMap((c) => c.inboxIds);
    this.log.warn(
      { list: q.list.name, items: claims.length, events: inboxIds.length, attempts: Math.max(...claims.map((c) => c.attempts)), err },
      'item events could not be applied; they stay queued and are tried again',
    );
    try {
      await recordEventFailure(this.opts.db, inboxIds, err.message);
    } catch (recordErr) {
      // The database is failing too: the events are still unprocessed there, and queued here.
      this.log.warn({ list: q.list.name, err: coerceError(recordErr) }, 'could not record the failure of item events');
    }
  }

  private waitForRetry(q: ListQueue, c: Claim, at: number): void {
    const waiting = q.retry.get(c.id);
    if (waiting && waiting !== c) absorb(c, waiting);
    c.retryAt = at;
    q.retry.set(c.id, c);
  }

  /** Which claims need the API, and which the stored row or a trusted body settle. */
  private async plan(mapping: TableMapping, claims: Claim[], trustBody: boolean): Promise<Plan> {
    const stored = await storedRows(
      this.opts.db,
      mapping,
      claims.map((c) => c.id),
    );
    const plan: Plan = { reread: [], recheckById: new Set(), fromBody: [], settled: [], stored };
    for (const c of claims) {
      const row = stored.get(c.id);
      if (c.id.startsWith('\u0000')) {
        plan.settled.push(c);
      } else if (c.rechecks > 0) {
        plan.reread.push(c);
        plan.recheckById.add(c.id);
      } else if (c.deleteClaimed) {
        plan.reread.push(c);
      } else if (row && c.announced !== null && row.version !== null && row.version >= c.announced) {
        plan.settled.push(c); // a duplicate or a late copy: the mirror already has this version
      } else if (
        trustBody &&
        c.body &&
        c.announced !== null &&
        (!row || row.version === null || c.announced > row.version) &&
        !row?.deleted
      ) {
        plan.fromBody.push(c);
      } else {
        plan.reread.push(c);
      }
    }
    return plan;
  }

  /**
   * Re-reads the claims: `In` queries, then by ID for what the query does not
   * settle. An item is gone only when both ways agree (a refused read by ID,
   * and an `In` query without it), whatever Status the refusal carries. A read
   * by ID that fails otherwise (5xx, transport) fails that item alone.
   */
  /** The applier's re-reads count as `realtime` in the request tally, whoever's async context started the flush. */
  private reread(list: ListConfig, mapping: TableMapping, claims: Claim[], byIdOnly: Set<string>): Promise<ReadResult> {
    return withRequestSource('realtime', () => this.rereadItems(list, mapping, claims, byIdOnly));
  }

  private async rereadItems(list: ListConfig, mapping: TableMapping, claims: Claim[], byIdOnly: Set<string>): Promise<ReadResult> {
    const { client } = this.opts;
    const ref = { appID: list.appID, listID: list.listID, idField: mapping.idField };
    const out: ReadResult = {
      items: new Map(),
      fromGet: new Set(),
      gone: new Set(),
      recheck: [],
      failed: new Map(),
      requests: 0,
      reread: 0,
    };
    const queried = claims.filter((c) => !byIdOnly.has(c.id));
    const queriedIds = queried.map((c) => c.id);
    for (const item of await queryItemsByIds(client, ref, queriedIds, { signal: this.closing.signal })) {
      const id = itemId(item[mapping.idField]);
      if (id !== null) out.items.set(id, item);
    }
    out.requests += Math.ceil(queriedIds.filter(isPlatformId).length / REREAD_BATCH);
    out.reread += queriedIds.length;
    const absentFromQuery = new Set(queried.filter((c) => !out.items.has(c.id)).map((c) => c.id));
    // Not returned (deleted since, or created too recently for the query), a delete the query may lag behind, or a re-check.
    const byId = claims.filter((c) => byIdOnly.has(c.id) || !out.items.has(c.id) || c.deleteClaimed);
    const refused = new Map<string, PlatformError>();
    for (const c of byId) {
      out.requests++;
      out.reread++;
      if (!isPlatformId(c.id)) {
        out.items.delete(c.id);
        out.gone.add(c.id);
        continue;
      }
      try {
        const item = await client.getItem(list.appID, list.listID, c.id, this.closing.signal);
        out.items.set(c.id, item);
        out.fromGet.add(c.id);
      } catch (err) {
        out.items.delete(c.id);
        if (isRefusalAnswer(err)) refused.set(c.id, err);
        else out.failed.set(c.id, coerceError(err));
      }
    }
    // A refused read of an item the query did not return either: gone. Otherwise one more In query decides.
    const unconfirmed = new Map<string, PlatformError>();
    for (const [id, err] of refused) {
      if (absentFromQuery.has(id)) out.gone.add(id);
      else unconfirmed.set(id, err);
    }
    if (unconfirmed.size) {
      out.requests++;
      for (const [id, presence] of await confirmAbsent(client, ref, unconfirmed, this.closing.signal)) {
        if (presence.kind === 'gone') out.gone.add(id);
        else out.items.set(id, presence.item);
      }
    }
    for (const c of claims) {
      const item = out.items.get(c.id);
      if (!item || c.announced === null) continue;
      const v = itemVersionNumber(item[mapping.versionField]);
      if (v !== null && v < c.announced && c.rechecks < this.maxRechecks) out.recheck.push(c);
    }
    return out;
  }

  /** One transaction: upserts, deletes, processed events, counters. */
  private async write(
    list: ListConfig,
    mapping: TableMapping,
    claims: readonly Claim[],
    plan: Plan,
    read: ReadResult,
    rows: ItemEventRow[],
  ): Promise<FlushResult> {
    const { db, config } = this.opts;
    const zone = config.platform.timeZone;
    const recheckIds = new Set(read.recheck.map((c) => c.id));
    const items: Item[] = [];
    for (const [id, item] of read.items) {
      const row = plan.stored.get(id);
      const v = itemVersionNumber(item[mapping.versionField]);
      // A row marked deleted comes back only with a newer version: a lagging query may still show a deleted item.
      if (row?.deleted && (v === null || row.version === null || v <= row.version) && !read.fromGet.has(id)) continue;
      items.push(item);
    }
    for (const c of plan.fromBody) items.push(c.body!);
    const gone = [...read.gone];
    const done = claims.filter((c) => !recheckIds.has(c.id) && !read.failed.has(c.id)).flatMap((c) => c.inboxIds);
    const newest = rows.reduce<Date | null>((m, r) => (m === null || r.received_at > m ? r.received_at : m), null);

    const result: FlushResult = {
      list: list.name,
      events: claims.reduce((n, c) => n + c.inboxIds.length, 0),
      applied: 0,
      reread: read.reread,
      requests: read.requests,
      fromBody: plan.fromBody.length,
      deleted: 0,
      recheck: recheckIds.size,
      failed: read.failed.size,
    };
    await db.transaction(async (trx) => {
      await markListsyncWriter(trx);
      if (items.length) {
        const r = await upsertItems(trx, mapping, items, zone);
        if (r.skippedPending.length) await pendingConflictHandler(config, list)(trx, mapping, r.skippedPending);
        result.applied += r.inserted + r.updated;
      }
      if (gone.length) result.deleted = await markDeleted(trx, mapping, gone);
      if (done.length) await markUnprocessedDone(trx, done);
      await addFlush(trx, list.name, {
        applied: done.length,
        reread: read.reread,
        requests: read.requests,
        fromBody: plan.fromBody.length,
        deleted: result.deleted,
        newestReceivedAt: newest,
      });
    });
    return result;
  }
}

/** Failed claims in chunks: those that failed `k` times in up to 2^k chunks, so an item that always fails ends up alone. */
function retryChunks(claims: readonly Claim[]): Claim[][] {
  const byAttempts = new Map<number, Claim[]>();
  for (const c of claims) byAttempts.set(c.attempts, [...(byAttempts.get(c.attempts) ?? []), c]);
  const out: Claim[][] = [];
  for (const [attempts, group] of [...byAttempts].sort((a, b) => a[0] - b[0])) {
    const size = Math.max(1, Math.ceil(group.length / 2 ** Math.min(attempts, 20)));
    for (let i = 0; i < group.length; i += size) out.push(group.slice(i, i + size));
  }
  return out;
}

/** Folds claim `from` of the same item into `into`: every event, the delete claim, the highest announced version. */
function absorb(into: Claim, from: Claim): void {
  for (const id of from.inboxIds) if (!into.inboxIds.includes(id)) into.inboxIds.push(id);
  into.deleteClaimed ||= from.deleteClaimed;
  if (from.announced !== null && (into.announced === null || from.announced > into.announced)) {
    into.announced = from.announced;
    into.body = from.body;
  }
  if (from.receivedAt < into.receivedAt) into.receivedAt = from.receivedAt;
  into.attempts = Math.max(into.attempts, from.attempts);
}

interface Plan {
  reread: Claim[];
  /** Claims re-read by ID (a recheck after an older version). */
  recheckById: Set<string>;
  fromBody: Claim[];
  settled: Claim[];
  stored: Map<string, StoredRow>;
}

interface ReadResult {
  items: Map<string, Item>;
  /** Items read by ID: the platform's current state (queries may lag, reads by ID do not). */
  fromGet: Set<string>;
  gone: Set<string>;
  recheck: Claim[];
  /** Items whose read failed without saying anything about them (5xx, transport): retried later. */
  failed: Map<string, Error>;
  requests: number;
  reread: number;
}

interface StoredRow {
  version: number | null;
  deleted: boolean;
}

/** The item a callback body carries: the body itself, or an item wrapped in `Data`. */
function itemOf(body: unknown, idField: string): Item | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const o = body as Item;
  const data = o['Data'];
  if (o[idField] === undefined && data !== null && typeof data === 'object' && !Array.isArray(data)) return data as Item;
  return o;
}

/** Events merged per item: one claim each, carrying every event's inbox ID. */
function mergeClaims(
  rows: readonly ItemEventRow[],
  carried: readonly Claim[],
  mapping: TableMapping,
  list: ListConfig,
): Map<string, Claim> {
  const claims = new Map<string, Claim>(carried.map((c) => [c.id, { ...c }]));
  const orphan: number[] = [];
  for (const r of rows) {
    let body: unknown;
    try {
      body = parseJson(r.body);
    } catch {
      body = null;
    }
    const item = itemOf(body, mapping.idField);
    const id = (item ? itemId(item[mapping.idField] ?? item[list.idField]) : null) ?? '';
    if (id === '' || id.startsWith(LOCAL_ID_PREFIX)) {
      orphan.push(Number(r.id));
      continue;
    }
    const c = claims.get(id) ?? {
      id,
      inboxIds: [],
      deleteClaimed: false,
      announced: null,
      body: null,
      receivedAt: r.received_at,
      rechecks: 0,
      attempts: 0,
      retryAt: 0,
    };
    c.inboxIds.push(Number(r.id));
    if (r.received_at < c.receivedAt) c.receivedAt = r.received_at;
    if (r.type === ITEM_EVENT.deleted) c.deleteClaimed = true;
    else {
      const v = itemVersionNumber(item![mapping.versionField]);
      if (v !== null && (c.announced === null || v > c.announced)) {
        c.announced = v;
        c.body = item;
      }
    }
    claims.set(id, c);
  }
  // Events naming no item still get marked processed, through a claim of their own that reads nothing.
  if (orphan.length)
    claims.set('\u0000orphans', {
      id: '\u0000orphans',
      inboxIds: orphan,
      deleteClaimed: false,
      announced: 0,
      body: null,
      receivedAt: new Date(),
      rechecks: 0,
      attempts: 0,
      retryAt: 0,
    });
  return claims;
}

async function storedRows(db: Knex, mapping: TableMapping, ids: readonly string[]): Promise<Map<string, StoredRow>> {
  const out = new Map<string, StoredRow>();
  const real = ids.filter((id) => !id.startsWith('\u0000'));
  if (real.length === 0) return out;
  const t = qualifiedName(mapping.schema, mapping.table);
  const F = FIXED_COLUMNS;
  const sql = `select ${quoteIdent(F.id)} as id, ${quoteIdent(F.rowVersion)} as row_version, ${quoteIdent(F.deletedAt)} is not null as deleted from ${t} where ${quoteIdent(F.id)} = any(?::text[])`;
  const r = (await db.raw(sql, [arrayLiteral(real)])) as {
    rows: { id: string; row_version: string | number | null; deleted: boolean }[];
  };
  for (const row of r.rows) out.set(row.id, { version: row.row_version === null ? null : Number(row.row_version), deleted: row.deleted });
  return out;
}

async function markDeleted(trx: Knex.Transaction, mapping: TableMapping, ids: readonly string[]): Promise<number> {
  const t = qualifiedName(mapping.schema, mapping.table);
  const del = quoteIdent(FIXED_COLUMNS.deletedAt);
  const r = (await trx.raw(`update ${t} set ${del} = now() where ${quoteIdent(FIXED_COLUMNS.id)} = any(?::text[]) and ${del} is null`, [
    arrayLiteral(ids),
  ])) as { rowCount: number | null };
  return r.rowCount ?? 0;
}
