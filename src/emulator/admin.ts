import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { ActivityError, type ActivitySettings } from './activity.js';
import { ApiError, STATUS } from './api-error.js';
import { MULTI_VALUE_NUMBERS, type EmulatorState, type ResetOptions } from './emulator-state.js';
import { FaultSettingsError } from './faults.js';
import { type FieldSpec, fieldIdFor, userFieldMeta } from './field-types.js';
import { readBody, sendJson } from './http-io.js';
import { FIELD_FLAG_STYLES, FIELD_META_ARRANGEMENTS } from './field-meta-forms.js';
import { ItemHookError } from './item-hooks.js';
import { createItem, deleteItem, requireItem, updateItem, validateWriteData } from './items.js';
import { formatNaive } from './platform-time.js';
import { SeedError, fieldSchema } from './seed.js';
import type { ListData } from './store.js';
import { formatZodIssues } from './validation.js';
import type { HookEventBody } from './webhooks.js';
import { coerceError } from '../errors.js';

/**
 * The admin API under /_admin: no API key, never rate-limited or faulted,
 * plain JSON in and out (no envelope). Used by tests, the demo and people
 * poking at the emulator: reset, faults, request log, stats, export, edits as
 * another user, schema changes, activity, webhooks, clock.
 */

export class AdminError extends Error {
  readonly httpStatus: number;
  constructor(httpStatus: number, message: string) {
    super(message);
    this.name = 'AdminError';
    this.httpStatus = httpStatus;
  }
}

const STREAMED = Symbol('streamed');
type AdminResult = unknown;

const resetSchema = z.strictObject({
  sample: z.boolean().optional(),
  items: z.number().int().min(0).optional(),
  seedNumber: z.number().int().optional(),
  seed: z.unknown().optional(),
  timeZone: z.string().optional(),
  apiKeys: z.array(z.string().min(1)).min(1).optional(),
  referenceDate: z.string().optional(),
});

const createSchema = z.strictObject({
  Data: z.unknown().optional(),
  Created: z.string().optional(),
  UserID: z.string().optional(),
});

const editSchema = z.strictObject({
  Data: z.unknown().optional(),
  Modified: z.string().optional(),
  UserID: z.string().optional(),
  RowVersion: z.number().int().min(0).optional(),
});

/** Items a bulk edit changes between two turns of the event loop. */
const BULK_EDIT_STEP = 100;

const bulkEditSchema = z.strictObject({
  Data: z.unknown().optional(),
  /** The first `count` items (by ID); all by default. */
  count: z.number().int().min(0).optional(),
  UserID: z.string().optional(),
});

const fireSchema = z.strictObject({
  subscriptionId: z.string().optional(),
  event: z.record(z.string(), z.unknown()).optional(),
});

/** Every fault setting back to its default (the fault seed stays). */
const CLEAR_FAULTS = {
  latencyMs: null,
  jitterMs: null,
  errorRate: null,
  timeoutRate: null,
  timeoutMs: null,
  dropRate: null,
  malformedRate: null,
  loseWriteAnswers: null,
  rateLimitStorm: null,
  rateLimitAtRequest: null,
  emptyPages: null,
  pageFault: null,
  faultPaths: null,
};

const settingsSchema = z.strictObject({
  fieldMeta: z.enum(FIELD_META_ARRANGEMENTS).optional(),
  fieldFlags: z.enum(FIELD_FLAG_STYLES).optional(),
  queryLagMs: z.number().int().min(0).max(600_000).optional(),
  unknownItem: z
    .strictObject({
      httpStatus: z.number().int().min(200).max(599),
      status: z
        .number()
        .int()
        .refine((n) => n !== 0, 'must not be 0'),
    })
    .optional(),
  omitEmptyValues: z.boolean().optional(),
  systemFields: z.array(z.string().min(1)).optional(),
  ignoredWriteFields: z.array(z.string().min(1)).optional(),
  multiValueNumbers: z.enum(MULTI_VALUE_NUMBERS).optional(),
});

