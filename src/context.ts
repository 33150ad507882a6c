/**
 * What a command needs, built once from the config: database, logger and (lazily)
 * the platform client. Commands receive it; nothing else reads the environment.
 */
import { createRequestMinutesWriter } from './request-minutes-writer.js';
import { type Config, type ListConfig, loadConfig, readEnvironment, secretsOf } from './config.js';
import { createDb, ping, type Knex } from './db.js';
import { createLogger, type Logger } from './logger.js';
import { scrubSecrets } from './secrets.js';
import { beginLine } from './terminal-line.js';
import { resolveLogFormat } from './log-format.js';
import { PlatformClient, type PlatformClientOptions } from './platform/client.js';
import { SharedBudget, budgetAccount } from './platform/shared-budget.js';
import { createAccountClients } from './account-clients.js';

export interface Output {
  out(text: string): void;
  err(text: string): void;
  isTTY: boolean;
}

/** The terminal; every line is scrubbed of the secrets the config resolved. */
export const stdio: Output = {
  out: (t) => {
    beginLine();
    process.stdout.write(line(scrubSecrets(t)));
  },
  err: (t) => {
    beginLine();
    process.stderr.write(line(scrubSecrets(t)));
  },
  isTTY: Boolean(process.stdout.isTTY),
};

const line = (t: string): string => (t.endsWith('\n') ? t : `${t}\n`);

export interface GlobalOptions {
  config?: string;
  logLevel?: string;
  /** json | pretty; default pretty on a terminal, else json (also LISTSYNC_LOG_FORMAT). */
  logFormat?: string;
}

export interface AppContext {
  config: Config;
  logger: Logger;
  io: Output;
  db: Knex;
  /** The first account's platform client (single-account code paths); its request budget is shared with every process using the account. */
  client: PlatformClient;
  /** The client of a list's account (or of the account named), built on first use, each with its own budget. */
  clientFor(target: Pick<ListConfig, 'account'> | string): PlatformClient;
  /** Aborted by SIGINT/SIGTERM (reason: the signal's name): jobs stop after the page or change in flight. */
  signal?: AbortSignal;
  close(): Promise<void>;
}

/**
 * The first account's platform client; with `db`, its request budget is shared with every process using the account
 * (`budgetOptional`: a command that may run before the database is there uses it when it can).
 */
export function createClient(
  config: Config,
  logger: Logger,
  db?: Knex,
  onRequest?: PlatformClientOptions['onRequest'],
  budgetOptional = false,
): PlatformClient {
  const budget = db ? new SharedBudget({ db, account: budgetAccount(config.platform), optional: budgetOptional }) : undefined;
  return new PlatformClient({ config: config.platform, logger, budget, onRequest });
}

export function loadAppConfig(opts: GlobalOptions): Config {
  return loadConfig({ path: opts.config });
}

/**
 * `command`: a one-shot command. On a terminal (pretty lines) its summary is printed on stdout, so
 * unless a level was chosen (--log-level, LISTSYNC_LOG_LEVEL, log.level other than info) only
 * warnings and errors are logged: the summary is printed once. `service`: serve logs at the level set.
 */
export type LogRole = 'command' | 'service';

export function appLogger(config: Config, opts: GlobalOptions, role: LogRole = 'service'): Logger {
  const env = readEnvironment();
  const format = resolveLogFormat(opts.logFormat ?? env.LISTSYNC_LOG_FORMAT);
  const quiet = role === 'command' && format === 'pretty' && config.log.level === 'info' && !env.LISTSYNC_LOG_LEVEL;
  return createLogger({ level: opts.logLevel ?? (quiet ? 'warn' : config.log.level), secrets: secretsOf(config), format });
}

/** Loads config, opens the database (checked reachable) and a logger. */
export async function openContext(opts: GlobalOptions, io: Output = stdio, role: LogRole = 'service'): Promise<AppContext> {
  const config = loadAppConfig(opts);
  const logger = appLogger(config, opts, role);
  const db = createDb({ url: config.database.url, poolMax: config.database.poolMax, logger });
  try {
    await ping(db, config.database.url);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  // Every request a command (or serve's context) makes counts in the budget page's per-minute tally.
  const tally = createRequestMinutesWriter({ db, logger, defaultSource: role === 'command' ? 'command' : 'serve' });
  const clients = createAccountClients({ config, logger, db, onRequest: tally.onRequest });
  let closed = false;
  return {
    config,
    logger,
    io,
    db,
    get client() {
      return clients.clientFor(config.accounts[0]!.name);
    },
    clientFor: (target) => clients.clientFor(target),
    async close() {
      if (closed) return;
      closed = true;
      await clients.close();
      await tally.close();
      await db.destroy();
      logger.flush();
    },
  };
}
