/**
 * `listsync init` leaves write-back unscheduled unless asked (`--write-back`), and says how to turn it
 * on: serve never sends SQL edits to the platform without the user having chosen it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { runCli } from './helpers/cli.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Runs init in a new directory; its output and the config it wrote, as listsync reads it. */
async function init(args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'listsync-init-'));
  dirs.push(dir);
  const r = await runCli(['init', ...args], { cwd: dir });
  expect(r.code, r.stderr).toBe(0);
  const raw = readFileSync(join(dir, 'listsync.config.json'), 'utf8');
  const config = parseConfig(JSON.parse(raw), { PLATFORM_API_KEY: 'k', DATABASE_URL: 'postgres://u@127.0.0.1/db' });
  return { out: r.stdout, raw, config };
}

describe('init and write-back', () => {
  it('writes no push schedule, and says how to turn write-back on', async () => {
    const { out, raw, config } = await init([]);
    expect(config.lists.length).toBeGreaterThan(0);
    for (const list of config.lists) {
      expect(list.schedule.push).toBeUndefined();
      expect(list.schedule.pull).toBeDefined();
    }
    expect(out).toContain('Write-back is not scheduled');
    expect(out).toContain('"push": "*/2 * * * *"');
    expect(out).toContain('init --write-back');
    // The config's own comment says it too, where the schedule is.
    const written = JSON.parse(raw) as { lists: { schedule: Record<string, string> }[] };
    for (const list of written.lists)
      expect(list.schedule['//']).toMatch(/^Write-back is not scheduled: .*"listsync push".*"push": "\*\/2 \* \* \* \*"/);
  });

  it('with --write-back, every list pushes on a schedule', async () => {
    const { out, raw, config } = await init(['--write-back']);
    for (const list of config.lists) expect(list.schedule.push).toBe('*/2 * * * *');
    expect(out).toContain('Write-back is scheduled');
    expect(raw).not.toContain('Write-back is not scheduled');
  });
});
