/**
 * The realtime applier inside `serve`: list item events, already stored in
 * `listsync.webhook_inbox`, brought into the mirror within about a second.
 * Per list: schedule (schedule.ts: the queue, its timer and backoff) → a
 * backlog drained by a pull when cheaper (backlog-pull.ts) → claim
 * (claims.ts: queued events merged per item, claim-merge.ts) → plan and
 * flush (flush-plan.ts decides, flush.ts reads and writes).
 *
 * Versions only move forward: a re-read older than the version an event
 * announced (the platform's queries can lag behind a write) is re-read again
 * later by ID, up to `maxRechecks` times; a row marked deleted is never
 * brought back by a query that may lag. `close()` aborts the requests in
 * flight: their events stay unprocessed and are replayed at the next start.
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
import { loadTableMapping, type TableMapping } from '../mirror/index.js';
import type { PlatformClient } from '../platform/client.js';
import { unappliedItemEvents } from '../store/webhook-inbox.js';
import { BACKLOG_PULL_EVENTS, pullIfBacklog, type BacklogDeps, type BacklogPuller } from './backlog-pull.js';
import { retryChunks, type Claim, type EventRow } from './claim-merge.js';
import { claimQueued, FLUSH_EVENTS, markFailed, releaseToPull } from './claims.js';
import { FieldGuard, FieldsChangedOnPlatform } from './field-guard.js';
import { flushChunk, type FlushDeps, type FlushResult } from './flush.js';
import { BudgetPace, ListSchedule, type ScheduleTimings } from './schedule.js';

export type { FlushResult };

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

export class RealtimeApplier {
  private readonly lists = new Map<string, ListSchedule>();
  private readonly log: Logger;
  private closed = false;
  private readonly timings: ScheduleTimings;
  private readonly pace: BudgetPace;
  /** Aborted by `close()`: requests in flight stop, their events stay queued in the inbox. */
  private readonly closing = new AbortController();
  private readonly flushDeps: FlushDeps;
  private readonly backlogDeps: BacklogDeps;
  /** Per list, the pull asked because its fields changed, while it runs (one at a time). */
  private readonly fieldsPulls = new Map<string, Promise<void>>();

  constructor(private readonly opts: ApplierOptions) {
    this.log = opts.logger.child({ component: 'realtime' });
    this.timings = {
      windowMs: opts.windowMs ?? 150,
      minIntervalMs: opts.minIntervalMs ?? 900,
      recheckDelayMs: opts.recheckDelayMs ?? 500,
      retryDelayMs: opts.retryDelayMs ?? 1000,
      maxRetryDelayMs: opts.maxRetryDelayMs ?? 30_000,
    };
    this.pace = new BudgetPace(opts.client, opts.config.platform.requestsPerSecond);
    const { db, client, config } = opts;
    const signal = this.closing.signal;
    const guard = new FieldGuard({ db, client, timeZone: config.platform.timeZone, signal });
    this.flushDeps = { db, client, config, maxRechecks: opts.maxRechecks ?? 5, signal, guard };
    const threshold = opts.backlogPullEvents ?? BACKLOG_PULL_EVENTS;
    this.backlogDeps = { db, config, puller: opts.backlogPuller, threshold, log: this.log, signal };
  }

  /** The configured list an item subscription's resource (`lists/{appID}/{listID}`) belongs to. */
  listForResource(resource: string): ListConfig | undefined {
    return this.opts.config.lists.find((l) => resource === `lists/${l.appID}/${l.listID}`);
  }

  /** Queues a stored event of the list; the flush marks it processed. */
  enqueue(listName: string, inboxId: number): void {
    if (this.closed) return;
    this.schedule(listName)?.add(inboxId);
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
    for (const s of this.lists.values()) {
      s.disarm();
      await s.running;
      s.dueNow();
      if (s.busy()) await s.run();
      // A backlog takes a flush per FLUSH_EVENTS (a flush that fails leaves its events queued: not tried again here).
      let rounds = Math.ceil(s.inbox.size / FLUSH_EVENTS);
      while (s.inbox.size > 0 && rounds-- > 0) {
        s.disarm();
        await s.run();
      }
    }
  }

  /** Whether anything is queued, waiting for a retry, or running. */
  busy(): boolean {
    return [...this.lists.values()].some((s) => s.busy());
  }

  /** Items whose events failed and wait for a retry, per list. */
  failing(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, s] of this.lists) if (s.retry.size) out[name] = s.retry.size;
    return out;
  }

  /** Stops the timers and waits for a flush in flight; what is queued stays unprocessed in the inbox. */
  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    for (const s of this.lists.values()) s.disarm();
    await Promise.allSettled([...this.lists.values()].map((s) => s.running));
  }

  private schedule(listName: string): ListSchedule | undefined {
    const known = this.lists.get(listName);
    if (known) return known;
    const list = this.opts.config.lists.find((l) => l.name === listName);
    if (!list) return undefined;
    const deps = {
      timings: this.timings,
      pace: this.pace,
      flush: (s: ListSchedule) => this.flush(s),
      closed: () => this.closed,
      log: this.log,
    };
    const s = new ListSchedule(list, deps);
    this.lists.set(listName, s);
    return s;
  }

  /** One flush of a list: a backlog's drain decided, its queue claimed, then applied chunk by chunk. */
  private async flush(s: ListSchedule): Promise<void> {
    const { db, config } = this.opts;
    const list = s.list;
    const mapping = await loadTableMapping(db, config.database.schema, list.name);
    if (!mapping) {
      // No mirror yet: the first pull reads every item, these included.
      await releaseToPull(db, s, (events) => {
        this.log.info({ list: list.name, events }, 'item events for a list not pulled yet: asking for a pull');
        this.opts.requestPull?.(list.name);
      });
      return;
    }
    await pullIfBacklog(this.backlogDeps, s, mapping);
    const fields = { idField: mapping.idField, versionField: mapping.versionField, listIdField: list.idField };
    const { rows, fresh } = await claimQueued(db, s, fields);
    const now = Date.now();
    const due = s.takeDueRetries(now);
    await this.applyChunks(s, mapping, { fresh: [...fresh.values()], due, rows, now });
  }

  /**
   * New events (and re-checks) as one chunk, then failed claims whose retry is due, split in
   * 2^attempts chunks so that one item failing every time ends up alone. Every chunk is applied on
   * its own; a failing one goes back to the retry queue; two failing in a row stop the flush, and
   * what is left waits for the list's backoff.
   */
  private async applyChunks(
    s: ListSchedule,
    mapping: TableMapping,
    work: { fresh: Claim[]; due: Claim[]; rows: EventRow[]; now: number },
  ): Promise<void> {
    const chunks = [...(work.fresh.length ? [work.fresh] : []), ...retryChunks(work.due)];
    let failedInRow = 0;
    let freshFailed = false;
    let succeeded = false;
    for (const [i, chunk] of chunks.entries()) {
      if (failedInRow >= FAILED_CHUNKS_TO_STOP) {
        s.untried(chunks.slice(i).flat(), work.now);
        break;
      }
      try {
        await this.applyChunk(s, mapping, chunk, work.rows);
        failedInRow = 0;
        succeeded = true;
      } catch (err) {
        failedInRow++;
        if (i === 0 && work.fresh.length) freshFailed = true;
        if (err instanceof FieldsChangedOnPlatform && err.needsPull) this.pullForFields(s.list.name);
        await this.chunkFailed(s, chunk, coerceError(err));
      }
    }
    s.settle({ stopped: failedInRow >= FAILED_CHUNKS_TO_STOP || freshFailed, succeeded });
  }

  /** Looks up and writes one chunk; claims whose own read failed go to the retry queue. */
  private async applyChunk(s: ListSchedule, mapping: TableMapping, claims: Claim[], rows: readonly EventRow[]): Promise<void> {
    const { result, recheck, failed } = await flushChunk(this.flushDeps, s.list, mapping, claims, rows);
    s.recheckLater(recheck);
    for (const [id, err] of failed)
      await this.chunkFailed(
        s,
        claims.filter((c) => c.id === id),
        err,
      );
    this.opts.onFlush?.(result);
    this.log.debug({ ...result }, 'item events applied');
  }

  /**
   * The list's fields changed on the platform: one pull sets the mirror table up from them (its
   * kept metadata is marked stale, so it asks `/fields`); the events wait in the retry queue and are
   * applied by the new mapping once it has run.
   */
  private pullForFields(list: string): void {
    const puller = this.opts.backlogPuller;
    if (!puller || this.fieldsPulls.has(list) || this.closed) return;
    this.log.info(
      { list },
      "the list's fields changed on the platform: a pull sets the mirror table up before its item events are applied",
    );
    const done = puller
      .run(list)
      .then((ok) => {
        if (!ok) this.log.info({ list }, 'the pull for the changed fields did not succeed; asked again at the next retry of the events');
      })
      .finally(() => this.fieldsPulls.delete(list));
    this.fieldsPulls.set(list, done);
  }

  private async chunkFailed(s: ListSchedule, claims: readonly Claim[], err: Error): Promise<void> {
    // Stopped by close(): nothing failed, the events stay unprocessed and are replayed at the next start.
    if (this.closing.signal.aborted) return;
    await markFailed({ db: this.opts.db, log: this.log }, s, claims, err);
  }
}
