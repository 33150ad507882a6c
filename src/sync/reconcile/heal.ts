/**
 * After the sweep, before the marks: the candidates (live rows the sweep did
 * not see) are looked up by ID on the platform, and those it still has leave
 * the candidate set (pages shifted by a delete while the sweep paged); the
 * rows queued for healing (IDs the mirror lacks, versions behind) are re-read
 * by ID and upserted as a pull would, one transaction per request. Rows with
 * open local changes are left to write-back (sync/reconcile-heal.test.ts).
 */
import type { ListConfig } from '../../config.js';
import { upsertItems, type TableMapping } from '../../mirror/index.js';
import type { SweepTables } from '../../mirror/sweep-tables.js';
import { itemId } from '../../platform/item-identity.js';
import { Operator, type Item } from '../../platform/types.js';
import type { RunCounters } from '../../store/runs.js';
import { pendingConflictHandler } from '../../conflicts/recording.js';
import { RECONCILE_PAGE_SIZE, type Healed, type ReconcileDeps } from './types.js';

/** Looks up the candidates (1000 IDs a request, operator In); those present are seen after all. Returns how many. */
export async function confirmCandidates(deps: ReconcileDeps, list: ListConfig, work: SweepTables): Promise<number> {
  let after = '';
  let found = 0;
  for (;;) {
    if (deps.signal?.aborted) return found;
    const ids = await work.candidates(after, RECONCILE_PAGE_SIZE);
    if (ids.length === 0) return found;
    after = ids[ids.length - 1]!;
    const items = await readByIds(deps, list, ids, [list.idField]);
    const present = items.map((it) => itemId(it[list.idField])).filter((x): x is string => x !== null);
    if (present.length) {
      await work.confirmed(present);
      found += present.length;
    }
    if (ids.length < RECONCILE_PAGE_SIZE) return found;
  }
}

/** Re-reads the rows queued for healing and upserts them as a pull would. Returns what it healed. */
export async function healRows(
  deps: ReconcileDeps,
  list: ListConfig,
  mapping: TableMapping,
  work: SweepTables,
  counters: RunCounters,
): Promise<Healed> {
  const healed = { missing: 0, behind: 0, keptLocal: 0 };
  const onPending = pendingConflictHandler(deps.config, list);
  const zone = deps.config.platform.timeZone;
  for (let after = ''; ;) {
    if (deps.signal?.aborted) return healed;
    const ids = await work.toHeal(after, RECONCILE_PAGE_SIZE);
    if (ids.length === 0) return healed;
    after = ids[ids.length - 1]!;
    const items = await readByIds(deps, list, ids);
    if (items.length) {
      await deps.db.transaction(async (trx) => {
        const r = await upsertItems(trx, mapping, items, zone);
        const conflicts = r.skippedPending.length ? (await onPending(trx, mapping, r.skippedPending)).conflicts : 0;
        healed.missing += r.inserted;
        healed.behind += r.updated;
        healed.keptLocal += r.skippedPending.length;
        counters.rows_inserted += r.inserted;
        counters.rows_updated += r.updated;
        counters.rows_failed += r.failedValues;
        counters.rows_skipped_pending += r.skippedPending.length;
        counters.changes_conflicted += conflicts;
      });
    }
    if (ids.length < RECONCILE_PAGE_SIZE) return healed;
  }
}

/** The IDs an `In` lookup may send: only platform-shaped ones (an In filter with anything else is refused by the platform). */
export function lookupIds(ids: readonly string[]): string[] {
  return ids.filter((id) => /^\d{1,20}$/.test(id));
}

/** The items of up to RECONCILE_PAGE_SIZE IDs, in one `In` query (all fields, or `fields`). */
async function readByIds(deps: ReconcileDeps, list: ListConfig, ids: readonly string[], fields?: string[]): Promise<Item[]> {
  const lookup = lookupIds(ids);
  if (lookup.length === 0) return [];
  const query = {
    ...(fields ? { Fields: fields } : {}),
    Filters: [{ Field: list.idField, Type: Operator.In, Value: JSON.stringify(lookup) }],
    PageIndex: 1,
    PageSize: RECONCILE_PAGE_SIZE,
  };
  return (await deps.client.queryItems(list.appID, list.listID, query, deps.signal)).items;
}
