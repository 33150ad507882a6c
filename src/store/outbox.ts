/**
 * `listsync.outbox`: local changes waiting to be written back. The capture
 * trigger (migration 20261122000100_mirror_support) inserts and merges open
 * rows; the push moves them through their statuses; the pull and reconcile
 * leave rows with an open change alone.
 *
 * A change is open while `pending` (waiting to be sent, maybe after a
 * backoff), `sending` (in flight; a stopped push leaves it so) or `conflict`
 * (held for `listsync conflicts resolve`). `failed` and `superseded` rows stay
 * to be looked at; `applied` rows stay for `lists[].appliedRetentionDays`
 * (pruned by the push).
 *
 * `mirror_behind`: the change was applied on the platform and what the write
 * produced (the new version, the values sent) is in the mirror row's `_raw`,
 * but the item was not re-read yet. The push re-reads such items before
 * anything else (src/sync/push/settle-mirror.ts) and clears the flag.
 *
 * `last_error` may quote the platform's text: it is stored as the closest
 * text PostgreSQL can hold (`closestText`), so an error never fails its write.
 */
import type { Knex } from '../db.js';
import { OperatorActionError } from '../errors.js';
import type { Version } from '../platform/item-identity.js';
import { closestText } from '../storable.js';
import { OPEN_STATUSES, OUTBOX_TABLE, UNSENT_STATUSES, type OutboxOp, type OutboxStatus } from './outbox-sql.js';

export {
  OUTBOX_TABLE,
  OPEN_STATUSES,
  UNSENT_STATUSES,
  PENDING_CHANGES_SQL,
  openChangeFor,
  openChangeExists,
  openChangeLookup,
  openItemChangeExists,
  unsettledChangeExists,
  type OutboxOp,
  type OutboxStatus,
} from './outbox-sql.js';

type Db = Knex | Knex.Transaction;

export interface OutboxRow {
  id: number;
  list_name: string;
  op: OutboxOp;
  item_id: string | null;
  local_id: string | null;
  /** For a delete: the row's whole content (field columns). */
  changes: Record<string, unknown>;
  sent_changes: Record<string, unknown> | null;
  /** As stored: NULL or the refill marker (-1) is unknown, 0 an overwrite; read it as a Version with `itemVersionNumber`. */
  base_version: number | null;
  status: OutboxStatus;
  attempts: number;
  /** Creates: when first sent, and how many times. */
  attempted_at: Date | null;
  sends: number;
  /** Creates: the local row was deleted before the create was confirmed. */
  withdrawn_at: Date | null;
}

