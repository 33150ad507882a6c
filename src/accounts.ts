/**
 * The accounts of a config, and the config one account's jobs see.
 *
 * A job of a list runs with `configForList(config, list)`: the same config
 * with `platform` the list's account's, `lists` that account's lists and
 * `database.schema` its mirror schema, so every code path that reads
 * `config.platform` or `config.database.schema` works for any account
 * unchanged. With one account the view is the config itself.
 */
import type { AccountConfig, Config, ListConfig } from './config.js';
import { ConfigError } from './errors.js';

const views = new WeakMap<Config, Map<string, Config>>();

/** The account named `name`; a ConfigError naming the configured accounts when there is none. */
export function accountNamed(config: Config, name: string): AccountConfig {
  const account = config.accounts.find((a) => a.name === name);
  if (!account)
    throw new ConfigError(
      `No account named "${name}" in the config; configured: ${config.accounts.map((a) => a.name).join(', ')}.`,
      'accounts',
    );
  return account;
}

/** The account a list belongs to. */
export function accountOf(config: Config, list: Pick<ListConfig, 'account'>): AccountConfig {
  return accountNamed(config, list.account);
}

/** The config as the jobs of one account see it (memoized, frozen). */
export function configForAccount(config: Config, name: string): Config {
  if (config.accounts.length === 1 && config.accounts[0]!.name === name) return config;
  let byName = views.get(config);
  if (!byName) views.set(config, (byName = new Map()));
  const known = byName.get(name);
  if (known) return known;
  const a = accountNamed(config, name);
  const view: Config = Object.freeze({
    ...config,
    platform: a.platform,
    lists: a.lists,
    accounts: Object.freeze([a]),
    database: Object.freeze({ ...config.database, schema: a.schema }),
  });
  byName.set(name, view);
  return view;
}

/** The config as the jobs of a list see it: its account's platform, lists and mirror schema. */
export function configForList(config: Config, list: Pick<ListConfig, 'account'>): Config {
  return configForAccount(config, list.account);
}

/** The mirror schema of a list: its account's `schema`, else `database.schema`. */
export function mirrorSchemaOf(config: Config, list: Pick<ListConfig, 'account'>): string {
  return accountOf(config, list).schema;
}

/** Where a list is written in the config file, for messages: `lists[2]`, or `accounts[1].lists[0]`. */
export function listKeyPath(config: Config, list: Pick<ListConfig, 'name' | 'account'>): string {
  const a = accountOf(config, list);
  return `${a.keyPrefix}lists[${a.lists.findIndex((l) => l.name === list.name)}]`;
}

/** Whether messages name each list's account: the deployment has more than one. */
export function namesAccounts(config: Config): boolean {
  return config.accounts.length > 1;
}
