/**
 * A run's trace (`listsync.sync_run_events`): its plan, every platform request with its answer,
 * the pages it wrote with their row counts, in the order they happened (`seq`), read by
 * `listsync runs show ID`.
 *
 * The run that code belongs to has a `RunTrace` (AsyncLocalStorage, opened by src/sync/run-job.ts):
 * events are kept in memory and written in batches (at most one insert in flight per run, at 100
 * events or a second after the last write, and when the run ends), so hundreds of lists a minute
 * add a few inserts each, never one per request. A process that dies loses the unwritten tail,
 * never writes a wrong event: the run's own row (sync_runs) stays the truth for its outcome and counters.
 * The run-history prune deletes a run's events with it (src/store/runs.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import { storableJson } from '../storable.js';

export const RUN_EVENTS_TABLE = 'listsync.sync_run_events';

/** `plan`: the run's window and plan; `request`: an attempt and its answer; `page`: counters a page added. */
export type RunEventKind = 'start' | 'plan' | 'request' | 'page' | 'rows' | 'note';

export interface RunEvent {
  seq: number;
  at: Date;
  kind: RunEventKind;
  detail: Record<string, unknown>;
}

const BATCH = 100;
const FLUSH_AFTER_MS = 1000;

export class RunTrace {
  private seq = 0;
  private buffer: (RunEvent & { run_id: number })[] = [];
  private lastWrite = Date.now();
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Knex,
    readonly runId: number,
    private readonly log: Logger,
  ) {}

  add(kind: RunEventKind, detail: Record<string, unknown> = {}): void {
    this.buffer.push({ run_id: this.runId, seq: ++this.seq, at: new Date(), kind, detail });
    if (this.buffer.length >= BATCH || Date.now() - this.lastWrite >= FLUSH_AFTER_MS) this.write();
  }

  /** Writes what is left; never throws (a trace is a record of the run, not part of it). */
  async close(): Promise<void> {
    this.write();
    await this.writing;
  }

  private write(): void {
    const rows = this.buffer.splice(0);
    this.lastWrite = Date.now();
    if (rows.length === 0) return;
    this.writing = this.writing
      .then(() => insertRunEvents(this.db, rows))
      .catch((err: unknown) => this.log.debug({ err, runId: this.runId }, 'could not record the run trace'));
  }
}

const traces = new AsyncLocalStorage<RunTrace>();

/** Runs `fn` with `trace` as the trace of the run it belongs to. */
export function withRunTrace<T>(trace: RunTrace, fn: () => T): T {
  return traces.run(trace, fn);
}

/** Adds an event to the trace of run `runId`, when the code runs inside it. */
export function traceRun(runId: number, kind: RunEventKind, detail: Record<string, unknown>): void {
  const trace = traces.getStore();
  if (trace?.runId === runId) trace.add(kind, detail);
}

async function insertRunEvents(db: Knex, rows: readonly (RunEvent & { run_id: number })[]): Promise<void> {
  await db(RUN_EVENTS_TABLE).insert(rows.map((r) => ({ ...r, detail: storableJson(r.detail) })));
}

/** A run's events in the order they happened. */
export async function readRunEvents(db: Knex, runId: number): Promise<RunEvent[]> {
  return (await db(RUN_EVENTS_TABLE).where({ run_id: runId }).orderBy('seq').select('seq', 'at', 'kind', 'detail')) as RunEvent[];
}