export interface OutboxChange {
  id: number;
  listName: string;
  op: OutboxOp;
  itemId: string | null;
  localId: string | null;
  /** `{column: value}`; numeric values are strings, date-times ISO 8601 with offset. Convert with `toPlatform`. */
  changes: Record<string, unknown>;
  baseVersion: number | null;
  status: OutboxStatus;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** Open changes of a list (pending, sending, conflict), oldest first. */
export async function pendingChanges(db: Db, listName: string): Promise<OutboxChange[]> {
  const rows = (await db(OUTBOX_TABLE)
    .where({ list_name: listName })
    .whereIn('status', [...OPEN_STATUSES])
    .orderBy('id')
    .select('*')) as {
    id: number;
    list_name: string;
    op: OutboxOp;
    item_id: string | null;
    local_id: string | null;
    changes: Record<string, unknown>;
    base_version: number | null;
    status: OutboxStatus;
    attempts: number;
    last_error: string | null;
    next_attempt_at: Date;
    created_at: Date;
    updated_at: Date;
  }[];
  return rows.map((r) => ({
    id: r.id,
    listName: r.list_name,
    op: r.op,
    itemId: r.item_id,
    localId: r.local_id,
    changes: r.changes,
    baseVersion: r.base_version,
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error,
    nextAttemptAt: r.next_attempt_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
}

/** Pending changes whose backoff has passed, and changes a stopped push left 'sending'. */
export async function dueChanges(db: Db, listName: string, now: Date): Promise<OutboxRow[]> {
  return (await db(OUTBOX_TABLE)
    .where({ list_name: listName })
    .where((q) => q.where((p) => p.where('status', 'pending').where('next_attempt_at', '<=', now)).orWhere('status', 'sending'))
    .orderBy('id')) as OutboxRow[];
}

/** Changes a push would send now or later (pending, sending), oldest first. */
export async function unsentChanges(db: Db, listName: string): Promise<OutboxRow[]> {
  return (await db(OUTBOX_TABLE)
    .where({ list_name: listName })
    .whereIn('status', [...UNSENT_STATUSES])
    .orderBy('id')) as OutboxRow[];
}

/** The pending edit of an item, if any (what a pull can find in conflict with the platform). */
export async function pendingUpdateOf(db: Db, listName: string, itemId: string): Promise<OutboxRow | undefined> {
  return (await db(OUTBOX_TABLE).where({ list_name: listName, item_id: itemId, status: 'pending', op: 'update' }).first()) as
    OutboxRow | undefined;
}

/** Applied changes older than `retentionDays` whose items were re-read: removed. Returns how many. */
export async function pruneApplied(db: Db, listName: string, retentionDays: number): Promise<number> {
  return db(OUTBOX_TABLE)
    .where({ list_name: listName, status: 'applied', mirror_behind: false })
    .where('applied_at', '<', db.raw('now() - make_interval(days => ?)', [retentionDays]))
    .delete();
}

/** Items whose applied changes the mirror has not re-read yet (`mirror_behind`). */
export async function behindItems(db: Db, listName: string): Promise<string[]> {
  const rows = (await db(OUTBOX_TABLE).where({ list_name: listName, mirror_behind: true }).whereNotNull('item_id').distinct('item_id')) as {
    item_id: string;
  }[];
  return rows.map((r) => r.item_id);
}

/**
 * The columns each item's applied changes sent, for those still flagged
 * `mirror_behind` (a change applied in part went back to pending with its
 * remainder: what it sent is not known any more, so it names nothing).
 */
export async function sentColumnsBehind(db: Db, listName: string, itemIds: readonly string[]): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  for (let i = 0; i < itemIds.length; i += 1000) {
    const rows = (await db(OUTBOX_TABLE)
      .where({ list_name: listName, mirror_behind: true, status: 'applied' })
      .whereIn('item_id', itemIds.slice(i, i + 1000))
      .select('item_id', 'changes')) as { item_id: string; changes: Record<string, unknown> | null }[];
    for (const r of rows) {
      const cols = out.get(r.item_id) ?? new Set<string>();
      for (const c of Object.keys(r.changes ?? {})) cols.add(c);
      out.set(r.item_id, cols);
    }
  }
  return out;
}

/** The items' mirror rows were re-read: their changes are settled. */
export async function clearBehind(db: Db, listName: string, itemIds: readonly string[]): Promise<void> {
  if (itemIds.length === 0) return;
  await db(OUTBOX_TABLE)
    .where({ list_name: listName, mirror_behind: true })
    .whereIn('item_id', [...itemIds])
    .update({ mirror_behind: false, updated_at: db.fn.now() });
}

/** Marks the change as being sent with what is sent; a create also counts the send and keeps its first attempt's time (`now`). */
export async function markSending(
  db: Db,
  id: number,
  sent: Record<string, unknown>,
  now: Date,
  options: { create?: boolean } = {},
): Promise<void> {
  await db(OUTBOX_TABLE)
    .where({ id })
    .update({
      status: 'sending',
      sent_changes: JSON.stringify(sent),
      updated_at: db.fn.now(),
      ...(options.create ? { sends: db.raw('sends + 1'), attempted_at: db.raw('coalesce(attempted_at, ?)', [now]) } : {}),
    });
}

/** A change's current `changes` (edits merged in by the capture since it was read), or undefined when it is gone. */
export async function changesOf(db: Db, id: number): Promise<Record<string, unknown> | undefined> {
  const r = (await db(OUTBOX_TABLE).where({ id }).first('changes')) as { changes: Record<string, unknown> } | undefined;
  return r?.changes;
}

/**
 * The JSON text of the change's `columns` (jsonb columns) as PostgreSQL holds
 * them in `changes` or `sent_changes`: numbers exact, where reading them into
 * JavaScript would round integers beyond 2^53 or turn them into strings.
 */
export async function exactJsonValues(
  db: Db,
  id: number,
  columns: readonly string[],
  which: 'changes' | 'sent_changes',
): Promise<Record<string, string>> {
  if (columns.length === 0) return {};
  const res = (await db.raw(
    `select e.key, e.value::text as json from ${OUTBOX_TABLE} o cross join lateral jsonb_each(o.${which === 'changes' ? 'changes' : 'sent_changes'}) e
      where o.id = ? and e.key = any(?::text[])`,
    [id, [...columns]],
  )) as { rows: { key: string; json: string }[] };
  return Object.fromEntries(res.rows.map((r) => [r.key, r.json]));
}

/** The change will never be sent: a newer version won, or the local row went away. */
export async function supersede(db: Db, id: number, reason: string): Promise<void> {
  await db(OUTBOX_TABLE)
    .where({ id })
    .update({ status: 'superseded', sent_changes: null, last_error: closestText(reason), updated_at: db.fn.now() });
}

/**
 * Columns taken out of a pending edit (a conflict decided them); an edit left
 * empty is superseded with `reason`. Returns whether it was.
 */
export async function dropColumns(db: Db, id: number, columns: readonly string[], reason: string): Promise<boolean> {
  const rows = (await db.raw(
    `update ${OUTBOX_TABLE} o
        set changes = o.changes - ?::text[],
            status = case when (o.changes - ?::text[]) = '{}'::jsonb then 'superseded' else o.status end,
            last_error = case when (o.changes - ?::text[]) = '{}'::jsonb then ? else o.last_error end,
            updated_at = now()
      where o.id = ?
      returning o.status`,
    [[...columns], [...columns], [...columns], closestText(reason), id],
  )) as { rows: { status: OutboxStatus }[] };
  return rows.rows[0]?.status === 'superseded';
}

/** A delete went through (nothing to re-read: the mirror row stays marked deleted). */
export async function markApplied(db: Db, id: number): Promise<void> {
  await db(OUTBOX_TABLE)
    .where({ id })
    .update({ status: 'applied', applied_at: db.fn.now(), last_error: null, sent_changes: null, updated_at: db.fn.now() });
}

/** The outbox row's changes that differ from what was sent (bound: the sent changes as JSON): edits made meanwhile. */
const REMAINDER = `(select coalesce(jsonb_object_agg(k, v), '{}'::jsonb) from jsonb_each(o.changes) e(k, v) where (?::jsonb) -> k is distinct from v)`;

/**
 * The sent part of an edit is applied. Edits made while it was in flight (the
 * remainder) stay pending against `newVersion` (null: the base is kept).
 */
export async function settleSentEdit(db: Db, id: number, sent: Record<string, unknown>, newVersion: Version | null): Promise<void> {
  await db.raw(
    `with cur as (
       select o.id, ${REMAINDER} as rest
         from ${OUTBOX_TABLE} o where o.id = ?)
     update ${OUTBOX_TABLE} o
        set status = case when cur.rest = '{}'::jsonb then 'applied' else 'pending' end,
            changes = case when cur.rest = '{}'::jsonb then o.changes else cur.rest end,
            base_version = case when cur.rest = '{}'::jsonb then o.base_version else coalesce(?::bigint, o.base_version) end,
            applied_at = now(), last_error = null, sent_changes = null, updated_at = now(), next_attempt_at = now(),
            mirror_behind = true
       from cur where o.id = cur.id`,
    [JSON.stringify(sent), id, newVersion],
  );
}

/** A create went through as item `itemId` at `version`; edits made while it was being created stay pending as an update of the new item. */
export async function settleSentCreate(
  trx: Knex.Transaction,
  id: number,
  sent: Record<string, unknown>,
  itemId: string,
  version: Version,
): Promise<void> {
  await trx.raw(
    `with cur as (
       select o.id, ${REMAINDER} as rest
         from ${OUTBOX_TABLE} o where o.id = ?)
     update ${OUTBOX_TABLE} o
        set item_id = ?,
            status = case when cur.rest = '{}'::jsonb then 'applied' else 'pending' end,
            op = case when cur.rest = '{}'::jsonb then 'create' else 'update' end,
            changes = case when cur.rest = '{}'::jsonb then o.changes else cur.rest end,
            base_version = case when cur.rest = '{}'::jsonb then null else ?::bigint end,
            applied_at = now(), last_error = null, sent_changes = null, updated_at = now(), mirror_behind = true
       from cur where o.id = cur.id`,
    [JSON.stringify(sent), id, itemId, version],
  );
}

/**
 * Part of a settled edit names columns of fields removed from the platform:
 * it is taken out of the change (which is applied when nothing else is left)
 * and kept as a failed change of its own, with `error`.
 */
export async function keepUnsendable(trx: Knex.Transaction, id: number, removed: Record<string, unknown>, error: string): Promise<void> {
  const keys = Object.keys(removed);
  const rows = (await trx.raw(
    `update ${OUTBOX_TABLE} o
        set changes = o.changes - ?::text[],
            status = case when o.status = 'pending' and (o.changes - ?::text[]) = '{}'::jsonb then 'applied' else o.status end,
            updated_at = now()
      where o.id = ?
      returning o.list_name, o.item_id, o.base_version`,
    [keys, keys, id],
  )) as { rows: { list_name: string; item_id: string; base_version: number | null }[] };
  const r = rows.rows[0];
  if (!r) return;
  await trx(OUTBOX_TABLE).insert({
    list_name: r.list_name,
    op: 'update',
    item_id: r.item_id,
    changes: JSON.stringify(removed),
    base_version: r.base_version,
    status: 'failed',
    attempts: 1,
    last_error: closestText(error),
  });
}

/**
 * The platform did not take values an applied write sent to `itemId`: its
 * applied changes still flagged `mirror_behind` end failed with `error` (an
 * edit made meanwhile, pending, is kept as it is).
 */
export async function markNotTaken(db: Db, listName: string, itemId: string, error: string): Promise<void> {
  await db(OUTBOX_TABLE)
    .where({ list_name: listName, item_id: itemId, mirror_behind: true, status: 'applied' })
    .update({ status: 'failed', last_error: closestText(error), attempts: db.raw('attempts + 1'), updated_at: db.fn.now() });
}

/** Locks the row and tells whether its create was withdrawn (the local row deleted while it was in flight). */
export async function lockWithdrawn(trx: Knex.Transaction, id: number): Promise<boolean> {
  const current = (await trx(OUTBOX_TABLE).where({ id }).forUpdate().first('withdrawn_at')) as { withdrawn_at: Date | null } | undefined;
  return Boolean(current?.withdrawn_at);
}

/** An error: `failed` for good, or `pending` again after `retryInSeconds`. */
export async function recordFailure(
  db: Db,
  id: number,
  outcome: { attempts: number; failed: boolean; error: string; retryInSeconds: number },
): Promise<void> {
  await db(OUTBOX_TABLE)
    .where({ id })
    .update({
      status: outcome.failed ? 'failed' : 'pending',
      attempts: outcome.attempts,
      last_error: closestText(outcome.error),
      sent_changes: null,
      next_attempt_at: db.raw('now() + make_interval(secs => ?)', [outcome.failed ? 0 : outcome.retryInSeconds]),
      updated_at: db.fn.now(),
    });
}

/** A change stopped by an error that ends the push: pending again at once, unless something else settled it meanwhile. */
export async function markInterrupted(db: Db, id: number, attempts: number, error: string): Promise<void> {
  await db(OUTBOX_TABLE)
    .where({ id })
    .whereIn('status', [...UNSENT_STATUSES])
    .update({ status: 'pending', attempts, last_error: closestText(error), next_attempt_at: db.fn.now(), updated_at: db.fn.now() });
}

/** The change waits for `listsync conflicts resolve`; `clearSent` drops the snapshot of what was sent. */
export async function holdAsConflict(db: Db, id: number, error: string, options: { clearSent?: boolean } = {}): Promise<void> {
  await db(OUTBOX_TABLE)
    .where({ id })
    .update({
      status: 'conflict',
      ...(options.clearSent ? { sent_changes: null } : {}),
      last_error: closestText(error),
      updated_at: db.fn.now(),
    });
}

/** local-wins: the next push overwrites whatever version the platform has (base version 0). */
export async function forceOverwrite(db: Db, id: number): Promise<void> {
  await db(OUTBOX_TABLE).where({ id }).update({ base_version: 0, updated_at: db.fn.now() });
}

/**
 * A conflict settled for the local side: pending again against the platform's
 * version with `changes` (the conflict's local side), sent at the next push.
 * Throws OperatorActionError naming the newer change when the item has another open one.
 */
export async function requeueAgainst(
  db: Db,
  id: number | null,
  baseVersion: Version | null,
  changes?: Record<string, unknown>,
): Promise<void> {
  const row = (await db(OUTBOX_TABLE).where({ id }).first('list_name', 'item_id', 'status')) as
    { list_name: string; item_id: string | null; status: OutboxStatus } | undefined;
  if (row && row.item_id !== null && !(OPEN_STATUSES as readonly string[]).includes(row.status)) {
    const open = (await db(OUTBOX_TABLE)
      .where({ list_name: row.list_name, item_id: row.item_id })
      .whereIn('status', [...OPEN_STATUSES])
      .first('id')) as { id: number } | undefined;
    if (open)
      throw new OperatorActionError(
        `item ${row.item_id} has a newer local change (outbox ${open.id}) that the next push sends; settle that one first, or edit the row again.`,
      );
  }
  await db(OUTBOX_TABLE)
    .where({ id })
    .update({
      status: 'pending',
      ...(changes ? { changes: JSON.stringify(changes) } : {}),
      sent_changes: null,
      base_version: baseVersion,
      attempts: 0,
      last_error: null,
      next_attempt_at: db.fn.now(),
      updated_at: db.fn.now(),
    });
}

/** `push --retry-failed`: a list's failed changes are pending again with their attempts reset; returns how many. */
export async function requeueFailed(db: Db, listName: string): Promise<number> {
  return db(OUTBOX_TABLE)
    .where({ list_name: listName, status: 'failed' })
    .update({ status: 'pending', attempts: 0, next_attempt_at: db.fn.now(), updated_at: db.fn.now() });
}
