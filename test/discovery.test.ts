/**
 * Finding lists: `discover --apps` and `init --discover` through the real CLI
 * against the emulator's discovery endpoints, a platform that does not answer
 * them, and the client's tolerance of other answer shapes.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configNames } from '../src/commands/discover.js';
import { parsePicks } from '../src/commands/init.js';
import { parseConfig } from '../src/config.js';
import type { SeedFile } from '../src/emulator/index.js';
import { PlatformClient } from '../src/platform/client.js';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

const fields = [{ FieldName: 'Amount', Type: 'input_number', FieldType: 'Decimal' }];
const SEED: SeedFile = {
  lists: [
    { appID: 'sales', listID: 'refunds', title: 'Refunds', description: 'Money paid back', fields, generate: 3 },
    { appID: 'sales', listID: 'refunds-2024', title: 'Refunds', fields, items: [] },
    { appID: 'hr', listID: 'leave', title: 'Leave requests', fields, items: [] },
  ],
};

/** Runs a command with the CLI's child environment; resolves with its exit code and output. */
function runCommand(
  file: string,
  args: string[],
  options: { cwd: string; env: Record<string, string | undefined> },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: options.cwd, env: childEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A plain HTTP server answering every request with `answer` (status, JSON body). */
async function fixedPlatform(answer: (path: string) => [number, unknown]): Promise<{ url: string; server: Server; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    const [status, body] = answer(req.url ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, paths };
}

function listsBlockOf(stdout: string): { name: string; appID: string; listID: string }[] {
  const at = stdout.indexOf('"lists": ');
  expect(at, stdout).toBeGreaterThanOrEqual(0);
  return JSON.parse(stdout.slice(at + '"lists": '.length)) as { name: string; appID: string; listID: string }[];
}

let w: World;
beforeAll(async () => {
  w = await startWorld({ emulator: { sample: true, items: 20, seed: SEED } });
});
afterAll(async () => {
  await w?.close();
});

describe('discover --apps', () => {
  it('prints the applications, their lists with IDs and titles, and a lists block for the config', async () => {
    const r = await runCli(['--config', w.configFile, 'discover', '--apps'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('3 application(s), 4 list(s)');
    expect(r.stdout).toMatch(/sales \(appID sales\): 2 list\(s\)/);
    expect(r.stdout).toMatch(/refunds\s+Refunds\s+Money paid back\s+refunds/);
    expect(r.stdout).toMatch(/leave\s+Leave requests/);
    expect(r.stdout).toMatch(/orders\s+Orders/);
    const block = listsBlockOf(r.stdout);
    expect(block).toEqual(
      expect.arrayContaining([
        { name: 'orders', appID: 'demo', listID: 'orders' },
        { name: 'refunds', appID: 'sales', listID: 'refunds' },
        { name: 'refunds_2', appID: 'sales', listID: 'refunds-2024' },
        { name: 'leave_requests', appID: 'hr', listID: 'leave' },
      ]),
    );
    expect(block).toHaveLength(4);
    // The block is valid config as it stands.
    expect(
      parseConfig({ platform: { baseUrl: w.emu.baseUrl, apiKey: 'k' }, database: { url: 'postgres://x' }, lists: block }).lists,
    ).toHaveLength(4);
    const asked = (await w.emu.admin.requests()).map((q) => `${q.method} ${q.path}`);
    expect(asked).toEqual(
      expect.arrayContaining(['GET /v1/applications', 'GET /v1/applications/sales/lists', 'GET /v1/applications/hr/lists']),
    );
  });
});

describe('init --discover', () => {
  const env = () => ({ PLATFORM_API_KEY: w.emu.apiKey, PLATFORM_BASE_URL: w.emu.baseUrl, DATABASE_URL: w.t.url });

  it('--all writes a config with every list that check accepts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'listsync-init-'));
    const r = await runCli(['init', '--discover', '--all'], { env: env(), cwd: dir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('with 4 list(s): orders, refunds, refunds_2, leave_requests');
    const written = JSON.parse(readFileSync(join(dir, 'listsync.config.json'), 'utf8')) as {
      platform: { baseUrl: string; apiKey: string };
      lists: Record<string, unknown>[];
    };
    expect(written.platform.baseUrl).toBe(w.emu.baseUrl);
    expect(written.platform.apiKey).toBe('${PLATFORM_API_KEY}');
    expect(written.lists.map((l) => `${String(l.appID)}/${String(l.listID)}`)).toEqual([
      'demo/orders',
      'sales/refunds',
      'sales/refunds-2024',
      'hr/leave',
    ]);
    expect(written.lists[1]!['//']).toMatch(/^Refunds: Money paid back \(application sales\)/);

    const check = await runCli(['check'], { env: env(), cwd: dir });
    expect(check.stdout).not.toContain('FAIL');
    expect(check.code).toBe(0);
    for (const name of ['orders', 'refunds', 'refunds_2', 'leave_requests'])
      expect(check.stdout).toMatch(new RegExp(`ok\\s+platform ${name}`));
  });

  it('--list takes the named lists; without a terminal and without --all or --list it says what to pass', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'listsync-init-'));
    const r = await runCli(['init', '--discover', '--list', 'leave', '--list', 'sales/refunds'], { env: env(), cwd: dir });
    expect(r.code).toBe(0);
    const written = JSON.parse(readFileSync(join(dir, 'listsync.config.json'), 'utf8')) as { lists: { name: string }[] };
    expect(written.lists.map((l) => l.name)).toEqual(['leave_requests', 'refunds']);

    const other = mkdtempSync(join(tmpdir(), 'listsync-init-'));
    const bare = await runCli(['init', '--discover'], { env: env(), cwd: other });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/pass --all .* or --list/);
    expect(existsSync(join(other, 'listsync.config.json'))).toBe(false);

    const unknown = await runCli(['init', '--discover', '--list', 'nope'], { env: env(), cwd: other });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--list nope: no such list on the platform. Known lists: demo/orders, sales/refunds');

    const noUrl = await runCli(['init', '--discover', '--all'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: other });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toMatch(/--base-url .* PLATFORM_BASE_URL/);
  });

  it('on a terminal it lists them numbered and takes the picked numbers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'listsync-init-'));
    // `script` gives the child a pseudo-terminal; the answer arrives on its stdin.
    const cli = `${process.execPath} ${BIN} init --discover`;
    const r = await runCommand('bash', ['-c', `printf '2,4\\n' | script -qec "${cli}" /dev/null`], {
      cwd: dir,
      env: { ...env(), CI: undefined },
    });
    const out = r.stdout;
    expect(r.code, r.stderr + out).toBe(0);
    expect(out).toMatch(/1\. demo\/orders\s+Orders/);
    expect(out).toMatch(/4\. hr\/leave\s+Leave requests/);
    const written = JSON.parse(readFileSync(join(dir, 'listsync.config.json'), 'utf8')) as { lists: { name: string }[] };
    expect(written.lists.map((l) => l.name)).toEqual(['refunds', 'leave_requests']);
  });
});

