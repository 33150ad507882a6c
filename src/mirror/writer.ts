/**
 * Telling listsync's own writes apart from users' edits: every write to a
 * mirror table by listsync runs in a transaction that first sets
 * `listsync.writer = on` (transaction-local). The capture triggers skip such
 * writes; deletes and id renames are allowed in them.
 */
import type { Knex } from '../db.js';

export const WRITER_SETTING = 'listsync.writer';

/** Marks the transaction as listsync's own; the setting ends with the transaction. */
export async function markListsyncWriter(trx: Knex.Transaction): Promise<void> {
  await trx.raw(`select set_config('listsync.writer', 'on', true)`);
}

export function isTransaction(db: Knex | Knex.Transaction): db is Knex.Transaction {
  return (db as Knex.Transaction).isTransaction === true;
}

/**
 * Runs `fn` in a transaction marked as listsync's own: the given one when
 * `db` is a transaction, else a new one.
 */
export async function withListsyncWriter<T>(db: Knex | Knex.Transaction, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  if (isTransaction(db)) {
    await markListsyncWriter(db);
    return fn(db);
  }
  return db.transaction(async (trx) => {
    await markListsyncWriter(trx);
    return fn(trx);
  });
}
