/**
 * A pull's field metadata: the platform's `/fields` is asked only for a
 * reason, otherwise the metadata kept with the registry row is used
 * (src/store/registry.ts). The reasons: no metadata kept (a first load, a
 * mirror made before it was kept), the list now points at another platform
 * list, the operator asked (`pull --refresh-schema`), a run saw an item key
 * the mirror does not know or a write was refused for a field (both clear
 * the kept time), or the kept answer is older than `lists[].fieldsMaxAgeMinutes`
 * (15 by default). Within a run, what the items show asks again before a page
 * is written (src/sync/pull/schema-signals.ts).
 *
 * Invariant: a run that used kept metadata sets the table up from exactly
 * the answer the table was last set up from, so it sees no schema change;
 * a field added on the platform reaches the mirror at the latest on the
 * first run after one of the reasons above. (many-lists: an idle pull asks
 * no field metadata; a key the mirror does not know asks again.)
 */
import { fieldsMaxAgeMs, type ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { RegistryEntry } from '../mirror/list-registry.js';
import type { TableMapping } from '../mirror/index.js';
import { PlatformError } from '../platform/platform-errors.js';
import type { FieldMeta, Item } from '../platform/types.js';
import { markFieldMetaStale, type KeptFieldMeta } from '../store/registry.js';

/** Why the run asks `/fields`, or null when the kept metadata serves. */
export function fieldsAskReason(
  registry: RegistryEntry | undefined,
  kept: KeptFieldMeta | undefined,
  list: ListConfig,
  nowMs: number,
  refresh: boolean,
): string | null {
  if (refresh) return 'asked for (--refresh-schema)';
  if (!registry || !kept) return 'no field metadata kept yet';
  if (registry.appID !== list.appID || registry.listID !== list.listID) return 'the list points at another platform list';
  if (kept.askedAt === null) return 'an item key the mirror does not know, or a write refused for a field';
  const age = nowMs - kept.askedAt.getTime();
  const maxAge = fieldsMaxAgeMs(list);
  if (age >= maxAge) return `the kept metadata is ${Math.floor(age / 60_000)} min old (at most ${maxAge / 60_000} min)`;
  return null;
}

/** The keys an item may carry without being a field the mirror does not know. */
export function knownItemKeys(list: ListConfig, fields: readonly FieldMeta[], itemKeys: readonly string[]): Set<string> {
  return new Set([list.idField, list.versionField, list.cursorField, list.sortField, ...fields.map((f) => f.FieldName), ...itemKeys]);
}

/** Adds to `into` the keys of `items` outside `known`. */
export function collectUnknownKeys(items: readonly Item[], known: ReadonlySet<string>, into: Set<string>): void {
  for (const item of items) for (const key in item) if (!known.has(key) && Object.hasOwn(item, key)) into.add(key);
}

/**
 * A platform refusal of a write that names one of the list's fields: the
 * kept metadata may be out of date (a field removed, its kind changed), so the next pull asks again.
 */
export async function noteFieldRefusal(db: Knex, list: ListConfig, mapping: TableMapping, err: unknown): Promise<void> {
  if (!(err instanceof PlatformError)) return;
  const message = err.message;
  const named = mapping.columns.some((c) => wordIn(message, c.field));
  if (named) await markFieldMetaStale(db, list.name).catch(() => undefined); // a lost database: the push reports its own error
}

function wordIn(text: string, word: string): boolean {
  return new RegExp(`(^|[^A-Za-z0-9_])${word.replace(/[^A-Za-z0-9_]/g, '\\$&')}($|[^A-Za-z0-9_])`).test(text);
}
