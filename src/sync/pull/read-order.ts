/**
 * Pure: where an item stands in the order a read serves it, and a page as the
 * delete watch sees it. By-created: the immutable sort field, then the ID;
 * newest first: the cursor's instant, then the ID.
 */
import type { ListConfig } from '../../config.js';
import { itemId } from '../../platform/item-identity.js';
import type { Item } from '../../platform/types.js';
import { observePage, type SortKey, type WatchState } from './delete-watch.js';
import { cursorMillis, type ReadOrder } from './plan.js';

type KeyFields = Pick<ListConfig, 'sortField' | 'idField' | 'cursorField'>;

/** An item's place in by-created order: the sort field, then the ID. */
export function sortKey(item: Record<string, unknown>, list: Pick<ListConfig, 'sortField' | 'idField'>): SortKey {
  return [String(item[list.sortField] ?? ''), itemId(item[list.idField]) ?? ''];
}

/** An item's key in the order the read serves it. */
export function readKey(list: KeyFields, zone: string, order: ReadOrder): (item: Item) => SortKey {
  if (order === 'by-created') return (item) => sortKey(item, list);
  return (item) => [String(cursorMillis(item[list.cursorField], zone) ?? ''), itemId(item[list.idField]) ?? ''];
}

/** A page served in `order`, as the delete watch needs it: its count, its ends, its repeats (and, by-created, every key). */
export interface WatchedPage {
  index: number;
  totalCount: number;
  items: readonly Item[];
  repeats: number;
}

export function watchPage(watch: WatchState, page: WatchedPage, list: KeyFields, zone: string, order: ReadOrder): WatchState {
  const keyOf = readKey(list, zone, order);
  const last = page.items[page.items.length - 1];
  return observePage(watch, {
    index: page.index,
    totalCount: page.totalCount,
    keys: order === 'by-created' ? page.items.map((it) => sortKey(it, list)) : [],
    first: page.items[0] && keyOf(page.items[0]),
    last: last && keyOf(last),
    repeats: page.repeats,
  });
}
