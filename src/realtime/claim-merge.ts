/**
 * Pure: a list's queued item events merged into one claim per item (every
 * event's inbox ID, a delete claim, the highest announced version and its
 * body), and failed claims cut into ever smaller chunks for their retry.
 * Events that name no item share one claim that reads nothing (ORPHANS_ID),
 * so they are still marked processed. (test/realtime/claim-merge.test.ts)
 */
import { LOCAL_ID_PREFIX } from '../mirror/table-mapping.js';
import { itemId, itemVersionNumber } from '../platform/item-identity.js';
import { parseJson } from '../platform/json.js';
import type { Item } from '../platform/types.js';
import { ITEM_EVENT } from './item-events.js';

/** The claim of the events naming no item: never read, settled as is. */
export const ORPHANS_ID = '\u0000orphans';

export interface Claim {
  id: string;
  inboxIds: number[];
  deleteClaimed: boolean;
  /** The highest version an upsert event announced (null: none). */
  announced: number | null;
  /** The body with the highest version (trust "body"). */
  body: Item | null;
  receivedAt: Date;
  /** Re-reads already made because the platform showed an older version. */
  rechecks: number;
  /** Failed attempts to apply this item's events. */
  attempts: number;
  /** When a failed claim is tried again (epoch ms). */
  retryAt: number;
}

/** A stored item event as the merge reads it (store/webhook-inbox.ts › ItemEventRow). */
export interface EventRow {
  id: number;
  type: number;
  /** The body as JSON text. */
  body: string;
  received_at: Date;
}

/** Where an event body keeps the item's ID and version. */
export interface ClaimFields {
  /** The mirror's ID field. */
  idField: string;
  versionField: string;
  /** The list's configured ID field, read when the mirror's is absent. */
  listIdField: string;
}

/** Whether a claim stands for real items (not the orphans' claim). */
export const isItemClaim = (id: string): boolean => !id.startsWith('\u0000');

/** The item a callback body carries: the body itself, or an item wrapped in `Data`. */
function itemOf(body: unknown, idField: string): Item | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const o = body as Item;
  const data = o['Data'];
  if (o[idField] === undefined && data !== null && typeof data === 'object' && !Array.isArray(data)) return data as Item;
  return o;
}

function parsedBody(text: string): unknown {
  try {
    return parseJson(text);
  } catch {
    return null;
  }
}

function newClaim(id: string, receivedAt: Date): Claim {
  return { id, inboxIds: [], deleteClaimed: false, announced: null, body: null, receivedAt, rechecks: 0, attempts: 0, retryAt: 0 };
}

/** Adds one event to its item's claim: its inbox ID, a delete claim, or a higher announced version with its body. */
function addEvent(c: Claim, r: EventRow, item: Item, versionField: string): void {
  c.inboxIds.push(Number(r.id));
  if (r.received_at < c.receivedAt) c.receivedAt = r.received_at;
  if (r.type === ITEM_EVENT.deleted) {
    c.deleteClaimed = true;
    return;
  }
  const v = itemVersionNumber(item[versionField]);
  if (v !== null && (c.announced === null || v > c.announced)) {
    c.announced = v;
    c.body = item;
  }
}

/** Events merged per item, onto copies of the `carried` claims: one claim each, carrying every event's inbox ID. */
export function mergeClaims(rows: readonly EventRow[], carried: readonly Claim[], fields: ClaimFields, now: Date): Map<string, Claim> {
  const claims = new Map<string, Claim>(carried.map((c) => [c.id, { ...c, inboxIds: [...c.inboxIds] }]));
  const orphan: number[] = [];
  for (const r of rows) {
    const item = itemOf(parsedBody(r.body), fields.idField);
    const id = (item ? itemId(item[fields.idField] ?? item[fields.listIdField]) : null) ?? '';
    if (item === null || id === '' || id.startsWith(LOCAL_ID_PREFIX)) {
      orphan.push(Number(r.id));
      continue;
    }
    const c = claims.get(id) ?? newClaim(id, r.received_at);
    addEvent(c, r, item, fields.versionField);
    claims.set(id, c);
  }
  if (orphan.length) claims.set(ORPHANS_ID, { ...newClaim(ORPHANS_ID, now), inboxIds: orphan, announced: 0 });
  return claims;
}

/** Folds claim `from` of the same item into `into`: every event, the delete claim, the highest announced version. */
export function absorb(into: Claim, from: Claim): void {
  for (const id of from.inboxIds) if (!into.inboxIds.includes(id)) into.inboxIds.push(id);
  into.deleteClaimed ||= from.deleteClaimed;
  if (from.announced !== null && (into.announced === null || from.announced > into.announced)) {
    into.announced = from.announced;
    into.body = from.body;
  }
  if (from.receivedAt < into.receivedAt) into.receivedAt = from.receivedAt;
  into.attempts = Math.max(into.attempts, from.attempts);
}

/** Failed claims in chunks: those that failed `k` times in up to 2^k chunks, so an item that always fails ends up alone. */
export function retryChunks(claims: readonly Claim[]): Claim[][] {
  const byAttempts = new Map<number, Claim[]>();
  for (const c of claims) byAttempts.set(c.attempts, [...(byAttempts.get(c.attempts) ?? []), c]);
  const out: Claim[][] = [];
  for (const [attempts, group] of [...byAttempts].sort((a, b) => a[0] - b[0])) {
    const size = Math.max(1, Math.ceil(group.length / 2 ** Math.min(attempts, 20)));
    for (let i = 0; i < group.length; i += size) out.push(group.slice(i, i + size));
  }
  return out;
}