describe('a platform that does not answer the discovery endpoints', () => {
  for (const [what, answer] of [
    ['HTTP 404', [404, { Status: 40400, Data: null, Message: 'Not Found' }]],
    ['Status 40001', [200, { Status: 40001, Data: null, Message: 'Unknown operation' }]],
  ] as const) {
    it(`${what}: exits 1 saying where to find appID and listID instead`, async () => {
      const p = await fixedPlatform(() => [answer[0], answer[1]]);
      try {
        const config = join(mkdtempSync(join(tmpdir(), 'listsync-404-')), 'listsync.config.json');
        writeFileSync(config, JSON.stringify({ platform: { baseUrl: p.url }, database: { url: 'postgres://unused' }, lists: [] }));
        const r = await runCli(['--config', config, 'discover', '--apps'], { env: { PLATFORM_API_KEY: 'some-key-1234' } });
        expect(r.code).toBe(1);
        expect(r.stderr).toContain('The platform does not list its applications and lists here');
        expect(r.stderr).toContain('its address holds the application ID and the list ID');
        expect(r.stderr).toContain('lists[].appID and lists[].listID');
        expect(r.stderr).not.toContain('some-key-1234');
        // Not retried: a missing endpoint does not come back.
        expect(p.paths).toEqual(['/v1/applications']);

        const dir = mkdtempSync(join(tmpdir(), 'listsync-404-'));
        const init = await runCli(['init', '--discover', '--all'], {
          env: { PLATFORM_API_KEY: 'some-key-1234', PLATFORM_BASE_URL: p.url },
          cwd: dir,
        });
        expect(init.code).toBe(1);
        expect(init.stderr).toContain('open the list in the browser');
        expect(existsSync(join(dir, 'listsync.config.json'))).toBe(false);
      } finally {
        p.server.close();
      }
    });
  }
});