/** How a slot is given to another field: the new field's FieldID (default: a fresh one), and whether items keep the slot's old values. */
const reuseSchema = z.strictObject({ FieldID: z.string().min(1).optional(), keepValues: z.boolean().optional() });

/** A field's new kind: the storage kind, the control, or both. */
const kindSchema = z
  .strictObject({ FieldType: z.string().min(1).optional(), Type: z.string().min(1).optional() })
  .refine((k) => k.FieldType !== undefined || k.Type !== undefined, 'name FieldType, Type or both');

const redeliverSchema = z.strictObject({ deliveryIndex: z.number().int().min(0) });
const clockSchema = z.strictObject({ now: z.string().nullable() });

function parse<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const r = schema.safeParse(body);
  if (!r.success) throw new AdminError(400, `Invalid ${what} body:\n${formatZodIssues(r.error, 'body')}`);
  return r.data;
}

function jsonBody(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new AdminError(400, `The body is not valid JSON: ${coerceError(e).message}`);
  }
}

/**
 * A user-defined field from an admin body. Its FieldID is `id` when given, else derived from the
 * name and the slot's generation: a slot given to a new field gets a FieldID it never had.
 */
function newFieldMeta(list: ListData, body: unknown, id?: string): ReturnType<typeof userFieldMeta> {
  const r = fieldSchema.safeParse(body);
  if (!r.success) throw new AdminError(400, `Invalid field:\n${formatZodIssues(r.error, 'body')}`);
  const meta = userFieldMeta(list.appID, list.listID, r.data as FieldSpec);
  const generation = list.nextFieldGeneration(meta.FieldName);
  if (id !== undefined) meta.FieldID = id;
  else if (generation > 1) meta.FieldID = fieldIdFor(list.appID, list.listID, `${meta.FieldName}#${generation}`);
  return meta;
}

/** Deletes a user-defined field and its values; the platform may later give its slot (FieldName) to another field. */
function deleteField(state: EmulatorState, list: ListData, name: string): ReturnType<typeof userFieldMeta> {
  const field = list.field(name);
  if (!field || field.IsSystem) throw new AdminError(404, `no user-defined field "${name}" in list ${list.appID}/${list.listID}`);
  const meta = list.removeField(name);
  fieldsChanged(state, list);
  return meta;
}

/**
 * Changes a field's kind (`FieldType` and/or `Type`), as a list designer does: the same field (its
 * FieldID), the same slot, items keep their values and versions; later writes may hold the new kind's values.
 */
function changeKind(state: EmulatorState, list: ListData, name: string, kind: unknown): ReturnType<typeof userFieldMeta> {
  const old = list.field(name);
  if (!old || old.IsSystem) throw new AdminError(404, `no user-defined field "${name}" in list ${list.appID}/${list.listID}`);
  const change = parse(kindSchema, kind, 'kind');
  const spec = { FieldName: name, FieldType: change.FieldType ?? old.FieldType, Type: change.Type ?? old.Type };
  const r = fieldSchema.safeParse(spec);
  if (!r.success) throw new AdminError(400, `Invalid kind:\n${formatZodIssues(r.error, 'kind')}`);
  const meta = { ...old, FieldType: r.data.FieldType, Type: r.data.Type } as ReturnType<typeof userFieldMeta>;
  list.replaceField(meta, true);
  fieldsChanged(state, list);
  return meta;
}

/** Gives slot `name` to another field: `reuse` is the new field (FieldName optional), plus FieldID and keepValues. */
function reuseSlot(state: EmulatorState, list: ListData, name: string, reuse: unknown): ReturnType<typeof userFieldMeta> {
  if (reuse === null || typeof reuse !== 'object' || Array.isArray(reuse))
    throw new AdminError(400, 'reuse: expected the new field as an object');
  const { FieldID, keepValues, ...spec } = reuse as Record<string, unknown>;
  const how = parse(reuseSchema, { FieldID, keepValues }, 'reuse');
  const meta = newFieldMeta(list, { FieldName: name, ...spec }, how.FieldID);
  if (list.field(name)) list.replaceField(meta, how.keepValues ?? false);
  else list.addField(meta);
  fieldsChanged(state, list);
  return meta;
}

