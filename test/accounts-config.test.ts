/**
 * `accounts: [...]` in the config: each account's platform, lists and mirror
 * schema; every list knows its account; the single-account form stays one
 * account; and errors that name the key path of what is wrong.
 */
import { describe, expect, it } from 'vitest';
import { configForList, mirrorSchemaOf } from '../src/accounts.js';
import { parseConfig, secretsOf } from '../src/config.js';
import { ConfigError } from '../src/errors.js';
import { budgetAccount } from '../src/platform/shared-budget.js';

const database = { url: 'postgres://u:pw-secret@127.0.0.1:5432/db' };
const acme = {
  name: 'acme',
  platform: { baseUrl: 'http://127.0.0.1:4010/v1', apiKey: '${ACME_KEY}' },
  lists: [
    { name: 'orders', appID: 'demo', listID: 'orders' },
    { name: 'invoices', appID: 'demo', listID: 'invoices' },
  ],
};
const globex = {
  name: 'globex',
  platform: { baseUrl: 'http://127.0.0.1:4011/v1', apiKey: '${GLOBEX_KEY}', requestsPerSecond: 5 },
  lists: [{ name: 'tickets', appID: 'help', listID: 'tickets' }],
  schema: 'globex',
};
const env = { ACME_KEY: 'acme-secret-key-1', GLOBEX_KEY: 'globex-secret-key-2' };

