/**
 * `listsync.webhook_inbox`: every accepted webhook delivery, stored before it
 * is answered; `processed_at` is set once it was acted on (its early pull
 * asked for, or a list's item event applied), or at once for events that
 * carry no item.
 */
import type { Knex } from '../db.js';
import { INBOX_TABLE, SUBSCRIPTIONS_TABLE } from './webhook-tables.js';

/** The item ID of a stored body: the item itself, or an item wrapped in `Data`. */
const BODY_ITEM_ID = (col: string): string =>
  `coalesce(nullif(${col} ->> 'ListDataID', ''), nullif(${col} -> 'Data' ->> 'ListDataID', ''))`;

export interface StoredEvent {
  id: number;
  duplicate: boolean;
  listDataId: string | null;
  event: string | null;
}

export interface WebhookActivity {
  subscriptions: number;
  eventsLastDay: number;
  lastEventAt: Date | null;
}

/**
 * Stores one event unless the same delivery (subscription, channel, type,
 * body) is already in the window; race-free through an advisory lock on the
 * key. An event without an item ID is stored processed.
 */
export async function storeEvent(
  db: Knex,
  subscriptionId: number,
  event: { channel: string; type: number; headers: Record<string, string>; body: string },
  windowMinutes: number,
): Promise<StoredEvent> {
  const { channel, type, headers, body } = event;
  return db.transaction(async (trx) => {
    const keyed = (await trx.raw(
      `select k, pg_advisory_xact_lock(hashtextextended('listsync:webhook:' || k, 0))
         from (select encode(sha256(convert_to(?::text || E'\\n' || ? || E'\\n' || ?::text || E'\\n' || (?::jsonb)::text, 'UTF8')), 'hex') as k) x`,
      [subscriptionId, channel, type, body],
    )) as { rows: { k: string }[] };
    const key = keyed.rows[0]!.k;
    const existing = (await trx(INBOX_TABLE)
      .where({ dedup_key: key, subscription_id: subscriptionId })
      .where('received_at', '>', trx.raw('now() - make_interval(mins => ?)', [windowMinutes]))
      .orderBy('id')
      .first('id', trx.raw(`${BODY_ITEM_ID('body')} as list_data_id`), trx.raw("body ->> 'Event' as event"))) as
      { id: number; list_data_id: string | null; event: string | null } | undefined;
    if (existing) return { id: Number(existing.id), duplicate: true, listDataId: existing.list_data_id, event: existing.event };
    const inserted = (await trx.raw(
      `insert into ${INBOX_TABLE} (subscription_id, dedup_key, channel, type, headers, body, processed_at)
       select ?, ?, ?, ?, ?::jsonb, b, case when ${BODY_ITEM_ID('b')} is null then now() end
         from (select ?::jsonb as b) x
       returning id, ${BODY_ITEM_ID('body')} as list_data_id, body ->> 'Event' as event`,
      [subscriptionId, key, channel, type, JSON.stringify(headers), body],
    )) as { rows: { id: number; list_data_id: string | null; event: string | null }[] };
    const row = inserted.rows[0]!;
    return { id: Number(row.id), duplicate: false, listDataId: row.list_data_id === '' ? null : row.list_data_id, event: row.event };
  });
}

