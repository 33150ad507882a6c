/**
 * A write-back conflict's sides and the policy that settles it. Pure: no I/O.
 *
 * - The local side is every edit made since the base: the change as it is
 *   now in the outbox (edits merged in while a write was in flight), less
 *   the columns of removed fields; never only the part an interrupted write
 *   already delivered (test/sync/latest-edit.test.ts).
 * - `lists[].conflictPolicy`: local-wins overwrites (RowVersion 0; a delete
 *   deletes anyway), remote-wins keeps the platform's version (the change
 *   superseded, the row takes the platform's values), manual holds it for
 *   `listsync conflicts resolve` (test/sync/write-back.test.ts).
 * - The pull sees a conflict in a row it skipped for an open change only
 *   when the platform moved past a known, non-zero base.
 * Tested in test/sync/push-decisions.test.ts.
 */
import type { ConflictPolicy } from '../../config.js';
import type { TableMapping } from '../../mirror/index.js';
import { splitRemoved } from './wire.js';

/** The conflict's local side: the change's columns now, less those of removed fields. */
export const conflictLocalSide = (mapping: TableMapping, changesNow: Record<string, unknown>): Record<string, unknown> =>
  splitRemoved(mapping, changesNow).sendable;

export type ConflictAction = { kind: 'overwrite' } | { kind: 'keep-remote'; note: string } | { kind: 'hold' };

/** What the list's policy does with a conflict of an update or a delete found by a push. */
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

/** Why a held conflict waits, in the outbox row's error. */
export const heldConflictMessage = (
  op: 'update' | 'delete' | 'create',
  remoteVersion: number,
  baseVersion: number | string | null,
): string =>
  `conflict: the platform is at version ${remoteVersion}, ${op === 'delete' ? 'the row was deleted on' : 'the change was made on'} ${baseVersion}; settle it with "listsync conflicts resolve"`;

/** A row the pull skipped for an open change is a conflict when the platform moved past a known, non-zero base. */
export const pullSeesConflict = (s: { remoteVersion: number | null; baseVersion: number | null }): boolean =>
  s.remoteVersion !== null && s.baseVersion !== null && s.baseVersion !== 0 && s.remoteVersion > s.baseVersion;
