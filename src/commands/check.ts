/**
 * `listsync check`: config, database, migrations, and (when the client is
 * available) the platform and every configured filter/sort field. Each finding
 * says what is wrong and what to do.
 */
import type { Config, ListConfig } from '../config.js';
import { redactUrl } from '../config.js';
import { createDb, pendingMigrations, ping } from '../db.js';
import type { PlatformClient } from '../platform/client.js';
import { AuthError, NotFoundError } from '../platform/errors.js';
import { describeDuplicates, mirrorTableFindings, reservedNameNotes } from './mirror-tables.js';
import { appLogger, createClient, loadAppConfig } from '../context.js';
import type { CommandKit } from './kit.js';
import { coerceError, exitCodeFor } from '../errors.js';
import { describeBudget, scheduleBudget } from '../serve/schedule-budget.js';

export interface Finding {
  check: string;
  ok: boolean;
  message: string;
  /** 2 = config/usage problem, 1 = something unreachable or failing. */
  severity?: 1 | 2;
  /** The platform refused the API key: asking about further lists is pointless. */
  keyRefused?: boolean;
  /** Worth reading but not a failure (printed `warn`, exit code unchanged). */
  warning?: boolean;
}

export type PlatformCheck = (config: Config) => Promise<Finding[]>;

export async function runCheck(config: Config, platformCheck?: PlatformCheck): Promise<Finding[]> {
  const findings: Finding[] = [{ check: 'config', ok: true, message: `${config.lists.length} list(s) configured` }];
  const budget = describeBudget(scheduleBudget(config));
  findings.push({ check: 'schedules', ok: true, warning: budget.warning, message: budget.message });
  const db = createDb({ url: config.database.url, poolMax: 1 });
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
  } catch (err) {
    findings.push({ check: 'database', ok: false, severity: exitCodeFor(err), message: coerceError(err).message });
  } finally {
    await db.destroy();
  }
  if (platformCheck) findings.push(...(await platformCheck(config)));
  return findings;
}

/**
 * The version field is read from items, not from `/fields` (which need not
 * list it): one item is asked for and must carry it. An empty list cannot
 * say; that is not a problem.
 */
async function versionFieldProblem(client: PlatformClient, list: ListConfig, i: number): Promise<string | undefined> {
  const { items } = await client.queryItems(list.appID, list.listID, { PageIndex: 1, PageSize: 1 });
  const item = items[0];
  if (item === undefined || Object.hasOwn(item, list.versionField)) return undefined;
  const keys = Object.keys(item).filter((k) => /version|rev/i.test(k));
  return (
    `items of ${list.appID}/${list.listID} have no "${list.versionField}" (lists[${i}].versionField), which write-back needs to detect conflicts` +
    (keys.length ? `; version-like keys seen: ${keys.join(', ')}` : `; keys seen: ${Object.keys(item).slice(0, 12).join(', ')}`)
  );
}

export function exitCodeOf(findings: readonly Finding[]): 0 | 1 | 2 {
  const failed = findings.filter((f) => !f.ok);
  if (failed.length === 0) return 0;
  return failed.some((f) => (f.severity ?? 2) === 2) ? 2 : 1;
}

/**
 * One list against the platform: it exists, its cursor, sort and ID fields exist and are indexed,
 * its items carry the version field. Also what a job that the platform refused asks (`explainJobFailure`).
 */
export async function checkList(client: PlatformClient, list: ListConfig, i: number): Promise<Finding> {
  let fields;
  try {
    fields = await client.getFields(list.appID, list.listID);
  } catch (err) {
    const severity = err instanceof AuthError || err instanceof NotFoundError ? 2 : 1;
    const hint =
      err instanceof AuthError
        ? ' The platform refused the API key: check PLATFORM_API_KEY / platform.apiKey.'
        : err instanceof NotFoundError
          ? ` Check lists[${i}].appID and lists[${i}].listID.`
          : ' Check platform.baseUrl and the network.';
    return {
      check: `platform ${list.name}`,
      ok: false,
      severity,
      message: `${coerceError(err).message}.${hint}`,
      keyRefused: err instanceof AuthError,
    };
  }
  const byName = new Map(fields.map((f) => [f.FieldName, f]));
  const indexed = fields.filter((f) => f.IsIndex).map((f) => f.FieldName);
  const problems: string[] = [];
  for (const key of ['cursorField', 'sortField', 'idField'] as const) {
    const name = list[key];
    const f = byName.get(name);
    if (!f) problems.push(`lists[${i}].${key} "${name}" is not a field of ${list.appID}/${list.listID}`);
    else if (!f.IsIndex)
      problems.push(`lists[${i}].${key} "${name}" is not indexed on the platform (filters and sorts need indexed fields)`);
  }
  const duplicates = describeDuplicates(fields, `${list.appID}/${list.listID}`);
  if (duplicates) problems.push(duplicates);
  const version = problems.length === 0 ? await versionFieldProblem(client, list, i) : undefined;
  if (version) problems.push(version);
  return problems.length
    ? { check: `platform ${list.name}`, ok: false, severity: 2, message: `${problems.join('; ')}. Indexed fields: ${indexed.join(', ')}.` }
    : {
        check: `platform ${list.name}`,
        ok: true,
        message: [
          `${fields.length} fields; ${list.cursorField} and ${list.sortField} are indexed`,
          ...reservedNameNotes(fields, list),
        ].join('; '),
      };
}

/** Reaches the platform with the configured key and checks each list's cursor, sort and ID fields are indexed. */
export function platformCheck(makeClient: () => PlatformClient): PlatformCheck {
  return async (config) => {
    const client = makeClient();
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
        platformCheck(() => createClient({ ...config, platform: { ...config.platform, retries: 1 } }, logger)),
      );
      for (const f of findings) io.out(`${f.ok ? (f.warning ? 'warn' : 'ok  ') : 'FAIL'} ${f.check}: ${f.message}`);
      setCode(exitCodeOf(findings));
    });
}
