import type { FieldFlagStyle, FieldMetaArrangement } from './field-meta-forms.js';
import { generateDirectory } from './directory-data.js';
import { type FieldSpec, userFieldMeta } from './field-types.js';
import { snowflakeId, userIdFor } from './ids.js';
import { PlatformZone } from './platform-time.js';
import { Prng, deriveSeed } from './prng.js';
import {
  GENERATED_SPAN_DAYS,
  SAMPLE_DEFAULT_ITEMS,
  SAMPLE_USER_COUNT,
  buildSampleList,
  generateItems,
  generateUsers,
  genericRowFiller,
} from './sample.js';
import { SeedError, type SeedFile, type SeedList, parseSeedFile } from './seed.js';
import { EmulatorStore, ListData, type User } from './store.js';

/** Builds the emulator's data from the start/reset options: the sample, a seed file, or both. */

export const DEFAULT_API_KEY = 'emulator-key';
export const DEFAULT_TIME_ZONE = 'UTC';

export interface StoreOptions {
  sample?: boolean;
  items?: number;
  seedNumber?: number;
  seed?: SeedFile;
  timeZone?: string;
  apiKeys?: string[];
  /** Instant the generated data is anchored to (ms). */
  referenceMs: number;
  /** Days before the reference instant that generated Created dates spread over (default GENERATED_SPAN_DAYS). */
  spanDays?: number;
}

function seedUsers(seed: SeedFile['users'], seedNumber: number): User[] {
  if (seed === undefined) return generateUsers(SAMPLE_USER_COUNT, seedNumber);
  if (!Array.isArray(seed)) return generateUsers(seed.count, seedNumber);
  return seed.map((u, i) => {
    const account = u.Account ?? u.Name.toLowerCase().replace(/[^a-z0-9]+/g, '.');
    return {
      UserID: u.UserID ?? userIdFor(seedNumber, i),
      Name: u.Name,
      Email: u.Email ?? `${account}@example.com`,
      Account: account,
      Photo: u.Photo ?? '',
      LineManager: u.LineManager ?? '',
    };
  });
}

/** The IDs the seed's items give themselves (`ListDataID`: 1 to 19 digits, each once). */
function explicitSeedIds(items: readonly Record<string, unknown>[], path: string): Set<bigint> {
  const explicitIds = new Set<bigint>();
  items.forEach((item, j) => {
    const raw = item['ListDataID'];
    if (raw === undefined) return;
    if (typeof raw !== 'string' || !/^\d{1,19}$/.test(raw)) {
      throw new SeedError(`Invalid seed: ${path}.items[${j}].ListDataID: must be a string of 1 to 19 digits (got ${JSON.stringify(raw)})`);
    }
    const id = BigInt(raw);
    if (explicitIds.has(id)) throw new SeedError(`Invalid seed: ${path}.items[${j}].ListDataID: ${raw} is used twice`);
    explicitIds.add(id);
  });
  return explicitIds;
}

function buildSeedList(def: SeedList, index: number, store: EmulatorStore, seedNumber: number): ListData {
  const { zone, users, referenceMs, spanDays } = store;
  const path = `lists[${index}]`;
  const titleDef = def.fields.find((f) => f.FieldName === 'Title');
  const list = new ListData({
    appID: def.appID,
    listID: def.listID,
    title: def.title ?? def.listID,
    description: def.description ?? '',
    createdNaive: zone.naiveFromMs(referenceMs - (spanDays + 1) * 86_400_000),
    createdBy: (users[0] as User).UserID,
    titleDisplayName: titleDef?.DisplayName ?? 'Title',
  });
  for (const f of def.fields) if (f.FieldName !== 'Title') list.addField(userFieldMeta(def.appID, def.listID, f as FieldSpec));

  const items = def.items ?? [];
  const explicitIds = explicitSeedIds(items, path);

  const userIds = new Set(users.map((u) => u.UserID));
  const columnIndex = new Map(list.dataColumns.map((c, i) => [c.meta.FieldName, i]));
  let lastMs = -1;
  let seq = 0;
  items.forEach((item, j) => {
    const at = `${path}.items[${j}]`;
    const fail = (key: string, what: string): never => {
      throw new SeedError(`Invalid seed: ${at}.${key}: ${what}`);
    };
    const row = list.dataColumns.map((c) => c.meta.DefaultValue);
    let created: number | undefined;
    let modified: number | undefined;
    let version = 1;
    let createdBy = (users[0] as User).UserID;
    let modifiedBy: string | undefined;
    for (const [key, value] of Object.entries(item)) {
      switch (key) {
        case 'ListDataID':
          break;
        case 'Created':
        case 'Modified': {
          const t = typeof value === 'string' ? zone.parseTimestamp(value) : undefined;
          if (t === undefined)
            fail(key, `must be "YYYY-MM-DD HH:mm:ss" (platform time) or an ISO 8601 instant (got ${JSON.stringify(value)})`);
          if (key === 'Created') created = t;
          else modified = t;
          break;
        }
        case 'RowVersion': {
          const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
          if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 2_000_000_000)
            fail(key, `must be an integer >= 1 (got ${JSON.stringify(value)})`);
          version = n as number;
          break;
        }
        case 'CreatedBy':
        case 'ModifiedBy':
          if (typeof value !== 'string') fail(key, `must be a user ID string (got ${JSON.stringify(value)})`);
          if (!userIds.has(value as string)) fail(key, `user ${JSON.stringify(value)} is not in the users directory`);
          if (key === 'CreatedBy') createdBy = value as string;
          else modifiedBy = value as string;
          break;
        default: {
          const ci = columnIndex.get(key);
          if (ci === undefined) fail(key, `unknown field; the list's fields are ${[...columnIndex.keys()].join(', ')}`);
          if (typeof value !== 'string')
            fail(key, `must be a string (got ${JSON.stringify(value)}); multi-value fields take a JSON-encoded array string`);
          row[ci as number] = value as string;
        }
      }
    }
    const createdNaive = created ?? zone.naiveFromMs(referenceMs - (items.length - j) * 60_000);
    const modifiedNaive = modified ?? createdNaive;
    if (modifiedNaive < createdNaive) fail('Modified', 'is before Created');
    const rawId = item['ListDataID'];
    let id: bigint;
    if (typeof rawId === 'string') id = BigInt(rawId);
    else {
      const ms = zone.msFromNaive(createdNaive);
      seq = ms === lastMs ? seq + 1 : 0;
      lastMs = ms;
      id = snowflakeId(ms, seq);
      while (explicitIds.has(id)) id++;
      explicitIds.add(id);
    }
    list.appendRow({ id, version, created: createdNaive, modified: modifiedNaive, createdBy, modifiedBy: modifiedBy ?? createdBy }, row);
  });
  if (def.generate) {
    const prng = new Prng(deriveSeed(seedNumber, def.appID, def.listID));
    generateItems(list, def.generate, prng, store, genericRowFiller(list, users), items.length);
  }
  list.finishBulk();
  return list;
}

