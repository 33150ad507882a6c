/**
 * What the config file may hold, table by table, without files or an environment: the schema's
 * checks across keys, both forms brought to one shape, what some values mean, and the schedules
 * a list's settings imply.
 */
import { describe, expect, it } from 'vitest';
import {
  type ListConfig,
  configKeyPaths,
  configSchema,
  consoleListen,
  formatPath,
  isConsoleAddress,
  keysAt,
  pinnedNames,
  pinnedTypes,
} from '../src/config-schema.js';
import {
  FULL_RECONCILE_SCHEDULE,
  REALTIME_PULL_SCHEDULE,
  fieldsMaxAgeMs,
  fullReconcileSchedule,
  pullSchedule,
} from '../src/config-schedules.js';

const platform = { baseUrl: 'https://x.example/v1', apiKey: 'k' };
const database = { url: 'postgres://h/db' };
const orders = { name: 'orders', appID: 'a', listID: 'b' };
const single = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ platform, database, lists: [orders], ...over });
const twoAccounts = (lists0: unknown[], lists1: unknown[], over: Record<string, unknown> = {}): Record<string, unknown> => ({
  database,
  accounts: [
    { name: 'acme', platform, lists: lists0 },
    { name: 'beta', platform, lists: lists1 },
  ],
  ...over,
});

describe('configSchema: what is refused, and where', () => {
  it.each([
    ['neither form', { database }, ['platform'], /is required: give "platform" and "lists", or "accounts"/],
    ['both forms', { ...twoAccounts([orders], []), platform }, ['platform'], /is set beside "accounts"/],
    ['lists beside accounts', { ...twoAccounts([], []), lists: [orders] }, ['lists'], /is set beside "accounts"/],
    ['no account', { database, accounts: [] }, ['accounts'], /is empty/],
    [
      'two accounts of one name',
      {
        database,
        accounts: [
          { name: 'acme', platform },
          { name: 'acme', platform },
        ],
      },
      ['accounts', 1, 'name'],
      /also the name of accounts\[0\]/,
    ],
    [
      'a base URL without its version',
      single({ platform: { ...platform, baseUrl: 'https://x.example' } }),
      ['platform', 'baseUrl'],
      /no version segment/,
    ],
    [
      'the mirror in the own schema of listsync',
      single({ database: { ...database, schema: 'listsync' } }),
      ['database', 'schema'],
      /holds listsync's own tables/,
    ],
    [
      'the views in the mirror schema',
      single({ database: { ...database, reportingSchema: 'mirror' } }),
      ['database', 'reportingSchema'],
      /the mirror schema \(database.schema\)/,
    ],
    [
      'one list name twice',
      single({ lists: [orders, { ...orders, listID: 'c' }] }),
      ['lists', 1, 'name'],
      /duplicate list name "orders": lists\[0\]/,
    ],
    [
      'a list on a directory table',
      single({ lists: [{ ...orders, table: 'platform_users' }] }),
      ['lists', 0, 'table'],
      /"platform_users" is a directory table/,
    ],
    [
      'one column pinned for two fields',
      single({ lists: [{ ...orders, columns: { Text1: 'status', Text2: { name: 'status' } } }] }),
      ['lists', 0, 'columns', 'Text2'],
      /"status" is pinned for both Text1 and Text2/,
    ],
    [
      'a pin that is neither a name nor a type',
      single({ lists: [{ ...orders, columns: { Text1: {} } }] }),
      ['lists', 0, 'columns', 'Text1'],
      /give a "name", a "type", or both/,
    ],
    [
      'a real-time list without a public URL',
      single({ lists: [{ ...orders, realtime: true }] }),
      ['serve', 'publicUrl'],
      /is required when lists\[0\].realtime is true/,
    ],
    [
      'a real-time list of a second account',
      twoAccounts([], [{ ...orders, realtime: true }], { serve: { publicUrl: 'https://sync.example.com' } }),
      ['accounts', 1, 'lists', 0, 'realtime'],
      /real time serves the lists of the first account/,
    ],
    [
      'two accounts on one table',
      twoAccounts([orders], [{ ...orders, name: 'orders2', table: 'orders' }]),
      ['accounts', 1, 'lists', 0, 'table'],
      /"orders" is also the table of accounts\[0\].lists\[0\] \(both in schema mirror\)/,
    ],
    [
      'a list naming another account',
      twoAccounts([{ ...orders, account: 'beta' }], []),
      ['accounts', 0, 'lists', 0, 'account'],
      /names account "beta", but the list is under account "acme"/,
    ],
    [
      'a cron that is not one',
      single({ lists: [{ ...orders, schedule: 'every hour' }] }),
      ['lists', 0, 'schedule', 'pull'],
      /not a valid cron expression/,
    ],
  ])('%s', (_name, raw, path, message) => {
    const result = configSchema.safeParse(raw);
    expect(result.success).toBe(false);
    const issue = result.error!.issues[0]!;
    expect(issue.path).toEqual(path);
    expect(issue.message).toMatch(message);
  });

  it('names an unknown key with the keys of its object', () => {
    const issue = configSchema.safeParse(single({ platform: { ...platform, requestPerSecond: 5 } })).error!.issues[0]!;
    expect(issue).toMatchObject({ code: 'unrecognized_keys', path: ['platform'], keys: ['requestPerSecond'] });
    expect(keysAt(configSchema, issue.path)).toContain('requestsPerSecond');
  });
});

