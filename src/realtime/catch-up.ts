/**
 * Catch-up after a gap: whenever a real-time list may have missed item
 * events (callbacks refused because the database was away or the process
 * was stopping, or the process was down: asked at every start), one
 * incremental pull of the list runs as soon as it can, instead of waiting for
 * the schedule. A pull that cannot run yet (the database away, another run
 * holding the list) is tried again after a doubling delay until one
 * succeeds; gaps that come while one runs ask for one more after it.
 *
 * Invariants:
 * - A gap is caught up only by a pull that started after the gap was seen:
 *   a pull already running when it was seen does not count. (catch-up:
 *   PostgreSQL stopped under serve with edits flowing.)
 * - The gap and its catch-up are recorded in `listsync.realtime_stats`
 *   (`status` shows them); a gap seen while the database is away is recorded
 *   when it answers again.
 * - `close()` aborts a pull in flight (it stops after its page, keeping its
 *   checkpoint) and waits for it; nothing is left running.
 * - Under `serve` the pulls go through its one job queue (`runPull`), so a
 *   start with hundreds of real-time lists never runs more pulls at once than
 *   the queue has workers, and each is recorded like any other run.
 */
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { recordGap } from '../store/realtime-stats.js';
import { pullList } from '../sync/pull.js';

export interface CatchUpOptions {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  /**
   * Runs one incremental pull of the list; resolves to its result (undefined: it did not run or failed).
   * serve hands its job queue here; without it the pull runs directly.
   */
  runPull?: (listName: string, signal: AbortSignal) => Promise<{ status: string } | undefined>;
  /** First wait before trying a pull that could not run again; doubles, at most `maxRetryDelayMs`. Default 1 s. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
}

interface ListGap {
  /** When the first gap not yet caught up was seen, and why. */
  at: Date;
  reason: string;
  /** A gap came while a pull ran: one more pull after it. */
  again: boolean;
  running: Promise<void> | null;
  timer: NodeJS.Timeout | null;
  attempts: number;
}

export class CatchUp {
  private readonly gaps = new Map<string, ListGap>();
  private readonly abort = new AbortController();
  private readonly log: Logger;

  constructor(private readonly o: CatchUpOptions) {
    this.log = o.logger.child({ component: 'realtime' });
  }

  /** A gap of the list: a pull runs as soon as it can. */
  request(listName: string, reason: string): void {
    if (this.abort.signal.aborted || !this.o.config.lists.some((l) => l.name === listName)) return;
    const g = this.gaps.get(listName);
    if (g) {
      g.reason = reason; // status says why the last gap came; `at` stays the first one not caught up
      if (g.running) g.again = true;
      return;
    }
    this.log.info({ list: listName, reason }, 'item events may have been missed: an incremental pull catches the list up');
    this.gaps.set(listName, { at: new Date(), reason, again: false, running: null, timer: null, attempts: 0 });
    this.start(listName, 0);
  }

  /** One incremental pull of the list now (a backlog of item events); true when it succeeded. Not retried. */
  async pullOnce(listName: string): Promise<boolean> {
    if (!this.o.config.lists.some((l) => l.name === listName) || this.abort.signal.aborted) return false;
    try {
      return (await this.runPull(listName))?.status === 'succeeded';
    } catch (err) {
      this.log.info({ list: listName, err: coerceError(err).message }, 'the pull for a backlog of item events could not run');
      return false;
    }
  }

  async close(): Promise<void> {
    this.abort.abort();
    for (const g of this.gaps.values()) if (g.timer) clearTimeout(g.timer);
    await Promise.allSettled([...this.gaps.values()].map((g) => g.running));
  }

  private start(listName: string, delayMs: number): void {
    const g = this.gaps.get(listName)!;
    g.timer = setTimeout(() => {
      g.timer = null;
      g.running = this.pull(listName, g).finally(() => (g.running = null));
    }, delayMs);
  }

  /** One incremental pull: through serve's queue when given, else directly. */
  private async runPull(listName: string): Promise<{ status: string } | undefined> {
    if (this.o.runPull) return this.o.runPull(listName, this.abort.signal);
    const { db, client, config } = this.o;
    const list = config.lists.find((l) => l.name === listName)!;
    return pullList({ db, client, config, logger: this.o.logger.child({ list: listName, job: 'pull' }), signal: this.abort.signal }, list);
  }

  private async pull(listName: string, g: ListGap): Promise<void> {
    const { db } = this.o;
    g.again = false;
    try {
      const r = await this.runPull(listName);
      if (r?.status !== 'succeeded') throw new Error(`the catch-up pull ${r ? r.status : 'did not run'}`);
      if (g.again) return this.start(listName, 0); // a gap while it ran: one more
      await recordGap(db, listName, { at: g.at, reason: g.reason, caughtUpAt: new Date() }).catch((err: unknown) =>
        this.log.warn({ list: listName, err: coerceError(err) }, 'could not record the catch-up'),
      );
      this.gaps.delete(listName);
      this.log.info({ list: listName, gapAt: g.at, reason: g.reason }, 'caught up after a gap');
    } catch (err) {
      if (this.abort.signal.aborted) return;
      g.attempts++;
      const delay = Math.min(this.o.maxRetryDelayMs ?? 30_000, (this.o.retryDelayMs ?? 1000) * 2 ** Math.min(20, g.attempts - 1));
      this.log.warn({ list: listName, err: coerceError(err).message, retryInMs: delay }, 'the catch-up pull could not run; trying again');
      this.start(listName, delay);
    }
  }
}
