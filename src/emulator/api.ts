import { ApiError, STATUS, badRequest } from './api-error.js';
import { envelopeJson } from './envelope.js';
import type { EmulatorState } from './emulator-state.js';
import { presentFields } from './field-meta-forms.js';
import { buildProjection, itemsJson, type ItemProjection } from './item-json.js';
import type { PageFault } from './faults.js';
import { createItem, deleteItem, requireItem, updateItem, validateWriteData, type WriteData } from './items.js';
import { formatNaive } from './platform-time.js';
import { parsePaging, parseQuery } from './query-engine.js';
import type { ListData } from './store.js';
import { coerceError } from '../errors.js';

/**
 * The /v1 endpoints: routing and handlers. A handler gets the raw body text
 * and returns the HTTP status and the envelope text; auth, rate limits,
 * faults and logging are the server's job.
 */

export interface ApiReply {
  httpStatus: number;
  body: string;
  envelopeStatus: number | null;
  headers?: Record<string, string>;
  pageIndex?: number;
  fault?: string;
}

export interface RequestInput {
  body: string;
  /** Whether faults apply to this request (emptyPages). */
  faultsApply: boolean;
  /** The request's query string parameters. */
  query?: URLSearchParams;
}

export interface V1Route {
  /** e.g. `POST /v1/lists/{appID}/{listID}/items/query` */
  name: string;
  /** Create, update and delete: faults may hit before or after the change. */
  mutation: boolean;
  handle(state: EmulatorState, input: RequestInput): ApiReply;
}

export function ok(dataJson: string, totalCount?: number): ApiReply {
  return { httpStatus: 200, body: envelopeJson(STATUS.ok, dataJson, '', totalCount), envelopeStatus: STATUS.ok };
}

export function errorReply(err: ApiError): ApiReply {
  return {
    httpStatus: err.httpStatus,
    body: envelopeJson(err.status, 'null', err.message),
    envelopeStatus: err.status,
    headers: err.headers,
  };
}

function parseBody(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw badRequest(`The request body is not valid JSON: ${coerceError(e).message}`);
  }
}

function objectBody(text: string): Record<string, unknown> {
  const b = parseBody(text);
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw badRequest('The request body must be a JSON object');
  return b as Record<string, unknown>;
}

function requireList(state: EmulatorState, appID: string, listID: string): ListData {
  const list = state.store.list(appID, listID);
  if (!list) throw new ApiError(STATUS.notFound, `List ${appID}/${listID} not found`);
  return list;
}

function searchUsers(state: EmulatorState, input: RequestInput): ApiReply {
  const body = objectBody(input.body);
  const { pageIndex, pageSize } = parsePaging(body);
  const key = body['SearchKey'];
  if (key !== undefined && key !== null && typeof key !== 'string') throw badRequest('SearchKey must be a string');
  const needle = typeof key === 'string' ? key.trim().toLowerCase() : '';
  const users = state.store.users.filter(
    (u) =>
      needle === '' ||
      u.Name.toLowerCase().includes(needle) ||
      u.Email.toLowerCase().includes(needle) ||
      u.Account.toLowerCase().includes(needle),
  );
  const start = (pageIndex - 1) * pageSize;
  return { ...ok(JSON.stringify(users.slice(start, start + pageSize)), users.length), pageIndex };
}

function listDetails(state: EmulatorState, appID: string, listID: string): ApiReply {
  const list = requireList(state, appID, listID);
  const byId = new Map(state.store.users.map((u) => [u.UserID, u]));
  return ok(
    JSON.stringify({
      AppID: list.appID,
      ListID: list.listID,
      Title: list.title,
      Description: list.description,
      Created: formatNaive(list.createdNaive),
      Modified: formatNaive(list.modifiedNaive),
      CreatedBy: list.createdBy,
      ModifiedBy: list.modifiedBy,
      CreatedByName: byId.get(list.createdBy)?.Name ?? '',
      ItemCount: list.count,
    }),
  );
}

function listFields(state: EmulatorState, appID: string, listID: string): ApiReply {
  const system = new Set(state.systemFields);
  const metas = requireList(state, appID, listID)
    .fields()
    .map((f) => (system.has(f.FieldName) ? { ...f, IsSystem: true } : f));
  const fields = presentFields(metas, state.fieldMeta);
  return ok(JSON.stringify(fields), fields.length);
}