describe('configSchema: both forms as accounts', () => {
  it('the single form is one account, "default" unless platform.account names it', () => {
    const cfg = configSchema.parse(single());
    expect(cfg.accounts.map((a) => [a.name, a.keyPrefix, a.schema, a.platform.maxConcurrentJobs])).toEqual([['default', '', 'mirror', 0]]);
    expect(cfg.lists[0]).toMatchObject({ name: 'orders', account: 'default', cursorField: 'Modified', schedule: {} });
    expect(configSchema.parse(single({ platform: { ...platform, account: 'acme' } })).lists[0]!.account).toBe('acme');
  });

  it('accounts keep their names, budgets and lists; several share the workers', () => {
    const cfg = configSchema.parse(twoAccounts([orders], [{ ...orders, name: 'tickets' }]));
    expect(cfg.accounts.map((a) => [a.name, a.keyPrefix, a.platform.account, a.platform.maxConcurrentJobs])).toEqual([
      ['acme', 'accounts[0].', 'acme', 2],
      ['beta', 'accounts[1].', 'beta', 2],
    ]);
    expect(cfg.lists.map((l) => [l.name, l.account])).toEqual([
      ['orders', 'acme'],
      ['tickets', 'beta'],
    ]);
    expect(cfg.platform).toBe(cfg.accounts[0]!.platform);
  });
});

describe('what values mean', () => {
  const config = configSchema.parse(single());
  it.each([
    ['unset: the default, not chosen', undefined, { host: '127.0.0.1', port: 8081, explicit: false }],
    ['off', 'off', undefined],
    ['an IPv6 address', '[::1]:9000', { host: '::1', port: 9000, explicit: true }],
    ['a host name', 'console.local:80', { host: 'console.local', port: 80, explicit: true }],
  ])('consoleListen: %s', (_name, address, listen) => {
    expect(consoleListen(config, address)).toEqual(listen);
  });

  it.each([
    ['off', true],
    ['127.0.0.1:8081', true],
    ['[::1]:9000', true],
    ['localhost:99999', false],
    ['8081', false],
  ])('isConsoleAddress(%s) is %s', (address, ok) => {
    expect(isConsoleAddress(address)).toBe(ok);
  });

  it('pinned names and types, by field', () => {
    const pins = { Text1: 'status', Text2: { name: 'tags', type: 'text[]' as const }, Bigint1: { type: 'numeric' as const } };
    expect(pinnedNames(pins)).toEqual({ Text1: 'status', Text2: 'tags' });
    expect(pinnedTypes(pins)).toEqual({ Text2: 'text[]', Bigint1: 'numeric' });
  });

  it.each([
    [[], '(root)'],
    [['platform', 'apiKey'], 'platform.apiKey'],
    [['lists', 2, 'name'], 'lists[2].name'],
    [['accounts', 0, 'lists', 1], 'accounts[0].lists[1]'],
  ])('formatPath(%j) is %s', (path, key) => {
    expect(formatPath(path)).toBe(key);
  });

  it.each([
    [[], ['platform', 'database', 'lists', 'accounts', 'users', 'directory', 'serve', 'log']],
    [['log'], ['level']],
    [
      ['accounts', 0],
      ['name', 'platform', 'lists', 'schema'],
    ],
  ])('keysAt(%j)', (path, keys) => {
    expect(keysAt(configSchema, path)).toEqual(keys);
  });

  it('every documented key, by section', () => {
    expect(configKeyPaths()).toEqual(
      expect.arrayContaining(['platform.apiKey', 'database.pageWriters', 'lists[].name', 'lists[].columns', 'log.level']),
    );
  });
});

describe('schedules a list implies', () => {
  const list = (over: Record<string, unknown>): ListConfig =>
    configSchema.parse(single({ lists: [{ ...orders, ...over }], serve: { publicUrl: 'https://s.example' } })).lists[0]!;
  it.each([
    ['no reconcile: no full one', {}, undefined],
    ['a reconcile: the weekly full one', { schedule: { reconcile: '0 * * * *' } }, FULL_RECONCILE_SCHEDULE],
    ['turned off', { schedule: { reconcile: '0 * * * *', reconcileFull: 'off' } }, undefined],
    ['its own', { schedule: { reconcileFull: '5 4 * * *' } }, '5 4 * * *'],
  ])('fullReconcileSchedule: %s', (_name, over, schedule) => {
    expect(fullReconcileSchedule(list(over))).toBe(schedule);
  });

  it.each([
    ['written', { schedule: '*/5 * * * *' }, '*/5 * * * *'],
    ['a real-time list: hourly', { realtime: true }, REALTIME_PULL_SCHEDULE],
    ['a real-time list with its own', { realtime: true, schedule: { pull: '*/30 * * * *' } }, '*/30 * * * *'],
    ['neither: not pulled on a schedule', {}, undefined],
  ])('pullSchedule: %s', (_name, over, schedule) => {
    expect(pullSchedule(list(over))).toBe(schedule);
  });

  it.each([
    ['the default 15 minutes', {}, 900_000],
    ['0: every run asks', { fieldsMaxAgeMinutes: 0 }, 0],
    ['the older hours win', { fieldsMaxAgeMinutes: 15, fieldsMaxAgeHours: 2 }, 7_200_000],
  ])('fieldsMaxAgeMs: %s', (_name, over, ms) => {
    expect(fieldsMaxAgeMs(list(over))).toBe(ms);
  });
});
