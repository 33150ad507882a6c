/**
 * What a push records of one change, each in the transaction that makes it
 * true if the process dies on the next line:
 *
 * - 'sending' with a snapshot of what is sent, before the request; edits
 *   made meanwhile stay pending as the remainder (test/sync/latest-edit.test.ts);
 * - applied, with what the write is known to have produced written into the
 *   mirror row (src/mirror/write-results.ts), flagged `mirror_behind` until re-read;
 *   the part naming removed fields kept, failed (test/sync/write-back.test.ts);
 * - a failure, pending with backoff or failed (push/outcome.ts › failureRecord);
 * - interrupted by an error that ends the push: pending again, the attempt
 *   counted, no backoff (test/sync/write-back-faults.test.ts).
 */
import type { Knex } from '../../db.js';
import { coerceError } from '../../errors.js';
import type { TableMapping } from '../../mirror/index.js';
import { recordWrite } from '../../mirror/write-results.js';
import type { Version } from '../../platform/item-identity.js';
import * as outbox from '../../store/outbox.js';
import type { OutboxRow } from '../../store/outbox.js';
import { failureRecord, type Outcome } from './outcome.js';
import { jsonbColumns, removedFieldsError } from './wire.js';

/** Records an error: pending with backoff (retryable) or failed (final, or out of attempts). */
export async function fail(db: Knex, row: OutboxRow, error: string, final: boolean, maxAttempts: number): Promise<Outcome> {
  const record = failureRecord(row.attempts, final, maxAttempts);
  await outbox.recordFailure(db, row.id, { ...record, error });
  return record.failed ? { kind: 'failed', error } : { kind: 'retry', error };
}

/** A change stopped by an error that ends the push: pending again, with the error and the attempt counted (no backoff: the cause is outside the change). */
export async function interrupted(db: Knex, row: OutboxRow, err: unknown): Promise<void> {
  await outbox.markInterrupted(db, row.id, row.attempts + 1, `interrupted: ${coerceError(err).message}`);
}

/** Marks the change as being sent (a create also counts the send and keeps its first attempt's time); returns now. */
export async function markSending(
  db: Knex,
  row: OutboxRow,
  sent: Record<string, unknown>,
  options: { create?: boolean } = {},
): Promise<Date> {
  const now = new Date();
  await outbox.markSending(db, row.id, sent, now, options);
  return now;
}

/** The exact JSON text of the change's jsonb columns (numbers as PostgreSQL holds them). */
export function exactJsonOf(
  db: Knex,
  mapping: TableMapping,
  row: OutboxRow,
  which: 'changes' | 'sent_changes',
): Promise<Record<string, string>> {
  return outbox.exactJsonValues(db, row.id, jsonbColumns(mapping), which);
}

/** What an applied edit wrote: kept in the mirror row with the change's settlement. */
export interface AppliedWrite {
  mapping: TableMapping;
  id: string;
  /** The version the write produced (null: unknown, e.g. after an overwrite with RowVersion 0). */
  version: Version | null;
  data: Record<string, string>;
  /** Columns of removed fields the edit also named: kept, marked failed. */
  removed?: Record<string, unknown>;
}

/**
 * The sent part is applied, in one transaction with what the mirror row learns
 * from the write. Edits made while it was in flight (the remainder) stay
 * pending against the new version; a part naming removed fields is kept, failed.
 */
export async function settleApplied(
  db: Knex | Knex.Transaction,
  row: OutboxRow,
  sent: Record<string, unknown>,
  newVersion: Version | null,
  write?: AppliedWrite,
): Promise<void> {
  if (row.op === 'delete') return outbox.markApplied(db, row.id);
  const settle = async (trx: Knex.Transaction): Promise<void> => {
    await outbox.settleSentEdit(trx, row.id, sent, newVersion);
    if (write && write.version !== null) await recordWrite(trx, write.mapping, { id: write.id, version: write.version, data: write.data });
    if (write?.removed && Object.keys(write.removed).length)
      await outbox.keepUnsendable(trx, row.id, write.removed, removedFieldsError(write.mapping, write.removed));
  };
  await (db.isTransaction ? settle(db as Knex.Transaction) : db.transaction(settle));
}
