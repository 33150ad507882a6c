/**
 * What a by-created pull asks before it believes any page: the last item that
 * exists now (items after it are created during the run) with the query's
 * TotalCount, and the newest modification time (the mark the run can vouch
 * for). Two one-item queries, asked at once.
 *
 * A first full load asks them together with the field metadata, the list's
 * details and its first page (`startEarly`): its plan does not depend on the
 * fields, so nothing needs to wait. The page's answer is only believed once
 * the answers here are recorded in the checkpoint (see pull.ts).
 */
import type { ListConfig } from '../../config.js';
import type { PlatformClient } from '../../platform/client.js';
import { ValidationError } from '../../platform/errors.js';
import type { PageResult } from '../../platform/paging.js';
import type { Item, ItemQuery } from '../../platform/types.js';
import { cursorMillis, cursorText } from './plan.js';

export interface StartAnswers {
  last: { items: Item[]; totalCount: number };
  /** The newest cursor value (`YYYY-MM-DD HH:mm:ss`), or null when it cannot be asked or read. */
  newest: string | null;
}

export function askStart(client: PlatformClient, list: ListConfig, zone: string, query: ItemQuery): Promise<StartAnswers> {
  return Promise.all([topItem(client, list, list.sortField, query), newestModification(client, list, zone)]).then(([last, newest]) => ({
    last,
    newest,
  }));
}

/** A first page and the start answers, asked now; both promises are handled (an unused one cannot reject unhandled). */
export interface EarlyStart {
  query: ItemQuery;
  start: Promise<StartAnswers>;
  firstPage: Promise<PageResult<Item>>;
}

export function startEarly(client: PlatformClient, list: ListConfig, zone: string, query: ItemQuery): EarlyStart {
  const early: EarlyStart = {
    query,
    start: askStart(client, list, zone, query),
    firstPage: client.queryPageResult(list.appID, list.listID, { ...query, PageIndex: 1, PageSize: list.pageSize }),
  };
  early.start.catch(() => undefined);
  early.firstPage.catch(() => undefined);
  return early;
}

/** The item with the highest `field` (then ID) within the query's filters, and the filters' TotalCount: one item asked for. */
function topItem(
  client: PlatformClient,
  list: ListConfig,
  field: string,
  query: ItemQuery = {},
): Promise<{ items: Item[]; totalCount: number }> {
  return client.queryItems(list.appID, list.listID, {
    ...query,
    Fields: [field, list.idField],
    Sorts: [
      { Field: field, Desc: true },
      { Field: list.idField, Desc: true },
    ],
    PageIndex: 1,
    PageSize: 1,
  });
}

async function newestModification(client: PlatformClient, list: ListConfig, zone: string): Promise<string | null> {
  try {
    const { items } = await topItem(client, list, list.cursorField);
    const v = items[0]?.[list.cursorField];
    return typeof v === 'string' && cursorMillis(v, zone) !== undefined ? cursorText(v, zone) : null;
  } catch (err) {
    if (err instanceof ValidationError) return null;
    throw err;
  }
}