function fieldsChanged(state: EmulatorState, list: ListData): void {
  list.modifiedNaive = state.now().naive;
  state.queries.clear();
}

function requireList(state: EmulatorState, appID: string, listID: string): ListData {
  const list = state.store.list(appID, listID);
  if (!list) throw new AdminError(404, `List ${appID}/${listID} not found`);
  return list;
}

function userOrDefault(state: EmulatorState, userId: string | undefined): string {
  if (userId === undefined) return state.store.otherUser.UserID;
  if (!state.store.users.some((u) => u.UserID === userId)) throw new AdminError(400, `UserID ${userId} is not in the users directory`);
  return userId;
}

function timestamp(state: EmulatorState, value: string, key: string): number {
  const t = state.store.zone.parseTimestamp(value);
  if (t === undefined)
    throw new AdminError(
      400,
      `${key}: expected "YYYY-MM-DD HH:mm:ss" (platform time) or an ISO 8601 instant (got ${JSON.stringify(value)})`,
    );
  return t;
}

async function exportList(state: EmulatorState, list: ListData, res: ServerResponse): Promise<typeof STREAMED> {
  const slots = list.order.slice();
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
  const write = (chunk: string): Promise<void> =>
    new Promise((resolve) => {
      if (res.write(chunk)) resolve();
      else res.once('drain', () => resolve());
    });
  await write(`{"fields":${JSON.stringify(list.fields())},"count":${slots.length},"items":[`);
  const CHUNK = 2000;
  let first = true;
  for (let i = 0; i < slots.length; i += CHUNK) {
    if (res.destroyed) return STREAMED;
    const parts: string[] = [];
    for (const slot of slots.slice(i, i + CHUNK)) {
      if (list.alive[slot] !== 1) continue;
      parts.push(JSON.stringify(list.record(slot)));
    }
    if (parts.length > 0) {
      await write((first ? '' : ',') + parts.join(','));
      first = false;
    }
  }
  res.end(']}');
  return STREAMED;
}

/** One admin request as the routes see it: its path's segments after `/_admin`, and `is` to match them. */
interface AdminRequest {
  state: EmulatorState;
  method: string;
  path: string;
  url: URL;
  text: string;
  res: ServerResponse;
  seg: (string | undefined)[];
  is: (method: string, ...parts: string[]) => boolean;
}

/** A route group's answer when the request is not one of its routes. */
const NEXT = Symbol('next');

async function route(
  state: EmulatorState,
  method: string,
  path: string,
  url: URL,
  text: string,
  res: ServerResponse,
): Promise<AdminResult> {
  const seg = path
    .split('/')
    .slice(2)
    .map((s) => decodeURIComponent(s)); // after "/_admin"
  const is = (m: string, ...parts: string[]): boolean =>
    method === m && seg.length === parts.length && parts.every((p, i) => p === '*' || p === seg[i]);
  if (seg.length === 0 || (seg.length === 1 && seg[0] === '')) {
    return { admin: 'listsync emulator', routes: ADMIN_ROUTES };
  }
  const r: AdminRequest = { state, method, path, url, text, res, seg, is };
  for (const group of [routeState, routeList, routeActivityAndHooks, routeClock]) {
    const result = await group(r);
    if (result !== NEXT) return result;
  }
  throw new AdminError(404, `No such admin endpoint: ${method} ${path}`);
}

