/**
 * What a run's row says at its end, from how the body ended and whether the shutdown signal came
 * (src/sync/run-outcome.ts › finalRecord). No database: the rule alone.
 */
import { describe, expect, it } from 'vitest';
import { finalRecord, RunFailed, type BodyEnd, type FinalRecord } from '../../src/sync/run-outcome.js';

const succeeded: BodyEnd = { kind: 'returned', outcome: { status: 'succeeded', counters: { pages: 3 } } };
const gaveUp: BodyEnd = { kind: 'returned', outcome: { status: 'failed', error: 'stopped after 10 changes in a row failed' } };
const stoppedPush: BodyEnd = { kind: 'returned', outcome: { status: 'failed', error: 'stopped by shutdown; unsent changes stay pending' } };
const threw: BodyEnd = { kind: 'threw', message: 'POST /items/query failed: HTTP 401', described: false };
const threwDescribed: BodyEnd = { kind: 'threw', message: 'incomplete read: received 9 distinct IDs', described: true };

describe('finalRecord', () => {
  it.each<[string, BodyEnd, string | undefined, FinalRecord]>([
    ['a success', succeeded, undefined, { status: 'succeeded', error: null }],
    ['a success that finished after the shutdown signal stays a success', succeeded, 'SIGTERM', { status: 'succeeded', error: null }],
    ['a returned failure keeps its reason', gaveUp, undefined, { status: 'failed', error: 'stopped after 10 changes in a row failed' }],
    [
      'a returned failure after the signal is interrupted, with the body’s reason',
      stoppedPush,
      'SIGINT',
      { status: 'interrupted', error: 'stopped by shutdown; unsent changes stay pending' },
    ],
    ['a thrown error is a failure with its message', threw, undefined, { status: 'failed', error: 'POST /items/query failed: HTTP 401' }],
    [
      'a thrown error the body did not describe, after the signal, says the next run carries on',
      threw,
      'SIGTERM',
      { status: 'interrupted', error: 'stopped by SIGTERM; the next run carries on' },
    ],
    [
      'a thrown failure the body described, after the signal, keeps its message',
      threwDescribed,
      'shutdown',
      { status: 'interrupted', error: 'incomplete read: received 9 distinct IDs' },
    ],
    [
      'a thrown failure the body described',
      threwDescribed,
      undefined,
      { status: 'failed', error: 'incomplete read: received 9 distinct IDs' },
    ],
  ])('%s', (_name, end, shutdown, expected) => {
    expect(finalRecord(end, shutdown)).toEqual(expected);
  });
});

describe('RunFailed', () => {
  it.each<[string, unknown, string]>([
    ['an Error', new Error('HTTP 500'), 'HTTP 500'],
    ['a string', 'socket hang up', 'socket hang up'],
  ])('carries %s as its cause and message, with what the body counted', (_name, cause, message) => {
    const failed = new RunFailed(cause, { counters: { pages: 2 }, line: 'push failed' });
    expect(failed.cause).toBe(cause);
    expect(failed.message).toBe(message);
    expect(failed.note).toEqual({ counters: { pages: 2 }, line: 'push failed' });
  });
});
