/**
 * The busy-list scenario: a nightly job touches most of a list, spread over
 * `hours` before now (the emulator's clock pinned step by step), then the
 * clock runs free again. Used by the pull tests and `npm run bench incremental`.
 */
import type { EmulatorAdminClient } from '../../src/emulator/admin-client.js';

export async function runNightlyJob(admin: EmulatorAdminClient, opts: { appID: string; listID: string; edits: number; hours: number; steps?: number }): Promise<void> {
  const steps = opts.steps ?? 24;
  const start = Date.now() - opts.hours * 3600_000;
  for (let s = 0; s < steps; s++) {
    await admin.setClock(new Date(start + (s * opts.hours * 3600_000) / steps));
    const target = Math.round(((s + 1) * opts.edits) / steps);
    await admin.setActivity({ appID: opts.appID, listID: opts.listID, editsPerSecond: 10_000, seed: s + 1 });
    while ((await admin.activity()).totals.edits < target - Math.round((s * opts.edits) / steps)) await new Promise((r) => setTimeout(r, 10));
    await admin.setActivity(null);
  }
  await admin.setClock(null);
}
