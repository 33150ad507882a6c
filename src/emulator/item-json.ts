import { ApiError, STATUS } from './api-error.js';
import { formatNaive } from './platform-time.js';
import { SYSTEM_FIELD_NAMES } from './field-types.js';
import type { ListData } from './store.js';

/**
 * Writes items as JSON text. Field order: ListDataID, RowVersion, then the
 * requested fields (or all fields). Items are built as plain objects and
 * serialised in one JSON.stringify call (V8's fast path). With `idsAsNumbers`
 * the ListDataID is rewritten to a bare JSON number carrying the exact digits.
 */

type Reader = (slot: number) => string | number;

export interface ItemProjection {
  readonly names: readonly string[];
  readonly readers: readonly Reader[];
  readonly idsAsNumbers: boolean;
  /** Leave out user fields whose value is empty (`omitEmptyValues`). */
  readonly omitEmpty: boolean;
}

export function buildProjection(
  list: ListData,
  fields: readonly string[] | undefined,
  idsAsNumbers: boolean,
  omitEmpty = false,
): ItemProjection {
  const names: string[] = ['ListDataID', 'RowVersion'];
  if (fields === undefined) {
    for (const f of list.fields()) if (f.FieldName !== 'ListDataID' && f.FieldName !== 'RowVersion') names.push(f.FieldName);
  } else {
    for (const f of fields) {
      if (!list.field(f)) throw new ApiError(STATUS.badRequest, `Fields: unknown field "${f}" in list ${list.appID}/${list.listID}`);
      if (!names.includes(f)) names.push(f);
    }
  }
  const readers: Reader[] = names.map((name) => {
    switch (name) {
      case 'ListDataID':
        return (slot: number) => (list.ids[slot] as bigint).toString();
      case 'RowVersion':
        return (slot: number) => list.versions[slot] as number;
      case 'Created':
        return (slot: number) => formatNaive(list.created[slot] as number);
      case 'Modified':
        return (slot: number) => formatNaive(list.modified[slot] as number);
      default: {
        const col = list.column(name);
        if (!col) throw new Error(`no column for field ${name}`);
        const values = col.values;
        return (slot: number) => values[slot] ?? '';
      }
    }
  });
  return { names, readers, idsAsNumbers, omitEmpty };
}

const SYSTEM_KEYS: ReadonlySet<string> = new Set(SYSTEM_FIELD_NAMES);

/** One item as an object in projection order. */
export function projectItem(projection: ItemProjection, slot: number): Record<string, string | number> {
  const o: Record<string, string | number> = {};
  const { names, readers } = projection;
  if (projection.omitEmpty) {
    for (let f = 0; f < names.length; f++) {
      const v = (readers[f] as Reader)(slot);
      if (v !== '' || SYSTEM_KEYS.has(names[f] as string)) o[names[f] as string] = v;
    }
    return o;
  }
  for (let f = 0; f < names.length; f++) o[names[f] as string] = (readers[f] as Reader)(slot);
  return o;
}

/** A JSON array of the items in `slots`. */
export function itemsJson(projection: ItemProjection, slots: ArrayLike<number>): string {
  const items = new Array<Record<string, string | number>>(slots.length);
  for (let i = 0; i < slots.length; i++) items[i] = projectItem(projection, slots[i] as number);
  const json = JSON.stringify(items);
  // ListDataID is always the first key, so `{"ListDataID":"` only occurs at the start of an item
  // (inside a string value the quotes would be escaped).
  return projection.idsAsNumbers ? json.replace(/\{"ListDataID":"(\d+)"/g, '{"ListDataID":$1') : json;
}
