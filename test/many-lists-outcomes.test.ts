/** A command over many lists does every list it can and ends with a line per list (src/commands/list-outcomes.ts). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../src/emulator/index.js';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('commands over many lists', () => {
  let w: World;
  const cli = (...args: string[]) => runCli(['--config', w.configFile, ...args], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
  beforeAll(async () => {
    w = await startWorld({
      emulator: { items: 30 },
      lists: ['alpha', 'beta', 'gamma'].map((name) => ({ name, appID: 'demo', listID: 'orders', table: name })),
    });
    for (const list of ['alpha', 'gamma']) expect((await cli('pull', '--list', list)).code).toBe(0);
  });
  afterAll(async () => w?.close());

  it('push over three lists whose second has no mirror table yet: the third is pushed, exit 1, a line for each', async () => {
    const id = String((await w.t.db('mirror.gamma').orderBy('id').first('id')).id);
    await w.t.db('mirror.gamma').where({ id }).update({ customer: 'Gamma Co' });
    const r = await cli('push');
    expect(r.code, r.stderr).toBe(1);
    expect((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]).toBe('Gamma Co');
    expect(r.stderr).toMatch(/beta: push failed: List "beta" has no mirror table yet/);
    expect(r.stdout).toMatch(/^push: 2 of 3 lists done, 1 failed$/m);
    expect(r.stdout).toMatch(/^ {2}alpha {2}done: /m);
    expect(r.stdout).toMatch(/^ {2}beta {3}FAILED: List "beta" has no mirror table yet/m);
    expect(r.stdout).toMatch(/^ {2}gamma {2}done: 1 applied/m);
  });

  it('reconcile over the three lists: the lists with a table are reconciled, exit 1, a line for each', async () => {
    const r = await cli('reconcile');
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^alpha: reconcile \(by counts\) succeeded/m);
    expect(r.stdout).toMatch(/^gamma: reconcile \(by counts\) succeeded/m);
    expect(r.stdout).toMatch(/^ {2}beta {3}FAILED: /m);
  });

  it('one list alone keeps its own exit code: a table missing is for the operator to fix (2)', async () => {
    const r = await cli('push', '--list', 'beta');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/beta: push failed: List "beta" has no mirror table yet: run "listsync pull --list beta" first/);
    expect(r.stdout).not.toMatch(/lists done/);
  });
});
