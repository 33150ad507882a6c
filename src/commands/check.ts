/**
 * `listsync check`: config, database, migrations, and (when the client is
 * available) the platform and every configured filter/sort field. Each finding
 * says what is wrong and what to do.
 */
import type { Knex } from 'knex';
import type { AccountConfig, Config } from '../config.js';
import { configForAccount, listKeyPath, namesAccounts } from '../accounts.js';
import { redactUrl } from '../config.js';
import { createDb, pendingMigrations, ping } from '../db.js';
import { PlatformClient } from '../platform/client.js';
import { SharedBudget, budgetAccount } from '../platform/shared-budget.js';
import type { Logger } from '../logger.js';
import { AuthError } from '../platform/platform-errors.js';
import { mirrorTableFindings } from './mirror-tables.js';
import type { Finding } from './finding.js';
import { checkList } from './list-check.js';
import { appLogger, loadAppConfig } from '../context.js';
import type { CommandKit } from './command-kit.js';
import { coerceError } from '../errors.js';
import { exitCodeFor } from '../exit-code.js';
import { describeBudget, scheduleBudget } from '../serve/schedule-budget.js';

/** `db`: the database, when reachable and migrated (the platform requests then go through the account's budget). */
export type PlatformCheck = (config: Config, db?: Knex) => Promise<Finding[]>;

export async function runCheck(config: Config, platformCheck?: PlatformCheck): Promise<Finding[]> {
  const accounts = namesAccounts(config) ? ` in ${config.accounts.length} accounts (${config.accounts.map((a) => a.name).join(', ')})` : '';
  const findings: Finding[] = [{ check: 'config', ok: true, message: `${config.lists.length} list(s) configured${accounts}` }];
  // Each account's schedules against its own budget.
  for (const a of config.accounts) {
    const budget = describeBudget(scheduleBudget(configForAccount(config, a.name)));
    const check = namesAccounts(config) ? `schedules of account ${a.name}` : 'schedules';
    findings.push({ check, ok: true, warning: budget.warning, message: budget.message });
  }
  const db = createDb({ url: config.database.url, poolMax: 1 });
  let usable = false;
  try {
    await ping(db, config.database.url);
    findings.push({ check: 'database', ok: true, message: `reachable at ${redactUrl(config.database.url)}` });
    const pending = await pendingMigrations(db);
    findings.push(
      pending.length === 0
        ? { check: 'migrations', ok: true, message: 'up to date' }
        : {
            check: 'migrations',
            ok: false,
            severity: 2,
            message: `${pending.length} pending (${pending.join(', ')}): run "listsync migrate"`,
          },
    );
    if (pending.length === 0) findings.push(...(await mirrorTableFindings(db, config)));
    usable = pending.length === 0;
  } catch (err) {
    findings.push({ check: 'database', ok: false, severity: exitCodeFor(err), message: coerceError(err).message });
  }
  try {
    if (platformCheck) findings.push(...(await platformCheck(config, usable ? db : undefined)));
  } finally {
    await db.destroy();
  }
  return findings;
}

export function exitCodeOf(findings: readonly Finding[]): 0 | 1 | 2 {
  const failed = findings.filter((f) => !f.ok);
  if (failed.length === 0) return 0;
  return failed.some((f) => (f.severity ?? 2) === 2) ? 2 : 1;
}

/**
 * Reaches each account's platform with its key and checks each list's cursor, sort and ID fields are
 * indexed. Accounts are checked side by side (one that does not answer holds up only its own findings);
 * with more than one, each finding names the account of its list. With `db`, each account's requests go
 * through its shared budget, so a pull right after keeps the account's second.
 */
export function platformCheck(makeClient: (account: AccountConfig, db?: Knex) => PlatformClient): PlatformCheck {
  return async (config, db) => (await Promise.all(config.accounts.map((a) => checkAccount(config, a, makeClient(a, db))))).flat();
}

async function checkAccount(config: Config, account: AccountConfig, client: PlatformClient): Promise<Finding[]> {
  const named = namesAccounts(config);
  const findings: Finding[] = [];
  const platform = named ? `platform of account ${account.name}` : 'platform';
  try {
    for (const list of account.lists) {
      const finding = await checkList(
        client,
        list,
        listKeyPath(config, list),
        named ? `${list.name} (account ${account.name})` : list.name,
      );
      findings.push(finding);
      if (finding.keyRefused) break;
    }
    if (account.lists.length === 0) {
      await client.searchUsers({ pageIndex: 1, pageSize: 1 });
      findings.push({ check: platform, ok: true, message: 'reachable, API key accepted' });
    }
  } catch (err) {
    const severity = err instanceof AuthError ? 2 : 1;
    findings.push({ check: platform, ok: false, severity, message: coerceError(err).message });
  } finally {
    await client.close();
  }
  return findings;
}

/** check answers quickly (one retry); with the database, through the account's shared budget, used when it can be. */
function accountClient(account: AccountConfig, logger: Logger, db?: Knex): PlatformClient {
  const budget = db ? new SharedBudget({ db, account: budgetAccount(account.platform), optional: true }) : undefined;
  return new PlatformClient({ config: { ...account.platform, retries: 1 }, logger, budget });
}

export function register({ program, io, setCode, globals }: CommandKit): void {
  program
    .command('check')
    .description('validate the config, reach the database and the platform, check filter/sort fields are indexed')
    .action(async () => {
      const config = loadAppConfig(globals());
      const logger = appLogger(config, globals());
      // check answers quickly: one retry, not the run's full backoff.
      const findings = await runCheck(
        config,
        platformCheck((a, db) => accountClient(a, logger, db)),
      );
      for (const f of findings) io.out(`${f.ok ? (f.warning ? 'warn' : 'ok  ') : 'FAIL'} ${f.check}: ${f.message}`);
      setCode(exitCodeOf(findings));
    });
}
