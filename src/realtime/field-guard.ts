/**
 * Items a flush is about to write, judged against the field metadata the
 * mirror table was set up from, as a pull judges its pages
 * (sync/pull/schema-signals.ts): a flush writes platform items into the
 * mirror as a pull does, so it must never write them by a mapping the
 * platform has moved away from. A slot given to another field would
 * otherwise have the new field's values overwrite the old field's column and
 * `_raw` key, where the mirror held the last copy of them.
 *
 * The flush asks `/fields` (counted as `realtime`) when:
 * - the kept answer is older than the list's `fieldsMaxAgeMinutes` (the
 *   pull's rule: a field removed and its slot reused shows no sign in the
 *   items), or
 * - the items show a sign: a key the metadata does not name, the key of a
 *   field kept as removed, no item carrying a field the mirror writes, a value
 *   its column's type cannot hold in an item the mirror does not hold at that
 *   version yet. An answer that bore such signs out as quiet is not asked
 *   again for them within the same age.
 *
 * An answer equal to the kept one renews the kept answer's time (the table
 * was set up from it) and the flush writes. Any other answer, kept metadata
 * already marked stale (by a refused write, a pull's unknown key or an
 * earlier flush), or none kept, throws `FieldsChangedOnPlatform` before anything is
 * written: the table is set up from the platform's fields by a pull (the
 * metadata is marked stale, so it asks), and the chunk's events stay queued
 * until then. A table a pull set up anew after the flush read its mapping (its
 * fingerprint moved) throws too, without asking: the chunk is tried again by
 * the new mapping. (test/realtime/field-changes.test.ts)
 */
import { fieldsMaxAgeMs, type ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { TableMapping } from '../mirror/index.js';
import type { PlatformClient } from '../platform/client.js';
import { itemId, itemVersion } from '../platform/item-identity.js';
import { withRequestSource } from '../platform/request-source.js';
import type { FieldMeta, Item } from '../platform/types.js';
import { storableValue } from '../storable.js';
import { markFieldMetaStale, readFieldMeta, recordFieldMeta } from '../store/registry.js';
import { knownItemKeys } from '../sync/list-fields.js';
import { describeSignals, keySignals, unfitValues, valueSignals, type SchemaSignal } from '../sync/pull/schema-signals.js';
import type { StoredRow } from './flush-plan.js';

/** The mirror table is behind the platform's fields: the chunk waits for a pull to set it up (`needsPull`), or is tried again with the table as set up since. */
export class FieldsChangedOnPlatform extends Error {
  constructor(
    readonly list: string,
    why: string,
    readonly needsPull = true,
  ) {
    super(
      needsPull
        ? `the fields of list "${list}" changed on the platform (${why}): its item events wait for a pull to set the mirror table up`
        : `the mirror table of list "${list}" was set up anew while its item events were read: they are tried again by it`,
    );
    this.name = 'FieldsChangedOnPlatform';
  }
}

export interface FieldGuardDeps {
  db: Knex;
  client: PlatformClient;
  timeZone: string;
  signal: AbortSignal;
  now?: () => number;
}

/**
 * Per list, the signs an answer bore out as quiet (it equalled the kept one), and when: those signs
 * do not ask again within the list's field metadata age (a flush a second would otherwise ask each
 * time); any other sign does.
 */
export class FieldGuard {
  private readonly quiet = new Map<string, { at: number; signs: Set<string> }>();

  constructor(private readonly deps: FieldGuardDeps) {}

  /** Throws `FieldsChangedOnPlatform` when `items` must not be written by `mapping`. */
  async check(list: ListConfig, mapping: TableMapping, items: readonly Item[], stored: ReadonlyMap<string, StoredRow>): Promise<void> {
    if (items.length === 0) return;
    const { db } = this.deps;
    const now = (this.deps.now ?? Date.now)();
    const kept = await readFieldMeta(db, list.name);
    // Nothing to compare an answer with: the pull asks and keeps one (a mirror made before field metadata was kept).
    if (!kept) throw new FieldsChangedOnPlatform(list.name, 'the mirror keeps no field metadata for it yet');
    if (kept.fingerprint !== mapping.fingerprint) throw new FieldsChangedOnPlatform(list.name, 'set up anew', false);
    if (kept.askedAt === null) throw new FieldsChangedOnPlatform(list.name, 'its field metadata is marked out of date');
    const maxAge = fieldsMaxAgeMs(list);
    const aged = now - kept.askedAt.getTime() >= maxAge;
    const signals = this.signals(list, mapping, items, stored, kept.fields, kept.itemKeys);
    const signs = signals.map((sig) => `${sig.kind}:${sig.field}`);
    const quiet = this.quiet.get(list.name);
    const allQuiet = quiet !== undefined && now - quiet.at < maxAge && signs.every((sign) => quiet.signs.has(sign));
    if (!aged && (signals.length === 0 || allQuiet)) return;

    const fields = await withRequestSource('realtime', () => this.deps.client.getFields(list.appID, list.listID, this.deps.signal));
    if (sameFields(fields, kept.fields)) {
      await recordFieldMeta(db, list.name, kept.fields, new Date(now));
      if (signals.length > 0) this.quiet.set(list.name, { at: now, signs: new Set([...(allQuiet ? quiet.signs : []), ...signs]) });
      return;
    }
    await markFieldMetaStale(db, list.name);
    throw new FieldsChangedOnPlatform(
      list.name,
      signals.length > 0 ? describeSignals(signals) : 'its `/fields` answer differs from the one the mirror was set up from',
    );
  }

  private signals(
    list: ListConfig,
    mapping: TableMapping,
    items: readonly Item[],
    stored: ReadonlyMap<string, StoredRow>,
    fields: readonly FieldMeta[],
    itemKeys: readonly string[],
  ): SchemaSignal[] {
    const context = { mapping, knownKeys: knownItemKeys(list, fields, itemKeys), quietKeys: new Set(itemKeys) };
    const unfit = unfitValues(items, mapping, (item) => itemId(item[list.idField]), this.deps.timeZone);
    const versions = new Map([...stored].map(([id, row]) => [id, row.version === null ? null : String(row.version)]));
    return [...keySignals(items, context), ...valueSignals(unfit, versions, (item) => itemVersion(item[list.versionField]))];
  }
}

/** Whether two `/fields` answers say the same, whatever order they list the fields and their keys in. */
export function sameFields(a: readonly FieldMeta[], b: readonly FieldMeta[]): boolean {
  const byName = (fields: readonly FieldMeta[]): FieldMeta[] =>
    [...fields].sort((x, y) => (x.FieldName < y.FieldName ? -1 : x.FieldName > y.FieldName ? 1 : 0));
  return canonicalJson(storableValue(byName(a))) === canonicalJson(storableValue(byName(b)));
}

/** JSON with object keys in one order (the kept answer comes back from jsonb, which orders them its own way). */
function canonicalJson(value: unknown): string {
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
