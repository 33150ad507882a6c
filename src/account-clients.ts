/**
 * One platform client per account, built on first use: each with its own
 * request queue and its own budget, shared through Postgres (the budget row
 * named by the account, `budgetAccount`) with every process using that
 * account. An account's waits (its budget, its slow or down platform) stay in
 * its own client: another account's requests never queue behind them.
 */
import type { Config, ListConfig } from './config.js';
import { accountNamed } from './accounts.js';
import type { Knex } from './db.js';
import type { Logger } from './logger.js';
import { PlatformClient, type PlatformClientOptions } from './platform/client.js';
import { SharedBudget, budgetAccount } from './platform/shared-budget.js';

export interface AccountClients {
  /** The client of a list's account, or of the account named. */
  clientFor(target: Pick<ListConfig, 'account'> | string): PlatformClient;
  /** The clients built so far, by account name. */
  built(): ReadonlyMap<string, PlatformClient>;
  close(): Promise<void>;
}

export interface AccountClientsOptions {
  config: Config;
  logger: Logger;
  /** With a database, each account's budget is shared through it; without, each client spaces requests alone. */
  db?: Knex;
  onRequest?: PlatformClientOptions['onRequest'];
  /** The budget is used when it can be, and done without quietly (a command that may run before the database is migrated). */
  budgetOptional?: boolean;
}

export function createAccountClients(opts: AccountClientsOptions): AccountClients {
  const clients = new Map<string, PlatformClient>();
  return {
    clientFor(target) {
      const name = typeof target === 'string' ? target : target.account;
      const known = clients.get(name);
      if (known) return known;
      const { platform } = accountNamed(opts.config, name);
      const budget = opts.db
        ? new SharedBudget({ db: opts.db, account: budgetAccount(platform), optional: opts.budgetOptional })
        : undefined;
      const logger = opts.config.accounts.length > 1 ? opts.logger.child({ account: name }) : opts.logger;
      const report = opts.onRequest;
      const onRequest = report && ((e: Parameters<typeof report>[0]) => report({ ...e, account: name }));
      const client = new PlatformClient({ config: platform, logger, budget, onRequest });
      clients.set(name, client);
      return client;
    },
    built: () => clients,
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
      clients.clear();
    },
  };
}
