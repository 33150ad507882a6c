/**
 * Who a platform request is made for, as the per-minute request tally
 * (src/request-minutes-writer.ts) counts it: a run's job kind, `realtime`,
 * `console`, or the process's own default (`serve`, `command`). Carried by
 * AsyncLocalStorage: the client reports each attempt synchronously inside the
 * caller's async context, so the source is read where the tally hears of it.
 *
 * Invariant: the innermost source wins (a console action that starts a run counts as the run's job).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const sources = new AsyncLocalStorage<string>();

/** Runs `fn` with every request made from inside it counted for `source`. */
export function withRequestSource<T>(source: string, fn: () => T): T {
  return sources.run(source, fn);
}

/** The source of the code running now, if one was set. */
export function currentRequestSource(): string | undefined {
  return sources.getStore();
}
