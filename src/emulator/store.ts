import type { Directory, User } from './directory-data.js';
import { type FieldMeta, type ValueKind, systemFieldMetas, valueKindOf } from './field-types.js';
import { PlatformZone, SECONDS_PER_DAY, formatNaive, parseNaive } from './platform-time.js';

/**
 * The emulator's data: users and lists. A list keeps its items in columns
 * (typed arrays for the system fields, one string array per other field, and
 * a numeric key array for indexed number/date fields) so a million items stay
 * compact and scans are fast. Items live in "slots"; `order` holds the live
 * slots sorted by ListDataID, which is also the final tie-break of every sort.
 */

export type { User };

export interface TextColumn {
  readonly meta: FieldMeta;
  readonly kind: ValueKind;
  values: string[];
  /** Numeric sort/filter key per slot for indexed number/date/datetime fields (NaN = empty or not parseable). */
  key: Float64Array | null;
}

/** An item as exported: every field, system ones included, values as the API writes them. */
export type ItemRecord = Record<string, string | number>;

const NUMERIC_RE = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

/** The numeric key of a value for comparisons: a number, a day number or naive seconds. */
export function keyOf(kind: ValueKind, value: string): number {
  if (value === '') return NaN;
  switch (kind) {
    case 'number':
      return NUMERIC_RE.test(value) ? Number(value) : NaN;
    case 'date': {
      const n = parseNaive(value);
      return n === undefined ? NaN : Math.floor(n / SECONDS_PER_DAY);
    }
    case 'datetime':
      return parseNaive(value) ?? NaN;
    default:
      return NaN;
  }
}

function needsKey(meta: FieldMeta, kind: ValueKind): boolean {
  return meta.IsIndex && (kind === 'number' || kind === 'date' || kind === 'datetime');
}

export interface RowSystemValues {
  id: bigint;
  version: number;
  created: number;
  modified: number;
  createdBy: string;
  modifiedBy: string;
}

export class ListData {
  readonly appID: string;
  readonly listID: string;
  title: string;
  description: string;
  createdNaive: number;
  modifiedNaive: number;
  createdBy: string;
  modifiedBy: string;

  private readonly leading: FieldMeta[];
  private readonly trailing: FieldMeta[];
  private readonly userFields: FieldMeta[] = [];
  private readonly metaByName = new Map<string, FieldMeta>();
  private readonly columnsByName = new Map<string, TextColumn>();
  private readonly fieldGenerations = new Map<string, number>();
  /** Title then the user-defined fields, in definition order: the columns `appendRow` values align with. */
  readonly dataColumns: TextColumn[] = [];
  readonly createdByColumn: TextColumn;
  readonly modifiedByColumn: TextColumn;

  ids = new BigUint64Array(0);
  versions = new Int32Array(0);
  created = new Float64Array(0);
  modified = new Float64Array(0);
  alive = new Uint8Array(0);
  private capacity = 0;
  /** Slots ever used (dead ones included). */
  slotCount = 0;
  /** Live slots in ascending ListDataID order. */
  order: number[] = [];
  private orderSorted = true;
  /** Bumped on every change; query caches are keyed on it. */
  mutation = 0;
  maxId = 0n;

  constructor(init: {
    appID: string;
    listID: string;
    title: string;
    description?: string;
    createdNaive: number;
    createdBy: string;
    titleDisplayName?: string;
  }) {
    this.appID = init.appID;
    this.listID = init.listID;
    this.title = init.title;
    this.description = init.description ?? '';
    this.createdNaive = init.createdNaive;
    this.modifiedNaive = init.createdNaive;
    this.createdBy = init.createdBy;
    this.modifiedBy = init.createdBy;
    const sys = systemFieldMetas(init.appID, init.listID, init.titleDisplayName);
    this.leading = sys.leading;
    this.trailing = sys.trailing;
    for (const m of [...this.leading, ...this.trailing]) this.metaByName.set(m.FieldName, m);
    const title = this.makeColumn(this.metaByName.get('Title') as FieldMeta);
    this.dataColumns.push(title);
    this.createdByColumn = this.makeColumn(this.metaByName.get('CreatedBy') as FieldMeta);
    this.modifiedByColumn = this.makeColumn(this.metaByName.get('ModifiedBy') as FieldMeta);
  }

  get key(): string {
    return listKey(this.appID, this.listID);
  }

  get count(): number {
    return this.order.length;
  }

  /** All fields in output order: ListDataID, RowVersion, Title, user fields, Created, Modified, CreatedBy, ModifiedBy. */
  fields(): FieldMeta[] {
    return [...this.leading, ...this.userFields, ...this.trailing];
  }

  field(name: string): FieldMeta | undefined {
    return this.metaByName.get(name);
  }

  column(name: string): TextColumn | undefined {
    return this.columnsByName.get(name);
  }

  private makeColumn(meta: FieldMeta, fill = ''): TextColumn {
    const kind = valueKindOf(meta);
    const values: string[] = [];
    for (let i = 0; i < this.slotCount; i++) values.push(fill);
    const col: TextColumn = { meta, kind, values, key: null };
    if (needsKey(meta, kind)) {
      col.key = new Float64Array(this.capacity);
      col.key.fill(keyOf(kind, fill), 0, this.slotCount);
    }
    this.columnsByName.set(meta.FieldName, col);
    return col;
  }

