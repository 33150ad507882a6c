/**
 * The follow-up read (src/sync/pull.ts I3): newest first down to the run's
 * start mark (pull/follow-up.ts decides whether and from where), so items
 * edited or created while the run paged (or, for a resumed run, since its
 * first attempt started) are in the mirror when it ends, and the high-water
 * mark can move to what this read saw first. Its items are written without
 * moving the checkpoint: a run killed here reads them again.
 */
import type { PageResult } from '../../platform/paging.js';
import { itemId } from '../../platform/item-identity.js';
import type { Item } from '../../platform/types.js';
import type { PullCheckpoint } from './checkpoint.js';
import { newWatch } from './delete-watch.js';
import { checkFields } from './field-check.js';
import { followUpSince, movedSince } from './follow-up.js';
import { PageChecks, readPages } from './page-reader.js';
import type { PageWriter } from './page-writer.js';
import { buildQuery, cursorText, followUpPlan } from './plan.js';
import { watchPage } from './read-order.js';
import type { RunContext } from './run-context.js';
import type { CatchUpOutcome } from './watermark.js';

export interface FollowUpRead {
  outcome: CatchUpOutcome;
  /** IDs the run had not received yet. */
  newIds: number;
}

/** The follow-up read; null when it cannot be read (see followUpSince). */
export async function readFollowUp(
  ctx: RunContext,
  cp: PullCheckpoint,
  writer: PageWriter,
  checks: PageChecks,
  firstPage?: Promise<PageResult<Item>>,
): Promise<FollowUpRead | null> {
  const { deps, list, zone } = ctx;
  const from = followUpSince(cp, zone);
  if (from === null) return null;
  const followChecks = new PageChecks(list.idField, list.pageSize, 'newest-first');
  const touched = new Set<string>();
  let watch = newWatch();
  let newest: string | null = null;
  let newIds = 0;
  const options = { order: 'newest-first' as const, startPage: 1, zone, stopBeforeMs: from.sinceMs, firstPage };
  for await (const page of readPages(deps.client, list, buildQuery(list, followUpPlan(from.since)), options, followChecks)) {
    if (page.index === 1 && page.items[0]) newest = cursorText(String(page.items[0][list.cursorField]), zone);
    watch = watchPage(watch, page, list, zone, 'newest-first');
    const { moved, touched: ids } = movedSince(page.items, page.ids, from.sinceMs, list.cursorField, zone);
    for (const id of ids) touched.add(id);
    if (moved.length) {
      await checkFields(ctx, writer, moved, false);
      await writeMoved(ctx, writer, checks, moved);
    }
    newIds += checks.note(page.ids);
  }
  const outcome: CatchUpOutcome = { newest, touched: touched.size, clean: watch.gaps.length === 0 };
  ctx.run.log.info({ since: from.since, ...outcome }, 'read what changed while the run paged');
  return { outcome, newIds };
}

/**
 * Writes the follow-up's items. One the run's pages already wrote is written again in case it moved
 * after it was read; found unchanged, it is not counted a second time, so a first load of N items
 * reports N rows (test/sync/pull.test.ts › mirrors a seeded list row for row).
 */
async function writeMoved(ctx: RunContext, writer: PageWriter, checks: PageChecks, items: readonly Item[]): Promise<void> {
  const seen = (item: Item): boolean => checks.has(itemId(item[ctx.list.idField])!);
  const fresh = items.filter((item) => !seen(item));
  const again = items.filter(seen);
  if (fresh.length) await writer.writeItems(fresh);
  if (again.length) await writer.writeItems(again, { countUnchanged: false });
}

/**
 * The follow-up's first page, asked ahead (a pull job whose follow-up can be read; null otherwise).
 * Asked before the read's last page is answered it is still right: it vouches for what was modified
 * before it was served, and anything modified later is newer than the mark it gives.
 */
export function askFollowUpPage(ctx: RunContext, cp: PullCheckpoint): Promise<PageResult<Item>> | null {
  const { deps, list } = ctx;
  const from = ctx.job === 'pull' ? followUpSince(cp, ctx.zone) : null;
  if (from === null) return null;
  const query = { ...buildQuery(list, followUpPlan(from.since)), PageIndex: 1, PageSize: list.pageSize };
  const page = deps.client.queryPageResult(list.appID, list.listID, query);
  page.catch(() => undefined);
  return page;
}
