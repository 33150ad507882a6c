/**
 * Pure: how a run ends. A job body returns its outcome (or throws); the run wrapper
 * (src/sync/run-job.ts, src/sync/recorded-run.ts) alone writes it to the run's row, with the
 * requests it counted itself. This file holds the shapes and the one rule that says what the row
 * reads at the end (test/sync/run-outcome.test.ts).
 */
import type { RunCounters } from '../store/runs.js';

/** What the wrapper counts for every run; a body never sets these. */
export type RequestCount = Pick<RunCounters, 'requests' | 'retries'>;

/** The counters a body reports at its end: they replace the row's (requests and retries are the wrapper's). */
export type BodyCounters = Partial<Omit<RunCounters, 'requests' | 'retries'>>;

export type RunOutcome =
  | { status: 'succeeded'; counters?: BodyCounters; details?: object }
  /** A run that ends without an error to throw: a push that gave up, a refused reconcile, a stop at shutdown. */
  | { status: 'failed'; error: string; counters?: BodyCounters; details?: object };

/** What a job body returns: the outcome for the run's row, and the result for its caller. */
export interface RunEnd<T> {
  outcome: RunOutcome;
  result: T;
}

/** What a body that throws says of its failure: what it counted until then, and its own log line. */
export interface FailureNote {
  counters?: BodyCounters;
  details?: object;
  /** Logged at error level with the error, instead of the wrapper's plain "failed". */
  line?: string;
}

/** A thrown failure the body describes: the wrapper records it, then throws `cause` on to the caller. */
export class RunFailed extends Error {
  override readonly name = 'RunFailed';
  constructor(
    cause: unknown,
    readonly note: FailureNote,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

/** How the body ended, as the wrapper saw it; a thrown error's message is the one the row will keep. */
export type BodyEnd = { kind: 'returned'; outcome: RunOutcome } | { kind: 'threw'; message: string; described: boolean };

export interface FinalRecord {
  status: 'succeeded' | 'failed' | 'interrupted';
  error: string | null;
}

/**
 * What the run's row says: a returned outcome as it is, a thrown error as failed with its message.
 * After the shutdown signal (`shutdown`: its name) anything but a success is interrupted, with the
 * reason the body gave, else one that says the next run carries on.
 */
export function finalRecord(end: BodyEnd, shutdown: string | undefined): FinalRecord {
  if (end.kind === 'returned') {
    const { outcome } = end;
    if (outcome.status === 'succeeded') return { status: 'succeeded', error: null };
    return { status: shutdown === undefined ? 'failed' : 'interrupted', error: outcome.error };
  }
  if (shutdown === undefined) return { status: 'failed', error: end.message };
  return { status: 'interrupted', error: end.described ? end.message : `stopped by ${shutdown}; the next run carries on` };
}
