/**
 * What the list's policy does with a conflict. Pure: no I/O.
 *
 * - `lists[].conflictScope` `field` (default): only the fields both sides
 *   changed differently are in conflict (src/conflicts/merge.ts); the
 *   fields only the user changed are sent in one PATCH at the platform's
 *   current version whatever the policy. `item`: the whole change is one
 *   conflict, as before field merging.
 * - `conflictPolicy` decides each conflict: `local-wins` sends the user's
 *   value (in the same PATCH), `remote-wins` keeps the platform's value and
 *   records both sides, `manual` holds the user's value for `listsync
 *   conflicts resolve` or the console.
 * Tested in test/conflicts/merge.test.ts and test/sync/push-decisions.test.ts.
 */
import type { ConflictPolicy } from '../config.js';
import type { FieldMerge } from './merge.js';

export type ConflictAction = { kind: 'overwrite' } | { kind: 'keep-remote'; note: string } | { kind: 'hold' };

/** What the list's policy does with a whole-item conflict of an update or a delete found by a push. */
export function conflictAction(policy: ConflictPolicy, op: 'update' | 'delete'): ConflictAction {
  if (policy === 'local-wins') return { kind: 'overwrite' };
  if (policy === 'remote-wins')
    return {
      kind: 'keep-remote',
      note:
        op === 'delete'
          ? "conflict: the item changed on the platform since the row was deleted; the platform's version was kept (remote-wins)"
          : "conflict: the platform's newer version won (remote-wins); the local edit is kept in the conflict",
    };
  return { kind: 'hold' };
}

export interface FieldPlan {
  /** The PATCH's data: the fields only the user changed, and under local-wins the conflicting ones too. */
  send: Record<string, string>;
  /** Conflicting fields and what becomes of them: `sent` (local-wins), `kept-remote`, `held` (manual); `none` without conflicts. */
  conflicts: 'none' | 'sent' | 'kept-remote' | 'held';
}

/** A field merge under the list's policy. */
export function planFields(policy: ConflictPolicy, merge: FieldMerge): FieldPlan {
  if (merge.conflicts.length === 0) return { send: { ...merge.send }, conflicts: 'none' };
  if (policy === 'local-wins')
    return { send: { ...merge.send, ...Object.fromEntries(merge.conflicts.map((c) => [c.field, c.local])) }, conflicts: 'sent' };
  return { send: { ...merge.send }, conflicts: policy === 'remote-wins' ? 'kept-remote' : 'held' };
}

/** The resolution a policy records on a conflict it settled (null: held open). */
export const policyResolution = (plan: FieldPlan['conflicts']): string | null =>
  plan === 'sent' ? 'local-wins' : plan === 'kept-remote' ? 'remote-wins' : null;