/** The seed keys that set the emulator rather than its data. */
export interface SeedSettings {
  referenceDate?: string;
  fieldMeta?: FieldMetaArrangement;
  fieldFlags?: FieldFlagStyle;
  queryLagMs?: number;
}

/** Reads a seed's settings keys (validating the seed). */
export function seedSettingsOf(seed: SeedFile | undefined): SeedSettings {
  if (seed === undefined) return {};
  const s = parseSeedFile(seed);
  const out: SeedSettings = {};
  if (s.referenceDate !== undefined) out.referenceDate = s.referenceDate;
  if (s.fieldMeta !== undefined) out.fieldMeta = s.fieldMeta;
  if (s.fieldFlags !== undefined) out.fieldFlags = s.fieldFlags;
  if (s.queryLagMs !== undefined) out.queryLagMs = s.queryLagMs;
  return out;
}

/** The instant of a `YYYY-MM-DD` reference date: its start in UTC. */
export function referenceMsOf(date: string): number {
  const ms = Date.parse(`${date}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || !Number.isFinite(ms))
    throw new RangeError(`referenceDate: expected YYYY-MM-DD (got ${JSON.stringify(date)})`);
  return ms;
}

/** Creates the store. Throws SeedError (bad seed) or RangeError (bad time zone). */
export function buildStore(opts: StoreOptions): EmulatorStore {
  const seed = opts.seed === undefined ? undefined : parseSeedFile(opts.seed);
  const zone = new PlatformZone(opts.timeZone ?? seed?.timeZone ?? DEFAULT_TIME_ZONE);
  const seedNumber = opts.seedNumber ?? seed?.seedNumber ?? 1;
  const apiKeys = opts.apiKeys ?? seed?.apiKeys ?? [DEFAULT_API_KEY];
  if (apiKeys.length === 0) throw new SeedError('apiKeys: at least one API key is needed');
  const users = seedUsers(seed?.users, seedNumber);
  const spanDays = opts.spanDays ?? GENERATED_SPAN_DAYS;
  if (!Number.isInteger(spanDays) || spanDays < 1) throw new SeedError(`spanDays: must be a whole number >= 1 (got ${spanDays})`);
  const store = new EmulatorStore({ zone, users, apiKeys, referenceMs: opts.referenceMs, spanDays });
  store.directory = seed?.directory ?? generateDirectory(users);
  const sample = opts.sample ?? seed === undefined;
  if (sample) {
    const items = opts.items ?? SAMPLE_DEFAULT_ITEMS;
    if (!Number.isInteger(items) || items < 0) throw new SeedError(`items: must be a whole number >= 0 (got ${items})`);
    store.addList(buildSampleList(store, items, seedNumber));
  }
  seed?.lists.forEach((def, i) => {
    if (store.list(def.appID, def.listID))
      throw new SeedError(`Invalid seed: lists[${i}]: list ${def.appID}/${def.listID} already exists (the sample list?)`);
    store.addList(buildSeedList(def, i, store, seedNumber));
  });
  return store;
}
