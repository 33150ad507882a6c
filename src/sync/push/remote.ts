/**
 * The push's reads and deletes on the platform. "Gone" is decided by asking
 * both ways (a refused read by ID and an In query without it:
 * src/platform/item-lookup.ts), never by one Status code; a refused key ends
 * the push (test/sync/write-back-faults.test.ts).
 */
import type { ListConfig } from '../../config.js';
import { coerceError } from '../../errors.js';
import { upsertItems, type TableMapping, type UpsertResult } from '../../mirror/index.js';
import { AuthError } from '../../platform/platform-errors.js';
import { isRefusalAnswer, queryItemsByIds, readItemOrGone, type ItemListRef } from '../../platform/item-lookup.js';
import type { PushDeps } from './types.js';
import type { ReadBack } from './write-verdict.js';

export const itemRef = (list: ListConfig): ItemListRef => ({ appID: list.appID, listID: list.listID, idField: list.idField });

/** One item by ID (GET shows writes at once); gone when asked both ways. A refused key ends the push. */
export async function readItem(deps: PushDeps, list: ListConfig, id: string): Promise<ReadBack> {
  try {
    const now = await readItemOrGone(deps.client, itemRef(list), id);
    return now.kind === 'present' ? { kind: 'found', item: now.item } : { kind: 'gone' };
  } catch (err) {
    if (err instanceof AuthError) throw err;
    return { kind: 'error', error: coerceError(err).message };
  }
}

/** Deletes an item; one already gone (asked both ways) counts as deleted. */
export async function deleteOnPlatform(deps: PushDeps, list: ListConfig, itemId: string): Promise<void> {
  try {
    await deps.client.deleteItem(list.appID, list.listID, itemId);
  } catch (err) {
    if (!isRefusalAnswer(err)) throw err;
    const now = await readItemOrGone(deps.client, itemRef(list), itemId);
    if (now.kind !== 'gone') throw err;
  }
}

/** Re-reads items by ID (In, 1000 per request) and writes them to the mirror. */
export async function rereadItems(
  deps: Pick<PushDeps, 'db' | 'client' | 'config'>,
  list: ListConfig,
  mapping: TableMapping,
  ids: readonly string[],
): Promise<UpsertResult> {
  const items = await queryItemsByIds(deps.client, itemRef(list), ids);
  return deps.db.transaction((trx) => upsertItems(trx, mapping, items, deps.config.platform.timeZone));
}
