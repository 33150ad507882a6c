/**
 * Pure: what one flush does with a chunk of claims, decided in two steps
 * around the platform's answers (flush.ts asks and writes).
 *
 * `planReads`, from the mirror's rows: an announced version the mirror
 * already holds needs nothing (duplicates, reordering); with
 * `realtimeTrust: "body"` a newer body is applied as sent, unless the row is
 * marked deleted; a delete claim is always asked (read by ID even when the
 * query shows the item); a re-check is read by ID only (the query may lag);
 * the rest is re-read.
 *
 * `planWrites`, from the answers: every item found is written (the upsert's
 * version guard keeps versions moving forward), except that a row marked
 * deleted comes back only with a newer version or through a read by ID (a
 * lagging query may still show a deleted item); gone items are marked
 * deleted; an item older than its claim announced is re-read later, up to
 * `maxRechecks` times; an item whose read failed waits for a retry. Every
 * other claim's events are done. (test/realtime/flush-plan.test.ts)
 */
import { itemVersionNumber } from '../platform/item-identity.js';
import type { Item } from '../platform/types.js';
import { isItemClaim, type Claim } from './claim-merge.js';

/** A mirror row as the plan reads it. */
export interface StoredRow {
  version: number | null;
  deleted: boolean;
}

export interface ReadPlan {
  /** Claims asked of the platform. */
  reread: Claim[];
  /** Of those, the IDs read by ID only (re-checks after an older version). */
  byIdOnly: Set<string>;
  /** Of those, the IDs read by ID even when the query shows them (delete claims). */
  alsoById: Set<string>;
  /** Claims applied from their body (trust "body"). */
  fromBody: Claim[];
  /** Claims the mirror already holds: their events are done. */
  settled: Claim[];
}

/** A platform answer for one ID (platform/item-lookup.ts › LookedUp). */
export type ReadAnswer = { kind: 'present'; item: Item; byId: boolean } | { kind: 'gone' } | { kind: 'unanswered'; error: Error };

export interface WriteInput {
  claims: readonly Claim[];
  reads: ReadPlan;
  stored: ReadonlyMap<string, StoredRow>;
  answers: ReadonlyMap<string, ReadAnswer>;
  versionField: string;
  maxRechecks: number;
}

export interface WritePlan {
  /** Items to upsert: those found, then the trusted bodies. */
  upsert: Item[];
  markDeleted: string[];
  /** Claims re-read later: the platform showed an older version than announced. */
  recheck: Claim[];
  /** Claims whose read failed, by item ID, with the error. */
  failed: Map<string, Error>;
  /** Inbox IDs of the events now applied. */
  done: number[];
}

type ReadStep = 'settled' | 'fromBody' | 'byIdOnly' | 'alsoById' | 'reread';

function readStep(c: Claim, row: StoredRow | undefined, trustBody: boolean): ReadStep {
  if (!isItemClaim(c.id)) return 'settled';
  if (c.rechecks > 0) return 'byIdOnly';
  if (c.deleteClaimed) return 'alsoById';
  if (row && c.announced !== null && row.version !== null && row.version >= c.announced) return 'settled';
  const newer = c.announced !== null && (!row || row.version === null || c.announced > row.version);
  if (trustBody && c.body && newer && !row?.deleted) return 'fromBody';
  return 'reread';
}

/** Which claims need the platform, and which the stored row or a trusted body settle. */
export function planReads(claims: readonly Claim[], stored: ReadonlyMap<string, StoredRow>, trustBody: boolean): ReadPlan {
  const plan: ReadPlan = { reread: [], byIdOnly: new Set(), alsoById: new Set(), fromBody: [], settled: [] };
  for (const c of claims) {
    const step = readStep(c, stored.get(c.id), trustBody);
    if (step === 'settled' || step === 'fromBody') {
      plan[step].push(c);
      continue;
    }
    plan.reread.push(c);
    if (step !== 'reread') plan[step].add(c.id);
  }
  return plan;
}

/** Whether a found item may be written over its row: a deleted row comes back only when surely newer. */
function mayWrite(answer: { item: Item; byId: boolean }, row: StoredRow | undefined, versionField: string): boolean {
  if (!row?.deleted || answer.byId) return true;
  const v = itemVersionNumber(answer.item[versionField]);
  return v !== null && row.version !== null && v > row.version;
}

function needsRecheck(c: Claim, answer: ReadAnswer | undefined, versionField: string, maxRechecks: number): boolean {
  if (answer?.kind !== 'present' || c.announced === null) return false;
  const v = itemVersionNumber(answer.item[versionField]);
  return v !== null && v < c.announced && c.rechecks < maxRechecks;
}

/** What the answers mean for the mirror and the inbox. */
export function planWrites(i: WriteInput): WritePlan {
  const plan: WritePlan = { upsert: [], markDeleted: [], recheck: [], failed: new Map(), done: [] };
  for (const [id, answer] of i.answers) {
    if (answer.kind === 'present' && mayWrite(answer, i.stored.get(id), i.versionField)) plan.upsert.push(answer.item);
    else if (answer.kind === 'gone') plan.markDeleted.push(id);
    else if (answer.kind === 'unanswered') plan.failed.set(id, answer.error);
  }
  for (const c of i.reads.fromBody) plan.upsert.push(c.body!);
  plan.recheck = i.reads.reread.filter((c) => needsRecheck(c, i.answers.get(c.id), i.versionField, i.maxRechecks));
  const waiting = new Set([...plan.recheck.map((c) => c.id), ...plan.failed.keys()]);
  plan.done = i.claims.filter((c) => !waiting.has(c.id)).flatMap((c) => c.inboxIds);
  return plan;
}
