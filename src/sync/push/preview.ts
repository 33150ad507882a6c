/**
 * `listsync push --dry-run`: what a push would send now, and whether each
 * change would apply or conflict, judged against the platform's current
 * versions (read with In queries, 1000 IDs a request); an item that moved is
 * merged field by field as the push would (src/conflicts/merge.ts) unless
 * `conflictScope` is `item`. Sends no write, takes
 * no lock, records no run and changes nothing locally.
 */
import type { Config, ListConfig } from '../../config.js';
import type { Knex } from '../../db.js';
import type { TableMapping } from '../../mirror/index.js';
import type { PlatformClient } from '../../platform/client.js';
import { queryItemsByIds } from '../../platform/item-lookup.js';
import type { Item } from '../../platform/types.js';
import { itemId, itemVersionNumber, versionOf, versionText } from '../../platform/item-identity.js';
import { heldItems } from '../../mirror/held-items.js';
import { unsentChanges, type OutboxRow } from '../../store/outbox.js';
import { loadMappingOrExplain } from './mapping.js';
import { removedFieldsPhrase, toWire } from './wire.js';
import { coerceError } from '../../errors.js';
import { mergeFields } from '../../conflicts/merge.js';
import { sameAs } from './field-merge.js';
import { silentLogger } from '../../logger.js';
import { fieldsForWrite } from '../write-fields.js';

export type Verdict = 'apply' | 'conflict' | 'fail';

export interface PreviewField {
  field: string;
  column: string;
  /** The platform's value the change was made on (the mirror row's _raw), if known. */
  base: string | null;
  /** What would be sent (a delete sends nothing: the row's content). */
  local: string;
  /** The platform's value now. */
  platform: string | null;
}

export interface PreviewEntry {
  outboxId: number;
  op: OutboxRow['op'];
  /** The platform item, or the local row's id for a create. */
  target: string;
  /** What would be sent: PATCH, POST, DELETE, or a withdrawal. */
  request: string;
  verdict: Verdict;
  reason: string;
  fields: PreviewField[];
}

export interface PushPreview {
  list: string;
  policy: ListConfig['conflictPolicy'];
  entries: PreviewEntry[];
  counts: Record<Verdict, number>;
}

export async function previewPush(
  deps: { db: Knex; client: PlatformClient; config: Config; clock?: () => Date },
  list: ListConfig,
): Promise<PushPreview> {
  const { db, client, config } = deps;
  const rows = await unsentChanges(db, list.name);
  // As the push would write: by field metadata at most a few minutes old (a field removed since is not sent).
  const mapping = await fieldsForWrite(deps, list, await loadMappingOrExplain(db, config, list), rows, silentLogger(), { preview: true });
  const ids = rows.filter((r) => r.item_id !== null).map((r) => r.item_id!);
  const platform = await currentItems(client, list, ids);
  const base = await heldItems(db, mapping, ids);
  const entries = rows.map((row) => judge(row, list, mapping, config.platform.timeZone, platform, base));
  const counts: Record<Verdict, number> = { apply: 0, conflict: 0, fail: 0 };
  for (const e of entries) counts[e.verdict]++;
  return { list: list.name, policy: list.conflictPolicy, entries, counts };
}

