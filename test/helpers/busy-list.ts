/**
 * The busy-list scenario: a nightly job touches most of a list, spread over
 * `hours` ending `endsMinutesAgo` before now (the emulator's clock pinned in
 * `steps` steps, default every 2 minutes), then the clock runs free again. Used by
 * the pull tests and `npm run bench incremental`.
 */
import type { EmulatorAdminClient } from '../../src/emulator/admin-client.js';

export async function runNightlyJob(
  admin: EmulatorAdminClient,
  opts: { appID: string; listID: string; edits: number; hours: number; endsMinutesAgo?: number; steps?: number },
): Promise<void> {
  const steps = opts.steps ?? opts.hours * 30;
  const start = Date.now() - opts.hours * 3600_000 - (opts.endsMinutesAgo ?? 60) * 60_000;
  for (let s = 0; s < steps; s++) {
    await admin.setClock(new Date(start + (s * opts.hours * 3600_000) / steps));
    const perStep = Math.round(((s + 1) * opts.edits) / steps) - Math.round((s * opts.edits) / steps);
    // About five of the simulator's 50 ms ticks a step, so a step overshoots its share by little.
    await admin.setActivity({ appID: opts.appID, listID: opts.listID, editsPerSecond: Math.min(10_000, perStep * 4), seed: s + 1 });
    while ((await admin.activity()).totals.edits < perStep) await new Promise((r) => setTimeout(r, 10));
    await admin.setActivity(null);
  }
  await admin.setClock(null);
}