describe('client discovery answers', () => {
  it('takes Data as an object holding the array, and ID / Name keys', async () => {
    const p = await fixedPlatform((path) =>
      path.endsWith('/applications')
        ? [
            200,
            {
              Status: 0,
              Message: '',
              Data: {
                Items: [
                  { ID: 7, Name: 'Sales' },
                  { ApplicationID: 'x9', Title: 'Ops' },
                ],
              },
            },
          ]
        : [
            200,
            {
              Status: 0,
              Message: '',
              Data: {
                List: [
                  { Id: 'l1', Name: 'Leads' },
                  { ListID: 'l2', AppID: 'other', Title: 'T', Description: 'D' },
                ],
              },
            },
          ],
    );
    const client = new PlatformClient({
      config: parseConfig({ platform: { baseUrl: p.url, apiKey: 'k-1234' }, database: { url: 'postgres://x' } }).platform,
    });
    try {
      expect(await client.listApplications()).toEqual([
        { id: '7', title: 'Sales' },
        { id: 'x9', title: 'Ops' },
      ]);
      expect(await client.listApplicationLists('7')).toEqual([
        { appID: '7', listID: 'l1', title: 'Leads', description: '' },
        { appID: 'other', listID: 'l2', title: 'T', description: 'D' },
      ]);
      expect(p.paths).toEqual(['/v1/applications', '/v1/applications/7/lists']);
    } finally {
      await client.close();
      p.server.close();
    }
  });

  it('an application without an ID is an error naming the keys looked for', async () => {
    const p = await fixedPlatform(() => [200, { Status: 0, Message: '', Data: [{ Title: 'No id' }] }]);
    const client = new PlatformClient({
      config: parseConfig({ platform: { baseUrl: p.url, apiKey: 'k-1234', retries: 0 }, database: { url: 'postgres://x' } }).platform,
    });
    try {
      await expect(client.listApplications()).rejects.toThrow(/an application has no ID \(looked for AppID, .*ApplicationID/);
    } finally {
      await client.close();
      p.server.close();
    }
  });
});

describe('names and picks', () => {
  it('config names come from titles, fall back to the ID, and are unique', () => {
    expect(
      configNames([
        { title: 'Leave Requests', listID: 'a' },
        { title: 'Leave requests', listID: 'b' },
        { title: '请假', listID: 'Leave2' },
        { title: '2024 Orders', listID: 'c' },
        { title: '', listID: '' },
      ]),
    ).toEqual(['leave_requests', 'leave_requests_2', 'leave2', 'f_2024_orders', 'list']);
  });

  it('picks: numbers, ranges, all; anything else is not an answer', () => {
    expect(parsePicks('1, 3-4', 5)).toEqual([0, 2, 3]);
    expect(parsePicks('all', 3)).toEqual([0, 1, 2]);
    expect(parsePicks('0', 3)).toBeUndefined();
    expect(parsePicks('2-9', 3)).toBeUndefined();
    expect(parsePicks('x', 3)).toBeUndefined();
    expect(parsePicks('', 3)).toBeUndefined();
  });
});
