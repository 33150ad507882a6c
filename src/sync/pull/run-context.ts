/**
 * The shapes a pull is made of: what it is handed and what its steps share.
 * No behaviour here.
 */
import type { ListConfig } from '../../config.js';
import type { TableMapping, UpsertResult } from '../../mirror/index.js';
import type { RunCounters } from '../../store/runs.js';
import type { PullPlan } from './plan.js';
import type { ListTitles } from '../list-title.js';
import type { ActiveRun, JobDeps, PageDone } from '../run-job.js';
import type { PendingHandler } from './page-writer.js';
import type { SchemaSignal } from './schema-signals.js';

/** A pull's page: what every job's progress shows, and what the page's upsert did. */
export interface PageProgress extends PageDone {
  result: UpsertResult;
}

export interface PullDeps extends JobDeps {
  clock?: () => Date;
  onPage?: (p: PageProgress) => void;
  onPending?: PendingHandler;
  /** Ask the field metadata even when the kept one is fresh (`pull --refresh-schema`). */
  refreshSchema?: boolean;
  /** What the first page of an attempt that started again showed (the run asks the fields because of them). */
  signalsSeen?: readonly SchemaSignal[];
  /** Where a list without a title gets one: shared by the lists of one pull (one listing per application). */
  titles?: ListTitles;
  /**
   * A first load asks its start probes with its first page (see pull/start.ts): for a pull of one
   * list, bound by round trips; lists pulled together, bound by the budget, ask page 1 alone first.
   */
  startProbesEarly?: boolean;
}

export interface PullResult {
  runId: number;
  list: string;
  status: 'succeeded' | 'failed' | 'stopped';
  resumed: boolean;
  windowFrom: string | null;
  windowTo: string | null;
  /** How the run read: newest first down to the high-water mark, or by the immutable sort field. */
  order: PullPlan['order'];
  /** Why a pull that could read newest first did not. */
  fallback: string | null;
  watermark: string | null;
  highWater: string | null;
  watermarkHeld: boolean;
  /** Why the marks stayed. */
  heldBecause: string | null;
  counters: RunCounters;
  schemaChanges: string[];
}

/** What every step of one run works with; the checkpoint is not here: each step returns it. */
export interface RunContext {
  deps: PullDeps;
  list: ListConfig;
  job: 'pull' | 'backfill';
  run: ActiveRun;
  mapping: TableMapping;
  zone: string;
  takeRequests: () => Partial<RunCounters>;
  counters: RunCounters;
  itemsSoFar: number;
  fieldsAsked: boolean;
  knownKeys: ReadonlySet<string>;
  /** Keys items carried that are not in `knownKeys`, and fields items leave out though listed: noted as quiet keys. */
  unknownKeys: Set<string>;
  /** Keys whose presence or absence in items says nothing of the fields (the registry's `item_keys`). */
  quietKeys: ReadonlySet<string>;
  /** Schema changes the run made, at its start and when a page made it ask the fields. */
  schemaChanges: string[];
  /** Fields appeared in the middle of the run: every row waits for the next run's full read. */
  refilledMidRun: boolean;
}