  /** Adds a user-defined field; existing items get its DefaultValue. */
  addField(meta: FieldMeta): void {
    if (this.metaByName.has(meta.FieldName)) throw new Error(`field "${meta.FieldName}" already exists`);
    this.userFields.push(meta);
    this.metaByName.set(meta.FieldName, meta);
    this.dataColumns.push(this.makeColumn(meta, meta.DefaultValue));
    this.mutation++;
  }

  /** How many fields have held each FieldName, counting the one asked for now (FieldIDs of later ones differ). */
  nextFieldGeneration(name: string): number {
    const n = (this.fieldGenerations.get(name) ?? (this.metaByName.has(name) ? 1 : 0)) + 1;
    this.fieldGenerations.set(name, n);
    return n;
  }

  /** Deletes a user-defined field and its values (items' versions do not move, as on the platform). */
  removeField(name: string): FieldMeta {
    const meta = this.metaByName.get(name);
    if (!meta || meta.IsSystem) throw new Error(`no user-defined field "${name}"`);
    if (!this.fieldGenerations.has(name)) this.fieldGenerations.set(name, 1);
    this.userFields.splice(this.userFields.indexOf(meta), 1);
    this.metaByName.delete(name);
    const col = this.columnsByName.get(name)!;
    this.dataColumns.splice(this.dataColumns.indexOf(col), 1);
    this.columnsByName.delete(name);
    this.mutation++;
    return meta;
  }

  /**
   * Gives a field's slot to another field (`meta`, same FieldName, another FieldID), in the old
   * field's place: existing items get the new field's DefaultValue, or keep the slot's old values
   * (`keepValues`: a platform that does not clear a reused slot). Versions do not move.
   */
  replaceField(meta: FieldMeta, keepValues: boolean): void {
    const old = this.metaByName.get(meta.FieldName);
    if (!old || old.IsSystem) throw new Error(`no user-defined field "${meta.FieldName}"`);
    const oldCol = this.columnsByName.get(meta.FieldName)!;
    const col = this.makeColumn(meta, meta.DefaultValue);
    if (keepValues) for (let slot = 0; slot < this.slotCount; slot++) this.setValue(slot, col, oldCol.values[slot] ?? '');
    this.userFields[this.userFields.indexOf(old)] = meta;
    this.metaByName.set(meta.FieldName, meta);
    this.dataColumns[this.dataColumns.indexOf(oldCol)] = col;
    this.mutation++;
  }

  /** Makes room for `n` more slots without repeated growth. */
  reserve(n: number): void {
    this.grow(this.slotCount + n);
  }

  private grow(minCapacity: number): void {
    if (minCapacity <= this.capacity) return;
    const cap = Math.max(minCapacity, Math.ceil(this.capacity * 1.5), 64);
    const ids = new BigUint64Array(cap);
    ids.set(this.ids);
    this.ids = ids;
    const versions = new Int32Array(cap);
    versions.set(this.versions);
    this.versions = versions;
    const created = new Float64Array(cap);
    created.set(this.created);
    this.created = created;
    const modified = new Float64Array(cap);
    modified.set(this.modified);
    this.modified = modified;
    const alive = new Uint8Array(cap);
    alive.set(this.alive);
    this.alive = alive;
    for (const col of this.columnsByName.values()) {
      if (col.key) {
        const key = new Float64Array(cap);
        key.set(col.key);
        col.key = key;
      }
    }
    this.capacity = cap;
  }

  /**
   * Appends an item at the end of the ID order (bulk seeding: call
   * `finishBulk()` afterwards if IDs were not ascending). `values` aligns with
   * `dataColumns`.
   */
  appendRow(sys: RowSystemValues, values: readonly string[]): number {
    if (this.slotCount === this.capacity) this.grow(this.slotCount + 1);
    const slot = this.slotCount++;
    this.ids[slot] = sys.id;
    this.versions[slot] = sys.version;
    this.created[slot] = sys.created;
    this.modified[slot] = sys.modified;
    this.alive[slot] = 1;
    this.createdByColumn.values.push(sys.createdBy);
    this.modifiedByColumn.values.push(sys.modifiedBy);
    const cols = this.dataColumns;
    for (let i = 0; i < cols.length; i++) {
      const col = cols[i] as TextColumn;
      const v = values[i] ?? col.meta.DefaultValue;
      col.values.push(v);
      if (col.key) col.key[slot] = keyOf(col.kind, v);
    }
    if (this.order.length > 0 && sys.id <= this.maxId) this.orderSorted = false;
    if (sys.id > this.maxId) this.maxId = sys.id;
    this.order.push(slot);
    this.mutation++;
    return slot;
  }

  /** Ends bulk seeding: restores ID order and trims the columns' spare capacity. */
  finishBulk(): void {
    if (!this.orderSorted) {
      const ids = this.ids;
      this.order.sort((a, b) => ((ids[a] as bigint) < (ids[b] as bigint) ? -1 : 1));
      this.orderSorted = true;
    }
    if (this.slotCount > 10_000) {
      for (const col of this.columnsByName.values()) col.values = col.values.slice();
      this.order = this.order.slice();
    }
    this.mutation++;
  }

