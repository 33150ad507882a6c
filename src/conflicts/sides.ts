/**
 * A write-back conflict's sides and the policy that settles it. Pure: no I/O.
 *
 * - The local side is every edit made since the base: the change as it is
 *   now in the outbox (edits merged in while a write was in flight), less
 *   the columns of removed fields; never only the part an interrupted write
 *   already delivered (test/sync/latest-edit.test.ts).
 * - What the policy does with it: src/conflicts/policy.ts.
 * - The pull sees a conflict in a row it skipped for an open change only
 *   when the platform moved past a known, non-zero base.
 * Tested in test/sync/push-decisions.test.ts.
 */
import type { TableMapping } from '../mirror/index.js';
import { versionText, type Version } from '../platform/item-identity.js';
import { splitRemoved } from '../sync/push/wire.js';

/** The conflict's local side: the change's columns now, less those of removed fields. */
export const conflictLocalSide = (mapping: TableMapping, changesNow: Record<string, unknown>): Record<string, unknown> =>
  splitRemoved(mapping, changesNow).sendable;

/** Why a held conflict waits, in the outbox row's error. */
export const heldConflictMessage = (
  op: 'update' | 'delete' | 'create',
  remoteVersion: Version | null,
  baseVersion: number | null,
): string =>
  `conflict: the platform is at version ${versionText(remoteVersion)}, ${op === 'delete' ? 'the row was deleted on' : 'the change was made on'} ${baseVersion}; settle it with "listsync conflicts resolve"`;

/** A row the pull skipped for an open change is a conflict when the platform moved past a known, non-zero base. */
export const pullSeesConflict = (s: { remoteVersion: number | null; baseVersion: number | null }): boolean =>
  s.remoteVersion !== null && s.baseVersion !== null && s.baseVersion !== 0 && s.remoteVersion > s.baseVersion;