function queryItems(state: EmulatorState, appID: string, listID: string, input: RequestInput): ApiReply {
  const list = requireList(state, appID, listID);
  const q = parseQuery(parseBody(input.body), list);
  const projection = buildProjection(list, q.fields, state.idsAsNumbers, state.omitEmptyValues);
  const result = state.queries.run(list, q, state.lag.view(list));
  if (input.faultsApply && state.faults.isEmptyPage(q.pageIndex)) {
    return { ...ok('[]', result.totalCount), pageIndex: q.pageIndex, fault: 'emptyPage' };
  }
  const fault = input.faultsApply ? state.faults.takePageFault() : null;
  if (fault)
    return {
      ...wrongPage(fault, (pageIndex) => state.queries.run(list, { ...q, pageIndex }, state.lag.view(list)), projection, q.pageIndex),
      pageIndex: q.pageIndex,
      fault: fault.kind,
    };
  return { ...ok(itemsJson(projection, result.slots), result.totalCount), pageIndex: q.pageIndex };
}

/** A well-formed but wrong answer to page `pageIndex` (see PageFaultKind). */
function wrongPage(
  fault: PageFault,
  run: (pageIndex: number) => { slots: ArrayLike<number>; totalCount: number },
  projection: ItemProjection,
  pageIndex: number,
): ApiReply {
  const page = run(pageIndex);
  const slots = Array.from(page.slots);
  const at = fault.page ?? (fault.kind === 'missingId' ? 1 : 2);
  switch (fault.kind) {
    case 'shortPage':
      return ok(itemsJson(projection, pageIndex === at ? slots.slice(0, Math.ceil(slots.length / 2)) : slots), page.totalCount);
    case 'lowTotal':
      return ok(itemsJson(projection, slots), Math.max(0, page.totalCount - (fault.count ?? 1)));
    case 'duplicate': {
      const before = pageIndex === at && pageIndex > 1 ? Array.from(run(pageIndex - 1).slots) : [];
      const served = before.length && slots.length ? [before[before.length - 1]!, ...slots.slice(1)] : slots;
      return ok(itemsJson(projection, served), page.totalCount);
    }
    case 'ignorePageIndex':
      return ok(itemsJson(projection, run(1).slots), page.totalCount);
    case 'ignorePageIndexNoTotal':
      return ok(itemsJson(projection, run(1).slots));
    case 'nullData':
      return ok('null');
    case 'missingId': {
      const json = itemsJson(projection, slots);
      return ok(pageIndex === at ? json.replace(/\{"ListDataID":(?:"\d+"|\d+),/, '{') : json, page.totalCount);
    }
    case 'unknownStatus':
      return { httpStatus: 200, body: envelopeJson(50010, 'null', 'Unexpected server state'), envelopeStatus: 50010 };
  }
}

function create(state: EmulatorState, appID: string, listID: string, input: RequestInput): ApiReply {
  const list = requireList(state, appID, listID);
  const body = objectBody(input.body);
  const data = writtenData(state, list, validateWriteData(list, body['Data']));
  const { ms, naive } = state.now();
  const id = createItem(list, data, {
    userId: state.store.apiUser.UserID,
    createdMs: ms,
    createdNaive: naive,
    lag: state.lag,
    events: state.itemHooks,
  });
  return ok(JSON.stringify(id));
}

/**
 * What a write stores: fields marked system or ignored on write (settings
 * `systemFields`, `ignoredWriteFields`) are left out (the write still succeeds
 * and bumps the version), and multi-value arrays of integer strings are stored
 * as bare numbers when `multiValueNumbers` is `bare`.
 */
function writtenData(state: EmulatorState, list: ListData, data: WriteData): WriteData {
  const ignored = new Set([...state.systemFields, ...state.ignoredWriteFields]);
  const out: WriteData = {};
  for (const [name, value] of Object.entries(data)) {
    if (ignored.has(name)) continue;
    const meta = list.field(name);
    out[name] = state.multiValueNumbers === 'bare' && meta && isMultiValueMeta(meta) ? bareIntegers(value) : value;
  }
  return out;
}

const isMultiValueMeta = (meta: { Type: string; FieldType: string; Rules: Record<string, unknown> }): boolean =>
  meta.Type === 'checkbox' ||
  meta.FieldType === 'checkbox' ||
  /multi/i.test(meta.Type) ||
  Object.entries(meta.Rules).some(([k, v]) => /multi/i.test(k) && (v === true || v === 1 || v === '1' || v === 'true'));

/** `["1177823559771361293","2"]` → `[1177823559771361293,2]`; anything else as it is. */
function bareIntegers(value: string): string {
  let arr: unknown;
  try {
    arr = JSON.parse(value);
  } catch {
    return value;
  }
  if (!Array.isArray(arr) || arr.length === 0 || !arr.every((e) => typeof e === 'string' && /^-?[1-9]\d*$|^0$/.test(e))) return value;
  return `[${(arr as string[]).join(',')}]`;
}

/** The item's slot; an unknown item is answered as `settings.unknownItem` says. */
function requireApiItem(state: EmulatorState, list: ListData, itemID: string): number {
  try {
    return requireItem(list, itemID);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== STATUS.notFound) throw err;
    const answer = state.unknownItem;
    throw new ApiError(answer.status, err.message, answer.httpStatus);
  }
}

