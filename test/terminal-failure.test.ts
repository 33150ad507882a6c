/**
 * On a terminal (a pseudo-terminal from util-linux `script`): a pull that fails after its bar started
 * ends the bar's line before the error (src/terminal-line.ts), shows its retries on the bar as they
 * happen, and says how to carry on from its checkpoint; a 401 on the first request claims no
 * checkpoint. (src/commands/progress.ts, src/commands/resume-hint.ts)
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, childEnv } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

const ESC = String.fromCharCode(27);
/** Moves the cursor to the start of the line (cursorTo 0, carriage return): what follows overwrites it. */
const TO_START = new RegExp(`\\r|${ESC}\\[1?G|${ESC}\\[0?G`, 'g');
const ANSI = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, 'g');

/** The lines as they read on the screen: each line's text after its last return to column 0. */
function screenLines(raw: string): string[] {
  return raw.split('\n').map((line) =>
    (
      line
        .split(TO_START)
        .filter((part) => part.replace(ANSI, '') !== '')
        .at(-1) ?? ''
    ).replace(ANSI, ''),
  );
}

function onTerminal(args: string[], env: Record<string, string>): Promise<{ code: number | null; raw: string; lines: string[] }> {
  // A terminal wide enough for the whole bar (a pseudo-terminal's size is otherwise 0, read as 80 columns).
  const command = `stty cols 200 rows 50; ${[process.execPath, BIN, ...args].join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env: childEnv({ ...env, LISTSYNC_LOG_LEVEL: undefined }) });
    let raw = '';
    child.stdout.on('data', (d: Buffer) => (raw += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, raw, lines: screenLines(raw) }));
  });
}

const BAR = /orders pull \[[^\]]*\] \d+\/\d+ pages/;

describe('a failing pull on a terminal', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 1000, faults: { latencyMs: 30 } }, list: { pageSize: 50 } });
  });
  afterAll(async () => w?.close());

  it('prints the error on a line of its own after the bar, shows a retry on the bar, and says how to carry on', async () => {
    // The 16th request is refused once (429, a retry); page 18 keeps coming back empty, which fails the run.
    await w.emu.admin.setFaults({ rateLimitAtRequest: 16, emptyPages: [18] });
    const r = await onTerminal(['--config', w.configFile, 'pull'], { PLATFORM_API_KEY: w.emu.apiKey });
    expect(r.code, r.raw).toBe(1);
    // Every drawing of the bar, not only what stays on the screen.
    const bars = r.raw
      .split(TO_START)
      .map((part) => part.replace(ANSI, ''))
      .filter((part) => BAR.test(part));
    expect(bars.length, r.raw).toBeGreaterThan(0);
    expect(
      bars.some((l) => /pages \| retrying: HTTP 429, retry 1 \|/.test(l)),
      r.raw,
    ).toBe(true);
    const errors = r.lines.filter((l) => /ERROR|pull failed/.test(l));
    expect(errors.length, r.raw).toBeGreaterThan(0);
    for (const line of errors) expect(line, r.raw).not.toMatch(/pages \||ETA/);
    expect(
      r.lines.find((l) => /ERROR/.test(l)),
      r.raw,
    ).toMatch(/^\S*\s*ERROR|^\d\d:\d\d:\d\d/);
    expect(
      r.lines.some((l) => /^orders: pull failed: /.test(l)),
      r.raw,
    ).toBe(true);
    expect(r.raw).toMatch(
      /orders: the \d+ page\(s\) written are kept \(checkpoint\): run "listsync pull --list orders" again to carry on from page \d+\./,
    );
  }, 90_000);

  it('a 401 on the first request claims no checkpoint', async () => {
    await w.emu.admin.clearFaults();
    await w.t.db.raw('truncate listsync.sync_state');
    const r = await onTerminal(['--config', w.configFile, 'pull'], { PLATFORM_API_KEY: 'wrong-key-000000' });
    expect(r.code, r.raw).toBe(2);
    expect(r.raw).not.toMatch(/checkpoint is kept|written are kept|carry on/);
  }, 60_000);
});
