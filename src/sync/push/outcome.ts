/**
 * What became of one change, and how a push counts the outcomes. Pure: no I/O.
 *
 * - A failure is pending with backoff (30 s doubling, at most 30 min) until
 *   `lists[].maxPushAttempts`, then failed; a final failure (the change can
 *   never apply as it is) fails at once (test/sync/write-back-faults.test.ts).
 * - MAX_CONSECUTIVE_FAILURES changes failing in a row stop a push from
 *   starting new ones: the platform is down, not the change
 *   (test/sync/write-back-faults.test.ts; test/sync/push-decisions.test.ts).
 */
import type { Version } from '../../platform/item-identity.js';
import type { OutboxRow } from '../../store/outbox.js';
import type { RunCounters } from '../../store/runs.js';

export type Outcome =
  /** `merged`: fields sent at the platform's newer version after a field-by-field merge. */
  | { kind: 'applied'; id: string; version: Version | null; merged?: number }
  | { kind: 'created'; id: string }
  | { kind: 'deleted' }
  | { kind: 'withdrawn' }
  /** `settled`: the list's policy settled it (remote-wins, local-wins); `merged`: fields sent beside it. */
  | { kind: 'conflict'; id: string; reread: boolean; version: Version | null; merged?: number; settled?: boolean }
  | { kind: 'retry'; error: string }
  | { kind: 'failed'; error: string };

export interface PushResult {
  runId: number;
  list: string;
  applied: number;
  created: number;
  /** Items deleted on the platform (or found already gone). */
  deleted: number;
  /** Creates withdrawn because their local row was deleted (and the item deleted if it had been created). */
  withdrawn: number;
  conflicts: number;
  /** Fields only the user changed, sent at the platform's newer version (field-by-field merges). */
  merged: number;
  /** Conflicts the list's policy settled (remote-wins, local-wins): `listsync conflicts --all` shows them. */
  settledByPolicy: number;
  failed: number;
  /** Changes left pending with an error (retried later). */
  retrying: number;
  /** Items written whose new version the mirror could not read back yet (the next push or pull brings it). */
  behind: number;
  /** The push stopped starting changes after this many failed in a row (0: it did not). */
  stoppedAfterFailures: number;
  /** Stopped by shutdown before every due change was sent; the rest stay pending. */
  stopped: boolean;
  counters: RunCounters;
}

/** Changes failing in a row (each after the client's retries) that stop a push: the platform is down, not the change. */
export const MAX_CONSECUTIVE_FAILURES = 10;

const TALLIED: Record<Outcome['kind'], 'applied' | 'created' | 'deleted' | 'withdrawn' | 'conflicts' | 'failed' | 'retrying'> = {
  applied: 'applied',
  created: 'created',
  deleted: 'deleted',
  withdrawn: 'withdrawn',
  conflict: 'conflicts',
  failed: 'failed',
  retry: 'retrying',
};

/** Items this run counted as applied or created, by ID: a value later found not taken moves that change to failed. */
export type CountedWrites = Map<string, 'applied' | 'created'>;

/** Counts the outcomes into the result, remembering which items were counted as written. */
export function tally(result: PushResult, outcomes: readonly Outcome[], counted?: CountedWrites): void {
  for (const o of outcomes) {
    result[TALLIED[o.kind]]++;
    if (o.kind === 'applied' || o.kind === 'conflict') result.merged += o.merged ?? 0;
    if (o.kind === 'conflict' && o.settled) result.settledByPolicy++;
    if (counted && (o.kind === 'applied' || o.kind === 'created')) counted.set(o.id, o.kind);
  }
}

/**
 * Items whose written values the platform did not take (their changes ended
 * failed): each change is counted once, so one this run counted as applied
 * or created moves to failed; one an earlier run wrote is only failed now.
 */
export function countNotTaken(result: PushResult, counted: CountedWrites, itemIds: readonly string[]): void {
  for (const id of itemIds) {
    const was = counted.get(id);
    if (was) result[was]--;
    counted.delete(id);
    result.failed++;
  }
}

/** What a push's run row keeps beside its counters. */
export function runDetails(result: PushResult): Record<string, number> {
  return {
    created: result.created,
    deleted: result.deleted,
    withdrawn: result.withdrawn,
    retrying: result.retrying,
    behind: result.behind,
    merged: result.merged,
    settled_by_policy: result.settledByPolicy,
  };
}

/** Changes failing in a row: the push stops starting new ones at MAX_CONSECUTIVE_FAILURES. */
export function failureStreak(): { count(o: Outcome): Outcome; tooMany(): boolean; streak: number } {
  const s = {
    streak: 0,
    count(o: Outcome): Outcome {
      s.streak = o.kind === 'retry' || o.kind === 'failed' ? s.streak + 1 : 0;
      return o;
    },
    tooMany: (): boolean => s.streak >= MAX_CONSECUTIVE_FAILURES,
  };
  return s;
}

/** How a failure is recorded: the attempt counted, failed when final or out of attempts, else retried after the backoff. */
export function failureRecord(
  attemptsBefore: number,
  final: boolean,
  maxAttempts: number,
): { attempts: number; failed: boolean; retryInSeconds: number } {
  const attempts = attemptsBefore + 1;
  return { attempts, failed: final || attempts >= maxAttempts, retryInSeconds: backoffSeconds(attempts) };
}

export const backoffSeconds = (attempts: number): number => Math.min(30 * 2 ** (attempts - 1), 1800);

/** The change named in a failure's message. */
export const describeOp = (row: Pick<OutboxRow, 'op' | 'local_id' | 'item_id'>): string =>
  row.op === 'create'
    ? `create of ${row.local_id ?? 'a new row'}`
    : `${row.op === 'delete' ? 'delete' : 'update'} of item ${row.item_id ?? '?'}`;

export const goneMessage = (itemId: string): string =>
  `item ${itemId} no longer exists on the platform (deleted there?); the change cannot be applied`;