/** One item by ID, as it is now (a lagging query index does not apply to reads by ID). */
function readItem(state: EmulatorState, appID: string, listID: string, itemID: string): ApiReply {
  const list = requireList(state, appID, listID);
  const slot = requireApiItem(state, list, itemID);
  const json = itemsJson(buildProjection(list, undefined, state.idsAsNumbers, state.omitEmptyValues), [slot]);
  return ok(json.slice(1, -1));
}

/** Deletes an item (no tombstone) and tells `workflow/tasks` subscribers, as a delete by another user would. */
function removeItem(state: EmulatorState, appID: string, listID: string, itemID: string): ApiReply {
  const list = requireList(state, appID, listID);
  const id = deleteItem(list, requireApiItem(state, list, itemID), { lag: state.lag, events: state.itemHooks });
  const { ms, naive } = state.now();
  const event = state.hooks.taskEvent(
    { Event: 'TaskCancelled' },
    { nowMs: ms, created: formatNaive(naive), assignee: state.store.apiUser.UserID, listDataId: id },
  );
  void state.hooks.fire(event, { resource: 'workflow/tasks' });
  return ok(JSON.stringify(id));
}

function update(state: EmulatorState, appID: string, listID: string, itemID: string, input: RequestInput): ApiReply {
  const list = requireList(state, appID, listID);
  const body = objectBody(input.body);
  const rv = body['RowVersion'];
  if (typeof rv !== 'number' || !Number.isInteger(rv) || rv < 0) {
    throw badRequest(`RowVersion must be an integer >= 0 (0 overwrites) (got ${JSON.stringify(rv)})`);
  }
  const data = writtenData(state, list, validateWriteData(list, body['Data']));
  const slot = requireApiItem(state, list, itemID);
  updateItem(list, slot, data, {
    userId: state.store.apiUser.UserID,
    modifiedNaive: state.now().naive,
    expectedVersion: rv,
    lag: state.lag,
    events: state.itemHooks,
  });
  return ok(JSON.stringify(itemID));
}

function subscribe(state: EmulatorState, input: RequestInput): ApiReply {
  const sub = state.hooks.subscribe(parseBody(input.body), formatNaive(state.now().naive));
  return ok(JSON.stringify({ Id: sub.Id }));
}

/** A list item event subscription: 201, the hook's ID in Data and/or a Location header (as the admin settings say). */
function subscribeItemEvents(state: EmulatorState, appID: string, listID: string, eventType: string, input: RequestInput): ApiReply {
  const list = requireList(state, appID, listID);
  const hook = state.itemHooks.subscribe(
    list,
    eventType,
    input.query?.get('channel') ?? null,
    parseBody(input.body),
    formatNaive(state.now().naive),
  );
  const answer = state.itemHooks.settings.hookIdIn;
  const reply = ok(answer === 'location' ? 'null' : JSON.stringify(hook.Id));
  const headers: Record<string, string> =
    answer === 'data' ? {} : { Location: `/v1/lists/${encodeURIComponent(appID)}/${encodeURIComponent(listID)}/hooks/${hook.Id}` };
  return { ...reply, httpStatus: 201, headers };
}

