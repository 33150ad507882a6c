/** Config errors name the key and the fix, and never print a secret, whatever went wrong. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';
import { scrub } from '../src/platform/platform-errors.js';
import { DEFAULT_API_KEY } from '../src/emulator/index.js';
import { PUBLIC_VALUES, registerSecrets, scrubSecrets, secretForms } from '../src/secrets.js';
import { runCli } from './helpers/cli.js';

const API_KEY = 'SUPERSECRET-KEY-123';
const PASSWORD = 'Hunter2"Se/cret';
const DB_URL = `postgres://postgres:${encodeURIComponent(PASSWORD)}@127.0.0.1:5432/db`;
const base = {
  platform: { baseUrl: 'http://127.0.0.1:4010/v1', apiKey: API_KEY },
  database: { url: DB_URL },
  lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
};

function messageOf(raw: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(raw, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

function expectNoSecret(text: string): void {
  for (const secret of [API_KEY, PASSWORD]) for (const form of secretForms(secret)) expect(text).not.toContain(form);
}

describe('config errors keep secrets out', () => {
  it('an unknown key in platform says did-you-mean and lists the valid keys, without the apiKey', () => {
    const m = messageOf({ ...base, platform: { ...base.platform, requestPerSecond: 5 } });
    expect(m).toContain('platform');
    expect(m).toContain('"requestPerSecond"');
    expect(m).toContain('did you mean "requestsPerSecond"?');
    expect(m).toMatch(/Valid keys of platform: baseUrl, apiKey, timeZone, requestsPerSecond/);
    expectNoSecret(m);
  });

  it('an unknown key in database or at the top level prints no password, also when it came from the environment', () => {
    const fromEnv = { ...base, platform: { ...base.platform, apiKey: '${MY_KEY}' }, database: { url: '${MY_DB}', shema: 'x' } };
    const m = messageOf(fromEnv, { MY_KEY: API_KEY, MY_DB: DB_URL });
    expect(m).toContain('did you mean "schema"?');
    expectNoSecret(m);
    const top = messageOf({ ...base, serv: { port: 1 } });
    expect(top).toContain('did you mean "serve"?');
    expect(top).toContain('Valid keys of the top level: platform, database, lists, accounts, users, directory, serve, log');
    expectNoSecret(top);
  });

  it('a wrong value inside an object holding secrets shows the object masked', () => {
    const m = messageOf({ ...base, platform: { ...base.platform, timeZone: 7 } });
    expect(m).toContain('platform.timeZone');
    expectNoSecret(m);
    const whole = messageOf({ ...base, database: 'postgres://x' });
    expectNoSecret(whole);
  });

  it('a database URL registers only its password as a secret: host and database stay printable', async () => {
    const { knownSecrets } = await import('../src/secrets.js');
    parseConfig({ ...base, database: { url: 'postgres://reporter:Only-The-Pw@db.example.com:5432/reporting' } });
    expect(knownSecrets()).toContain('Only-The-Pw');
    expect(knownSecrets().some((s) => s.includes('db.example.com'))).toBe(false);
  });

  it('a secret is masked in every form: raw, URL-encoded and JSON-escaped', () => {
    const text = `raw ${PASSWORD} url ${encodeURIComponent(PASSWORD)} json ${JSON.stringify(PASSWORD)}`;
    const out = scrub(text, [PASSWORD]);
    expectNoSecret(out);
    expect(out.match(/\[redacted\]/g)).toHaveLength(3);
  });

  it('refuses a baseUrl without the version segment, and accepts a trailing slash', () => {
    const m = messageOf({ ...base, platform: { ...base.platform, baseUrl: 'http://127.0.0.1:4010' } });
    expect(m).toContain('platform.baseUrl');
    expect(m).toContain('/v1');
    expect(messageOf({ ...base, platform: { ...base.platform, baseUrl: 'http://127.0.0.1:4010/api/' } })).toContain('version segment');
    expect(parseConfig({ ...base, platform: { ...base.platform, baseUrl: 'http://127.0.0.1:4010/v1/' } }).platform.baseUrl).toBe(
      'http://127.0.0.1:4010/v1',
    );
  });

  it("refuses listsync's own schema as the mirror schema", () => {
    const m = messageOf({ ...base, database: { ...base.database, schema: 'listsync' } });
    expect(m).toContain('database.schema');
    expect(m).toContain("listsync's own tables");
  });
});

describe('config errors through the CLI', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const configDir = (config: unknown): string => {
    const dir = mkdtempSync(join(tmpdir(), 'listsync-cfgsecret-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'listsync.config.json'), JSON.stringify(config));
    return dir;
  };

  it('check with a misspelled key exits 2, names the key, and prints no secret from the environment', async () => {
    const cwd = configDir({
      platform: { baseUrl: 'http://127.0.0.1:4010/v1', apiKey: '${PLATFORM_API_KEY}', requestPerSecond: 5 },
      database: {},
      lists: [],
    });
    const r = await runCli(['check'], { cwd, env: { PLATFORM_API_KEY: API_KEY, DATABASE_URL: DB_URL } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('did you mean "requestsPerSecond"?');
    expectNoSecret(r.stdout + r.stderr);
  });

  it('check with a baseUrl missing /v1 exits 2 naming platform.baseUrl', async () => {
    const cwd = configDir({ platform: { baseUrl: 'http://127.0.0.1:4010' }, database: {}, lists: [] });
    const r = await runCli(['check'], { cwd, env: { PLATFORM_API_KEY: API_KEY, DATABASE_URL: DB_URL } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('platform.baseUrl');
    expect(r.stderr).toContain('version segment');
  });
});

describe('published values', () => {
  it("the emulator's default key is published, not secret: it is printed as is, while real secrets are masked", () => {
    registerSecrets(['emulator-key', 'real-secret-9f2c']);
    expect(PUBLIC_VALUES).toContain(DEFAULT_API_KEY);
    expect(scrubSecrets('export PLATFORM_API_KEY=emulator-key; other real-secret-9f2c')).toBe(
      'export PLATFORM_API_KEY=emulator-key; other [redacted]',
    );
  });
});