function errorOf(raw: unknown, withEnv: Record<string, string> = env): ConfigError {
  try {
    parseConfig(raw, withEnv);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('accounts in the config', () => {
  it('gives each list its account, each account its platform, budget and mirror schema', () => {
    const c = parseConfig({ database, accounts: [acme, globex] }, env);
    expect(c.accounts.map((a) => a.name)).toEqual(['acme', 'globex']);
    expect(c.lists.map((l) => [l.name, l.account])).toEqual([
      ['orders', 'acme'],
      ['invoices', 'acme'],
      ['tickets', 'globex'],
    ]);
    const [a, g] = c.accounts;
    expect(a!.platform.apiKey).toBe('acme-secret-key-1');
    expect(g!.platform.apiKey).toBe('globex-secret-key-2');
    // Each account's budget row is named by the account, never by its key.
    expect(budgetAccount(a!.platform)).toBe('acme');
    expect(budgetAccount(g!.platform)).toBe('globex');
    // With several accounts each is capped by default, so none takes every worker.
    expect(a!.platform.maxConcurrentJobs).toBe(2);
    expect(mirrorSchemaOf(c, c.lists[0]!)).toBe('mirror');
    expect(mirrorSchemaOf(c, c.lists[2]!)).toBe('globex');
    // A list's jobs see its account's platform, lists and schema.
    const view = configForList(c, c.lists[2]!);
    expect(view.platform.baseUrl).toBe('http://127.0.0.1:4011/v1');
    expect(view.platform.requestsPerSecond).toBe(5);
    expect(view.lists.map((l) => l.name)).toEqual(['tickets']);
    expect(view.database.schema).toBe('globex');
    expect(secretsOf(c)).toEqual(expect.arrayContaining(['acme-secret-key-1', 'globex-secret-key-2']));
  });

  it('keeps the single-account form as one account, "default" unless platform.account names it', () => {
    const single = { platform: { baseUrl: 'http://127.0.0.1:4010/v1', apiKey: 'k-123456' }, database, lists: acme.lists };
    const c = parseConfig(single);
    expect(c.accounts.map((a) => a.name)).toEqual(['default']);
    expect(c.lists.every((l) => l.account === 'default')).toBe(true);
    expect(c.platform.maxConcurrentJobs).toBe(0);
    // Its budget keeps the name it always had: processes already running go on sharing it.
    expect(budgetAccount(c.platform)).toMatch(/^sha256:/);
    expect(configForList(c, c.lists[0]!)).toBe(c);
    // A loaded config's lists parse again as they are; a list naming another account does not.
    expect(parseConfig({ ...single, lists: c.lists }).lists).toEqual(c.lists);
    expect(errorOf({ ...single, lists: [{ ...acme.lists[0], account: 'acme' }] }).key).toBe('lists[0].account');
    const named = parseConfig({ ...single, platform: { ...single.platform, account: 'acme', maxConcurrentJobs: 2 } });
    expect(named.accounts[0]!.name).toBe('acme');
    expect(named.platform.maxConcurrentJobs).toBe(2);
  });

  it('parses a parsed config again, with a key changed, in either form', () => {
    const many = parseConfig({ database, accounts: [acme, globex] }, env);
    const again = parseConfig({ ...structuredClone(many), log: { level: 'debug' } }, env);
    expect(again.accounts).toEqual(many.accounts);
    expect(again.lists).toEqual(many.lists);
    expect(again.log.level).toBe('debug');
    const single = parseConfig({ platform: { baseUrl: 'http://127.0.0.1:4010/v1', apiKey: 'k-123456' }, database, lists: acme.lists });
    const zoned = parseConfig({ ...structuredClone(single), platform: { ...single.platform, timeZone: 'Europe/Berlin' } });
    expect(zoned.platform.timeZone).toBe('Europe/Berlin');
    expect(zoned.accounts[0]!.platform.timeZone).toBe('Europe/Berlin');
    expect(zoned.lists).toEqual(single.lists);
  });

  it('names both places of a list name used twice across accounts', () => {
    const e = errorOf({ database, accounts: [acme, { ...globex, lists: [{ name: 'invoices', appID: 'x', listID: 'y' }] }] });
    expect(e.key).toBe('accounts[1].lists[0].name');
    expect(e.message).toContain('accounts[0].lists[1]');
    expect(e.message).toContain('"invoices"');
  });

  it('names the key path of a bad account key, and never prints its secret', () => {
    const bad = { ...globex, platform: { ...globex.platform, baseUrl: 'http://127.0.0.1:4011' } };
    const e = errorOf({ database, accounts: [acme, bad] });
    expect(e.key).toBe('accounts[1].platform.baseUrl');
    expect(e.message).toMatch(/^Config key accounts\[1\]\.platform\.baseUrl: has no version segment/);
    const unknown = errorOf({ database, accounts: [acme, { ...globex, platform: { ...globex.platform, maxConcurentJobs: 2 } }] });
    expect(unknown.key).toBe('accounts[1].platform');
    expect(unknown.message).toContain('did you mean "maxConcurrentJobs"?');
    const noKey = errorOf({ database, accounts: [acme, { ...globex, platform: { baseUrl: globex.platform.baseUrl, apiKey: '' } }] });
    expect(noKey.key).toBe('accounts[1].platform.apiKey');
    const unset = errorOf({ database, accounts: [acme, globex] }, { ACME_KEY: env.ACME_KEY });
    expect(unset.message).toContain('accounts[1].platform.apiKey refers to environment variable GLOBEX_KEY, which is not set');
    for (const err of [e, unknown, noKey, unset]) expect(err.message).not.toContain('acme-secret-key-1');
  });

  it('refuses the two forms mixed, an empty or doubly named account list, and tables that collide', () => {
    expect(errorOf({ database, platform: acme.platform, accounts: [acme] }).key).toBe('platform');
    expect(errorOf({ database, lists: acme.lists, accounts: [globex] }).message).toContain(
      'move each list into the "lists" of its account',
    );
    expect(errorOf({ database, accounts: [] }).key).toBe('accounts');
    const twice = errorOf({ database, accounts: [acme, { ...globex, name: 'acme' }] });
    expect(twice.key).toBe('accounts[1].name');
    expect(twice.message).toContain('accounts[0]');
    // Two lists of two accounts on one table of one schema.
    const table = errorOf({
      database,
      accounts: [acme, { ...globex, schema: undefined, lists: [{ name: 't', appID: 'a', listID: 'b', table: 'orders' }] }],
    });
    expect(table.key).toBe('accounts[1].lists[0].table');
    expect(table.message).toContain('accounts[0].lists[0]');
    // In schemas of their own they still share the reporting schema's view name, unless views are off.
    const views = { ...globex, lists: [{ name: 't', appID: 'a', listID: 'b', table: 'orders' }] };
    expect(errorOf({ database, accounts: [acme, views] }).message).toContain('reporting schema');
    expect(parseConfig({ database: { ...database, reportingSchema: null }, accounts: [acme, views] }, env).lists).toHaveLength(3);
    expect(errorOf({ database, accounts: [acme, { ...globex, schema: 'reporting' }] }).key).toBe('accounts[1].schema');
    // Real time re-reads through the first account's client: a later account's list is refused, not served with the wrong key.
    const serve = { publicUrl: 'https://sync.example.com' };
    const late = { ...globex, lists: [{ ...globex.lists[0], realtime: true }] };
    expect(errorOf({ database, serve, accounts: [acme, late] }).key).toBe('accounts[1].lists[0].realtime');
    expect(parseConfig({ database, serve, accounts: [late, acme] }, env).lists[0]!.realtime).toBe(true);
  });
});