function unsubscribeItemEvents(state: EmulatorState, appID: string, listID: string, hookId: string): ApiReply {
  state.itemHooks.unsubscribe(requireList(state, appID, listID), hookId);
  return ok(JSON.stringify(hookId));
}

/** Discovery: one application per appID of the seed, and each application's lists. */
function applications(state: EmulatorState): ApiReply {
  const ids = [...new Set([...state.store.lists.values()].map((l) => l.appID))];
  return ok(JSON.stringify(ids.map((id) => ({ AppID: id, Title: id }))), ids.length);
}

function applicationLists(state: EmulatorState, appID: string): ApiReply {
  const lists = [...state.store.lists.values()].filter((l) => l.appID === appID);
  if (!lists.length) throw new ApiError(STATUS.notFound, `Application ${appID} not found`);
  return ok(
    JSON.stringify(lists.map((l) => ({ AppID: l.appID, ListID: l.listID, Title: l.title, Description: l.description }))),
    lists.length,
  );
}

/** A directory part the platform does not have: HTTP 404, like an unknown endpoint. */
function directoryPart<T>(part: T[] | undefined, path: string): T[] {
  if (part === undefined) throw new ApiError(404, `No such endpoint: GET ${path}`, 404);
  return part;
}

function departments(state: EmulatorState): ApiReply {
  const all = directoryPart(state.store.directory.departments, '/v1/departments');
  return ok(JSON.stringify(all), all.length);
}

function groups(state: EmulatorState, input: RequestInput): ApiReply {
  const all = directoryPart(state.store.directory.groups, '/v1/groups');
  const q = input.query ?? new URLSearchParams();
  const pageIndex = Math.max(1, Number(q.get('pageIndex') ?? '1') || 1);
  const pageSize = Number(q.get('pageSize') ?? '100') || 100;
  if (pageSize < 1 || pageSize > 1000) throw badRequest(`pageSize must be 1..1000 (got ${pageSize})`);
  const needle = (q.get('keywords') ?? '').trim().toLowerCase();
  const found = all.filter((g) => needle === '' || g.Name.toLowerCase().includes(needle));
  const page = found
    .slice((pageIndex - 1) * pageSize, pageIndex * pageSize)
    .map(({ Members: _m, ...g }) => ({ ...g, MemberCount: _m.length }));
  return { ...ok(JSON.stringify(page), found.length), pageIndex };
}

function groupUsers(state: EmulatorState, groupID: string): ApiReply {
  const group = directoryPart(state.store.directory.groups, '/v1/groups').find((g) => g.GroupID === groupID);
  if (!group) throw new ApiError(STATUS.notFound, `Group ${groupID} not found`);
  const byId = new Map(state.store.users.map((u) => [u.UserID, u]));
  const members = group.Members.map((id) => byId.get(id)).filter((u) => u !== undefined);
  return ok(JSON.stringify(members), members.length);
}

function positions(state: EmulatorState): ApiReply {
  const all = directoryPart(state.store.directory.positions, '/v1/positions');
  return ok(JSON.stringify(all), all.length);
}

type Matcher = (m: string[]) => V1Route;

