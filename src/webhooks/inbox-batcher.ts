/**
 * Stores the receiver's accepted callbacks in batches: callbacks arriving
 * within `windowMs` of the first (or `maxBatch` of them) go into the inbox in
 * one transaction (`storeEvents`), and each is answered once its batch
 * committed. A burst of thousands of callbacks costs a few dozen
 * transactions and holds at most `maxInFlight` pool connections, so the
 * receiver answers quickly whatever the backlog and leaves the pool to the
 * applier and the jobs.
 *
 * Invariants:
 * - A callback is answered 200 only after its row (or the row it duplicates)
 *   committed: the durability of the single store is kept. (receiver: every
 *   accepted event is in the inbox; realtime-burst.)
 * - A batch that fails is stored again one event at a time, so one bad body
 *   (a data error) fails alone and the others are stored. (receiver: a \u0000
 *   escape is answered 400.)
 */
import type { Knex } from '../db.js';
import { pgCode } from '../errors.js';
import { storeEvent, storeEvents, type EventToStore, type StoredEvent } from '../store/webhook-inbox.js';

interface Waiting {
  event: EventToStore;
  resolve: (stored: StoredEvent) => void;
  reject: (err: unknown) => void;
}

export interface InboxBatcherOptions {
  db: Knex;
  windowMinutes: number;
  /** Gather callbacks this long after the first before storing them. Default 20 ms. */
  windowMs?: number;
  /** Store at once when this many are waiting. Default 500. */
  maxBatch?: number;
  /** Batches stored at once (pool connections held). Default 2. */
  maxInFlight?: number;
}

export class InboxBatcher {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight = 0;
  private readonly windowMs: number;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(private readonly o: InboxBatcherOptions) {
    this.windowMs = o.windowMs ?? 20;
    this.maxBatch = o.maxBatch ?? 500;
    this.maxInFlight = o.maxInFlight ?? 2;
  }

  /** Stores one event with the others of its batch; resolves once it is committed. */
  store(event: EventToStore): Promise<StoredEvent> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ event, resolve, reject });
      if (this.waiting.length >= this.maxBatch) this.kick();
      else this.timer ??= setTimeout(() => this.kick(), this.windowMs);
    });
  }

  private kick(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.waiting.length && this.inFlight < this.maxInFlight) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.inFlight++;
      void this.storeBatch(batch).finally(() => {
        this.inFlight--;
        // What arrived meanwhile goes at once: it has waited at least a batch's time.
        if (this.waiting.length) this.kick();
      });
    }
  }

  private async storeBatch(batch: Waiting[]): Promise<void> {
    try {
      const stored = await storeEvents(
        this.o.db,
        batch.map((w) => w.event),
        this.o.windowMinutes,
      );
      batch.forEach((w, i) => w.resolve(stored[i]!));
    } catch (err) {
      // A database that is away fails every event of the batch at once (the platform delivers again).
      if (!pgCode(err)?.startsWith('22') || batch.length === 1) {
        for (const w of batch) w.reject(err);
        return;
      }
      // A data error: one at a time, so the bad body fails alone (answered as the single store answers it).
      for (const w of batch) {
        await storeEvent(this.o.db, w.event.subscriptionId, w.event, this.o.windowMinutes).then(w.resolve, w.reject);
      }
    }
  }
}
