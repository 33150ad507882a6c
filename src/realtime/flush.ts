/**
 * One flush of a chunk of claims, carrying out flush-plan.ts: the mirror's
 * rows read, the items the plan names looked up on the platform
 * (platform/item-lookup.ts › lookUpItems, the one "gone" rule: refused by ID
 * and absent from an `In` answer, whatever Status the refusal carries),
 * then one transaction: the upsert of the pull (same conversion, version
 * guard, open local changes left alone and settled by the pull's conflict
 * rules), `_deleted_at` for gone items, the events done marked processed, the
 * list's counters in `listsync.realtime_stats`.
 *
 * Before the write, the items are judged against the fields the mirror table
 * was set up from (field-guard.ts): a table behind the platform's fields
 * throws `FieldsChangedOnPlatform` with nothing written.
 *
 * The look-ups count as `realtime` in the request tally, whoever's async
 * context started the flush. A failing query or write throws (the chunk
 * fails); an item whose read by ID fails alone is returned in `failed`.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { FIXED_COLUMNS, markListsyncWriter, qualifiedName, quoteIdent, upsertItems, type TableMapping } from '../mirror/index.js';
import { arrayLiteral } from '../mirror/pg-text.js';
import type { PlatformClient } from '../platform/client.js';
import { lookUpItems, type LookUpResult } from '../platform/item-lookup.js';
import { withRequestSource } from '../platform/request-source.js';
import { pendingConflictHandler } from '../conflicts/recording.js';
import { addFlush } from '../store/realtime-stats.js';
import { markUnprocessedDone } from '../store/webhook-inbox.js';
import { isItemClaim, type Claim, type EventRow } from './claim-merge.js';
import type { FieldGuard } from './field-guard.js';
import { planReads, planWrites, type ReadPlan, type StoredRow, type WritePlan } from './flush-plan.js';

export interface FlushResult {
  list: string;
  events: number;
  applied: number;
  /** IDs re-read through the API. */
  reread: number;
  requests: number;
  fromBody: number;
  deleted: number;
  /** IDs left for a later re-read. */
  recheck: number;
  /** Items whose events failed and wait for a retry. */
  failed: number;
}

export interface FlushDeps {
  db: Knex;
  client: PlatformClient;
  config: Config;
  /** Re-reads of an item older than announced before leaving it to the scheduled pull. */
  maxRechecks: number;
  /** Aborts the look-ups in flight (the applier closing). */
  signal: AbortSignal;
  /** Judges the items against the fields the mirror table was set up from before they are written. */
  guard: FieldGuard;
}

export interface FlushOutcome {
  result: FlushResult;
  /** Claims to re-read later. */
  recheck: Claim[];
  /** Claims whose read failed, by item ID. */
  failed: Map<string, Error>;
}

/** Looks up and writes one chunk of claims; `rows`, the flush's stored events, date the chunk's newest for the lag counter. */
export async function flushChunk(
  deps: FlushDeps,
  list: ListConfig,
  mapping: TableMapping,
  claims: readonly Claim[],
  rows: readonly EventRow[],
): Promise<FlushOutcome> {
  const stored = await storedRows(
    deps.db,
    mapping,
    claims.map((c) => c.id),
  );
  const reads = planReads(claims, stored, list.realtimeTrust === 'body');
  const looked = await lookUp(deps, list, mapping, reads);
  const plan = planWrites({
    claims,
    reads,
    stored,
    answers: looked.items,
    versionField: mapping.versionField,
    maxRechecks: deps.maxRechecks,
  });
  await deps.guard.check(list, mapping, plan.upsert, stored);
  const result: FlushResult = {
    list: list.name,
    events: claims.reduce((n, c) => n + c.inboxIds.length, 0),
    applied: 0,
    reread: looked.asked,
    requests: looked.requests,
    fromBody: reads.fromBody.length,
    deleted: 0,
    recheck: plan.recheck.length,
    failed: plan.failed.size,
  };
  const inChunk = new Set(claims.flatMap((c) => c.inboxIds));
  await write(deps, list, mapping, plan, result, newestReceivedAt(rows.filter((r) => inChunk.has(Number(r.id)))));
  return { result, recheck: plan.recheck, failed: plan.failed };
}

function lookUp(deps: FlushDeps, list: ListConfig, mapping: TableMapping, reads: ReadPlan): Promise<LookUpResult> {
  const ref = { appID: list.appID, listID: list.listID, idField: mapping.idField };
  const ids = reads.reread.map((c) => c.id);
  const options = { signal: deps.signal, byIdOnly: reads.byIdOnly, alsoById: reads.alsoById };
  return withRequestSource('realtime', () => lookUpItems(deps.client, ref, ids, options));
}

const newestReceivedAt = (rows: readonly EventRow[]): Date | null =>
  rows.reduce<Date | null>((m, r) => (m === null || r.received_at > m ? r.received_at : m), null);

/** One transaction: upserts, deletes, processed events, counters; fills in `result`'s applied and deleted. */
async function write(
  deps: FlushDeps,
  list: ListConfig,
  mapping: TableMapping,
  plan: WritePlan,
  result: FlushResult,
  newest: Date | null,
): Promise<void> {
  const { db, config } = deps;
  await db.transaction(async (trx) => {
    await markListsyncWriter(trx);
    if (plan.upsert.length) {
      const r = await upsertItems(trx, mapping, plan.upsert, config.platform.timeZone);
      if (r.skippedPending.length) await pendingConflictHandler(config, list)(trx, mapping, r.skippedPending);
      result.applied += r.inserted + r.updated;
    }
    if (plan.markDeleted.length) result.deleted = await markDeleted(trx, mapping, plan.markDeleted);
    if (plan.done.length) await markUnprocessedDone(trx, plan.done);
    await addFlush(trx, list.name, {
      applied: plan.done.length,
      reread: result.reread,
      requests: result.requests,
      fromBody: result.fromBody,
      deleted: result.deleted,
      newestReceivedAt: newest,
    });
  });
}

async function storedRows(db: Knex, mapping: TableMapping, ids: readonly string[]): Promise<Map<string, StoredRow>> {
  const out = new Map<string, StoredRow>();
  const real = ids.filter(isItemClaim);
  if (real.length === 0) return out;
  const t = qualifiedName(mapping.schema, mapping.table);
  const F = FIXED_COLUMNS;
  const sql = `select ${quoteIdent(F.id)} as id, ${quoteIdent(F.rowVersion)} as row_version, ${quoteIdent(F.deletedAt)} is not null as deleted from ${t} where ${quoteIdent(F.id)} = any(?::text[])`;
  const r = (await db.raw(sql, [arrayLiteral(real)])) as {
    rows: { id: string; row_version: string | number | null; deleted: boolean }[];
  };
  for (const row of r.rows) out.set(row.id, { version: row.row_version === null ? null : Number(row.row_version), deleted: row.deleted });
  return out;
}

async function markDeleted(trx: Knex.Transaction, mapping: TableMapping, ids: readonly string[]): Promise<number> {
  const t = qualifiedName(mapping.schema, mapping.table);
  const del = quoteIdent(FIXED_COLUMNS.deletedAt);
  const r = (await trx.raw(`update ${t} set ${del} = now() where ${quoteIdent(FIXED_COLUMNS.id)} = any(?::text[]) and ${del} is null`, [
    arrayLiteral(ids),
  ])) as { rowCount: number | null };
  return r.rowCount ?? 0;
}
