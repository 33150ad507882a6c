/**
 * The ordered page writer: up to `concurrency` pages are written at once,
 * each in its own transaction with the run's counters and the checkpoint, so
 * converting one page can overlap the database writing another. The
 * checkpoint's `nextPage` never passes a page that is not committed yet, and
 * pages are reported in order as they become contiguous.
 *
 * The checkpoint written beside a page is the run's accounting as of the page
 * before `nextPage` (what pages 1..nextPage-1 added up to), not as of the
 * page in the transaction: with pages committing out of order, a page's own
 * accounting could otherwise sit beside a `nextPage` past pages it does not
 * count, and a resumed run would miss their IDs in its completeness check.
 */
import type { Knex } from '../../db.js';
import { PG, pgCode } from '../../errors.js';
import { upsertItems, type TableMapping, type UpsertResult } from '../../mirror/index.js';
import type { Item, Page } from '../../platform/types.js';
import { addToRun, zeroCounters, type RunCounters } from '../../store/runs.js';
import { writeCheckpoint } from '../../store/state.js';

export type PendingHandler = (
  trx: Knex.Transaction,
  mapping: TableMapping,
  skipped: UpsertResult['skippedPending'],
) => Promise<{ conflicts: number }>;

export interface PageWriterOptions {
  db: Knex;
  mapping: TableMapping;
  zone: string;
  runId: number;
  list: string;
  job: string;
  concurrency: number;
  onPending: PendingHandler;
  /** Requests and retries made since the last call (they are added to the page's counters). */
  takeRequests: () => Partial<RunCounters>;
  /** Called for each page, in page order, once it is committed. */
  onWritten: (page: Page, result: UpsertResult) => void;
}

export class PageWriter {
  readonly counters: RunCounters = zeroCounters();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly committed = new Set<number>();
  private readonly done = new Map<number, { page: Page; result: UpsertResult }>();
  /** The accounting after each queued page (pages are queued in order). */
  private readonly snapshots = new Map<number, Record<string, unknown>>();
  private readonly startPage: number;
  private error: unknown;
  /** The last page committed held new rows only (a first load): the next is copied in before anything is read. */
  private lastAllNew = false;
  private frontier: number;
  private reported: number;
  /** The mapping pages are written with (replaced when the run asks the fields again). */
  private mapping: TableMapping;

  /** `accountingAtStart`: the checkpoint as it stands before `startPage` (what a resume point before any new page holds). */
  constructor(
    private readonly o: PageWriterOptions,
    startPage: number,
    accountingAtStart: Record<string, unknown>,
  ) {
    this.frontier = startPage;
    this.reported = startPage;
    this.mapping = o.mapping;
    this.startPage = startPage;
    this.snapshots.set(startPage - 1, accountingAtStart);
  }

  /** Pages queued from now on are written with `mapping`; call it only after `drain()` (pages in flight keep theirs). */
  useMapping(mapping: TableMapping): void {
    this.mapping = mapping;
  }

  /** The first page not known committed: where a resumed run starts. */
  get nextPage(): number {
    return this.frontier;
  }

  /** Queues a page with the checkpoint to record beside it; waits while `concurrency` pages are being written. */
  async write(page: Page, checkpoint: Record<string, unknown>): Promise<void> {
    while (this.inFlight.size >= this.o.concurrency) await Promise.race(this.inFlight);
    this.throwIfFailed();
    this.snapshots.set(page.index, checkpoint);
    const w = this.commit(page).then(
      (result) => this.report(page, result),
      (err: unknown) => {
        this.error ??= err;
      },
    );
    this.inFlight.add(w);
    void w.finally(() => this.inFlight.delete(w));
  }

