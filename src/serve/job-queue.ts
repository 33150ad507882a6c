/**
 * serve's one queue of list jobs, run by a fixed number of workers (sized to
 * the database pool by `workerCount`): however many fires arrive together,
 * at most `workers` runs hold connections at once, so none waits for the pool
 * (test/serve-capacity.test.ts, "many lists on a small pool").
 *
 * Invariants:
 * - two runs of one lock scope (a list's jobs share its lock) never run
 *   together: a worker takes the oldest entry whose scope is free;
 * - a scheduled fire whose job and target is still queued or running is
 *   coalesced: not queued again, handed to `onCoalesced` with the reason;
 * - an early request (`request`) joins the queued entry, or asks for one run
 *   more after the running one; `now` joins a queued entry or queues one;
 * - `drain` empties the queue (shutdown) and hands back what was dropped.
 */

export type Origin = 'schedule' | 'request' | 'now';

export interface QueueEntry<T> {
  /** Job and target, e.g. `pull:orders`: what coalescing compares. */
  key: string;
  /** What may not run twice at once (a list's jobs share its lock). */
  scope: string;
  target: T;
  origin: Origin;
  firedAt: Date;
  /** The run's result (undefined when it was dropped). */
  done: Promise<unknown>;
}

export interface JobQueueOptions<T> {
  workers: number;
  /** Runs one entry; must not throw (it records its own outcome). */
  execute(entry: QueueEntry<T>): Promise<unknown>;
  /** A scheduled fire coalesced with one queued or running. */
  onCoalesced(entry: QueueEntry<T>, reason: string): void;
}

export interface JobQueue<T> {
  offer(key: string, scope: string, target: T, origin: Origin, firedAt?: Date): Promise<unknown>;
  /** Drops every queued entry; returns them (each settles with undefined). */
  drain(): QueueEntry<T>[];
  readonly queued: number;
  readonly running: number;
  readonly workers: number;
  /** Resolves when nothing is queued or running. */
  idle(): Promise<void>;
}

interface Slot<T> extends QueueEntry<T> {
  settle(value: unknown): void;
  /** An early request arrived while it ran: one more run after it. */
  again?: boolean;
}

export function createJobQueue<T>(opts: JobQueueOptions<T>): JobQueue<T> {
  const waiting: Slot<T>[] = [];
  const running = new Map<string, Slot<T>>();
  const busyScopes = new Set<string>();
  const idleWaiters: (() => void)[] = [];

  function slot(key: string, scope: string, target: T, origin: Origin, firedAt: Date): Slot<T> {
    let settle!: (v: unknown) => void;
    const done = new Promise<unknown>((r) => (settle = r));
    return { key, scope, target, origin, firedAt, done, settle };
  }

  function pump(): void {
    while (running.size < opts.workers) {
      const i = waiting.findIndex((s) => !busyScopes.has(s.scope));
      if (i < 0) break;
      const [next] = waiting.splice(i, 1);
      start(next!);
    }
    if (running.size === 0 && waiting.length === 0) for (const w of idleWaiters.splice(0)) w();
  }

  function start(s: Slot<T>): void {
    const id = `${s.key}#${Math.random()}`;
    running.set(id, s);
    busyScopes.add(s.scope);
    void opts
      .execute(s)
      .catch(() => undefined)
      .then((value) => {
        running.delete(id);
        busyScopes.delete(s.scope);
        s.settle(value);
        if (s.again) waiting.push(slot(s.key, s.scope, s.target, 'request', new Date()));
        pump();
      });
  }

  const runningWith = (key: string) => [...running.values()].find((s) => s.key === key);

  return {
    offer(key, scope, target, origin, firedAt = new Date()) {
      const queued = waiting.find((s) => s.key === key);
      const active = runningWith(key);
      if (origin === 'schedule' && (queued || active)) {
        const s = slot(key, scope, target, origin, firedAt);
        opts.onCoalesced(s, queued ? 'coalesced: the previous fire is still queued' : 'coalesced: the previous run is still running');
        s.settle(undefined);
        return s.done;
      }
      if (queued) return queued.done;
      if (origin === 'request' && active) {
        active.again = true;
        return active.done;
      }
      const s = slot(key, scope, target, origin, firedAt);
      waiting.push(s);
      pump();
      return s.done;
    },
    drain() {
      const dropped = waiting.splice(0);
      for (const s of running.values()) s.again = false;
      for (const s of dropped) s.settle(undefined);
      pump();
      return dropped;
    },
    get queued() {
      return waiting.length;
    },
    get running() {
      return running.size;
    },
    workers: opts.workers,
    idle() {
      if (running.size === 0 && waiting.length === 0) return Promise.resolve();
      return new Promise<void>((r) => idleWaiters.push(r));
    },
  };
}

/**
 * Workers for a pool of `poolMax` connections: a run may use two at once
 * (a page's transaction beside the shared request budget or the next page's
 * read), and three stay for /healthz, /metrics, the receiver and the applier.
 */
export function workerCount(poolMax: number): number {
  return Math.max(1, Math.floor((poolMax - 3) / 2));
}
