/**
 * The field metadata a push writes by. The mirror table was set up from the
 * field metadata a pull kept; when that answer is older than
 * WRITE_FIELDS_MAX_AGE_MS (or marked stale), a push with something to write
 * asks `/fields` first, and a column whose field the answer lacks (removed)
 * or gives to another field (a slot reused: another FieldID, another kind
 * of control) is written as a removed field's column: never sent, its edit
 * refused with a message saying the field was removed (push/wire.ts
 * `removedFieldsError`). The answer is not kept (the table does not reflect
 * it yet); the kept one is marked stale so the next pull asks and sets the
 * table up from it. A push with nothing to write asks nothing. `push --dry-run`
 * asks by the same rule, so that it shows what a push would send now, and
 * marks nothing.
 * (test/sync/removed-field-push.test.ts)
 */
import type { ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import { createTableMapping, readRegistry, type TableMapping } from '../mirror/index.js';
import { isAnotherField } from '../mirror/field-identity.js';
import type { RegistryField } from '../mirror/list-registry.js';
import type { PlatformClient } from '../platform/client.js';
import type { FieldMeta } from '../platform/types.js';
import type { OutboxRow } from '../store/outbox.js';
import { markFieldMetaStale, readFieldMeta } from '../store/registry.js';

/** A push writes by field metadata at most this old; older, it asks `/fields` first. */
export const WRITE_FIELDS_MAX_AGE_MS = 5 * 60_000;

export interface WriteFieldsDeps {
  db: Knex;
  client: PlatformClient;
  clock?: () => Date;
}

/**
 * The mapping a push writes with: `mapping`, with the columns of fields the latest answer lacks as removed.
 * `preview` (push --dry-run): the same answer and mapping, but nothing is marked or logged.
 */
export async function fieldsForWrite(
  deps: WriteFieldsDeps,
  list: ListConfig,
  mapping: TableMapping,
  rows: readonly Pick<OutboxRow, 'op'>[],
  log: Logger,
  { preview = false }: { preview?: boolean } = {},
): Promise<TableMapping> {
  if (!rows.some((r) => r.op !== 'delete')) return mapping;
  const kept = await readFieldMeta(deps.db, list.name);
  const now = (deps.clock ?? (() => new Date()))().getTime();
  if (kept?.askedAt && now - kept.askedAt.getTime() < WRITE_FIELDS_MAX_AGE_MS) return mapping;
  const fields = await deps.client.getFields(list.appID, list.listID);
  const registry = await readRegistry(deps.db, list.name);
  const gone = goneFields(registry?.fields ?? [], fields);
  if (gone.size === 0) return mapping;
  if (preview) return withoutFields(mapping, gone);
  await markFieldMetaStale(deps.db, list.name);
  log.warn({ fields: [...gone] }, 'fields removed from the platform since the mirror was set up: their columns are not written back');
  return withoutFields(mapping, gone);
}

/** Field names whose active column's field the answer lacks or gives to another field. */
export function goneFields(registered: readonly RegistryField[], fields: readonly FieldMeta[]): Set<string> {
  const byName = new Map(fields.map((f) => [f.FieldName, f]));
  const gone = new Set<string>();
  for (const r of registered) {
    if (r.removed || r.fixed) continue;
    const now = byName.get(r.field);
    if (!now || isAnotherField(r, now)) gone.add(r.field);
  }
  return gone;
}

/** The mapping with the columns of `gone` fields moved to the removed ones. */
export function withoutFields(mapping: TableMapping, gone: ReadonlySet<string>): TableMapping {
  return createTableMapping({
    ...mapping,
    columns: mapping.columns.filter((c) => !gone.has(c.field)),
    removedColumns: [...mapping.removedColumns, ...mapping.columns.filter((c) => gone.has(c.field))],
  });
}
