import { ApiError, STATUS, badRequest } from './api-error.js';
import { READ_ONLY_FIELDS } from './field-types.js';
import { snowflakeId } from './ids.js';
import type { QueryLag } from './query-lag.js';
import type { ListData, TextColumn } from './store.js';
import type { ItemChange } from './item-hooks.js';

/** Told about every item write (list item event subscriptions). */
export interface ItemChangeSink {
  changed(list: ListData, slot: number, change: ItemChange): void;
}

/**
 * Item writes shared by the /v1 API, the admin API and simulated activity:
 * validation of `Data`, creation with a fresh ListDataID, version-checked
 * updates, deletes. Values that do not fit a field's type are stored as given.
 * Every write tells the query lag (when given) so queries can keep showing
 * the item's earlier state for a while.
 */

export type WriteData = Record<string, string>;

/** Checks a `Data` object: an object, known writable fields, string values. */
export function validateWriteData(list: ListData, data: unknown): WriteData {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw badRequest('Data must be an object whose keys are field names and whose values are strings');
  }
  const out: WriteData = {};
  for (const [name, value] of Object.entries(data as Record<string, unknown>)) {
    if (!list.field(name)) throw badRequest(`Data: unknown field "${name}" in list ${list.appID}/${list.listID}`);
    if (READ_ONLY_FIELDS.has(name)) throw badRequest(`Data: field "${name}" is a system field and cannot be written`);
    if (typeof value !== 'string') {
      throw badRequest(
        `Data: the value of field "${name}" must be a string (got ${value === null ? 'null' : typeof value}); multi-value fields take a JSON-encoded array string`,
      );
    }
    out[name] = value;
  }
  return out;
}

/** A ListDataID for an item created at `ms`: increasing with the instant, unique in the list. */
export function newItemId(list: ListData, ms: number): bigint {
  let id = snowflakeId(ms, 0);
  if (id > list.maxId) return id;
  while (list.findSlot(id) !== -1) id++;
  return id;
}

export interface CreateOptions {
  userId: string;
  /** Instant of creation (ms), for the ID. */
  createdMs: number;
  /** Created in platform naive seconds. */
  createdNaive: number;
  lag?: QueryLag;
  events?: ItemChangeSink;
}

/** Creates an item; returns its ListDataID. */
export function createItem(list: ListData, data: WriteData, opts: CreateOptions): string {
  const values = list.dataColumns.map((col) => data[col.meta.FieldName] ?? col.meta.DefaultValue);
  const id = newItemId(list, opts.createdMs);
  const slot = list.insertRow(
    { id, version: 1, created: opts.createdNaive, modified: opts.createdNaive, createdBy: opts.userId, modifiedBy: opts.userId },
    values,
  );
  opts.lag?.created(list, slot);
  opts.events?.changed(list, slot, 'created');
  return id.toString();
}

/** Finds an item by its ID string, or throws 40400. */
export function requireItem(list: ListData, itemID: string): number {
  const slot = /^\d{1,20}$/.test(itemID) ? list.findSlot(BigInt(itemID)) : -1;
  if (slot === -1) throw new ApiError(STATUS.notFound, `Item ${itemID} not found in list ${list.appID}/${list.listID}`);
  return slot;
}

export interface UpdateOptions {
  userId: string;
  modifiedNaive: number;
  /** The caller's RowVersion; 0 overwrites; undefined skips the check. */
  expectedVersion?: number;
  lag?: QueryLag;
  events?: ItemChangeSink;
}

/** Applies a change: checks RowVersion, writes the given fields, bumps RowVersion, sets Modified/ModifiedBy. */
export function updateItem(list: ListData, slot: number, data: WriteData, opts: UpdateOptions): number {
  const current = list.versions[slot] as number;
  if (opts.expectedVersion !== undefined && opts.expectedVersion !== 0 && opts.expectedVersion !== current) {
    throw new ApiError(STATUS.conflict, 'RowVersion mismatch');
  }
  opts.lag?.beforeChange(list, slot);
  for (const [name, value] of Object.entries(data)) {
    list.setValue(slot, list.column(name) as TextColumn, value);
  }
  list.touchRow(slot, opts.modifiedNaive, opts.userId);
  opts.events?.changed(list, slot, 'modified');
  return list.versions[slot] as number;
}

/** Deletes the item in `slot` (no tombstone); returns its ListDataID. */
export function deleteItem(list: ListData, slot: number, opts: { lag?: QueryLag; events?: ItemChangeSink } = {}): string {
  const id = (list.ids[slot] as bigint).toString();
  opts.events?.changed(list, slot, 'deleted');
  opts.lag?.beforeDelete(list, slot);
  list.remove(slot);
  return id;
}
