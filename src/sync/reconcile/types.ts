/**
 * The shapes a reconcile run is made of: what it is handed (deps, options), what it returns,
 * and the parts its steps share. No behaviour here.
 */
import type { ListConfig } from '../../config.js';
import type { SweepTables } from '../../mirror/sweep-tables.js';
import type { TableMapping } from '../../mirror/index.js';
import type { RunCounters } from '../../store/runs.js';
import type { JobDeps, PageDone } from '../run-job.js';

/** IDs a sweep request asks for, and IDs a confirming In lookup sends. */
export const RECONCILE_PAGE_SIZE = 1000;

/** `signal`: the sweep stops and nothing is marked. */
export type ReconcileDeps = JobDeps & { onPage?: (p: PageDone) => void };

export interface ReconcileOptions {
  /** Sweep every ID (the default compares counts of Created ranges first and sweeps only where they differ). */
  full?: boolean;
}

/** What a reconcile by counts asked and found (null for a full sweep). */
export interface CountReport {
  /** Count requests (PageSize 1) sent. */
  requests: number;
  /** The whole list's count: the platform's TotalCount and the mirror's live rows. */
  platformTotal: number;
  mirrorTotal: number;
  /** The ranges of platform days whose counts differed and that were swept by IDs. */
  swept: string[];
}

/** Rows re-read and upserted: IDs the mirror lacked, rows whose version was behind, rows left to write-back. */
export interface Healed {
  missing: number;
  behind: number;
  keptLocal: number;
}

export interface ReconcileResult {
  runId: number;
  list: string;
  /** `counts`: counts of Created ranges, then the IDs of the ranges that differ; `full`: every ID. */
  mode: 'counts' | 'full';
  /** `refused`: the sweep was found untrustworthy; nothing was marked and the run is recorded failed. */
  status: 'succeeded' | 'refused' | 'stopped';
  /** Why it refused or stopped. */
  message: string | null;
  /** Distinct IDs the sweep received. */
  seen: number;
  /** Live (not deleted, not provisional) mirror rows before the run. */
  live: number;
  /** The platform's TotalCount (the last one reported; the whole list's). */
  totalCount: number;
  pages: number;
  /** Candidates the ID lookups found still present (skipped by the sweep). */
  confirmedPresent: number;
  deleted: number;
  undeleted: number;
  healed: Healed;
  counts: CountReport | null;
  counters: RunCounters;
  /** Where the time went: the sweep (counts, paging + collecting IDs), finding the candidates, confirming them on the platform, marking. */
  timingsMs: { sweep: number; candidates: number; confirm: number; heal: number; mark: number };
}

/** One run's working parts, handed to its steps. */
export interface RunParts {
  runId: number;
  deps: ReconcileDeps;
  list: ListConfig;
  mapping: TableMapping;
  work: SweepTables;
  counters: RunCounters;
  timingsMs: ReconcileResult['timingsMs'];
  /** Milliseconds since the last call (the phase that just ended). */
  phaseEnd: () => number;
}

/** What a sweep (full or by counts) leaves for the steps after it. */
export interface SweepOutcome {
  seen: number;
  live: number;
  totalCount: number;
  /** Recorded with the run. */
  details: Record<string, unknown>;
  /** Why marking must not go ahead, or null. */
  refusal: string | null;
  counts: CountReport | null;
}
