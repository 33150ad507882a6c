/**
 * `listsync check`: config, database, migrations, and (when the client is
 * available) the platform and every configured filter/sort field. Each finding
 * says what is wrong and what to do.
 */
import type { Knex } from 'knex';
import type { Config } from '../config.js';
import { redactUrl } from '../config.js';
import { createDb, pendingMigrations, ping } from '../db.js';
import type { PlatformClient } from '../platform/client.js';
import { AuthError } from '../platform/platform-errors.js';
import { mirrorTableFindings } from './mirror-tables.js';
import type { Finding } from './finding.js';
import { checkList } from './list-check.js';
import { appLogger, createClient, loadAppConfig } from '../context.js';
import type { CommandKit } from './command-kit.js';
import { coerceError } from '../errors.js';
import { exitCodeFor } from '../exit-code.js';
import { describeBudget, scheduleBudget } from '../serve/schedule-budget.js';

/** `db`: the database, when reachable and migrated (the platform requests then go through the account's budget). */
export type PlatformCheck = (config: Config, db?: Knex) => Promise<Finding[]>;

export async function runCheck(config: Config, platformCheck?: PlatformCheck): Promise<Finding[]> {
  const findings: Finding[] = [{ check: 'config', ok: true, message: `${config.lists.length} list(s) configured` }];
  const budget = describeBudget(scheduleBudget(config));
  findings.push({ check: 'schedules', ok: true, warning: budget.warning, message: budget.message });
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

/** Reaches the platform with the configured key and checks each list's cursor, sort and ID fields are indexed. */
export function platformCheck(makeClient: (db?: Knex) => PlatformClient): PlatformCheck {
  return async (config, db) => {
    const client = makeClient(db);
    const findings: Finding[] = [];
    try {
      for (const [i, list] of config.lists.entries()) {
        const finding = await checkList(client, list, i);
        findings.push(finding);
        if (finding.keyRefused) break;
      }
      if (config.lists.length === 0) {
        await client.searchUsers({ pageIndex: 1, pageSize: 1 });
        findings.push({ check: 'platform', ok: true, message: 'reachable, API key accepted' });
      }
    } catch (err) {
      const severity = err instanceof AuthError ? 2 : 1;
      findings.push({ check: 'platform', ok: false, severity, message: coerceError(err).message });
    } finally {
      await client.close();
    }
    return findings;
  };
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
        platformCheck((db) => createClient({ ...config, platform: { ...config.platform, retries: 1 } }, logger, db, undefined, true)),
      );
      for (const f of findings) io.out(`${f.ok ? (f.warning ? 'warn' : 'ok  ') : 'FAIL'} ${f.check}: ${f.message}`);
      setCode(exitCodeOf(findings));
    });
}
