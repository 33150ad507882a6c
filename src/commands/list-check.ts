/**
 * One configured list against the platform, as `listsync check` asks and as a
 * job the platform refused asks to explain itself (commands/explain-failure.ts): the list
 * exists, its cursor, sort and ID fields exist and are indexed, its fields
 * have distinct names, and its items carry the version field.
 * (test/exit-codes.test.ts, test/cli-foundation.test.ts.)
 */
import type { ListConfig } from '../config.js';
import { coerceError } from '../errors.js';
import type { PlatformClient } from '../platform/client.js';
import { AuthError, NotFoundError } from '../platform/platform-errors.js';
import type { Finding } from './finding.js';
import { describeDuplicates, reservedNameNotes } from './mirror-tables.js';

/** The key of a setting of the list's account at `at`: `platform.baseUrl`, or `accounts[1].platform.baseUrl`. */
const platformKeyOf = (at: string, key: string): string => `${at.replace(/lists\[\d+\]$/, '')}platform.${key}`;

/**
 * One list against the platform: it exists, its cursor, sort and ID fields exist and are indexed,
 * its items carry the version field. Also what a job that the platform refused asks (`explainJobFailure`).
 */
/** `at`: where the list is written (`lists[2]`, `accounts[1].lists[0]`); `label` names it in the finding. */
export async function checkList(client: PlatformClient, list: ListConfig, at: string, label = list.name): Promise<Finding> {
  let fields;
  try {
    fields = await client.getFields(list.appID, list.listID);
  } catch (err) {
    const severity = err instanceof AuthError || err instanceof NotFoundError ? 2 : 1;
    const hint =
      err instanceof AuthError
        ? ` The platform refused the API key: check ${at.startsWith('accounts[') ? platformKeyOf(at, 'apiKey') : 'PLATFORM_API_KEY / platform.apiKey'}.`
        : err instanceof NotFoundError
          ? ` Check ${at}.appID and ${at}.listID.`
          : ` Check ${platformKeyOf(at, 'baseUrl')} and the network.`;
    return {
      check: `platform ${label}`,
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
    if (!f) problems.push(`${at}.${key} "${name}" is not a field of ${list.appID}/${list.listID}`);
    else if (!f.IsIndex) problems.push(`${at}.${key} "${name}" is not indexed on the platform (filters and sorts need indexed fields)`);
  }
  const duplicates = describeDuplicates(fields, `${list.appID}/${list.listID}`);
  if (duplicates) problems.push(duplicates);
  const version = problems.length === 0 ? await versionFieldProblem(client, list, at) : undefined;
  if (version) problems.push(version);
  return problems.length
    ? { check: `platform ${label}`, ok: false, severity: 2, message: `${problems.join('; ')}. Indexed fields: ${indexed.join(', ')}.` }
    : {
        check: `platform ${label}`,
        ok: true,
        message: [
          `${fields.length} fields; ${list.cursorField} and ${list.sortField} are indexed`,
          ...reservedNameNotes(fields, list),
        ].join('; '),
      };
}

/**
 * The version field is read from items, not from `/fields` (which need not
 * list it): one item is asked for and must carry it. An empty list cannot
 * say; that is not a problem.
 */
async function versionFieldProblem(client: PlatformClient, list: ListConfig, at: string): Promise<string | undefined> {
  const { items } = await client.queryItems(list.appID, list.listID, { PageIndex: 1, PageSize: 1 });
  const item = items[0];
  if (item === undefined || Object.hasOwn(item, list.versionField)) return undefined;
  const keys = Object.keys(item).filter((k) => /version|rev/i.test(k));
  return (
    `items of ${list.appID}/${list.listID} have no "${list.versionField}" (${at}.versionField), which write-back needs to detect conflicts` +
    (keys.length ? `; version-like keys seen: ${keys.join(', ')}` : `; keys seen: ${Object.keys(item).slice(0, 12).join(', ')}`)
  );
}
