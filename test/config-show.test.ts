/**
 * `listsync config show` (src/config-sources.ts), config syntax errors with a line and column, and
 * a subcommand's usage error pointing at its own help. No database is needed for any of them.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';

describe('config show', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'listsync-config-show-'));
    mkdirSync(join(dir, 'etc'));
    writeFileSync(
      join(dir, 'etc', 'listsync.config.json'),
      JSON.stringify({
        platform: { baseUrl: 'https://api.example.com/v1' },
        database: { url: 'postgres://sync:${DB_PASSWORD}@db.example.com:5432/mirror' },
        lists: [{ name: 'orders', appID: 'app1', listID: 'list1', pageSize: 200 }],
      }),
    );
    writeFileSync(join(dir, '.env'), 'PLATFORM_API_KEY=key-from-dotenv-7777\nLISTSYNC_LOG_LEVEL=error\n');
    writeFileSync(join(dir, 'etc', '.env'), 'LISTSYNC_LOG_LEVEL=debug\n');
  });

  it('prints every effective setting with where it came from, secrets masked', async () => {
    const r = await runCli(['--config', 'etc/listsync.config.json', 'config', 'show'], {
      cwd: dir,
      env: { DB_PASSWORD: 'pw-from-env-8888', LISTSYNC_LOG_LEVEL: undefined },
    });
    expect(r.code, r.stderr).toBe(0);
    const row = (key: string) => r.stdout.split('\n').find((l) => l.startsWith(`${key} `)) ?? `(no row ${key})`;
    expect(r.stdout).toContain(`config file: ${join(dir, 'etc', 'listsync.config.json')}`);
    expect(row('platform.baseUrl')).toMatch(/https:\/\/api\.example\.com\/v1\s+file$/);
    expect(row('platform.apiKey')).toMatch(
      new RegExp(`\\*\\*\\*\\s+PLATFORM_API_KEY from \\.env in the working directory \\(${join(dir, '.env')}\\)$`),
    );
    expect(row('database.url')).toMatch(/postgres:\/\/sync:\*\*\*@db\.example\.com:5432\/mirror\s+file, DB_PASSWORD from environment$/);
    expect(row('log.level')).toMatch(
      new RegExp(`debug\\s+LISTSYNC_LOG_LEVEL from \\.env beside the config file \\(${join(dir, 'etc', '.env')}\\)$`),
    );
    expect(row('lists[0].pageSize')).toMatch(/200\s+file$/);
    expect(row('platform.requestsPerSecond')).toMatch(/\s+default$/);
    expect(row('lists[0].conflictPolicy')).toMatch(/remote-wins\s+default$/);
    expect(r.stdout).not.toContain('key-from-dotenv-7777');
    expect(r.stdout).not.toContain('pw-from-env-8888');
  });

  it('a JSON syntax error in the config names its line and column', async () => {
    writeFileSync(join(dir, 'broken.json'), '{\n  "platform": {\n    "baseUrl": "https://x/v1",\n  }\n}\n');
    const r = await runCli(['--config', 'broken.json', 'config', 'show'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/broken\.json is not valid JSON: .* at line 4, column 3\b/);
    expect(r.stderr).not.toMatch(/position/);
  });

  it("a subcommand's usage error points at that subcommand's --help", async () => {
    const r = await runCli(['pull', '--bogus'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('(run "listsync pull --help" for usage)');
    const show = await runCli(['conflicts', 'show'], { cwd: dir });
    expect(show.code).toBe(2);
    expect(show.stderr).toContain('(run "listsync conflicts show --help" for usage)');
    const top = await runCli(['--bogus'], { cwd: dir });
    expect(top.stderr).toContain('(run "listsync --help" for usage)');
  });
});
