/**
 * Items about to be written, judged against the kept field metadata
 * (pull/schema-signals.ts; src/sync/pull.ts I7). On a sign, `/fields` is asked
 * before they are written: the run's first page starts the run again (nothing
 * is written yet: `FieldsChanged`), a later one sets the table up anew in
 * place. Once a run has asked, no more.
 */
import { ensureMirrorTable } from '../../mirror/index.js';
import { storedVersions } from '../../mirror/stored-versions.js';
import { itemId, itemVersion } from '../../platform/item-identity.js';
import type { Item } from '../../platform/types.js';
import { FIELD_APPEARED_KINDS } from '../../schema-change.js';
import { recordFieldMeta } from '../../store/registry.js';
import { knownItemKeys } from '../list-fields.js';
import type { PageWriter } from './page-writer.js';
import type { RunContext } from './run-context.js';
import { describeSignals, keySignals, quietAfterAsking, unfitValues, valueSignals, type SchemaSignal } from './schema-signals.js';
import { markAllForRefill, mirrorTableOptions } from './table-setup.js';

/** The run's first page says the kept field metadata is out of date: the run starts again with the platform's. */
export class FieldsChanged extends Error {
  constructor(readonly signals: readonly SchemaSignal[]) {
    super(describeSignals(signals));
  }
}

export async function checkFields(ctx: RunContext, writer: PageWriter, items: readonly Item[], first: boolean): Promise<void> {
  if (ctx.fieldsAsked || items.length === 0) return;
  const signals = await pageSignals(ctx, items);
  if (signals.length === 0) return;
  if (first) throw new FieldsChanged(signals);
  await refreshFields(ctx, writer, signals);
}

async function pageSignals(ctx: RunContext, items: readonly Item[]): Promise<SchemaSignal[]> {
  const { list, mapping } = ctx;
  const signals = keySignals(items, { mapping, knownKeys: ctx.knownKeys, quietKeys: ctx.quietKeys });
  const unfit = unfitValues(items, mapping, (item) => itemId(item[list.idField]), ctx.zone);
  if (unfit.size === 0) return signals;
  // A value judged when its version was written is not judged again: only items the mirror does not hold at that version.
  const stored = await storedVersions(ctx.deps.db, mapping, [...unfit.keys()]);
  return [...signals, ...valueSignals(unfit, stored, (item) => itemVersion(item[list.versionField]))];
}

/**
 * Asks `/fields` in the middle of a read: the pages in flight are written first (with the mapping
 * they were read under), then the table is set up from the answer and the writer writes on with it.
 * A field that appeared has no values in the rows written so far: every row is marked for the next
 * run's full read (table-setup.ts › markRefill), and this run does not clear the marks.
 */
async function refreshFields(ctx: RunContext, writer: PageWriter, signals: readonly SchemaSignal[]): Promise<void> {
  const { deps, list, run } = ctx;
  run.log.info({ signs: describeSignals(signals) }, 'the items say the fields changed since they were asked: asking them again');
  await writer.drain();
  const askedAt = (deps.clock ?? (() => new Date()))();
  const fields = await deps.client.getFields(list.appID, list.listID);
  const mapping = await ensureMirrorTable(deps.db, mirrorTableOptions(deps, list, fields, run));
  await recordFieldMeta(deps.db, list.name, fields, askedAt);
  ctx.fieldsAsked = true;
  ctx.mapping = mapping;
  writer.useMapping(mapping);
  ctx.knownKeys = knownItemKeys(list, fields, [...ctx.quietKeys]);
  for (const key of quietAfterAsking(signals, fields)) ctx.unknownKeys.add(key);
  ctx.schemaChanges.push(...mapping.changes);
  if ((mapping.schemaChanges ?? []).some((c) => FIELD_APPEARED_KINDS.has(c.kind))) {
    await markAllForRefill(deps, mapping);
    ctx.refilledMidRun = true;
  }
}