export interface EventToStore {
  subscriptionId: number;
  channel: string;
  type: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Stores many events in one transaction, as `storeEvent` stores one: each unless the same delivery
 * is in the window (in the inbox, or earlier in `events`). The keys' advisory locks are taken in key
 * order, so batches and single stores running at once cannot deadlock. Returns one answer per event,
 * in order. A data error (22xxx) fails the whole batch: store its events one by one to find it.
 */
export async function storeEvents(db: Knex, events: readonly EventToStore[], windowMinutes: number): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  return db.transaction(async (trx) => {
    const keyed = (await trx.raw(
      `select n, encode(sha256(convert_to(sub::text || E'\\n' || ch || E'\\n' || ty::text || E'\\n' || (b::jsonb)::text, 'UTF8')), 'hex') as k
         from unnest(?::bigint[], ?::text[], ?::int[], ?::text[]) with ordinality as t(sub, ch, ty, b, n)`,
      [events.map((e) => e.subscriptionId), events.map((e) => e.channel), events.map((e) => e.type), events.map((e) => e.body)],
    )) as { rows: { n: string; k: string }[] };
    const keys: string[] = [];
    for (const r of keyed.rows) keys[Number(r.n) - 1] = r.k;
    await trx.raw(`select pg_advisory_xact_lock(hashtextextended('listsync:webhook:' || k, 0)) from unnest(?::text[]) k order by k`, [
      [...new Set(keys)].sort(),
    ]);
    const existing = (await trx(INBOX_TABLE)
      .whereIn('dedup_key', [...new Set(keys)])
      .where('received_at', '>', trx.raw('now() - make_interval(mins => ?)', [windowMinutes]))
      .orderBy('id')
      .select(
        'id',
        'subscription_id',
        'dedup_key',
        trx.raw(`${BODY_ITEM_ID('body')} as list_data_id`),
        trx.raw("body ->> 'Event' as event"),
      )) as {
      id: number;
      subscription_id: number;
      dedup_key: string;
      list_data_id: string | null;
      event: string | null;
    }[];
    const known = new Map<string, StoredEvent>();
    for (const e of existing) {
      const at = `${e.subscription_id}:${e.dedup_key}`;
      if (!known.has(at)) known.set(at, { id: Number(e.id), duplicate: true, listDataId: e.list_data_id, event: e.event });
    }
    const fresh: number[] = [];
    const seen = new Set<string>();
    events.forEach((e, i) => {
      const at = `${e.subscriptionId}:${keys[i]}`;
      if (known.has(at) || seen.has(at)) return;
      seen.add(at);
      fresh.push(i);
    });
    if (fresh.length) {
      const inserted = (await trx.raw(
        `insert into ${INBOX_TABLE} (subscription_id, dedup_key, channel, type, headers, body, processed_at)
         select sub, k, ch, ty, h::jsonb, b::jsonb, case when ${BODY_ITEM_ID('b::jsonb')} is null then now() end
           from unnest(?::bigint[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[]) with ordinality as t(sub, k, ch, ty, h, b, n)
          order by n
         returning id, subscription_id, dedup_key, ${BODY_ITEM_ID('body')} as list_data_id, body ->> 'Event' as event`,
        [
          fresh.map((i) => events[i]!.subscriptionId),
          fresh.map((i) => keys[i]!),
          fresh.map((i) => events[i]!.channel),
          fresh.map((i) => events[i]!.type),
          fresh.map((i) => JSON.stringify(events[i]!.headers)),
          fresh.map((i) => events[i]!.body),
        ],
      )) as { rows: { id: number; subscription_id: number; dedup_key: string; list_data_id: string | null; event: string | null }[] };
      for (const r of inserted.rows)
        known.set(`${r.subscription_id}:${r.dedup_key}`, {
          id: Number(r.id),
          duplicate: false,
          listDataId: r.list_data_id === '' ? null : r.list_data_id,
          event: r.event,
        });
    }
    // The first of a delivery sent twice in one batch is new; the copies are duplicates of it.
    const answered = new Set<string>();
    return events.map((e, i) => {
      const at = `${e.subscriptionId}:${keys[i]}`;
      const stored = known.get(at)!;
      const first = !stored.duplicate && !answered.has(at);
      answered.add(at);
      return first ? stored : { ...stored, duplicate: true };
    });
  });
}

export async function markProcessed(db: Knex, ids: readonly number[]): Promise<void> {
  await db(INBOX_TABLE)
    .whereIn('id', [...ids])
    .update({ processed_at: db.fn.now() });
}

/** Events not acted on yet, of subscriptions that are no list's own (the realtime applier replays those). */
export async function unprocessedEventIds(db: Knex): Promise<number[]> {
  return (await db(`${INBOX_TABLE} as i`)
    .join(`${SUBSCRIPTIONS_TABLE} as s`, 's.id', 'i.subscription_id')
    .whereNull('i.processed_at')
    .whereNull('s.list_name')
    .pluck('i.id')) as number[];
}

