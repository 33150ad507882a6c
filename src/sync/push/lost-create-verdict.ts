/**
 * What a lost create's search result means. Pure: no I/O; the search itself
 * is src/sync/push/lost-creates.ts.
 *
 * - Before a create is sent again: one item found is adopted (the local row
 *   takes its ID); several are ambiguous (failed, naming them: never a
 *   second item made); none means it is sent, at most once more
 *   (test/sync/write-back-faults.test.ts; test/sync/push-decisions.test.ts).
 * - For a withdrawn create (its local row deleted): one item found is
 *   deleted on the platform; several are left alone, failed, naming them;
 *   none means it was never created.
 */
import type { LostCreateSearch } from './lost-creates.js';

export type LostCreateVerdict = { kind: 'adopt'; id: string } | { kind: 'fail'; error: string } | { kind: 'send' };

/** A lost create's search, before sending it again. `what`: the attempt that was lost, named in a failure. */
export function lostCreateVerdict(search: LostCreateSearch, what: string, localId: string | null): LostCreateVerdict {
  if (search.kind === 'found') return { kind: 'adopt', id: search.id };
  if (search.kind === 'ambiguous')
    return {
      kind: 'fail',
      error: `${what} may have created the item: ${search.ids.length} items created since carry the values sent (${search.ids.join(', ')}); not sent again. Keep the right one: delete the local row ${localId ?? ''} and let the next pull bring it, or delete the extra items on the platform and "listsync push --retry-failed".`,
    };
  return { kind: 'send' };
}

/** A create whose answer was lost a second time and that is still not found: failed, not sent a third time. */
export const lostAgainError = (error: string): string =>
  `the create's answer was lost again (${error}) and the item is not found on the platform; not sent a third time. Check the platform, then "listsync push --retry-failed".`;

export type WithdrawVerdict =
  { kind: 'fail'; error: string } | { kind: 'delete'; id: string; note: string } | { kind: 'none'; note: string };

/** A withdrawn create; `search` is undefined when it was never sent (or cannot be looked for). */
export function withdrawVerdict(search: LostCreateSearch | undefined): WithdrawVerdict {
  if (search?.kind === 'ambiguous')
    return {
      kind: 'fail',
      error: `withdrawn, but ${search.ids.length} items created since carry the values sent (${search.ids.join(', ')}); none was deleted. Delete the one this row created on the platform.`,
    };
  if (search?.kind === 'found')
    return {
      kind: 'delete',
      id: search.id,
      note: `withdrawn: the local row was deleted; item ${search.id}, created by an attempt whose answer was lost, was deleted on the platform`,
    };
  return { kind: 'none', note: 'withdrawn: the local row was deleted; the item was never created on the platform' };
}
