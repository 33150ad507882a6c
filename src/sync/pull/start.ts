/**
 * What a by-created pull asks before it believes any page: the last item that
 * exists now (items after it are created during the run) with the query's
 * TotalCount, and the newest modification time (the mark the run can vouch
 * for). Two one-item queries, asked at once.
 *
 * A first full load asks its first page at once, beside the field metadata
 * (`startEarly`): its plan does not depend on the fields. When that page
 * holds the whole list (its TotalCount is no more than the items it carries),
 * the page is the start: its last item is the last that exists, its count
 * the count, its newest modification time the newest (`answersFromPage`), and
 * no probe is asked. A list whose first page says it is bigger asks the two
 * probes then, and its first page again after them: a page served before the
 * start mark was taken could hold an item edited in between that the mark
 * vouches for. Either way the page is believed only once the answers are
 * recorded in the checkpoint (see window-read.ts). (many-lists: what a first pull of
 * many small lists costs; pull-complete: what a first full load costs.)
 *
 * A pull of one list is bound by round trips, not by the budget: there the
 * probes leave with the first page (`probesWithPage`), and a big list's pages
 * flow one round trip sooner. The page may then have been served before the
 * probes, so it is believed only when nothing can have slipped between them:
 * - its TotalCount equals the probe's (no item created or deleted between
 *   the two; else page 1 is asked again, as above);
 * - an item edited between the page and the mark has a modification time no
 *   older than the mark less the time from the page's send to the probes'
 *   answer, so the run's follow-up (which reads what was modified while it
 *   paged) reads back that far: `followUpFrom`, whole seconds, one more for
 *   the rounding of modification times.
 */
import type { ListConfig } from '../../config.js';
import type { PlatformClient } from '../../platform/client.js';
import { ValidationError } from '../../platform/platform-errors.js';
import type { PageResult } from '../../platform/paging.js';
import type { Item, ItemQuery } from '../../platform/types.js';
import { cursorMillis, cursorText, cursorTextBefore } from './plan.js';

export interface StartAnswers {
  last: { items: Item[]; totalCount: number };
  /** The newest cursor value (`YYYY-MM-DD HH:mm:ss`), or null when it cannot be asked or read. */
  newest: string | null;
  /**
   * Where the follow-up reads back to when earlier than `newest`: a first page asked beside the
   * probes may have been served before the mark (see above). Absent: from `newest`.
   */
  followUpFrom?: string;
}

export function askStart(client: PlatformClient, list: ListConfig, zone: string, query: ItemQuery): Promise<StartAnswers> {
  return Promise.all([topItem(client, list, list.sortField, query), newestModification(client, list, zone)]).then(([last, newest]) => ({
    last,
    newest,
  }));
}

/** Start answers, and whether they were read off the first page (which is then the read's page 1). */
export interface EarlyAnswers extends StartAnswers {
  fromFirstPage: boolean;
}

/** A first page asked now, and the start answers it gives or leads to; both promises are handled (an unused one cannot reject unhandled). */
export interface EarlyStart {
  query: ItemQuery;
  start: Promise<EarlyAnswers>;
  firstPage: Promise<PageResult<Item>>;
}

export function startEarly(client: PlatformClient, list: ListConfig, zone: string, query: ItemQuery, probesWithPage = false): EarlyStart {
  const sentAt = Date.now();
  const firstPage = client.queryPageResult(list.appID, list.listID, { ...query, PageIndex: 1, PageSize: list.pageSize });
  const probes = probesWithPage ? askStart(client, list, zone, query) : null;
  probes?.catch(() => undefined);
  const start = firstPage.then(async (page): Promise<EarlyAnswers> => {
    const fromPage = answersFromPage(page, list, zone);
    if (fromPage) return { ...fromPage, fromFirstPage: true };
    if (!probes) return { ...(await askStart(client, list, zone, query)), fromFirstPage: false };
    const answers = await probes;
    const believed = page.totalCount !== undefined && page.totalCount === answers.last.totalCount && answers.newest !== null;
    if (!believed) return { ...answers, fromFirstPage: false };
    const slackSeconds = Math.ceil((Date.now() - sentAt) / 1000) + 1;
    return { ...answers, followUpFrom: cursorTextBefore(answers.newest!, slackSeconds, zone), fromFirstPage: true };
  });
  start.catch(() => undefined);
  firstPage.catch(() => undefined);
  return { query, start, firstPage };
}

/**
 * The start answers of a by-created first page that holds the whole list, or undefined when it may
 * not: the last item (the page is sorted by the sort field then the ID, ascending), the count, and
 * the newest cursor value (null when one does not parse, as the probe's would be).
 */
export function answersFromPage(page: PageResult<Item>, list: ListConfig, zone: string): StartAnswers | undefined {
  const whole = page.totalCount === undefined ? page.items.length < list.pageSize : page.items.length >= page.totalCount;
  if (!whole) return undefined;
  let newest: { ms: number; text: string } | null = null;
  let readable = true;
  for (const item of page.items) {
    const v = item[list.cursorField];
    const ms = cursorMillis(v, zone);
    if (typeof v !== 'string' || ms === undefined) readable = false;
    else if (newest === null || ms > newest.ms) newest = { ms, text: v };
  }
  const last = page.items[page.items.length - 1];
  return {
    last: { items: last ? [last] : [], totalCount: page.totalCount ?? page.items.length },
    newest: readable && newest ? cursorText(newest.text, zone) : null,
  };
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
