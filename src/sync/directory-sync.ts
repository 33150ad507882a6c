/**
 * The organization directory besides users: departments, groups with their
 * members, and positions, each read whole into its mirror table (see
 * src/mirror/directory-tables.ts), recorded as one `directory` run.
 *
 * A part the platform does not have (HTTP 404, or an answer with a non-zero
 * Status that is not about the key or the rate) is skipped, not fatal: it is
 * reported (a warning) the first time, then only at debug level while it
 * stays missing (kept in the run state), and its table is left as it is.
 */
import type { PlatformClient } from '../platform/client.js';
import { AuthError, PlatformError, RateLimitError, TransportError } from '../platform/platform-errors.js';
import {
  DIRECTORY_TABLES,
  ensureDirectoryTable,
  replaceDirectoryRows,
  type DirectorySyncResult,
  type DirectoryTableSpec,
} from '../mirror/directory-tables.js';
import { runJob, type JobDeps, type PageDone } from './run-job.js';
import { zeroCounters, type RunCounters } from '../store/runs.js';
import { completeState, readState, writeCheckpoint } from '../store/state.js';

export const DIRECTORY_JOB_LIST = '_directory';
const DIRECTORY_LOCK = 'directory';
const GROUP_PAGE_SIZE = 100;
/** departments, groups, group members, positions. */
const DIRECTORY_TABLE_COUNT = 4;

export type DirectoryPart = 'departments' | 'groups' | 'positions';

export interface DirectoryResult {
  runId: number;
  counters: RunCounters;
  /** Per table: what changed. */
  tables: Record<string, DirectorySyncResult>;
  /** Parts the platform does not have, with why. */
  skipped: Partial<Record<DirectoryPart, string>>;
}

/** `onPage`: after each directory table is written (progress; a 'page' is a table). */
type Deps = JobDeps & { onPage?: (p: PageDone) => void };

interface DirectoryState {
  missing?: Partial<Record<DirectoryPart, string>>;
}

export async function pullDirectory(deps: Deps): Promise<DirectoryResult> {
  const { db, client, config } = deps;
  const spec = {
    list: DIRECTORY_JOB_LIST,
    job: 'directory',
    lockName: DIRECTORY_LOCK,
    waitMs: deps.waitMs ?? 0,
    holderJobs: ['directory'],
    recordSkipped: false,
  } as const;
  return runJob(deps, spec, async (run) => {
    const { runId, log } = run;
    const knownMissing = (await readState<DirectoryState>(db, DIRECTORY_JOB_LIST, 'directory')).checkpoint?.missing ?? {};
    const result: DirectoryResult = { runId, counters: zeroCounters(), tables: {}, skipped: {} };
    const d = config.directory;
    const schema = config.database.schema;
    let itemsSoFar = 0;
    const write = async (table: string, spec: DirectoryTableSpec, rows: readonly Record<string, unknown>[]): Promise<void> => {
      await ensureDirectoryTable(db, schema, table, spec);
      const r = await replaceDirectoryRows(db, schema, table, spec, rows);
      result.tables[table] = r;
      result.counters.pages++;
      result.counters.rows_inserted += r.inserted;
      result.counters.rows_updated += r.updated;
      result.counters.rows_unchanged += r.unchanged;
      result.counters.rows_deleted += r.deleted;
      itemsSoFar += rows.length;
      deps.onPage?.({
        list: 'directory',
        runId,
        page: result.counters.pages,
        pageCount: DIRECTORY_TABLE_COUNT,
        totalCount: 0,
        items: rows.length,
        itemsSoFar,
      });
    };
    /** Runs one part; a part the platform lacks is noted and skipped. */
    const part = async (name: DirectoryPart, fn: () => Promise<void>): Promise<void> => {
      // Shutdown: no new part starts (a request in flight is cancelled by the signal itself).
      if (deps.signal?.aborted) throw new Error(`stopped by shutdown before the ${name} directory was read`);
      try {
        await fn();
      } catch (err) {
        const why = missingEndpoint(err);
        if (why === undefined) throw err;
        result.skipped[name] = why;
        if (knownMissing[name] === undefined)
          log.warn(
            { part: name, reason: why },
            `the platform has no ${name} directory (${why}); skipped, and not reported again while it stays so`,
          );
        else log.debug({ part: name, reason: why }, `${name} still missing on the platform; skipped`);
      }
    };
    await part('departments', async () =>
      write(d.departmentsTable, DIRECTORY_TABLES.departments, await client.getDepartments(deps.signal)),
    );
    await part('groups', async () => {
      const groups = await readAllGroups(client, deps.signal);
      const members: Record<string, unknown>[] = [];
      for (const g of groups) {
        const id = groupId(g);
        if (id === undefined) continue;
        for (const m of await client.getGroupUsers(id, deps.signal)) members.push({ ...m, _GroupID: id });
      }
      await write(d.groupsTable, DIRECTORY_TABLES.groups, groups);
      await write(d.groupMembersTable, DIRECTORY_TABLES.groupMembers, members);
    });
    await part('positions', async () => write(d.positionsTable, DIRECTORY_TABLES.positions, await client.getPositions(deps.signal)));
    Object.assign(result.counters, run.requests());
    const outcome = {
      status: 'succeeded',
      counters: result.counters,
      details: { tables: result.tables, skipped: result.skipped },
    } as const;
    await db.transaction(async (trx) => {
      await completeState(trx, DIRECTORY_JOB_LIST, 'directory', null);
      await writeCheckpoint(trx, DIRECTORY_JOB_LIST, 'directory', { runId, missing: result.skipped });
      await run.settle(trx, outcome);
    });
    log.info({ ...result.counters, skipped: Object.keys(result.skipped) }, 'directory finished');
    return { outcome, result };
  });
}

async function readAllGroups(client: PlatformClient, signal?: AbortSignal): Promise<Record<string, unknown>[]> {
  const all: Record<string, unknown>[] = [];
  for (let page = 1; ; page++) {
    const r = await client.getGroups(page, GROUP_PAGE_SIZE, signal);
    all.push(...r.items);
    const total = r.totalCount;
    if (r.items.length < GROUP_PAGE_SIZE || (total !== undefined && all.length >= total) || page >= 10_000) return all;
  }
}

function groupId(g: Record<string, unknown>): string | undefined {
  for (const k of DIRECTORY_TABLES.groups.columns[0].keys) {
    const v = g[k];
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  }
  return undefined;
}

/** Why an error means "the platform has no such endpoint", or undefined for a real failure. */
function missingEndpoint(err: unknown): string | undefined {
  if (!(err instanceof PlatformError)) return undefined;
  if (err instanceof AuthError || err instanceof RateLimitError || err instanceof TransportError) return undefined;
  if (err.httpStatus === 404) return 'HTTP 404';
  if (err.status !== undefined && err.status !== 0) return `Status ${err.status}${err.platformMessage ? ` "${err.platformMessage}"` : ''}`;
  return undefined;
}
