/**
 * A list's real-time queue without timers or a database: the doubling
 * backoff, failed claims waiting their turn and taken when due, a new claim
 * of a waiting item joining it, and a list whose chunks apply again making
 * every waiting claim due at once.
 */
import { describe, expect, it } from 'vitest';
import type { ListConfig } from '../../src/config.js';
import type { Logger } from '../../src/logger.js';
import type { Claim } from '../../src/realtime/claim-merge.js';
import { backoffMs, ListSchedule, type BudgetPace, type ScheduleTimings } from '../../src/realtime/schedule.js';

const timings: ScheduleTimings = { windowMs: 150, minIntervalMs: 900, recheckDelayMs: 500, retryDelayMs: 1000, maxRetryDelayMs: 30_000 };

const claim = (id: string, over: Partial<Claim> = {}): Claim => ({
  id,
  inboxIds: [Number(id)],
  deleteClaimed: false,
  announced: null,
  body: null,
  receivedAt: new Date(0),
  rechecks: 0,
  attempts: 0,
  retryAt: 0,
  ...over,
});

/** A schedule that never arms a timer (closed) and never flushes. */
function schedule(): ListSchedule {
  return new ListSchedule({ name: 'orders' } as ListConfig, {
    timings,
    pace: { factor: () => 1 } as unknown as BudgetPace,
    flush: async () => undefined,
    closed: () => true,
    log: {} as Logger,
  });
}

describe('backoffMs', () => {
  it.each([
    { attempts: 0, want: 1000 },
    { attempts: 1, want: 1000 },
    { attempts: 2, want: 2000 },
    { attempts: 4, want: 8000 },
    { attempts: 5, want: 16_000 },
    { attempts: 6, want: 30_000 },
    { attempts: 100, want: 30_000 },
  ])('attempt $attempts waits $want ms', ({ attempts, want }) => {
    expect(backoffMs(timings, attempts)).toBe(want);
  });
});

describe('ListSchedule', () => {
  it('a failed claim counts an attempt and waits its backoff before it is due', () => {
    const s = schedule();
    const before = Date.now();
    s.failed([claim('1'), claim('2', { attempts: 2 })]);
    expect([...s.retry.values()].map((c) => c.attempts)).toEqual([1, 3]);
    expect(s.takeDueRetries(before)).toEqual([]);
    const due = s.takeDueRetries(Date.now() + 4000);
    expect(due.map((c) => c.id)).toEqual(['1', '2']);
    expect(s.retry.size).toBe(0);
  });

  it('a new claim of an item waiting for a retry joins it and leaves the fresh ones', () => {
    const s = schedule();
    s.failed([claim('1', { announced: 3 })]);
    const fresh = new Map([
      ['1', claim('1', { inboxIds: [11], announced: 4 })],
      ['2', claim('2')],
    ]);
    s.holdWithRetries(fresh);
    expect([...fresh.keys()]).toEqual(['2']);
    expect(s.retry.get('1')).toMatchObject({ inboxIds: [1, 11], announced: 4, attempts: 1 });
  });

  it('a claim failing again while another copy waits keeps every event', () => {
    const s = schedule();
    s.failed([claim('1')]);
    s.failed([claim('1', { inboxIds: [12] })]);
    expect(s.retry.get('1')!.inboxIds.sort()).toEqual([1, 12]);
  });

  it('after a stopped flush, an applied chunk makes every waiting claim due at once', () => {
    const s = schedule();
    s.failed([claim('1', { attempts: 3 })]);
    s.settle({ stopped: true, succeeded: false });
    expect(s.takeDueRetries(Date.now())).toEqual([]);
    s.settle({ stopped: false, succeeded: true });
    expect(s.takeDueRetries(Date.now()).map((c) => c.id)).toEqual(['1']);
  });

  it('without a stopped flush, an applied chunk leaves each claim its own backoff', () => {
    const s = schedule();
    s.failed([claim('1', { attempts: 3 })]);
    s.settle({ stopped: false, succeeded: true });
    expect(s.takeDueRetries(Date.now())).toEqual([]);
  });

  it('re-checks count each re-read and are queued by item', () => {
    const s = schedule();
    s.recheckLater([claim('1'), claim('2', { rechecks: 2 })]);
    expect([...s.rechecks.values()].map((c) => [c.id, c.rechecks])).toEqual([
      ['1', 1],
      ['2', 3],
    ]);
    expect(s.busy()).toBe(true);
  });
});
