/**
 * Pure: the outbox's statuses and the SQL fragments that join it per row of a
 * mirror table (the upsert's pending check, rederive, reconcile). Text only,
 * so statement builders can use them without reaching the database.
 */
export const OUTBOX_TABLE = 'listsync.outbox';

export type OutboxStatus = 'pending' | 'sending' | 'conflict' | 'applied' | 'failed' | 'superseded';
export type OutboxOp = 'update' | 'create' | 'delete';

/** The statuses of a change not yet settled: the mirror row keeps its local values while one is open. */
export const OPEN_STATUSES = ['pending', 'sending', 'conflict'] as const satisfies readonly OutboxStatus[];
/** The statuses a push (or its dry run) sends. */
export const UNSENT_STATUSES = ['pending', 'sending'] as const satisfies readonly OutboxStatus[];

const quoted = (statuses: readonly OutboxStatus[]): string => statuses.map((s) => `'${s}'`).join(', ');

/**
 * SQL fragments for set-based statements over a mirror table (the upsert's
 * pending check, rederive, reconcile), which join the outbox per row. Each
 * binds the list's name (one `?`).
 */

/** An open change (`o`) for the item whose id is `idExpr`: an edit or delete of it, or an unconfirmed create under that id. */
export const openChangeFor = (idExpr: string): string =>
  `o.list_name = ? and (o.item_id = ${idExpr} or (o.op = 'create' and o.local_id = ${idExpr})) and o.status in (${quoted(OPEN_STATUSES)})`;

/** `(select 1 ... limit 1)`: an open change exists for `idExpr` (see `openChangeFor`). */
export const openChangeExists = (idExpr: string): string => `(select 1 from ${OUTBOX_TABLE} o where ${openChangeFor(idExpr)} limit 1)`;

/** A lateral subquery: `hit` and the change's `base_version` when an open change exists for `idExpr`. */
export const openChangeLookup = (idExpr: string): string => `select 1 as hit, o.base_version from ${OUTBOX_TABLE} o
     where ${openChangeFor(idExpr)} limit 1`;

/** An open edit or delete of the item `idExpr` (creates not counted): for rederive. */
export const openItemChangeExists = (idExpr: string): string =>
  `(select 1 from ${OUTBOX_TABLE} o where o.list_name = ? and o.item_id = ${idExpr} and o.status in (${quoted(OPEN_STATUSES)}))`;

/** As `openChangeExists`, and a create that failed for good (its row never reached the platform): for reconcile. */
export const unsettledChangeExists = (idExpr: string): string => `(select 1 from ${OUTBOX_TABLE} o
   where o.list_name = ? and (o.item_id = ${idExpr} or (o.op = 'create' and o.local_id = ${idExpr}))
     and (o.status in (${quoted(OPEN_STATUSES)}) or (o.op = 'create' and o.status = 'failed')))`;

/** For the demo's walkthrough: the captured changes, as a user would query them. */
export const PENDING_CHANGES_SQL = `select op, item_id, changes, base_version from ${OUTBOX_TABLE} where status = 'pending'`;
