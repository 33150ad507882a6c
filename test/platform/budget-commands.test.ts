/**
 * `check` and `discover` send through the account's request budget when the
 * database is there: their requests are in the shared log a pull started
 * right after them keeps to (the demo ran check, discover and pull within a
 * second, and the pull's first bursts drew 429s). Real binary, real Postgres,
 * the emulator over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetAccount } from '../../src/platform/shared-budget.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World;
beforeAll(async () => {
  w = await startWorld({ emulator: { items: 40 } });
});
afterAll(async () => w?.close());

const env = () => ({ PLATFORM_API_KEY: w.emu.apiKey });

/** The slots in the account's shared log. */
async function slotsLogged(): Promise<number> {
  const row = (await w.t
    .db('listsync.rate_budget')
    .where({ account: budgetAccount(w.config.platform) })
    .first()) as { recent_slots_ms: number[] } | undefined;
  return row?.recent_slots_ms.length ?? 0;
}

describe("check and discover use the account's request budget", () => {
  it('their requests are in the shared log, as many as the emulator received (discover, sharing the account with check, may leave late slots unused)', async () => {
    await w.emu.admin.clearRequests();
    const check = await runCli(['--config', w.configFile, 'check'], { env: env(), cwd: w.cwd });
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const afterCheck = (await w.emu.admin.requests()).length;
    expect(afterCheck).toBeGreaterThan(0);
    expect(await slotsLogged()).toBe(afterCheck);

    // Right after check, discover shares the account with it (the demo's case): a slot its process
    // could not use on time is dropped, not sent late, and stays in the log unused. So every request
    // has its slot, and the log holds at most one reservation's worth more (the limiter reserves up
    // to 4 slots at a time).
    const discover = await runCli(['--config', w.configFile, 'discover'], { env: env(), cwd: w.cwd });
    expect(discover.code, discover.stdout + discover.stderr).toBe(0);
    const received = (await w.emu.admin.requests()).length;
    expect(received).toBeGreaterThan(afterCheck);
    expect(await slotsLogged()).toBeGreaterThanOrEqual(received);
    expect(await slotsLogged()).toBeLessThanOrEqual(received + 4);
  });
});
