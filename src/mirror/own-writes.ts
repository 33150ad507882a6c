/**
 * Telling listsync's own writes apart from users' edits: every write to a
 * mirror table by listsync runs in a transaction that first sets
 * `listsync.writer = on` (transaction-local). The capture triggers skip such
 * writes; deletes and id renames are allowed in them.
 *
 * A transaction is marked once: the transactions marked so far are
 * remembered, so a later `markListsyncWriter` on the same one costs no round
 * trip, and a statement that has to run anyway can carry the mark in front of
 * it (`WRITER_MARK` then `noteMarked`). The mark must be set outside any
 * savepoint: rolling back to a savepoint set before it would undo it.
 */
import type { Knex } from '../db.js';

export const WRITER_SETTING = 'listsync.writer';

/** The statement that marks a transaction as listsync's own (takes no bindings, so it can lead a multi-statement query). */
export const WRITER_MARK = `select set_config('${WRITER_SETTING}', 'on', true)`;

const marked = new WeakSet<Knex.Transaction>();

/** Marks the transaction as listsync's own; the setting ends with the transaction. */
export async function markListsyncWriter(trx: Knex.Transaction): Promise<void> {
  if (marked.has(trx)) return;
  await trx.raw(WRITER_MARK);
  marked.add(trx);
}

/** Whether this transaction carries the mark already. */
export function isMarked(trx: Knex.Transaction): boolean {
  return marked.has(trx);
}

/** Records that a statement led by `WRITER_MARK` has run in this transaction. */
export function noteMarked(trx: Knex.Transaction): void {
  marked.add(trx);
}

export function isTransaction(db: Knex | Knex.Transaction): db is Knex.Transaction {
  return (db as Knex.Transaction).isTransaction === true;
}

/**
 * Runs `fn` in a transaction marked as listsync's own: the given one when
 * `db` is a transaction, else a new one.
 */
export async function withListsyncWriter<T>(db: Knex | Knex.Transaction, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return inTransaction(db, async (trx) => {
    await markListsyncWriter(trx);
    return fn(trx);
  });
}

/** Runs `fn` in the given transaction, or in a new one when `db` is not a transaction. */
export async function inTransaction<T>(db: Knex | Knex.Transaction, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return isTransaction(db) ? fn(db) : db.transaction(fn);
}