  /** Inserts one item at its place in the ID order. */
  insertRow(sys: RowSystemValues, values: readonly string[]): number {
    const beforeMax = sys.id > this.maxId || this.order.length === 0;
    const slot = this.appendRow(sys, values);
    if (!beforeMax) {
      this.order.pop();
      const pos = this.lowerBound(sys.id);
      this.order.splice(pos, 0, slot);
      this.orderSorted = true;
    }
    return slot;
  }

  private lowerBound(id: bigint): number {
    const ids = this.ids;
    const order = this.order;
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((ids[order[mid] as number] as bigint) < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The live slot holding `id`, or -1. */
  findSlot(id: bigint): number {
    const pos = this.lowerBound(id);
    const slot = this.order[pos];
    return slot !== undefined && this.ids[slot] === id ? slot : -1;
  }

  setValue(slot: number, col: TextColumn, value: string): void {
    col.values[slot] = value;
    if (col.key) col.key[slot] = keyOf(col.kind, value);
  }

  /** Records a change of an item: RowVersion + 1 (or `version`), Modified, ModifiedBy. */
  touchRow(slot: number, modified: number, modifiedBy: string, version?: number): void {
    this.versions[slot] = version ?? (this.versions[slot] as number) + 1;
    this.modified[slot] = modified;
    this.modifiedByColumn.values[slot] = modifiedBy;
    this.mutation++;
  }

  /**
   * Copies an item into a new slot that is not part of the list (not in
   * `order`, not alive): what a lagging query index still shows. Returns the
   * copy's slot.
   */
  copyToGhost(slot: number): number {
    if (this.slotCount === this.capacity) this.grow(this.slotCount + 1);
    const ghost = this.slotCount++;
    this.ids[ghost] = this.ids[slot] as bigint;
    this.versions[ghost] = this.versions[slot] as number;
    this.created[ghost] = this.created[slot] as number;
    this.modified[ghost] = this.modified[slot] as number;
    this.alive[ghost] = 0;
    for (const col of this.columnsByName.values()) {
      col.values[ghost] = col.values[slot] ?? '';
      if (col.key) col.key[ghost] = col.key[slot] as number;
    }
    return ghost;
  }

  remove(slot: number): void {
    const id = this.ids[slot] as bigint;
    const pos = this.lowerBound(id);
    if (this.order[pos] !== slot) return;
    this.order.splice(pos, 1);
    this.alive[slot] = 0;
    for (const col of this.columnsByName.values()) col.values[slot] = '';
    this.mutation++;
  }

  /** Every field of an item, system ones included (IDs as strings). */
  record(slot: number): ItemRecord {
    const out: ItemRecord = {};
    for (const meta of this.fields()) {
      switch (meta.FieldName) {
        case 'ListDataID':
          out[meta.FieldName] = (this.ids[slot] as bigint).toString();
          break;
        case 'RowVersion':
          out[meta.FieldName] = this.versions[slot] as number;
          break;
        case 'Created':
          out[meta.FieldName] = formatNaive(this.created[slot] as number);
          break;
        case 'Modified':
          out[meta.FieldName] = formatNaive(this.modified[slot] as number);
          break;
        default:
          out[meta.FieldName] = this.columnsByName.get(meta.FieldName)?.values[slot] ?? '';
      }
    }
    return out;
  }
}

export function listKey(appID: string, listID: string): string {
  return `${appID}\u0000${listID}`;
}

/** Users, API keys and lists: everything a reset replaces. */
export class EmulatorStore {
  readonly zone: PlatformZone;
  readonly users: User[];
  /** Departments, groups, positions (see directory-data.ts). */
  directory: Directory = {};
  readonly apiKeys: readonly string[];
  readonly lists = new Map<string, ListData>();
  /** Instant the generated data is anchored to (ms). */
  readonly referenceMs: number;
  /** Days before the reference instant that generated items' Created dates spread over. */
  readonly spanDays: number;

  constructor(init: { zone: PlatformZone; users: User[]; apiKeys: readonly string[]; referenceMs: number; spanDays: number }) {
    if (init.users.length === 0) throw new Error('the store needs at least one user');
    this.zone = init.zone;
    this.users = init.users;
    this.apiKeys = init.apiKeys;
    this.referenceMs = init.referenceMs;
    this.spanDays = init.spanDays;
  }

  /** The user the API key acts as: CreatedBy/ModifiedBy of /v1 writes. */
  get apiUser(): User {
    return this.users[0] as User;
  }

  /** "Another user" for admin edits and simulated activity. */
  get otherUser(): User {
    return (this.users[1] ?? this.users[0]) as User;
  }

  list(appID: string, listID: string): ListData | undefined {
    return this.lists.get(listKey(appID, listID));
  }

  addList(list: ListData): void {
    if (this.lists.has(list.key)) throw new Error(`list ${list.appID}/${list.listID} is defined twice`);
    this.lists.set(list.key, list);
  }
}
