/**
 * A database that refuses the credentials is the user's input: a wrong password, an unknown role or a
 * role without CONNECT on the database exits 2 from every command (check and serve included), and the
 * message says "refused" and names the user, never "cannot reach" (the server was reached). The shipped
 * systemd unit does not restart on 2 (test/deploy.test.ts › RestartPreventExitStatus). The wrong
 * password is tried on an embedded PostgreSQL of the test's own, which checks passwords (the local
 * server may trust 127.0.0.1).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { createDb } from '../src/db.js';
import { startEmbeddedDb, type EmbeddedDb } from '../src/embedded-db.js';
import { silentLogger } from '../src/logger.js';
import { createHealth } from '../src/serve/health.js';
import { startHttp } from '../src/serve/routes.js';
import { runCli } from './helpers/cli.js';
import { adminUrl, withDatabase } from './helpers/pg-admin.js';
import { startWorld, type World } from './helpers/world.js';

const WRONG_PASSWORD = 'not-the-password-5d1e';
const UNKNOWN_ROLE = `listsync_no_such_role_${process.pid}`;
const NO_CONNECT_ROLE = `listsync_no_connect_${process.pid}`;

let w: World;
let embedded: EmbeddedDb | undefined;
let embeddedDir: string | undefined;
const configs: Record<'unknownRole' | 'noConnect' | 'wrongPassword', string> = { unknownRole: '', noConnect: '', wrongPassword: '' };

function writeConfig(name: string, url: string): string {
  const file = join(w.cwd, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      platform: { baseUrl: w.emu.baseUrl, retries: 0, timeoutMs: 2000 },
      database: { url },
      lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
      serve: { console: '127.0.0.1:0' },
    }),
  );
  return file;
}

const withUser = (url: string, user: string, password?: string): string => {
  const u = new URL(url);
  u.username = user;
  u.password = password ?? '';
  return u.toString();
};

beforeAll(async () => {
  w = await startWorld({ emulator: { items: 5 } });
  configs.unknownRole = writeConfig('unknown-role', withUser(w.t.url, UNKNOWN_ROLE));
  // A role that exists, on a database that grants CONNECT to nobody but its owner.
  await withDatabase(adminUrl(w.t.url), async (c) => {
    await c.query(`drop role if exists "${NO_CONNECT_ROLE}"`);
    await c.query(`create role "${NO_CONNECT_ROLE}" login`);
    await c.query(`revoke connect on database "${w.t.name}" from public`);
  });
  configs.noConnect = writeConfig('no-connect', withUser(w.t.url, NO_CONNECT_ROLE));
  embeddedDir = mkdtempSync(join(tmpdir(), 'listsync-test-pg-credentials-'));
  embedded = await startEmbeddedDb({ dir: join(embeddedDir, 'data'), persistent: false });
  configs.wrongPassword = writeConfig('wrong-password', withUser(embedded.url, 'postgres', WRONG_PASSWORD));
}, 120_000);

afterAll(async () => {
  await embedded?.stop();
  if (embeddedDir) rmSync(embeddedDir, { recursive: true, force: true });
  await withDatabase(adminUrl(w.t.url), (c) => c.query(`drop role if exists "${NO_CONNECT_ROLE}"`)).catch(() => undefined);
  await w?.close();
});

const cases: [string, keyof typeof configs, string, string[]][] = [
  ...(['check', 'pull', 'push', 'status', 'migrate', 'serve'] as const).map((cmd): [string, keyof typeof configs, string, string[]] => [
    `an unknown role: ${cmd}`,
    'unknownRole',
    UNKNOWN_ROLE,
    [cmd],
  ]),
  ...(['check', 'serve', 'pull'] as const).map((cmd): [string, keyof typeof configs, string, string[]] => [
    `a wrong password: ${cmd}`,
    'wrongPassword',
    'postgres',
    [cmd],
  ]),
  ...(['check', 'serve'] as const).map((cmd): [string, keyof typeof configs, string, string[]] => [
    `a role without CONNECT: ${cmd}`,
    'noConnect',
    NO_CONNECT_ROLE,
    [cmd],
  ]),
];

describe('a database that refuses the credentials', () => {
  for (const [name, config, user, args] of cases) {
    it(`${name} exits 2, saying it refused the user`, async () => {
      const r = await runCli(['--config', configs[config], ...args], {
        cwd: w.cwd,
        env: { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_CONSOLE_TOKEN: undefined },
        timeoutMs: 30_000,
      });
      const out = r.stdout + r.stderr;
      expect(r.code, out).toBe(2);
      expect(out).toContain(`refused the credentials of user "${user}"`);
      expect(out).not.toMatch(/cannot reach/i);
      expect(out).not.toContain(WRONG_PASSWORD);
    });
  }
});

describe('serve, when the database refuses the credentials after it started', () => {
  it('/healthz and /readyz say "refused", naming the user, not "unreachable"', async () => {
    const url = withUser(w.t.url, UNKNOWN_ROLE);
    const config = parseConfig({
      platform: { baseUrl: w.emu.baseUrl, apiKey: w.emu.apiKey },
      database: { url },
      lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
    });
    const db = createDb({ url, poolMax: 1 });
    const health = createHealth({ db, config, waitMs: 5000 });
    const http = await startHttp({
      routes: { '/healthz': health.route, '/readyz': health.ready },
      logger: silentLogger(),
      host: '127.0.0.1',
      port: 0,
    });
    try {
      for (const path of ['/healthz', '/readyz']) {
        const res = await fetch(`${http.url}${path}`);
        expect(res.status).toBe(503);
        const body = (await res.json()) as { database: string };
        expect(body.database).toMatch(new RegExp(`^refused: .*"${UNKNOWN_ROLE}"`));
      }
    } finally {
      await health.stop();
      await http.close();
      await db.destroy();
    }
  });
});
