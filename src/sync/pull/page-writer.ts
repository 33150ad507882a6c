/**
 * The ordered page writer: up to `concurrency` pages are written at once,
 * each in its own transaction with the run's counters and the checkpoint, so
 * converting one page can overlap the database writing another. The
 * checkpoint's `nextPage` never passes a page that is not committed yet, and
 * pages are reported in order as they become contiguous.
 */
import type { Knex } from '../../db.js';
import { PG, pgCode } from '../../errors.js';
import { upsertItems, type TableMapping, type UpsertResult } from '../../mirror/index.js';
import type { Page } from '../../platform/types.js';
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
  private error: unknown;
  private frontier: number;
  private reported: number;

  constructor(
    private readonly o: PageWriterOptions,
    startPage: number,
  ) {
    this.frontier = startPage;
    this.reported = startPage;
  }

  /** The first page not known committed: where a resumed run starts. */
  get nextPage(): number {
    return this.frontier;
  }

  /** Queues a page with the checkpoint to record beside it; waits while `concurrency` pages are being written. */
  async write(page: Page, checkpoint: Record<string, unknown>): Promise<void> {
    while (this.inFlight.size >= this.o.concurrency) await Promise.race(this.inFlight);
    this.throwIfFailed();
    const w = this.commit(page, checkpoint).then(
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

  private throwIfFailed(): void {
    if (this.error !== undefined) throw this.error;
  }

  private async commit(page: Page, checkpoint: Record<string, unknown>): Promise<UpsertResult> {
    const { db, mapping, zone, runId } = this.o;
    const { r, delta } = await withDeadlockRetry(() =>
      db.transaction(async (trx) => {
        const r = await upsertItems(trx, mapping, page.items, zone);
        const conflicts = r.skippedPending.length ? (await this.o.onPending(trx, mapping, r.skippedPending)).conflicts : 0;
        const delta: Partial<RunCounters> = {
          pages: 1,
          rows_inserted: r.inserted,
          rows_updated: r.updated,
          rows_unchanged: r.unchanged,
          rows_failed: r.failedValues,
          rows_undeleted: r.undeleted,
          rows_skipped_pending: r.skippedPending.length,
          changes_conflicted: conflicts,
          ...this.o.takeRequests(),
        };
        await addToRun(trx, runId, delta);
        // Resume point: the first page not known committed, counting this one (it is, if this commits).
        let next = this.frontier;
        while (next === page.index || this.committed.has(next)) next++;
        await writeCheckpoint(trx, this.o.list, this.o.job, { ...checkpoint, nextPage: next });
        return { r, delta };
      }),
    );
    for (const [k, v] of Object.entries(delta)) this.counters[k as keyof RunCounters] += v ?? 0;
    this.committed.add(page.index);
    while (this.committed.has(this.frontier)) this.committed.delete(this.frontier++);
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