/** Reset, settings, faults, the request log and its stats. */
function routeState(r: AdminRequest): AdminResult | typeof NEXT {
  const { state, text, url, is } = r;
  if (is('POST', 'reset')) {
    const body = parse(resetSchema, jsonBody(text), 'reset') as ResetOptions;
    const store = state.reset(body);
    return {
      lists: [...store.lists.values()].map((l) => ({ appID: l.appID, listID: l.listID, count: l.count })),
      users: store.users.length,
      timeZone: store.zone.name,
    };
  }
  if (is('GET', 'settings')) return state.settings;
  if (is('PUT', 'settings')) return state.updateSettings(parse(settingsSchema, jsonBody(text), 'settings'));
  if (is('GET', 'faults')) return state.faults.settings;
  if (is('PUT', 'faults')) return state.faults.update(jsonBody(text), Date.now());
  if (is('DELETE', 'faults')) return state.faults.update(CLEAR_FAULTS, Date.now());
  if (is('GET', 'requests')) {
    const since = url.searchParams.get('since');
    const n = since === null ? 0 : Number(since);
    if (!Number.isFinite(n)) throw new AdminError(400, `since: expected a sequence number (got ${since})`);
    return state.log.since(n);
  }
  if (is('DELETE', 'requests')) {
    state.log.clear();
    return { cleared: true };
  }
  if (is('GET', 'stats')) return state.log.stats();
  return NEXT;
}

/** A list's export, fields and items. */
async function routeList(r: AdminRequest): Promise<AdminResult | typeof NEXT> {
  const { state, text, is, res } = r;
  const [head, a, b, c, d] = r.seg;
  if (head !== 'lists' || a === undefined || b === undefined) return NEXT;
  const list = requireList(state, a, b);
  if (is('GET', 'lists', '*', '*', 'export')) return exportList(state, list, res);
  if (is('GET', 'lists', '*', '*', 'fields')) return list.fields();
  if (is('POST', 'lists', '*', '*', 'fields')) {
    const meta = newFieldMeta(list, jsonBody(text));
    if (list.field(meta.FieldName)) throw new AdminError(400, `FieldName: field "${meta.FieldName}" already exists`);
    list.addField(meta);
    fieldsChanged(state, list);
    return meta;
  }
  if (is('PATCH', 'lists', '*', '*', 'fields', '*')) {
    // {DisplayName}: renames the field (the storage name never changes). {delete: true}: deletes it and
    // its values. {reuse: {field, FieldID?, keepValues?}}: gives its slot to another field (a new FieldID).
    // {kind: {FieldType?, Type?}}: changes its kind (the same FieldID, values kept).
    const body = jsonBody(text) as { DisplayName?: unknown; delete?: unknown; reuse?: unknown; kind?: unknown } | null;
    if (body?.delete === true) return { deleted: deleteField(state, list, d!) };
    if (body?.reuse !== undefined) return reuseSlot(state, list, d!, body.reuse);
    if (body?.kind !== undefined) return changeKind(state, list, d!, body.kind);
    const meta = list.field(d!);
    if (!meta) throw new AdminError(404, `no field "${d}" in list ${a}/${b}`);
    if (typeof body?.DisplayName !== 'string' || body.DisplayName.trim() === '')
      throw new AdminError(400, 'DisplayName: expected a non-empty string (or delete: true, or reuse: {...})');
    meta.DisplayName = body.DisplayName;
    fieldsChanged(state, list);
    return meta;
  }
  return routeListItems(r, list, c, d);
}

