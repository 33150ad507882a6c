/**
 * serve's shutdown: graceful, then forceful. The schedules stop, every job's
 * run context is aborted (each stops at its next safe point: after the page
 * or change in flight), serve waits for the runs up to
 * serve.shutdownTimeoutMs, then closes HTTP whatever is left.
 */
import type { Logger } from '../logger.js';

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
  stopSchedules(): Promise<void>;
  closeHttp(): Promise<void>;
  timeoutMs: number;
}

/** The shutdown sequence; calling it again returns the same promise. */
export function createShutdown(parts: ShutdownParts): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= shutdown(parts));
}

async function shutdown({ logger, runs, stopSchedules, closeHttp, timeoutMs }: ShutdownParts): Promise<void> {
  logger.info({ running: runs.running }, 'shutting down: stopping schedules, finishing pages in flight');
  await stopSchedules();
  runs.abort();
  if ((await waitFor(runs.idle(), timeoutMs)) === 'timeout') logger.warn('shutdown timeout: runs still in flight keep their checkpoints');
  await closeHttp();
}

async function waitFor(done: Promise<void>, timeoutMs: number): Promise<'done' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => r('timeout'), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([done.then(() => 'done' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
