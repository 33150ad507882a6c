/**
 * `listsync discover`: each list's fields — display name, storage kind,
 * control — the column each maps to with its type and where that type came
 * from, whether the field is indexed, and (when the mirror exists) which
 * fields were renamed on the platform since their column was named.
 */
import { createRequestMinutesWriter } from '../request-minutes-writer.js';
import { pinnedNames, pinnedTypes, type ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { table } from '../format.js';
import {
  assignColumnNames,
  baseColumnName,
  columnSqlType,
  describeField,
  FIXED_COLUMNS,
  isReservedColumn,
  preferredColumnName,
  type RegistryEntry,
} from '../mirror/index.js';
import type { PlatformClient } from '../platform/client.js';
import { AuthError, NotFoundError, PlatformError, RateLimitError, TransportError } from '../platform/platform-errors.js';
import type { FieldMeta, PlatformApplication, PlatformListRef } from '../platform/types.js';
import { describeDuplicates } from './mirror-tables.js';
import { appLogger, loadAppConfig } from '../context.js';
import { createAccountClients } from '../account-clients.js';
import { createDb } from '../db.js';
import { UsageError, coerceError } from '../errors.js';
import { isAnotherField } from '../mirror/field-identity.js';
import { readRegistry } from '../mirror/list-registry.js';
import { selectLists } from './pull-command.js';
import type { CommandKit } from './command-kit.js';
import { LIST_FLAGS, LIST_HELP } from './options.js';

/** The registry entry of a list, when a mirror exists for it (undefined otherwise or when the database is not reachable). */
export type RegistryReader = (listName: string) => Promise<RegistryEntry | undefined>;

export async function runDiscover(
  ctx: Pick<AppContext, 'clientFor'>,
  lists: readonly ListConfig[],
  readRegistry: RegistryReader = async () => undefined,
): Promise<string> {
  const out: string[] = [];
  for (const list of lists) {
    const fields = await ctx.clientFor(list).getFields(list.appID, list.listID);
    const registry = await readRegistry(list.name);
    out.push(`${list.name} (${list.appID}/${list.listID}): ${fields.length} fields -> table ${list.table ?? list.name}`);
    const duplicates = describeDuplicates(fields, `${list.appID}/${list.listID}`);
    if (duplicates) out.push(`WARNING: ${duplicates}`);
    out.push(
      table(
        ['field', 'display name', 'storage', 'control', 'column', 'column type', 'type from', 'indexed', 'role', 'note'],
        describeRows(list, fields, registry),
      ),
    );
    out.push('');
  }
  return out.join('\n');
}

function describeRows(list: ListConfig, fields: readonly FieldMeta[], registry: RegistryEntry | undefined): string[][] {
  const fixed = new Map<string, [string, string]>([
    [list.idField, [FIXED_COLUMNS.id, 'text']],
    [list.versionField, [FIXED_COLUMNS.rowVersion, 'bigint']],
    ['Created', [FIXED_COLUMNS.createdAt, 'timestamptz']],
    ['Modified', [FIXED_COLUMNS.modifiedAt, 'timestamptz']],
  ]);
  const pinnedType = pinnedTypes(list.columns);
  // What the next pull does: retired fields' columns and reserved names are left to it (a reused slot
  // gets a new column, a column named like listsync's own a suffixed name).
  const stored = new Map((registry?.fields ?? []).filter((e) => !e.fixed && !e.retired).map((e) => [e.field, e]));
  const reused = new Set(
    fields.filter((f) => stored.has(f.FieldName) && isAnotherField(stored.get(f.FieldName)!, f)).map((f) => f.FieldName),
  );
  const names = assignColumnNames(
    fields.filter((f) => !fixed.has(f.FieldName)).map((f) => ({ field: f.FieldName, name: preferredColumnName(f, list.columnNames) })),
    new Map([...stored].filter(([field, e]) => !reused.has(field) && !isReservedColumn(e.column)).map(([field, e]) => [field, e.column])),
    new Map(Object.entries(pinnedNames(list.columns))),
  );
  const role = (name: string): string =>
    [
      name === list.cursorField && 'cursor',
      name === list.sortField && 'sort',
      name === list.idField && 'id',
      name === list.versionField && 'version',
    ]
      .filter(Boolean)
      .join(',');
  return fields.map((f) => {
    const shape = describeField(f);
    const pin = pinnedType[f.FieldName];
    const wanted = pin ?? shape.kind;
    const isReused = reused.has(f.FieldName);
    const before = isReused ? undefined : stored.get(f.FieldName);
    const column = names.get(f.FieldName) ?? '?';
    const [shown, type] = fixed.get(f.FieldName) ?? [column, columnSqlType(before?.kind ?? wanted)];
    const preferred = preferredColumnName(f, list.columnNames);
    const notes = [
      isReused &&
        `another field in slot ${f.FieldName} (was "${stored.get(f.FieldName)!.displayName ?? ''}"): the next pull keeps the old column as ${stored.get(f.FieldName)!.column}_removed with its data and adds ${column}`,
      before === undefined && !isReused && registry !== undefined && !fixed.has(f.FieldName) && 'new: the next pull adds the column',
      !fixed.has(f.FieldName) &&
        isReservedColumn(preferred) &&
        `"${preferred}" is a column listsync adds itself; the field's column is ${column}`,
      before !== undefined &&
        isReservedColumn(before.column) &&
        `column ${before.column} is named like listsync's own: the next pull renames it ${column}`,
      before?.displayName !== undefined &&
        f.DisplayName &&
        before.displayName !== f.DisplayName &&
        `renamed on the platform (was "${before.displayName}"); the column keeps its name`,
      before !== undefined &&
        before.kind !== wanted &&
        `column is ${columnSqlType(before.kind)}; ${pin ? 'lists[].columns pins' : 'the platform now says'} ${columnSqlType(wanted)}`,
      list.columns[f.FieldName] !== undefined && 'pinned by lists[].columns',
    ].filter(Boolean);
    return [
      f.FieldName,
      f.DisplayName ?? '',
      shape.storage || '?',
      shape.control || '-',
      shown,
      type,
      pin ? 'lists[].columns' : shape.source,
      f.IsIndex ? 'yes' : 'no',
      role(f.FieldName),
      notes.join('; '),
    ];
  });
}

// ---- discover --apps and init --discover: the account's applications and lists ----

/** A list found through discovery, with the lists[].name it gets in the config. */
export interface DiscoveredList extends PlatformListRef {
  appTitle: string;
  name: string;
}

export interface Discovery {
  apps: PlatformApplication[];
  lists: DiscoveredList[];
}

/** Said when the platform does not answer the discovery endpoints: where the IDs are instead. */
export function discoveryUnavailableMessage(cause: string): string {
  return (
    `The platform does not list its applications and lists here (${cause}). ` +
    'Find the IDs on the platform instead: open the list in the browser; its address holds the application ID and the list ID. ' +
    'Write them into lists[].appID and lists[].listID in listsync.config.json (see "Finding your lists" in the README), then run "listsync discover" to see the fields.'
  );
}

/** The account's applications and every application's lists (GET /applications, GET /applications/{id}/lists). */
export async function discoverLists(client: PlatformClient): Promise<Discovery> {
  try {
    const apps = await client.listApplications();
    const found: Omit<DiscoveredList, 'name'>[] = [];
    for (const app of apps) {
      for (const list of await client.listApplicationLists(app.id)) found.push({ ...list, appTitle: app.title });
    }
    const names = configNames(found);
    return { apps, lists: found.map((l, i) => ({ ...l, name: names[i]! })) };
  } catch (err) {
    if (discoveryUnanswered(err)) throw new Error(discoveryUnavailableMessage(coerceError(err).message), { cause: err });
    throw err;
  }
}

/** Not-found and refused answers mean the platform has no such endpoint; auth, rate limits and outages are reported as they are. */
function discoveryUnanswered(err: unknown): boolean {
  if (!(err instanceof PlatformError) || err instanceof AuthError || err instanceof RateLimitError || err instanceof TransportError)
    return false;
  return err instanceof NotFoundError || [404, 405, 501].includes(err.httpStatus ?? 0) || (err.status !== undefined && err.status !== 0);
}

/** lists[].name for each list: from its title (else its ID), snake_case, unique. */
export function configNames(lists: readonly Pick<PlatformListRef, 'title' | 'listID'>[]): string[] {
  const used = new Set<string>();
  return lists.map((l) => {
    const fromTitle = configName(l.title);
    const base = fromTitle ?? configName(l.listID) ?? 'list';
    let name = base;
    for (let n = 2; used.has(name); n++) name = `${base.slice(0, 60 - String(n).length)}_${n}`;
    used.add(name);
    return name;
  });
}

/** A valid lists[].name (lower-case letters, digits, _; starts with a letter), or undefined when the text has no letters or digits to build one from. */
function configName(text: string): string | undefined {
  // Config names are ASCII (lists[].name): accents are dropped, other scripts fall back to the ID.
  const ascii = text.normalize('NFKD').replace(/[^\x20-\x7e]/g, ' ');
  return /[A-Za-z0-9]/.test(ascii) ? baseColumnName(ascii).slice(0, 60).replace(/_+$/, '') : undefined;
}

/** The config's lists[] entries for these lists. */
export function listsBlock(lists: readonly DiscoveredList[]): { name: string; appID: string; listID: string }[] {
  return lists.map((l) => ({ name: l.name, appID: l.appID, listID: l.listID }));
}

/** `listsync discover --apps`: applications, their lists with IDs and titles, and a lists block for the config. */
export function formatDiscovery(d: Discovery): string {
  const out: string[] = [`${d.apps.length} application(s), ${d.lists.length} list(s)`, ''];
  for (const app of d.apps) {
    const lists = d.lists.filter((l) => l.appID === app.id);
    out.push(`${app.title} (appID ${app.id}): ${lists.length} list(s)`);
    if (lists.length)
      out.push(
        table(
          ['listID', 'title', 'description', 'config name'],
          lists.map((l) => [l.listID, l.title, l.description || '-', l.name]),
        ),
        '',
      );
  }
  if (d.lists.length) {
    out.push('Paste into listsync.config.json (keep the ones you want):', `"lists": ${JSON.stringify(listsBlock(d.lists), null, 2)}`);
  }
  return out.join('\n');
}

export function register({ program, io, globals }: CommandKit): void {
  program
    .command('discover')
    .description(
      "print each list's fields, platform types, the column types they map to, and whether they are indexed; with --apps, the account's applications and lists",
    )
    .option(LIST_FLAGS, LIST_HELP)
    .option('--apps', "list the account's applications and their lists with IDs and titles, and a lists block for the config", false)
    .action(async (opts: { list?: string; apps: boolean }) => {
      if (opts.apps && opts.list) throw new UsageError('--apps lists every application; it takes no --list.');
      const config = loadAppConfig(globals());
      const lists = opts.apps ? [] : selectLists({ config }, opts.list);
      // The mirror's registry, when the database is reachable, says which columns exist and which fields were renamed;
      // each account's request budget holds this command's requests, so that a pull right after keeps the account's second.
      const db = createDb({ url: config.database.url, poolMax: 1 });
      const logger = appLogger(config, globals());
      // Its requests count in the budget page's tally when the database is there (quietly not, when it is not).
      const tally = createRequestMinutesWriter({ db, logger, defaultSource: 'command', optional: true });
      const clients = createAccountClients({ config, logger, db, budgetOptional: true, onRequest: tally.onRequest });
      const client = clients.clientFor(config.accounts[0]!.name);
      const registry = (name: string) => readRegistry(db, name).catch(() => undefined);
      try {
        io.out(opts.apps ? formatDiscovery(await discoverLists(client)) : await runDiscover(clients, lists, registry));
      } finally {
        await clients.close();
        await tally.close();
        await db.destroy();
      }
    });
}