const LIST = '/v1/lists/{appID}/{listID}';
const ROUTES: Array<{ method: string; re: RegExp; make: Matcher }> = [
  {
    method: 'POST',
    re: /^\/v1\/users\/search\/?$/,
    make: () => ({ name: 'POST /v1/users/search', mutation: false, handle: (s, i) => searchUsers(s, i) }),
  },
  {
    method: 'GET',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/?$/,
    make: ([a, l]) => ({ name: `GET ${LIST}`, mutation: false, handle: (s) => listDetails(s, a as string, l as string) }),
  },
  {
    method: 'GET',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/fields\/?$/,
    make: ([a, l]) => ({ name: `GET ${LIST}/fields`, mutation: false, handle: (s) => listFields(s, a as string, l as string) }),
  },
  {
    method: 'POST',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/items\/query\/?$/,
    make: ([a, l]) => ({ name: `POST ${LIST}/items/query`, mutation: false, handle: (s, i) => queryItems(s, a as string, l as string, i) }),
  },
  {
    method: 'POST',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/items\/?$/,
    make: ([a, l]) => ({ name: `POST ${LIST}/items`, mutation: true, handle: (s, i) => create(s, a as string, l as string, i) }),
  },
  {
    method: 'GET',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/items\/([^/]+)\/?$/,
    make: ([a, l, id]) => ({
      name: `GET ${LIST}/items/{itemID}`,
      mutation: false,
      handle: (s) => readItem(s, a as string, l as string, id as string),
    }),
  },
  {
    method: 'DELETE',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/items\/([^/]+)\/?$/,
    make: ([a, l, id]) => ({
      name: `DELETE ${LIST}/items/{itemID}`,
      mutation: true,
      handle: (s) => removeItem(s, a as string, l as string, id as string),
    }),
  },
  {
    method: 'PATCH',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/items\/([^/]+)\/?$/,
    make: ([a, l, id]) => ({
      name: `PATCH ${LIST}/items/{itemID}`,
      mutation: true,
      handle: (s, i) => update(s, a as string, l as string, id as string, i),
    }),
  },
  {
    method: 'POST',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/hooks\/([^/]+)\/?$/,
    make: ([a, l, t]) => ({
      name: `POST ${LIST}/hooks/{eventType}`,
      mutation: false,
      handle: (s, i) => subscribeItemEvents(s, a as string, l as string, t as string, i),
    }),
  },
  {
    method: 'DELETE',
    re: /^\/v1\/lists\/([^/]+)\/([^/]+)\/hooks\/([^/]+)\/?$/,
    make: ([a, l, h]) => ({
      name: `DELETE ${LIST}/hooks/{hookId}`,
      mutation: false,
      handle: (s) => unsubscribeItemEvents(s, a as string, l as string, h as string),
    }),
  },
  {
    method: 'GET',
    re: /^\/v1\/applications\/?$/,
    make: () => ({ name: 'GET /v1/applications', mutation: false, handle: (s) => applications(s) }),
  },
  {
    method: 'GET',
    re: /^\/v1\/applications\/([^/]+)\/lists\/?$/,
    make: ([a]) => ({ name: 'GET /v1/applications/{id}/lists', mutation: false, handle: (s) => applicationLists(s, a as string) }),
  },
  {
    method: 'GET',
    re: /^\/v1\/departments\/?$/,
    make: () => ({ name: 'GET /v1/departments', mutation: false, handle: (s) => departments(s) }),
  },
  { method: 'GET', re: /^\/v1\/groups\/?$/, make: () => ({ name: 'GET /v1/groups', mutation: false, handle: (s, i) => groups(s, i) }) },
  {
    method: 'GET',
    re: /^\/v1\/groups\/([^/]+)\/users\/?$/,
    make: ([g]) => ({ name: 'GET /v1/groups/{id}/users', mutation: false, handle: (s) => groupUsers(s, g as string) }),
  },
  { method: 'GET', re: /^\/v1\/positions\/?$/, make: () => ({ name: 'GET /v1/positions', mutation: false, handle: (s) => positions(s) }) },
  {
    method: 'POST',
    re: /^\/v1\/hooks\/?$/,
    make: () => ({ name: 'POST /v1/hooks', mutation: false, handle: (s, i) => subscribe(s, i) }),
  },
];

/** The route for a method and path, or null (HTTP 404). */
export function matchV1Route(method: string, path: string): V1Route | null {
  for (const r of ROUTES) {
    if (r.method !== method) continue;
    const m = r.re.exec(path);
    if (!m) continue;
    let params: string[];
    try {
      params = m.slice(1).map((p) => decodeURIComponent(p));
    } catch {
      return null;
    }
    const route = r.make(params);
    return {
      ...route,
      handle: (state, input) => {
        try {
          return route.handle(state, input);
        } catch (e) {
          if (e instanceof ApiError) return errorReply(e);
          throw e;
        }
      },
    };
  }
  return null;
}
