/**
 * The job engine on a database of its own per test: pg-boss started on it, an
 * enqueuer (60 s leases, no retries), and the workers a test starts stopped
 * after it (test/serve-job-queue.test.ts, test/engine-account-cap.test.ts).
 */
import type PgBoss from 'pg-boss';
import { afterEach, beforeEach } from 'vitest';
import { startBoss } from '../../src/engine/boss.js';
import { createEnqueuer, type Enqueuer } from '../../src/engine/enqueue.js';
import { startWorker, type Worker, type WorkerOptions } from '../../src/engine/worker.js';
import { silentLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from './db.js';

export interface JobEngine {
  t: TestDatabase;
  boss: PgBoss;
  enqueuer: Enqueuer;
  /** Workers to stop after the test. */
  workers: Worker[];
}

/** Registers the per-test set-up and tear-down; the returned object holds the current test's engine. */
export function useJobEngine(): JobEngine {
  const engine = { workers: [] as Worker[] } as JobEngine;
  beforeEach(async () => {
    engine.t = await createTestDatabase();
    engine.boss = await startBoss(engine.t.db, { supervise: false, logger: silentLogger() });
    engine.enqueuer = createEnqueuer(engine.boss, engine.t.db, () => ({ leaseSeconds: 60, retryLimit: 0, retryDelaySeconds: 1 }));
  });
  afterEach(async () => {
    for (const w of engine.workers.splice(0)) await w.stopTaking();
    await engine.boss.stop({ graceful: false });
    await engine.t.drop();
  });
  return engine;
}

/** A worker on the test's engine looking for work every 50 ms, stopped after the test. */
export function startEngineWorker(engine: JobEngine, slots: number, execute: WorkerOptions['execute']): Worker {
  const worker = startWorker({
    db: engine.t.db,
    boss: engine.boss,
    logger: silentLogger(),
    slots,
    pollMs: 50,
    renewEveryMs: 20_000,
    leaseOf: () => 60,
    execute,
  });
  engine.workers.push(worker);
  return worker;
}

/** Resolves once `fn` holds, checking every 20 ms; throws naming `what` after `timeoutMs`. */
export async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
