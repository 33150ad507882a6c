/**
 * What `serve`'s job queue hands a run through AsyncLocalStorage, so the job
 * bodies keep their plain signatures: where to take the advisory lock (a
 * connection outside the work pool, so waiting for it never holds the pool),
 * and where `runJob` says which `sync_runs` row it opened. The queue then
 * records what the run could not (test/serve-capacity.test.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from '../db.js';

export interface FireScope {
  /** The pool advisory locks are taken on (one connection per worker); the work pool when unset. */
  lockDb?: Knex;
  /** The engine's job the run is for (recorded on its `sync_runs` row). */
  engineJob?: { id: string; attempt: number };
  /** The `sync_runs` row the run opened (set by runJob). */
  runId?: number;
}

const scopes = new AsyncLocalStorage<FireScope>();

export function runInFire<T>(scope: FireScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

export function currentFire(): FireScope | undefined {
  return scopes.getStore();
}
