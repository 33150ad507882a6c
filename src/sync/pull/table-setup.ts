/**
 * The mirror table a pull writes into, set up from the field metadata (asked
 * only for a reason: src/sync/list-fields.ts, pull.ts I7), and the rows marked
 * for a full re-read when the platform added a field.
 */
import { pinnedNames, pinnedTypes, type ListConfig } from '../../config.js';
import { ensureMirrorTable, markListsyncWriter, readRegistry, type TableMapping } from '../../mirror/index.js';
import type { FieldMeta } from '../../platform/types.js';
import { FIELD_APPEARED_KINDS } from '../../schema-change.js';
import { readFieldMeta, recordFieldMeta } from '../../store/registry.js';
import type { SyncState } from '../../store/state.js';
import { fieldsAskReason, knownItemKeys } from '../list-fields.js';
import { listTitle } from '../list-title.js';
import type { ActiveRun } from '../run-job.js';
import { isResumable, type PullCheckpoint, type PullMode } from './checkpoint.js';
import type { PullDeps } from './run-context.js';
import { describeSignals, quietAfterAsking } from './schema-signals.js';

/** row_version of rows waiting for a full re-read after the platform added a field. */
export const REFILL_VERSION = -1;

export interface PreparedTable {
  mapping: TableMapping;
  fields: FieldMeta[];
  /** The run asked `/fields` (else it used the kept answer). */
  fieldsAsked: boolean;
  /** Keys an item may carry; another is a field the mirror does not know yet. */
  knownKeys: ReadonlySet<string>;
  quietKeys: ReadonlySet<string>;
  /** Keys the signs that made this attempt ask show to be quiet (the answer still lists a missing field, lacks a key back). */
  quietAdded: string[];
}

export async function prepareTable(deps: PullDeps, list: ListConfig, run: ActiveRun): Promise<PreparedTable> {
  const known = await readRegistry(deps.db, list.name);
  const kept = known ? await readFieldMeta(deps.db, list.name) : undefined;
  const askedAt = (deps.clock ?? (() => new Date()))();
  const seen = deps.signalsSeen ?? [];
  const why = seen.length
    ? `the items say the fields changed (${describeSignals(seen)})`
    : fieldsAskReason(known, kept, list, askedAt.getTime(), deps.refreshSchema === true);
  if (why) run.log.debug({ because: why }, 'asking the field metadata');
  // The list's title is for the table's comment: asked for while the mirror has none, not on every
  // pull (each request is the account's budget).
  const [fields, title] = await Promise.all([
    why || !kept ? deps.client.getFields(list.appID, list.listID) : kept.fields,
    known?.title ? undefined : (deps.titles?.titleOf(list) ?? listTitle(deps.client, list, deps.logger)),
  ]);
  const mapping = await ensureMirrorTable(deps.db, mirrorTableOptions(deps, list, fields, run, title));
  // Kept only once the table reflects it: a run that dies before asks again.
  if (why) await recordFieldMeta(deps.db, list.name, fields, askedAt);
  const itemKeys = kept?.itemKeys ?? [];
  return {
    mapping,
    fields,
    fieldsAsked: why !== null,
    knownKeys: knownItemKeys(list, fields, itemKeys),
    quietKeys: new Set(itemKeys),
    quietAdded: quietAfterAsking(deps.signalsSeen ?? [], fields),
  };
}

/** The options the mirror table is set up with, from a field list. */
export function mirrorTableOptions(deps: PullDeps, list: ListConfig, fields: FieldMeta[], run: ActiveRun, title?: string) {
  return {
    schema: deps.config.database.schema,
    list: { name: list.name, appID: list.appID, listID: list.listID, table: list.table ?? list.name },
    fields,
    idField: list.idField,
    versionField: list.versionField,
    timeZone: deps.config.platform.timeZone,
    columnNames: list.columnNames,
    columns: pinnedNames(list.columns),
    columnTypes: pinnedTypes(list.columns),
    omitsEmptyValues: deps.config.platform.omitsEmptyValues,
    reportingSchema: deps.config.database.reportingSchema,
    history: list.history,
    pushDeletes: list.pushDeletes,
    ...(title !== undefined ? { title } : {}),
    runId: run.runId,
    logger: deps.logger,
  };
}

/**
 * A field added (or back) on the platform: existing rows have no value for it yet, and their
 * versions did not move. Re-read everything once, rewriting every row: their versions are set to
 * REFILL_VERSION, which no platform version equals, until the full read has rewritten them (a
 * run that fails before its first checkpoint finds them marked and starts the full read again).
 */
export async function markRefill(
  deps: PullDeps,
  mapping: TableMapping,
  mode: PullMode,
  state: SyncState<PullCheckpoint>,
): Promise<boolean> {
  if (mode.kind !== 'incremental' || isResumable(state.checkpoint, mode) || state.watermark === null) return false;
  const table = `${mapping.schema}.${mapping.table}`;
  const fieldsAdded = (mapping.schemaChanges ?? []).some((c) => FIELD_APPEARED_KINDS.has(c.kind));
  if (fieldsAdded) await markAllForRefill(deps, mapping);
  return fieldsAdded || Boolean(await deps.db(table).where({ row_version: REFILL_VERSION }).first('id'));
}

export async function markAllForRefill(deps: PullDeps, mapping: TableMapping): Promise<void> {
  await deps.db.transaction(async (trx) => {
    await markListsyncWriter(trx);
    await trx.raw(`update ?? set row_version = ? where id not like 'local-%'`, [`${mapping.schema}.${mapping.table}`, REFILL_VERSION]);
  });
}