async function routeListItems(
  r: AdminRequest,
  list: ListData,
  c: string | undefined,
  d: string | undefined,
): Promise<AdminResult | typeof NEXT> {
  const { state, text, is, method, seg } = r;
  if (is('POST', 'lists', '*', '*', 'items')) {
    const body = parse(createSchema, jsonBody(text), 'create');
    const data = validateWriteData(list, body.Data ?? {});
    const now = state.now();
    const createdNaive = body.Created === undefined ? now.naive : timestamp(state, body.Created, 'Created');
    const createdMs = body.Created === undefined ? now.ms : state.store.zone.msFromNaive(createdNaive);
    const id = createItem(list, data, {
      userId: userOrDefault(state, body.UserID),
      createdMs,
      createdNaive,
      lag: state.lag,
      events: state.itemHooks,
    });
    return { ListDataID: id, RowVersion: 1 };
  }
  if (is('POST', 'lists', '*', '*', 'bulk-edit')) {
    // A platform workflow editing many items at once: each gets Data, a new RowVersion and Modified, and its item event.
    const body = parse(bulkEditSchema, jsonBody(text), 'bulk-edit');
    const data = validateWriteData(list, body.Data ?? {});
    const slots = list.order.slice(0, body.count ?? list.order.length);
    const modifiedNaive = state.now().naive;
    const userId = userOrDefault(state, body.UserID);
    // In steps of BULK_EDIT_STEP items, yielding between them: the emulator keeps answering (and delivering) meanwhile.
    for (let i = 0; i < slots.length; i += BULK_EDIT_STEP) {
      for (const slot of slots.slice(i, i + BULK_EDIT_STEP))
        if (list.alive[slot]) updateItem(list, slot, data, { userId, modifiedNaive, lag: state.lag, events: state.itemHooks });
      await new Promise((next) => setImmediate(next));
    }
    return { edited: slots.length };
  }
  if (c === 'items' && d !== undefined && seg.length === 5) {
    const slot = requireItem(list, d);
    if (method === 'GET') return list.record(slot);
    if (method === 'PATCH') {
      const body = parse(editSchema, jsonBody(text), 'edit');
      const data = validateWriteData(list, body.Data ?? {});
      const modifiedNaive = body.Modified === undefined ? state.now().naive : timestamp(state, body.Modified, 'Modified');
      const opts = {
        userId: userOrDefault(state, body.UserID),
        modifiedNaive,
        lag: state.lag,
        events: state.itemHooks,
        ...(body.RowVersion === undefined ? {} : { expectedVersion: body.RowVersion }),
      };
      const version = updateItem(list, slot, data, opts);
      return { ListDataID: d, RowVersion: version };
    }
    if (method === 'DELETE') {
      deleteItem(list, slot, { lag: state.lag, events: state.itemHooks });
      return { ListDataID: d, deleted: true };
    }
  }
  return NEXT;
}

/** Activity, webhook subscriptions and deliveries, item events. */
async function routeActivityAndHooks(r: AdminRequest): Promise<AdminResult | typeof NEXT> {
  const { state, text, is, method } = r;
  if (is('DELETE', 'activity')) {
    state.activity.stop();
    return { settings: state.activity.current, totals: state.activity.totals };
  }
  if (is('GET', 'activity') || is('PUT', 'activity')) {
    if (method === 'PUT') {
      const body = jsonBody(text);
      if (body === null) state.activity.stop();
      else state.activity.start(body as ActivitySettings);
    }
    return { settings: state.activity.current, totals: state.activity.totals };
  }
  if (is('GET', 'hooks')) return { subscriptions: state.hooks.subscriptions(), deliveries: state.hooks.deliveries() };
  if (is('POST', 'hooks', 'fire')) {
    const body = parse(fireSchema, jsonBody(text), 'fire');
    const now = state.now();
    const event = state.hooks.taskEvent((body.event ?? {}) as Partial<HookEventBody>, {
      nowMs: now.ms,
      created: formatNaive(now.naive),
      assignee: state.store.otherUser.UserID,
    });
    try {
      return await state.hooks.fire(event, body.subscriptionId === undefined ? {} : { subscriptionId: body.subscriptionId });
    } catch (e) {
      throw new AdminError(404, coerceError(e).message);
    }
  }
  if (is('GET', 'item-hooks'))
    return { subscriptions: state.itemHooks.list(), delivery: state.itemHooks.settings, stats: state.itemHooks.stats };
  if (is('GET', 'item-hooks', 'delivery')) return state.itemHooks.settings;
  if (is('PUT', 'item-hooks', 'delivery')) return state.itemHooks.updateSettings(jsonBody(text));
  if (is('POST', 'hooks', 'redeliver')) {
    const body = parse(redeliverSchema, jsonBody(text), 'redeliver');
    try {
      return await state.hooks.redeliver(body.deliveryIndex);
    } catch (e) {
      throw new AdminError(404, coerceError(e).message);
    }
  }
  return NEXT;
}