/** For `status`: subscriptions, events in the last day, the last event's time. */
export async function webhookActivity(db: Knex): Promise<WebhookActivity> {
  const subs = (await db(SUBSCRIPTIONS_TABLE).count<{ count: string }[]>('* as count')) as { count: string | number }[];
  const events = (await db(INBOX_TABLE)
    .where('received_at', '>', db.raw("now() - interval '1 day'"))
    .count<{ count: string }[]>('* as count')) as { count: string | number }[];
  const last = (await db(INBOX_TABLE).max('received_at as at').first()) as { at: Date | null } | undefined;
  return { subscriptions: Number(subs[0]?.count ?? 0), eventsLastDay: Number(events[0]?.count ?? 0), lastEventAt: last?.at ?? null };
}

/** For `/metrics`: subscriptions, and events not acted on yet. */
export async function webhookBacklog(db: Knex): Promise<{ subscriptions: number; unprocessed: number }> {
  const hooks = (await db.raw(
    `select (select count(*) from ${SUBSCRIPTIONS_TABLE})::bigint as subs,
            (select count(*) from ${INBOX_TABLE} where processed_at is null)::bigint as unprocessed`,
  )) as { rows: { subs: number; unprocessed: number }[] };
  return { subscriptions: Number(hooks.rows[0]?.subs ?? 0), unprocessed: Number(hooks.rows[0]?.unprocessed ?? 0) };
}

/** A list's item event as the realtime applier reads it. */
export interface ItemEventRow {
  id: number;
  type: number;
  /** The body as JSON text. */
  body: string;
  received_at: Date;
}

/** Item events of lists' own subscriptions not applied yet, oldest first, with their list and resource (replayed at start). */
export async function unappliedItemEvents(db: Knex): Promise<{ id: number; list_name: string; resource: string }[]> {
  return (await db(`${INBOX_TABLE} as i`)
    .join(`${SUBSCRIPTIONS_TABLE} as s`, 's.id', 'i.subscription_id')
    .whereNull('i.processed_at')
    .whereNotNull('s.list_name')
    .orderBy('i.id')
    .select('i.id', 's.list_name', 's.resource')) as { id: number; list_name: string; resource: string }[];
}

/** The events among `ids` not processed yet. */
export async function unprocessedEvents(db: Knex, ids: readonly number[]): Promise<ItemEventRow[]> {
  return (await db(INBOX_TABLE)
    .whereIn('id', [...ids])
    .whereNull('processed_at')
    .select('id', 'type', db.raw('body::text as body'), 'received_at')) as ItemEventRow[];
}

/** Marks the events among `ids` processed that are not yet (in the applier's transaction). */
export async function markUnprocessedDone(db: Knex | Knex.Transaction, ids: readonly number[]): Promise<void> {
  await db(INBOX_TABLE)
    .whereIn('id', [...ids])
    .whereNull('processed_at')
    .update({ processed_at: db.fn.now() });
}

/** An apply of the events among `ids` failed: they stay unprocessed, with the attempt counted and its error. */
export async function recordEventFailure(db: Knex, ids: readonly number[], error: string): Promise<void> {
  await db(INBOX_TABLE)
    .whereIn('id', [...ids])
    .whereNull('processed_at')
    .update({ attempts: db.raw('attempts + 1'), last_error: error, last_attempt_at: db.fn.now() });
}

/** Per list with item events not applied yet: how many, the oldest one's age, and those that failed at least once. */
export async function unappliedItemEventAges(
  db: Knex,
): Promise<{ list_name: string; unapplied: number; failing: number; oldest_seconds: number; last_error: string | null }[]> {
  const r = (await db.raw(
    `select s.list_name,
            count(*)::bigint as unapplied,
            count(*) filter (where i.attempts > 0)::bigint as failing,
            extract(epoch from now() - min(i.received_at))::float8 as oldest_seconds,
            (array_agg(i.last_error order by i.last_attempt_at desc nulls last))[1] as last_error
       from ${INBOX_TABLE} i
       join ${SUBSCRIPTIONS_TABLE} s on s.id = i.subscription_id
      where i.processed_at is null and s.list_name is not null
      group by s.list_name`,
  )) as { rows: { list_name: string; unapplied: string; failing: string; oldest_seconds: number; last_error: string | null }[] };
  return r.rows.map((x) => ({
    ...x,
    unapplied: Number(x.unapplied),
    failing: Number(x.failing),
    oldest_seconds: Number(x.oldest_seconds),
  }));
}
