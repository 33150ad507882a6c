import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, redactUrl, secretsOf } from '../src/config.js';
import { ConfigError } from '../src/errors.js';

const minimal = {
  platform: { baseUrl: 'http://127.0.0.1:4010/v1/', apiKey: 'k-123456' },
  database: { url: 'postgres://u:pw-secret@127.0.0.1:5432/db' },
  lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
};

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('realtime lists need serve.publicUrl; realtimeTrust takes reread or body', () => {
    const e = errorOf(() => parseConfig({ ...minimal, lists: [{ ...minimal.lists[0], realtime: true }] }));
    expect(e.key).toBe('serve.publicUrl');
    expect(e.message).toContain('lists[0].realtime');
    const c = parseConfig({
      ...minimal,
      lists: [{ ...minimal.lists[0], realtime: true }],
      serve: { publicUrl: 'https://sync.example.com' },
    });
    expect(c.lists[0]!.realtime).toBe(true);
    expect(c.lists[0]!.realtimeTrust).toBe('reread');
    expect(errorOf(() => parseConfig({ ...minimal, lists: [{ ...minimal.lists[0], realtimeTrust: 'always' }] })).key).toBe(
      'lists[0].realtimeTrust',
    );
  });

  it('applies the documented defaults', () => {
    const c = parseConfig(minimal);
    expect(c.platform.baseUrl).toBe('http://127.0.0.1:4010/v1');
    expect(c.platform.timeZone).toBe('UTC');
    expect(c.platform.requestsPerSecond).toBe(10);
    expect(c.database.schema).toBe('mirror');
    const l = c.lists[0]!;
    expect([l.cursorField, l.sortField, l.idField, l.versionField, l.lookbackDays, l.conflictPolicy]).toEqual([
      'Modified',
      'Created',
      'ListDataID',
      'RowVersion',
      1,
      'remote-wins',
    ]);
    expect(Object.isFrozen(c.lists[0])).toBe(true);
  });

  it('takes secrets from the environment and ${NAME} references', () => {
    const c = parseConfig(
      { platform: { baseUrl: 'https://x.example/v1' }, database: { schema: 'm' }, lists: [{ name: 'a', appID: '${APP}', listID: 'l' }] },
      { PLATFORM_API_KEY: 'from-env', DATABASE_URL: 'postgres://h/db', APP: 'app-1' },
    );
    expect(c.platform.apiKey).toBe('from-env');
    expect(c.database.url).toBe('postgres://h/db');
    expect(c.lists[0]!.appID).toBe('app-1');
  });

  it('names the key, the bad value and the fix', () => {
    const e = errorOf(() => parseConfig({ ...minimal, lists: [{ ...minimal.lists[0], conflictPolicy: 'mine' }] }));
    expect(e.key).toBe('lists[0].conflictPolicy');
    expect(e.message).toContain('lists[0].conflictPolicy');
    expect(e.message).toContain('"mine"');
    expect(e.message).toContain('remote-wins');
  });

  it('keeps 30 days of run history unless serve.runHistoryDays says otherwise, and at least one', () => {
    expect(parseConfig(minimal).serve.runHistoryDays).toBe(30);
    expect(parseConfig({ ...minimal, serve: { runHistoryDays: 7 } }).serve.runHistoryDays).toBe(7);
    const e = errorOf(() => parseConfig({ ...minimal, serve: { runHistoryDays: 0 } }));
    expect(e.key).toBe('serve.runHistoryDays');
    expect(e.message).toContain('got 0');
  });

  it('says which key is missing', () => {
    const e = errorOf(() => parseConfig({ platform: { baseUrl: 'http://x/v1' }, database: { url: 'postgres://h/d' } }));
    expect(e.key).toBe('platform.apiKey');
    expect(e.message).toMatch(/missing/);
    expect(e.message).toContain('PLATFORM_API_KEY');
  });

  it('rejects unknown keys, bad time zones, cron expressions and duplicate lists', () => {
    expect(errorOf(() => parseConfig({ ...minimal, platform: { ...minimal.platform, timezone: 'UTC' } })).message).toMatch(/timezone/);
    expect(errorOf(() => parseConfig({ ...minimal, platform: { ...minimal.platform, timeZone: 'Mars/Base' } })).key).toBe(
      'platform.timeZone',
    );
    expect(errorOf(() => parseConfig({ ...minimal, lists: [{ ...minimal.lists[0], schedule: { pull: 'every minute' } }] })).key).toBe(
      'lists[0].schedule.pull',
    );
    expect(errorOf(() => parseConfig({ ...minimal, lists: [minimal.lists[0], minimal.lists[0]] })).key).toBe('lists[1].name');
    expect(errorOf(() => parseConfig({ ...minimal, lists: [{ ...minimal.lists[0], pageSize: 1001 }] })).key).toBe('lists[0].pageSize');
  });

  it('never prints secrets in errors', () => {
    const e = errorOf(() => parseConfig({ ...minimal, platform: { ...minimal.platform, apiKey: 42 } }));
    expect(e.key).toBe('platform.apiKey');
    const e2 = errorOf(() => parseConfig({ ...minimal, database: { url: 'postgres://u:pw-secret@h/db', schema: 'Bad-Name' } }));
    expect(e2.key).toBe('database.schema');
    expect(e2.message).not.toContain('pw-secret');
    const e3 = errorOf(() => parseConfig({ ...minimal, database: { url: 'postgres://u:pw-secret@h/db', poolMax: 0 } }));
    expect(e3.message).not.toContain('pw-secret');
    expect(redactUrl('postgres://u:pw-secret@h:5432/db')).toBe('postgres://u:***@h:5432/db');
    expect(secretsOf(parseConfig(minimal))).toEqual(['k-123456', 'pw-secret']);
  });

  it('reads the file, ignores // comment keys, and explains a missing or malformed file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'listsync-config-'));
    expect(errorOf(() => loadConfig({ cwd: dir, env: {} })).message).toMatch(/listsync init/);
    writeFileSync(join(dir, 'listsync.config.json'), '{ "platform": ');
    expect(errorOf(() => loadConfig({ cwd: dir, env: {} })).message).toMatch(/not valid JSON/);
    writeFileSync(join(dir, 'other.json'), JSON.stringify({ '//': 'a comment', ...minimal }));
    expect(loadConfig({ cwd: dir, env: { LISTSYNC_CONFIG: 'other.json' } }).lists).toHaveLength(1);
    const missingVar = errorOf(() => parseConfig({ ...minimal, platform: { ...minimal.platform, apiKey: '${NOPE}' } }, {}));
    expect(missingVar.message).toContain('NOPE');
  });
});

describe('reporting config', () => {
  it('defaults to a reporting schema, history off and the directory on', () => {
    const c = parseConfig(minimal);
    expect(c.database.reportingSchema).toBe('reporting');
    expect(c.lists[0]!.history).toBe(false);
    expect(c.directory).toMatchObject({
      enabled: true,
      departmentsTable: 'platform_departments',
      groupMembersTable: 'platform_group_members',
    });
    expect(parseConfig({ ...minimal, database: { ...minimal.database, reportingSchema: null } }).database.reportingSchema).toBeNull();
  });

  it('refuses a reporting schema that is the mirror schema or listsync, and a list table that is a directory table', () => {
    for (const reportingSchema of ['mirror', 'listsync']) {
      const e = errorOf(() => parseConfig({ ...minimal, database: { ...minimal.database, reportingSchema } }));
      expect(e.message).toContain('database.reportingSchema');
      expect(e.message).toContain(reportingSchema);
    }
    const e = errorOf(() => parseConfig({ ...minimal, lists: [{ ...minimal.lists[0], table: 'platform_groups' }] }));
    expect(e.message).toContain('directory table');
  });
});
