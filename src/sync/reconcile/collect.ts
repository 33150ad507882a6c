/**
 * The sweep's paging: one query's pages, sorted by the sortField then the ID
 * and asking only for the ID and version fields, each page's IDs (with their
 * versions) recorded in the run's temporary tables. Its anomalies (a short
 * page before the last, items without an ID) are collected for the refusal
 * (refusal.ts), never acted on here.
 */
import { performance } from 'node:perf_hooks';
import type { ListConfig } from '../../config.js';
import { itemId, itemVersion } from '../../platform/item-identity.js';
import type { Filter, Item, ItemQuery } from '../../platform/types.js';
import { pageAnomalies } from './refusal.js';
import { RECONCILE_PAGE_SIZE, type RunParts } from './types.js';

/** What the pages of one query reported. */
export interface Collected {
  received: number;
  minTotal: number;
  maxTotal: number;
  lastTotal: number;
}

/** The sweep sorted by the sortField then the ID, asking only for the ID and version fields. */
export function sweepQuery(list: ListConfig, filters?: Filter[]): ItemQuery {
  return {
    Fields: [list.idField, list.versionField],
    ...(filters && filters.length ? { Filters: filters } : {}),
    Sorts: [
      { Field: list.sortField, Desc: false },
      { Field: list.idField, Desc: false },
    ],
    PageSize: RECONCILE_PAGE_SIZE,
  };
}

/** Pages of one query, each page's IDs recorded as seen; `afterPage` runs between pages. */
export async function collectIds(
  parts: RunParts,
  query: ItemQuery,
  anomalies: string[],
  label: string,
  afterPage?: (pageStart: number) => Promise<void>,
): Promise<Collected> {
  const { deps, list, work, counters } = parts;
  let minTotal = Number.POSITIVE_INFINITY;
  let maxTotal = 0;
  let lastTotal = 0;
  let received = 0;
  for await (const page of deps.client.pages(list.appID, list.listID, query, { pageSize: RECONCILE_PAGE_SIZE, signal: deps.signal })) {
    const pageStart = performance.now();
    counters.pages++;
    minTotal = Math.min(minTotal, page.totalCount);
    maxTotal = Math.max(maxTotal, page.totalCount);
    lastTotal = page.totalCount;
    const { ids, versions, withoutId } = idsOfPage(page.items, list);
    anomalies.push(
      ...pageAnomalies({
        label,
        index: page.index,
        pageCount: page.pageCount,
        items: page.items.length,
        pageSize: RECONCILE_PAGE_SIZE,
        withoutId,
        idField: list.idField,
      }),
    );
    received += ids.length;
    await work.addSeen(ids, versions);
    deps.onPage?.({
      list: list.name,
      runId: parts.runId,
      page: page.index,
      pageCount: page.pageCount,
      totalCount: page.totalCount,
      items: page.items.length,
      itemsSoFar: work.seen,
    });
    if (afterPage) await afterPage(pageStart);
    if (deps.signal?.aborted) throw deps.signal.reason ?? new Error('aborted');
  }
  return { received, minTotal: Number.isFinite(minTotal) ? minTotal : 0, maxTotal, lastTotal };
}

/** A page's IDs and versions, and how many items came without an ID. */
function idsOfPage(items: readonly Item[], list: ListConfig): { ids: string[]; versions: (string | null)[]; withoutId: number } {
  const ids: string[] = [];
  const versions: (string | null)[] = [];
  let withoutId = 0;
  for (const item of items) {
    const id = itemId(item[list.idField]);
    if (id === null) withoutId++;
    else {
      ids.push(id);
      versions.push(itemVersion(item[list.versionField]));
    }
  }
  return { ids, versions, withoutId };
}
