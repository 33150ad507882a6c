/**
 * A create whose answer was lost may have reached the platform. Before it is
 * resent (or, when its local row was withdrawn, before anything is deleted),
 * it is looked for: items created since the first attempt's platform date
 * (the indexed `Created` filter, operator 2), narrowed by equality on the
 * indexed text fields that were sent, then compared client-side on every
 * value sent and on the creation time.
 */
import type { ListConfig } from '../../config.js';
import type { Knex } from '../../db.js';
import { readRegistry, type TableMapping } from '../../mirror/index.js';
import type { PlatformClient } from '../../platform/client.js';
import { platformDate, tryParsePlatformDateTime } from '../../platform/dates.js';
import { Operator, type Filter, type Item } from '../../platform/types.js';
import { itemId } from '../../platform/item-identity.js';
import { carries } from './our-write.js';

export type LostCreateSearch = { kind: 'found'; id: string } | { kind: 'none' } | { kind: 'ambiguous'; ids: string[] };

/** The platform's and our clocks may differ: items created this long before the attempt still count. */
const CLOCK_SKEW_MS = 5 * 60_000;
/** Candidates read at most (pages of 1000): a busy day with the same values is ambiguous anyway. */
const MAX_PAGES = 5;

export interface LostCreateLookup {
  db: Knex;
  client: PlatformClient;
  zone: string;
}

/** The item IDs the platform holds that carry `data` and were created since `since`. */
export async function findCreated(
  deps: LostCreateLookup,
  list: ListConfig,
  mapping: TableMapping,
  data: Record<string, string>,
  since: Date,
): Promise<LostCreateSearch> {
  const filters = await narrowingFilters(deps, list, mapping, data, since);
  const matches: string[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const { items, totalCount } = await deps.client.queryItems(list.appID, list.listID, {
      Filters: filters,
      PageIndex: page,
      PageSize: 1000,
    });
    for (const item of items) {
      const id = itemId(item[list.idField]);
      if (id !== null && createdSince(item, mapping.createdField, since, deps.zone) && carries(item, data)) matches.push(id);
    }
    if (items.length < 1000 || page * 1000 >= totalCount) break;
  }
  const ids = [...new Set(matches)];
  if (ids.length === 0) return { kind: 'none' };
  if (ids.length === 1) return { kind: 'found', id: ids[0]! };
  return { kind: 'ambiguous', ids };
}

/** `Created` on or after the attempt's platform date, and equality on the indexed text fields sent. */
async function narrowingFilters(
  deps: LostCreateLookup,
  list: ListConfig,
  mapping: TableMapping,
  data: Record<string, string>,
  since: Date,
): Promise<Filter[]> {
  const filters: Filter[] = [{ Field: mapping.createdField, Type: Operator.GreaterOrEqual, Value: platformDate(since, deps.zone) }];
  const registry = await readRegistry(deps.db, list.name);
  const indexed = new Set((registry?.fields ?? []).filter((f) => f.indexed && !f.removed && !f.fixed).map((f) => f.field));
  for (const [field, value] of Object.entries(data)) {
    if (value === '' || !indexed.has(field) || mapping.columnFor(field)?.kind !== 'text') continue;
    filters.push({ Field: field, Type: Operator.Equal, Value: value });
  }
  return filters;
}

function createdSince(item: Item, createdField: string, since: Date, zone: string): boolean {
  const created = tryParsePlatformDateTime(typeof item[createdField] === 'string' ? (item[createdField] as string) : undefined, zone);
  return created === undefined || created.toMillis() >= since.getTime() - CLOCK_SKEW_MS;
}
