/**
 * A conflict settled "keep local" is sent at once, not left for a push that
 * may never be scheduled: the queued change goes through the push's own
 * update (src/sync/push/update.ts: version-checked, a lost answer read back)
 * and the item is re-read into the mirror. The caller holds the list's lock.
 * A change the platform does not take now stays queued with its error. Like a
 * push, it writes by field metadata at most minutes old (src/sync/write-fields.ts).
 */
import type { ListConfig } from '../config.js';
import { coerceError } from '../errors.js';
import type { TableMapping } from '../mirror/index.js';
import { AuthError } from '../platform/platform-errors.js';
import { OUTBOX_TABLE, type OutboxRow } from '../store/outbox.js';
import { settleMirror } from '../sync/push/settle-mirror.js';
import type { PushDeps } from '../sync/push/types.js';
import { pushUpdate } from '../sync/push/update.js';
import { fieldsForWrite } from '../sync/write-fields.js';

export type Sent = { kind: 'applied' } | { kind: 'queued'; detail: string };

export async function sendResolved(deps: PushDeps, list: ListConfig, mapping: TableMapping, outboxId: number | null): Promise<Sent> {
  const row = (await deps.db(OUTBOX_TABLE).where({ id: outboxId }).first()) as OutboxRow | undefined;
  if (!row || row.status !== 'pending' || row.op !== 'update') return { kind: 'queued', detail: 'the change is no longer pending' };
  try {
    // As a push does: never written by field metadata older than minutes, never to a removed field.
    const current = await fieldsForWrite(deps, list, mapping, [row], deps.logger);
    const outcome = await pushUpdate({ deps, list, mapping: current }, row);
    const zone = deps.config.platform.timeZone;
    await settleMirror({ db: deps.db, client: deps.client, logger: deps.logger, zone }, list, current);
    if (outcome.kind === 'applied') return { kind: 'applied' };
    if (outcome.kind === 'conflict')
      return { kind: 'queued', detail: 'the item changed on the platform again: a new conflict was recorded' };
    return { kind: 'queued', detail: 'error' in outcome ? outcome.error : outcome.kind };
  } catch (err) {
    if (err instanceof AuthError) throw err;
    return { kind: 'queued', detail: coerceError(err).message };
  }
}
