/**
 * The run a job body is handed, and the one place a run's row is closed: what the body returns,
 * settles in its own transaction, or throws is written here, with the platform requests and
 * retries the run made (counted from the client's counters when the run opened, inside the run's
 * own tally: src/platform/request-tally.ts). What the row then says is src/sync/run-outcome.ts
 * (test/sync/run-job.test.ts).
 */
import { secretsOf, type Config } from '../config.js';
import { explainDatabaseError, type Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ClientStats, PlatformClient } from '../platform/client.js';
import { scrubSecrets } from '../secrets.js';
import { finishRun, isRunOpen } from '../store/runs.js';
import { currentFire } from './fire-scope.js';
import { finalRecord, RunFailed, type FailureNote, type FinalRecord, type RequestCount, type RunOutcome } from './run-outcome.js';

export interface ActiveRun {
  runId: number;
  /** The job's logger with list, job and runId bound. */
  log: Logger;
  /** Platform requests and retries since the run opened: what its row gets; a body reads it for its result and log line. */
  requests(): RequestCount;
  /** Requests and retries since the last take (the first: since the run opened): a page commits them with its rows. */
  takeRequests(): RequestCount;
  /**
   * Records a success in `trx`, the transaction that commits the body's last writes (a success row
   * is what the next run's marks start from, so it commits with them or not at all). The body then
   * returns that outcome; nothing more is written.
   */
  settle(trx: Knex.Transaction, outcome: RunOutcome & { status: 'succeeded' }): Promise<void>;
}

export interface RecordedRunDeps {
  db: Knex;
  client: PlatformClient;
  config: Config;
  signal?: AbortSignal;
}

export class RecordedRun implements ActiveRun {
  private readonly opened: ClientStats;
  private taken: ClientStats;
  private settled = false;
  private logged = false;

  constructor(
    private readonly deps: RecordedRunDeps,
    readonly runId: number,
    readonly log: Logger,
  ) {
    this.opened = deps.client.stats();
    this.taken = this.opened;
  }

  requests(): RequestCount {
    return since(this.opened, this.deps.client.stats());
  }

  takeRequests(): RequestCount {
    const now = this.deps.client.stats();
    const delta = since(this.taken, now);
    this.taken = now;
    return delta;
  }

  async settle(trx: Knex.Transaction, outcome: RunOutcome & { status: 'succeeded' }): Promise<void> {
    await this.write(trx, { status: 'succeeded', error: null }, outcome);
    this.settled = true;
  }

  /** Writes what the body returned, unless it settled it already. */
  async finish(outcome: RunOutcome): Promise<void> {
    if (this.settled) return;
    await this.write(this.deps.db, finalRecord({ kind: 'returned', outcome }, this.shutdown()), outcome);
  }

  /**
   * A body that threw: the run is closed failed (interrupted after the shutdown signal) with a
   * secret-free message, unless it was closed already; a database that is gone is logged, not thrown.
   */
  async fail(thrown: unknown): Promise<void> {
    const note: FailureNote = thrown instanceof RunFailed ? thrown.note : {};
    const err = explainDatabaseError(thrown instanceof RunFailed ? thrown.cause : thrown, this.deps.config.database.url);
    if (note.line !== undefined) this.logFailure(err, note.line);
    const record = finalRecord(
      { kind: 'threw', message: coerceError(err).message, described: thrown instanceof RunFailed },
      this.shutdown(),
    );
    try {
      if (!(await isRunOpen(this.deps.db, this.runId))) return;
      // A body that did not say why (a failure before the first page) still makes a log line.
      if (record.status === 'failed') this.logFailure(err, 'failed');
      await this.write(this.deps.db, record, note);
    } catch (recordErr) {
      this.logFailure(err, 'failed');
      // Under serve the engine records it once the database is back; elsewhere the next run closes it as abandoned.
      const later = currentFire() ? 'yet' : '(the next run closes it as abandoned)';
      this.log.warn({ err: recordErr }, `could not record the ${record.status} run ${later}`);
    }
  }

  private async write(db: Knex, record: FinalRecord, said: { counters?: object; details?: object }): Promise<void> {
    const error = record.error === null ? undefined : scrubSecrets(record.error, secretsOf(this.deps.config));
    const counters = { ...said.counters, ...this.requests() };
    await finishRun(db, this.runId, record.status, { error, counters, details: said.details });
  }

  /** The shutdown signal's name once it came (SIGINT, SIGTERM, shutdown). */
  private shutdown(): string | undefined {
    const signal = this.deps.signal;
    if (!signal?.aborted) return undefined;
    const reason: unknown = signal.reason;
    return typeof reason === 'string' ? reason : 'shutdown';
  }

  /** One error line a run: the body's own, else the wrapper's. */
  private logFailure(err: unknown, line: string): void {
    if (this.logged) return;
    this.logged = true;
    this.log.error({ err }, line);
  }
}

function since(from: ClientStats, to: ClientStats): RequestCount {
  return { requests: to.requests - from.requests, retries: to.retries - from.retries };
}
