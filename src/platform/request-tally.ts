/**
 * Whose requests these are: a run opens a tally (AsyncLocalStorage) around its
 * work, and the client counts every attempt made from inside it there as well
 * as in its own totals. Inside a tally `client.stats()` reads the tally, so a
 * run's `sync_runs.requests` is its own even when other runs share the client
 * (test/serve-capacity.test.ts, "request counts per run").
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** A client's request counters: its totals, or one run's own tally. */
export interface ClientStats {
  /** Attempts sent (first attempts and retries). */
  requests: number;
  /** Attempts that were retries (including refetches of pages that came back empty). */
  retries: number;
  /** Attempts answered with 429 or a rate-limit envelope. */
  rateLimited: number;
  /** Operations that finally failed (thrown to the caller). */
  errors: number;
}

const tallies = new AsyncLocalStorage<ClientStats>();

/** Runs `fn` with a fresh tally: the requests it makes (and whatever it starts) are counted there. */
export function withRequestTally<T>(fn: () => T): T {
  return tallies.run({ requests: 0, retries: 0, rateLimited: 0, errors: 0 }, fn);
}

/** The tally of the run this code belongs to, if any. */
export function currentTally(): ClientStats | undefined {
  return tallies.getStore();
}
