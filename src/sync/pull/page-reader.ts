/**
 * The page reader: pages of a list query, each checked for completeness
 * before it is believed. A page that fails a check is asked again once; a
 * second failure ends the read with IncompleteReadError naming the check and
 * the page (see platform/paging.ts). The checks:
 *
 * - TotalCount is present (a page without one cannot be placed);
 * - every item carries an ID;
 * - the page holds what TotalCount implies for it: a full page inside the
 *   count, the remainder on the last one (short pages, a TotalCount lower or
 *   higher than the items served);
 * - the page is not the previous page again (a server ignoring PageIndex);
 * - in by-created order an ID comes back twice only for a reason the run can
 *   see (`repeatExplained`: the item was modified after the run started, the
 *   list's TotalCount moved between the two pages, or a date window that
 *   edits move items into); otherwise a repeat means an item was served in
 *   place of another. In newest-first order a repeat is expected at a page
 *   boundary (an item moved to the front) and counted for the watermark
 *   decision instead;
 * - a full last page is followed by an empty one (the tail past a low
 *   TotalCount), unless it reaches the last item that existed when the run
 *   started; no read goes past a ceiling of pages.
 */
import type { ListConfig } from '../../config.js';
import type { PlatformClient } from '../../platform/client.js';
import { itemId } from '../../platform/item-identity.js';
import type { PageResult } from '../../platform/paging.js';
import type { Item, ItemQuery, Page } from '../../platform/types.js';
import { cursorMillis, type ReadOrder } from './plan.js';
import { IdSet } from './id-set.js';
import { compareKeys, type SortKey } from './delete-watch.js';

export interface CheckedPage extends Page {
  ids: string[];
  /** IDs on this page already seen earlier in the run. */
  repeats: number;
}

export interface ReadOptions {
  order: ReadOrder;
  startPage: number;
  zone: string;
  /** newest-first: the last page wanted is the first one reaching items modified before this (epoch ms). */
  stopBeforeMs: number | null;
  /** TotalCount as the start probe answered it (same filters): pages are fetched ahead from the first. */
  expectedTotal?: number;
  /**
   * by-created: the last item when the run started (undefined: not known). A
   * full last page that reaches it needs no look past the end: anything after
   * it was created during the run, and the next run reads it.
   */
  lastKeyAtStart?: SortKey | null;
  /** The start page's answer, asked for already. */
  firstPage?: Promise<PageResult<Item>>;
  /** Called once the last page the count implies is asked (see PaginateOptions). */
  onLastPageAsked?: () => void;
}

/** Checks pages against each other; `verify` is pure, `accept` records a page handed out. */
/** Whether an item served again on a later page is explained by the list changing (by-created order). */
export type RepeatExplained = (item: Item, totalCount: number, previousTotal: number | undefined) => boolean;

export class PageChecks {
  private readonly seen = new IdSet();
  private previous: string[] | null = null;
  private previousTotal: number | undefined;
  /** The IDs `verify` read from a page's items, for `accept` (each page's IDs are read once). */
  private readonly idsOf = new WeakMap<readonly Item[], (string | null)[]>();

  constructor(
    private readonly idField: string,
    private readonly pageSize: number,
    private readonly order: ReadOrder,
    private readonly repeatExplained: RepeatExplained = () => false,
  ) {}

  get distinct(): number {
    return this.seen.size;
  }

  verify(result: PageResult<Item>, index: number): string | null {
    const total = result.totalCount;
    if (total === undefined) return 'the answer has no TotalCount';
    const ids = result.items.map((it) => itemId(it[this.idField]));
    this.idsOf.set(result.items, ids);
    const missing = ids.filter((id) => id === null).length;
    if (missing) return `${missing} item(s) without ${this.idField}`;
    const expected = Math.max(0, Math.min(this.pageSize, total - (index - 1) * this.pageSize));
    if (result.items.length < expected) return `short page: ${result.items.length} item(s) where TotalCount ${total} implies ${expected}`;
    if (result.items.length > expected)
      return `TotalCount ${total} is lower than the items served: ${result.items.length} item(s) where it implies ${expected}`;
    if (this.previous && ids.length && sameIds(ids as string[], this.previous))
      return 'the page equals the previous one (PageIndex ignored)';
    if (new Set(ids).size !== ids.length) return 'an ID appears twice on the page';
    if (this.order === 'by-created') {
      const at = (ids as string[]).findIndex(
        (id, i) => this.seen.has(id) && !this.repeatExplained(result.items[i]!, total, this.previousTotal),
      );
      if (at >= 0) return `ID ${ids[at]!} was already served on an earlier page`;
    }
    return null;
  }

  accept(items: readonly Item[], totalCount?: number): { ids: string[]; repeats: number } {
    const ids = (this.idsOf.get(items) ?? items.map((it) => itemId(it[this.idField]))) as string[];
    const repeats = ids.length - this.note(ids);
    this.previous = ids;
    if (totalCount !== undefined) this.previousTotal = totalCount;
    return { ids, repeats };
  }

  /** Whether this run has read the item already. */
  has(id: string): boolean {
    return this.seen.has(id);
  }

  /** Records IDs read outside the pages (a gap re-read, a follow-up): how many were new. */
  note(ids: readonly string[]): number {
    let added = 0;
    for (const id of ids) if (this.seen.add(id)) added++;
    return added;
  }
}

export async function* readPages(
  client: PlatformClient,
  list: ListConfig,
  query: ItemQuery,
  opts: ReadOptions,
  checks: PageChecks,
): AsyncGenerator<CheckedPage> {
  const isLast =
    opts.order === 'newest-first' && opts.stopBeforeMs !== null
      ? (r: PageResult<Item>) => {
          const last = r.items[r.items.length - 1];
          const ms = last ? cursorMillis(last[list.cursorField], opts.zone) : undefined;
          return ms !== undefined && ms < opts.stopBeforeMs!;
        }
      : undefined;
  const pages = client.pages(list.appID, list.listID, query, {
    startPage: opts.startPage,
    pageSize: list.pageSize,
    // No shutdown signal here: the caller checks it between pages, so the page in flight is finished and written.
    verify: (r, i) => checks.verify(r, i),
    isLast,
    maxPages: list.maxPages,
    confirmEnd: (r) => {
      const last = r.items[r.items.length - 1];
      if (!last || !opts.lastKeyAtStart) return true;
      return compareKeys(sortKey(last, list), opts.lastKeyAtStart) < 0;
    },
    expectedTotal: opts.expectedTotal,
    firstPage: opts.firstPage,
    onLastPageAsked: opts.onLastPageAsked,
    // newest-first usually needs one page: ask for the next only once a page shows it is needed.
    window: opts.order === 'newest-first' ? 1 : undefined,
  });
  for await (const page of pages) {
    const { ids, repeats } = checks.accept(page.items, page.totalCount);
    yield { ...page, ids, repeats };
  }
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

/** An item's place in by-created order: the sort field, then the ID. */
export function sortKey(item: Record<string, unknown>, list: Pick<ListConfig, 'sortField' | 'idField'>): SortKey {
  return [String(item[list.sortField] ?? ''), itemId(item[list.idField]) ?? ''];
}