function judge(
  row: OutboxRow,
  list: ListConfig,
  mapping: TableMapping,
  zone: string,
  platform: ReadonlyMap<string, Item>,
  base: ReadonlyMap<string, Item>,
): PreviewEntry {
  const remote = row.item_id === null ? undefined : platform.get(row.item_id);
  const fields = fieldDiffs(row, mapping, zone, base.get(row.item_id ?? ''), remote);
  const entry = (request: string, verdict: Verdict, reason: string): PreviewEntry => ({
    outboxId: Number(row.id),
    op: row.op,
    target: row.item_id ?? row.local_id ?? '',
    request,
    verdict,
    reason,
    fields,
  });
  const unconvertible = fields.find((f) => f.local.startsWith('(cannot convert'));
  const notSent = removedPart(fields, mapping);

  if (row.op === 'create') {
    if (row.withdrawn_at)
      return entry(
        'withdrawal',
        'apply',
        'the local row was deleted: the create is withdrawn (an item an earlier attempt created is looked for and deleted)',
      );
    if (unconvertible) return entry('POST', 'fail', `column ${unconvertible.column} cannot be converted for the platform`);
    if (notSent) return entry('POST', 'fail', notSent);
    return entry(
      'POST',
      'apply',
      row.sends > 0 ? 'would be looked for on the platform first (an earlier attempt got no answer), then created' : 'would be created',
    );
  }
  const remoteVersion = remote === undefined ? undefined : versionOf(remote, list.versionField);
  const platformAt = `platform at version ${versionText(remoteVersion ?? null)}`;
  const baseVersion = itemVersionNumber(row.base_version);
  if (baseVersion === null) {
    if (remoteVersion === undefined)
      return entry(
        row.op === 'delete' ? 'DELETE' : 'PATCH',
        row.op === 'delete' ? 'apply' : 'fail',
        'the item is no longer on the platform',
      );
    return entry(
      row.op === 'delete' ? 'DELETE' : 'PATCH',
      'conflict',
      `the version the change was made on is unknown; ${platformAt}: applied only if the platform still holds what the mirror last saw, else a conflict`,
    );
  }
  if (row.op === 'delete') {
    if (remoteVersion === undefined) return entry('DELETE', 'apply', 'already gone from the platform');
    if (baseVersion === 0 || remoteVersion === baseVersion) return entry('DELETE', 'apply', `${platformAt}, as when the row was deleted`);
    return entry('DELETE', 'conflict', `${platformAt}, the row was deleted on ${baseVersion}`);
  }
  if (unconvertible) return entry('PATCH', 'fail', `column ${unconvertible.column} cannot be converted for the platform`);
  if (remoteVersion === undefined) return entry('PATCH', 'fail', 'the item is no longer on the platform');
  if (notSent) return entry('PATCH', 'fail', notSent);
  if (baseVersion === 0) return entry('PATCH', 'apply', `sent with RowVersion 0 (overwrites version ${versionText(remoteVersion)})`);
  if (remoteVersion === baseVersion) return entry('PATCH', 'apply', `${platformAt}, as when the change was made`);
  const moved = `${platformAt}, the change was made on ${baseVersion}`;
  if (list.conflictScope === 'item') return entry('PATCH', 'conflict', moved);
  const merged = fieldMerge(fields, mapping, zone, base.get(row.item_id ?? '') ?? null, remote!);
  return entry('PATCH', merged.conflicts ? 'conflict' : 'apply', `${moved}: merged field by field, ${merged.reason}`);
}

/** Why part of a change would not be sent (columns of fields removed from the platform), as the push says it; undefined when all would. */
function removedPart(fields: readonly PreviewField[], mapping: TableMapping): string | undefined {
  const removed = fields.filter((f) => mapping.byColumn(f.column)?.removed).map((f) => f.column);
  if (removed.length === 0) return undefined;
  const rest = removed.length < fields.length ? '; the rest of the change would be sent' : '';
  return `not sent: ${removedFieldsPhrase(mapping, removed)}${rest}`;
}

/** A moved item under conflictScope field: which fields would be sent at its version and which are in conflict. */
function fieldMerge(
  fields: readonly PreviewField[],
  mapping: TableMapping,
  zone: string,
  base: Item | null,
  remote: Item,
): { conflicts: boolean; reason: string } {
  const merge = mergeFields({ local: fields.map((f) => ({ field: f.field, local: f.local })), base, remote, same: sameAs(mapping, zone) });
  const sent = Object.keys(merge.send);
  const parts = [
    sent.length ? `${sent.join(', ')} would be sent at the platform's version` : 'nothing would be sent',
    ...(merge.same.length ? [`${merge.same.join(', ')} already as you set`] : []),
    ...(merge.conflicts.length ? [`${merge.conflicts.map((c) => c.field).join(', ')} changed on both sides (in conflict)`] : []),
  ];
  return { conflicts: merge.conflicts.length > 0, reason: parts.join('; ') };
}

/** What the preview shows as sent for a column whose field was removed from the platform. */
const NOT_SENT_REMOVED = '(not sent: the field was removed from the platform)';

function fieldDiffs(row: OutboxRow, mapping: TableMapping, zone: string, base: Item | undefined, remote: Item | undefined): PreviewField[] {
  const changes = row.status === 'sending' && row.sent_changes ? row.sent_changes : row.changes;
  return Object.entries(changes).map(([column, value]) => {
    const col = mapping.byColumn(column);
    const field = col?.field ?? column;
    const show = (item: Item | undefined): string | null =>
      item === undefined || item[field] === undefined || item[field] === null ? null : String(item[field]);
    let local: string;
    try {
      if (col?.removed) return { field, column, base: show(base), local: NOT_SENT_REMOVED, platform: show(remote) };
      if (!col) throw new Error('not a field on the platform');
      // What the push would send: multi-value elements in the form the item holds (src/mirror/multi-value.ts).
      local = toWire(mapping, { [column]: value }, zone, base)[field] ?? '';
    } catch (err) {
      local = `(cannot convert: ${coerceError(err).message})`;
    }
    return { field, column, base: show(base), local, platform: show(remote) };
  });
}

/** The items as the platform's queries show them now, by ID. */
async function currentItems(client: PlatformClient, list: ListConfig, ids: readonly string[]): Promise<Map<string, Item>> {
  const items = await queryItemsByIds(client, { appID: list.appID, listID: list.listID, idField: list.idField }, ids);
  return new Map(items.map((item) => [itemId(item[list.idField]) ?? '', item]));
}
