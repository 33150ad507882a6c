/**
 * The gap re-read at the end of a read (src/sync/pull.ts I1): the page
 * boundaries the delete watch saw TotalCount fall across are asked again
 * (pull/gap-read.ts decides what a slice covers) and what lies in them is
 * written, without moving the checkpoint: a run killed here reads them again.
 */
import type { Item, ItemQuery } from '../../platform/types.js';
import { itemId } from '../../platform/item-identity.js';
import type { PullCheckpoint } from './checkpoint.js';
import { readOrderCompare } from './delete-watch.js';
import { checkFields } from './field-check.js';
import { readGaps } from './gap-read.js';
import type { PageChecks } from './page-reader.js';
import type { PageWriter } from './page-writer.js';
import { readKey } from './read-order.js';
import type { RunContext } from './run-context.js';

export interface GapReread {
  /** Why a gap could not be re-read, or null. */
  unresolved: string | null;
  /** Items found in the gaps. */
  items: number;
  /** Of those, IDs the run had not received yet. */
  newIds: number;
}

export async function rereadGaps(
  ctx: RunContext,
  cp: PullCheckpoint,
  query: ItemQuery,
  writer: PageWriter,
  checks: PageChecks,
): Promise<GapReread> {
  const { deps, list } = ctx;
  if (cp.watch.gaps.length === 0) return { unresolved: null, items: 0, newIds: 0 };
  const fetchPage = async (index: number): Promise<Item[]> =>
    (await deps.client.queryItems(list.appID, list.listID, { ...query, PageIndex: index, PageSize: list.pageSize })).items;
  const order = cp.plan.order;
  const found = await readGaps(cp.watch.gaps, fetchPage, list.pageSize, readKey(list, ctx.zone, order), readOrderCompare(order));
  if (found.items.length) {
    await checkFields(ctx, writer, found.items, false);
    await writer.writeItems(found.items);
  }
  const newIds = checks.note(found.items.map((it) => itemId(it[list.idField])!));
  ctx.run.log.info(
    { gaps: cp.watch.gaps.length, items: found.items.length, unread: newIds, unresolved: found.unresolved },
    'TotalCount fell while paging: the page boundaries it fell across were read again',
  );
  return { unresolved: found.unresolved, items: found.items.length, newIds };
}