/** The emulator's clock, pinned or not. */
function routeClock(r: AdminRequest): AdminResult | typeof NEXT {
  const { state, text, is, method } = r;
  if (is('GET', 'clock') || is('PUT', 'clock')) {
    if (method === 'PUT') {
      const body = parse(clockSchema, jsonBody(text), 'clock');
      if (body.now === null) state.clock.pin(null);
      else {
        const at = new Date(body.now);
        if (!Number.isFinite(at.getTime())) throw new AdminError(400, `now: not an ISO 8601 instant (got ${JSON.stringify(body.now)})`);
        state.clock.pin(at);
      }
    }
    const now = state.now();
    return {
      now: new Date(now.ms).toISOString(),
      platformNow: formatNaive(now.naive),
      timeZone: state.store.zone.name,
      pinned: state.clock.isPinned,
    };
  }
  return NEXT;
}

export const ADMIN_ROUTES = [
  'POST /_admin/reset {sample?, items?, seedNumber?, seed?, timeZone?, apiKeys?, referenceDate?}',
  'GET|PUT /_admin/settings {fieldMeta?: exported|swapped|type-only|control-only, fieldFlags?: boolean|number|string, queryLagMs?, unknownItem?: {httpStatus, status}, omitEmptyValues?, systemFields?: [field], ignoredWriteFields?: [field], multiValueNumbers?: bare|as-written}',
  'GET|PUT /_admin/faults (PUT: partial, null restores a default)',
  'DELETE /_admin/faults (all faults off)',
  'GET /_admin/requests?since=<seq>',
  'DELETE /_admin/requests',
  'GET /_admin/stats',
  'GET /_admin/lists/{appID}/{listID}/export',
  'GET|POST /_admin/lists/{appID}/{listID}/fields',
  'PATCH /_admin/lists/{appID}/{listID}/fields/{FieldName} {DisplayName} | {delete: true} | {reuse: {Type, FieldType, DisplayName?, ..., FieldID?, keepValues?}} | {kind: {FieldType?, Type?}} (rename; delete with its values; give the slot to another field, a new FieldID; change its kind, values kept)',
  'POST /_admin/lists/{appID}/{listID}/items {Data, Created?, UserID?}',
  'GET|PATCH|DELETE /_admin/lists/{appID}/{listID}/items/{id} (PATCH: {Data, Modified?, UserID?, RowVersion?})',
  'GET|PUT /_admin/activity (PUT null stops)',
  'DELETE /_admin/activity (stops)',
  'GET /_admin/hooks',
  'POST /_admin/hooks/fire {subscriptionId?, event?}',
  'POST /_admin/hooks/redeliver {deliveryIndex}',
  'GET /_admin/item-hooks (list item event subscriptions, delivery settings, delivery counts)',
  'GET|PUT /_admin/item-hooks/delivery {delayMs?, jitterMs?, duplicateRate?, lossRate?, maxAttempts?, retryDelayMs?, maxRetryDelayMs?, hookIdIn?: data|location|both, seed?} (null restores a default)',
  'GET|PUT /_admin/clock {now: ISO | null}',
];

export async function handleAdmin(state: EmulatorState, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const method = req.method ?? 'GET';
  const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
  try {
    const text = await readBody(req);
    const result = await route(state, method, path, url, text, res);
    if (result !== STREAMED) sendJson(res, 200, result);
  } catch (e) {
    let status = 500;
    let message = e instanceof Error ? e.message : String(e);
    if (e instanceof AdminError) status = e.httpStatus;
    else if (e instanceof ApiError) status = e.status === STATUS.notFound ? 404 : e.status === STATUS.conflict ? 409 : 400;
    else if (
      e instanceof SeedError ||
      e instanceof ItemHookError ||
      e instanceof FaultSettingsError ||
      e instanceof ActivityError ||
      e instanceof RangeError
    )
      status = 400;
    else message = `Emulator error: ${message}`;
    sendJson(res, status, { error: message });
  }
}
