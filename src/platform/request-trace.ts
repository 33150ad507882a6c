/**
 * Who wants to hear of each request attempt made on behalf of a run: a run opens a
 * request trace (AsyncLocalStorage) around its work and the client hands every attempt
 * made from inside it (its outcome, HTTP status, envelope Status, duration, attempt
 * number) to the listener, besides its own `onRequest`. src/sync/run-job.ts records
 * them in the run's trace (src/store/run-events.ts); a command's progress bar shows the retries.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface TracedRequest {
  method: string;
  endpoint: string;
  outcome: string;
  httpStatus?: number;
  status?: number;
  durationMs: number;
  attempt: number;
}

const listeners = new AsyncLocalStorage<(e: TracedRequest) => void>();

/** Runs `fn` with `listener` hearing of its requests; a listener outside it (a command's progress bar) still hears them too. */
export function withRequestTrace<T>(listener: (e: TracedRequest) => void, fn: () => T): T {
  const outer = listeners.getStore();
  return listeners.run(
    outer
      ? (e) => {
          outer(e);
          listener(e);
        }
      : listener,
    fn,
  );
}

/** Tells the listener of the run this code belongs to, if any; a listener that throws is ignored. */
export function traceRequest(e: TracedRequest): void {
  try {
    listeners.getStore()?.(e);
  } catch {
    // a trace never fails a request
  }
}
