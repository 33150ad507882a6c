/**
 * Pure: what an upsert decides about a batch's rows, apart from the statements
 * that write them. One row per ID (the highest version wins), then, from what
 * is stored for those IDs, each row's fate: new, changed (its version moved or
 * it comes back after a soft delete), unchanged, or held by an open local
 * change. And the counting of what the writes then did.
 */
import { itemId, itemVersion, type Version } from '../platform/item-identity.js';
import type { Item } from '../platform/types.js';
import type { TableMapping } from './table-mapping.js';

/** Items per batch (one read, at most one insert and one update). */
export const UPSERT_BATCH_SIZE = 1000;
/** At most this many failures are listed (all are counted). */
export const MAX_LISTED_FAILURES = 100;

export interface UpsertFailure {
  /** The item's id ('' when the item has none). */
  id: string;
  /** The platform field whose value did not convert (or `_raw`). */
  field: string;
  raw: unknown;
}

export interface SkippedPending {
  id: string;
  /** The version the platform sent now. */
  remoteVersion: Version | null;
  /** The version the open local change was made against. */
  baseVersion: Version | null;
  item: Item;
}

export interface UpsertResult {
  inserted: number;
  updated: number;
  /** Rows already at the received version (not rewritten). */
  unchanged: number;
  /** Rows that had `_deleted_at` set and came back (counted in `updated` too). */
  undeleted: number;
  /**
   * Values that did not convert (stored NULL, kept in `_raw`), in the rows
   * written by this call (an unchanged row was counted when it was written),
   * plus items without a usable id or version.
   */
  failedValues: number;
  /** The first failures, up to MAX_LISTED_FAILURES. */
  failures: UpsertFailure[];
  /** Items not written because a local change to them is open. */
  skippedPending: SkippedPending[];
  /** Items without a usable id: not written at all (also listed in failures). */
  invalid: number;
  /**
   * Items that omit a field the mirror has a column for: that column (and its `_raw` key) keeps
   * what it held. Not counted (and written NULL) when the platform is known to omit empty values
   * (`platform.omitsEmptyValues`).
   */
  missingKeys: number;
  /**
   * Rows written with text PostgreSQL cannot hold (NUL, lone surrogates): the typed columns have the
   * closest text (U+FFFD in their place), `_raw` the exact values, escaped (src/storable.ts).
   */
  unstorable: number;
}

export function emptyUpsertResult(): UpsertResult {
  return {
    inserted: 0,
    updated: 0,
    unchanged: 0,
    undeleted: 0,
    failedValues: 0,
    failures: [],
    skippedPending: [],
    invalid: 0,
    missingKeys: 0,
    unstorable: 0,
  };
}

export interface BatchRow {
  id: string;
  version: Version | null;
  /** The same version as the digits written into `row_version`. */
  versionText: string | null;
  item: Item;
}

/** What the read of a batch found stored for one of its IDs. */
export interface StoredState {
  id: string;
  present: boolean;
  row_version: Version | null;
  deleted: boolean | null;
  pending: boolean;
  base_version: Version | null;
}

/** What encoding rows finds out about them: values that did not convert, keys missing, text escaped. */
export interface RowReport {
  fail(f: UpsertFailure): void;
  missingKeys(): void;
  unstorable(): void;
}

export function rowReport(result: UpsertResult, fail: (f: UpsertFailure) => void): RowReport {
  return {
    fail,
    missingKeys: () => void result.missingKeys++,
    unstorable: () => void result.unstorable++,
  };
}

/** One row per id: the highest version wins (later ones on a tie). Items without a usable id are counted and left out. */
export function batchRows(
  mapping: TableMapping,
  items: readonly Item[],
  result: UpsertResult,
  fail: (f: UpsertFailure) => void,
): Map<string, BatchRow> {
  const byId = new Map<string, BatchRow>();
  for (const item of items) {
    const id = itemId(item?.[mapping.idField]);
    if (id === null) {
      result.invalid++;
      fail({ id: '', field: mapping.idField, raw: item?.[mapping.idField] });
      continue;
    }
    const rawVersion = item[mapping.versionField];
    const versionText = itemVersion(rawVersion);
    if (versionText === null && rawVersion !== undefined && rawVersion !== null && rawVersion !== '')
      fail({ id, field: mapping.versionField, raw: rawVersion });
    const row: BatchRow = { id, version: versionText === null ? null : Number(versionText), versionText, item };
    const prev = byId.get(id);
    if (!prev || prev.version === null || (row.version !== null && row.version >= prev.version)) byId.set(id, row);
  }
  return byId;
}

/** A batch's rows sorted by what is stored for them. */
export interface Classified {
  /** Not stored yet. */
  fresh: BatchRow[];
  /** Stored at an older version, without one, or soft-deleted. */
  changed: BatchRow[];
  /** Held back: a local change to them is open. */
  pending: SkippedPending[];
  /** Stored at the received version or a newer one. */
  unchanged: number;
  /** Of `changed`, the rows that come back after a soft delete. */
  undeleting: number;
}

/**
 * Each row's fate from what is stored. Versions never go backwards: a row
 * older than the stored one is unchanged; a row without a version is a
 * candidate (the update rewrites it only when its `_raw` differs).
 */
export function classifyStored(byId: ReadonlyMap<string, BatchRow>, stored: readonly StoredState[]): Classified {
  const out: Classified = { fresh: [], changed: [], pending: [], unchanged: 0, undeleting: 0 };
  for (const st of stored) {
    const r = byId.get(st.id)!;
    if (st.pending) {
      out.pending.push({ id: r.id, remoteVersion: r.version, baseVersion: st.base_version, item: r.item });
    } else if (!st.present) {
      out.fresh.push(r);
    } else if (st.deleted || r.version === null || st.row_version === null || r.version > st.row_version) {
      out.changed.push(r);
      if (st.deleted) out.undeleting++;
    } else {
      out.unchanged++;
    }
  }
  return out;
}

/**
 * Adds what the writes of a classified batch did to `result`: the candidates
 * (fresh and changed) the statements' own conditions passed over (another
 * writer was first, an item without a version whose `_raw` is the same) are
 * unchanged.
 */
export function countWrites(result: UpsertResult, c: Classified, inserted: number, updated: number): void {
  result.skippedPending.push(...c.pending);
  result.inserted += inserted;
  result.updated += updated;
  result.undeleted += Math.min(c.undeleting, updated);
  result.unchanged += c.unchanged + c.fresh.length + c.changed.length - inserted - updated;
}
