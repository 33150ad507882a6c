/**
 * serve's shutdown: graceful, then forceful, within 10 s whatever is queued
 * (test/serve-capacity.test.ts, "SIGTERM during blocked fires"). The
 * schedules stop and the queued fires are dropped (recorded 'skipped',
 * reason shutdown), every job's run context is aborted (each stops at its
 * next safe point: after the page or change in flight), serve waits for the
 * runs up to serve.shutdownTimeoutMs, closes as 'interrupted' the runs still
 * open, writes the outcomes kept in memory (bounded), and closes HTTP last,
 * so the webhook listener takes callbacks until the end.
 */
import type { Logger } from '../logger.js';
import { waitFor } from './deadline.js';

/** The runs under way, and the signal every run context carries. */
export interface RunTracker {
  readonly signal: AbortSignal;
  /** Runs under way now. */
  readonly running: number;
  /** Counts the run as under way until it settles. */
  track<T>(run: Promise<T>): Promise<T>;
  /** Resolves when no run is under way. */
  idle(): Promise<void>;
  /** Aborts the signal: runs stop at their next safe point. */
  abort(): void;
}

export function createRunTracker(): RunTracker {
  const controller = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  return {
    signal: controller.signal,
    get running() {
      return inFlight.size;
    },
    track(run) {
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run)).catch(() => undefined);
      return run;
    },
    async idle() {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
    abort() {
      controller.abort();
    },
  };
}

export interface ShutdownParts {
  logger: Logger;
  runs: RunTracker;
  /** Stops the schedules and drops the queued fires. */
  stopSchedules(): Promise<void>;
  /** Closes the runs still open as 'interrupted' and writes the outcomes kept in memory, within `budgetMs`. */
  recordLeftovers(budgetMs: number): Promise<void>;
  /** Other parts' shutdown (the realtime applier), before HTTP closes. */
  beforeHttpClose?: () => Promise<void>;
  closeHttp(): Promise<void>;
  timeoutMs: number;
}

/** What recording the leftovers and closing the other parts may take at most, each. */
const LEFTOVERS_MS = 2000;

/** The shutdown sequence; calling it again returns the same promise. */
export function createShutdown(parts: ShutdownParts): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= shutdown(parts));
}

async function shutdown(parts: ShutdownParts): Promise<void> {
  const { logger, runs, timeoutMs } = parts;
  logger.info({ running: runs.running }, 'shutting down: stopping schedules, dropping queued runs, finishing pages in flight');
  await parts.stopSchedules();
  runs.abort();
  if ((await waitFor(runs.idle(), timeoutMs)) === 'timeout') logger.warn('shutdown timeout: runs still in flight keep their checkpoints');
  if ((await waitFor(parts.recordLeftovers(LEFTOVERS_MS), LEFTOVERS_MS + 500)) === 'timeout')
    logger.warn('shutdown: could not record every run in time');
  if (parts.beforeHttpClose && (await waitFor(parts.beforeHttpClose(), LEFTOVERS_MS)) === 'timeout')
    logger.warn('shutdown: the other parts did not stop in time');
  await parts.closeHttp();
}