  /** Waits for every queued page; throws the first write error. */
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
    this.throwIfFailed();
  }

  /** Waits for every queued page, ignoring errors (the run is failing already). */
  async settle(): Promise<void> {
    await Promise.allSettled(this.inFlight);
  }

  /**
   * After the writes settled (a stop or a failure): records the exact resume
   * point, the first page not committed, with the accounting of the pages
   * before it. The per-page checkpoints may have been conservative.
   */
  async recordResumePoint(): Promise<void> {
    const accounting = this.snapshots.get(this.frontier - 1);
    if (this.frontier === this.startPage || accounting === undefined) return; // nothing committed: the checkpoint stands
    await writeCheckpoint(this.o.db, this.o.list, this.o.job, { ...accounting, nextPage: this.frontier });
  }

  private throwIfFailed(): void {
    if (this.error !== undefined) throw this.error;
  }

  /**
   * Writes items read outside the paged order (a gap re-read, a follow-up read) in one transaction
   * with the run's counters; the checkpoint is not touched (a run killed here reads them again).
   * `countUnchanged: false` for items the run counted already: a row found unchanged is not counted again.
   */
  async writeItems(items: readonly Item[], opts: { countUnchanged?: boolean } = {}): Promise<UpsertResult> {
    await this.drain();
    const { r, delta } = await withDeadlockRetry(() =>
      this.o.db.transaction(async (trx) => {
        const written = await this.upsert(trx, items, false);
        if (opts.countUnchanged === false) written.delta.rows_unchanged = 0;
        await addToRun(trx, this.o.runId, written.delta);
        return written;
      }),
    );
    for (const [k, v] of Object.entries(delta)) this.counters[k as keyof RunCounters] += v ?? 0;
    return r;
  }

  private async upsert(
    trx: Knex.Transaction,
    items: readonly Item[],
    expectNew: boolean,
  ): Promise<{ r: UpsertResult; delta: Partial<RunCounters> }> {
    const { zone } = this.o;
    const mapping = this.mapping;
    const r = await upsertItems(trx, mapping, items, zone, { expectNew });
    const conflicts = r.skippedPending.length ? (await this.o.onPending(trx, mapping, r.skippedPending)).conflicts : 0;
    const delta: Partial<RunCounters> = {
      rows_inserted: r.inserted,
      rows_updated: r.updated,
      rows_unchanged: r.unchanged,
      rows_failed: r.failedValues,
      rows_undeleted: r.undeleted,
      rows_skipped_pending: r.skippedPending.length,
      rows_missing_keys: r.missingKeys,
      rows_unstorable: r.unstorable,
      changes_conflicted: conflicts,
      ...this.o.takeRequests(),
    };
    return { r, delta };
  }

  private async commit(page: Page): Promise<UpsertResult> {
    const { db, runId } = this.o;
    const { r, delta } = await withDeadlockRetry(() =>
      db.transaction(async (trx) => {
        const { r, delta } = await this.upsert(trx, page.items, this.lastAllNew);
        delta.pages = 1;
        await addToRun(trx, runId, delta);
        // Resume point: the first page not known committed, counting this one (it is, if this commits).
        let next = this.frontier;
        while (next === page.index || this.committed.has(next)) next++;
        await writeCheckpoint(trx, this.o.list, this.o.job, { ...this.snapshots.get(next - 1)!, nextPage: next });
        return { r, delta };
      }),
    );
    for (const [k, v] of Object.entries(delta)) this.counters[k as keyof RunCounters] += v ?? 0;
    this.lastAllNew = r.inserted > 0 && r.updated === 0 && r.unchanged === 0 && r.skippedPending.length === 0;
    this.committed.add(page.index);
    while (this.committed.has(this.frontier)) this.committed.delete(this.frontier++);
    for (const index of this.snapshots.keys()) if (index < this.frontier - 1) this.snapshots.delete(index);
    return r;
  }

  private report(page: Page, result: UpsertResult): void {
    this.done.set(page.index, { page, result });
    for (let next = this.done.get(this.reported); next; next = this.done.get(this.reported)) {
      this.done.delete(this.reported);
      this.reported++;
      this.o.onWritten(next.page, next.result);
    }
  }
}

/** Two page transactions can touch the same row (an item shifted across a page boundary): retry a deadlock. */
async function withDeadlockRetry<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (pgCode(err) !== PG.deadlockDetected || i >= attempts) throw err;
    }
  }
}
