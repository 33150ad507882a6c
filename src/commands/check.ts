/**
 * `listsync check`: config, database, migrations, and (when the client is
 * available) the platform and every configured filter/sort field. Each finding
 * says what is wrong and what to do.
 */
import type { Config } from '../config.js';
import { redactUrl } from '../config.js';
import { createDb, migrationConfig, ping } from '../db.js';

export interface Finding {
  check: string;
  ok: boolean;
  message: string;
  /** 2 = config/usage problem, 1 = something unreachable or failing. */
  severity?: 1 | 2;
}

export type PlatformCheck = (config: Config) => Promise<Finding[]>;

export async function runCheck(config: Config, platformCheck?: PlatformCheck): Promise<Finding[]> {
  const findings: Finding[] = [{ check: 'config', ok: true, message: `${config.lists.length} list(s) configured` }];
  const db = createDb({ url: config.database.url, poolMax: 1 });
  try {
    await ping(db, config.database.url);
    findings.push({ check: 'database', ok: true, message: `reachable at ${redactUrl(config.database.url)}` });
    const [, pending] = (await db.migrate.list(migrationConfig)) as [unknown[], unknown[]];
    findings.push(
      pending.length === 0
        ? { check: 'migrations', ok: true, message: 'up to date' }
        : { check: 'migrations', ok: false, severity: 2, message: `${pending.length} pending: run "listsync migrate"` },
    );
  } catch (err) {
    findings.push({ check: 'database', ok: false, severity: 1, message: (err as Error).message });
  } finally {
    await db.destroy();
  }
  if (platformCheck) findings.push(...(await platformCheck(config)));
  return findings;
}

export function exitCodeOf(findings: readonly Finding[]): 0 | 1 | 2 {
  const failed = findings.filter((f) => !f.ok);
  if (failed.length === 0) return 0;
  return failed.some((f) => (f.severity ?? 2) === 2) ? 2 : 1;
}
