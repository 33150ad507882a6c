/**
 * On a terminal (a pseudo-terminal from util-linux `script`): the bar of a pull ends on a line of
 * its own at N/N, a resumed pull's too, and the summary is printed once (no INFO line repeats it).
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

/** Terminal control sequences (colours, cursor moves): removed before matching. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');

function onTerminal(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, BIN, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env: childEnv({ ...env, LISTSYNC_LOG_LEVEL: undefined }) });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output: output.replace(ANSI, '') }));
  });
}

describe('on a terminal', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 1250, faults: { latencyMs: 40 } }, list: { pageSize: 50 } });
  });
  afterAll(async () => w?.close());

  it('a first pull shows the bar, ends it at 25/25 on its own line, and prints the summary once', async () => {
    const r = await onTerminal(['--config', w.configFile, 'pull'], { PLATFORM_API_KEY: w.emu.apiKey });
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/orders pull \[[^\]]*\] 25\/25 pages \| 1,250 items/);
    expect(r.output).toMatch(/25\/25 pages[^\n]*\r?\n(\r)?orders: succeeded/);
    expect(r.output.match(/orders: succeeded/g)).toHaveLength(1);
    expect(r.output).not.toMatch(/INFO|pull finished/);
  }, 60_000);

  it('a resumed pull ends its bar at N/N too', async () => {
    await w.close();
    w = await startWorld({ emulator: { items: 1250, faults: { latencyMs: 40 } }, list: { pageSize: 50 } });
    const killed = await runCli(['--config', w.configFile, 'pull'], {
      env: { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' },
      cwd: w.cwd,
      stopOn: /"page":3,/,
      stopWith: 'SIGKILL',
    });
    expect(killed.signal).toBe('SIGKILL');
    const r = await onTerminal(['--config', w.configFile, 'pull'], { PLATFORM_API_KEY: w.emu.apiKey });
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/orders: succeeded \(full load, resumed\)/);
    expect(r.output).toMatch(/25\/25 pages[^\n]*\r?\n/);
  }, 60_000);
});
