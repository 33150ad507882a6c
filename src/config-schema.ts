/**
 * Pure: what the config file may hold. The zod schema of every key (defaults,
 * a message per key that names what to write instead), the rules across keys
 * (the single-account form or `accounts`, unique list names, schemas and
 * tables that do not collide, real time only for the first account), both
 * forms brought to one shape (`accounts`, each list knowing its account), the
 * parsed config's types, and what some values mean (pinned columns, the
 * console's address).
 *
 * Reading the file and the environment, `${NAME}` substitution, secrets and
 * messages are config.ts's. Tested table by table in test/config-schema.test.ts;
 * docs/configuration.md has a row per key (configKeyPaths, test/docs.test.ts).
 */
import { IANAZone } from 'luxon';
import { validate as validateCron } from 'node-cron';
import { z } from 'zod';
import { COLUMN_KINDS, type ColumnKind } from './mirror/column-types.js';
import { RESERVED_COLUMNS } from './mirror/naming.js';

/** listsync's own schema (runs, outbox, state...); never a mirror schema. Same as db.ts OWN_SCHEMA. */
const OWN_SCHEMA = 'listsync';

/**
 * `platform.maxConcurrentJobs` when not set and the config has more than one account (with one, no
 * cap: there is no other account to leave workers to). An account's jobs share its request budget, so
 * more of them at once mostly wait on it; two overlap the round trips of small runs and leave the
 * other slots (three per serve process at the default pool) to the other accounts.
 */
export const DEFAULT_MAX_CONCURRENT_JOBS = 2;
/** `database.pageWriters` when not set: pages a pull writes at once. */
export const DEFAULT_PAGE_WRITERS = 2;

const cron = z.string().refine((s) => validateCron(s), {
  message: 'not a valid cron expression (5 or 6 fields, e.g. "*/10 * * * *")',
});
const identifier = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,62}$/, 'use lower-case letters, digits and _ (starting with a letter), at most 63 characters');
const timeZone = z.string().refine((s) => IANAZone.isValidZone(s), {
  message: 'not a known IANA time zone (e.g. "UTC", "Europe/Berlin", "Asia/Shanghai")',
});
const positiveInt = z.number().int().positive();
/** `serve.console` when not set: loopback only, beside the webhook port. */
export const DEFAULT_CONSOLE_ADDRESS = '127.0.0.1:8081';
const consoleAddress = z.union([
  z.literal('off'),
  z
    .string()
    .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'use host:port (e.g. "127.0.0.1:8081"), or "off"')
    .refine((v) => Number(v.slice(v.lastIndexOf(':') + 1)) <= 65535, 'has a port over 65535'),
]);

/** True when `value` is a console address: `host:port` or "off". */
export const isConsoleAddress = (value: string): boolean => consoleAddress.safeParse(value).success;

/**
 * `serve.console` (or `address`, e.g. from `serve --console`) as host and port; undefined when it is "off".
 * `explicit` is false when neither was given and the default address is used: serve then runs without
 * the console when that address cannot be had, and fails when an address the operator chose cannot.
 */
export function consoleListen(
  config: Config,
  address: string | undefined = config.serve.console,
): { host: string; port: number; explicit: boolean } | undefined {
  const chosen = address ?? DEFAULT_CONSOLE_ADDRESS;
  if (chosen === 'off') return undefined;
  const at = chosen.lastIndexOf(':');
  const host = chosen.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(chosen.slice(at + 1)), explicit: address !== undefined };
}

const columnName = z
  .string()
  .regex(/^[\p{Ll}\p{Lo}_][\p{Ll}\p{Lo}\p{N}_]*$/u, 'use lower-case letters, digits and _ (starting with a letter or _)')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= 63, 'is longer than 63 bytes; Postgres would truncate it')
  .refine((s) => !RESERVED_COLUMNS.includes(s), {
    message: `is a column listsync adds itself to a mirror table, its history or its views (${RESERVED_COLUMNS.join(', ')}); choose another name`,
  });
/** A pinned column with a name, a type, or both: `{ "name": "tags", "type": "text[]" }`. */
const columnPin = z
  .object({
    name: columnName.optional(),
    type: z.enum(COLUMN_KINDS as unknown as [ColumnKind, ...ColumnKind[]], {
      message: `is not a column type listsync makes; use one of ${COLUMN_KINDS.join(', ')}`,
    }),
  })
  .partial({ type: true })
  .strict()
  .refine((p) => p.name !== undefined || p.type !== undefined, { message: 'give a "name", a "type", or both' });

/** A pin as a plain name (`"status"`) or an object; each form's own message when it is wrong (a union would only say "Invalid input"). */
const columnPinOrName = z.unknown().transform((v, ctx): string | z.output<typeof columnPin> => {
  const r = typeof v === 'string' ? columnName.safeParse(v) : columnPin.safeParse(v);
  if (r.success) return r.data;
  for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  return z.NEVER;
});

type ColumnPins = Readonly<Record<string, string | { name?: string | undefined; type?: ColumnKind | undefined }>>;

/** The pinned column names of `lists[].columns`, by field name. */
export function pinnedNames(columns: ColumnPins): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, pin] of Object.entries(columns)) {
    const name = typeof pin === 'string' ? pin : pin.name;
    if (name !== undefined) out[field] = name;
  }
  return out;
}

/** The pinned column types of `lists[].columns`, by field name. */
export function pinnedTypes(columns: ColumnPins): Record<string, ColumnKind> {
  const out: Record<string, ColumnKind> = {};
  for (const [field, pin] of Object.entries(columns)) if (typeof pin !== 'string' && pin.type !== undefined) out[field] = pin.type;
  return out;
}

/** The platform's API lives under a version segment: `.../v1`. */
const VERSION_SEGMENT = /\/v\d+$/;

const platformSchema = z
  .object({
    baseUrl: z
      .url({ protocol: /^https?$/, message: 'must be an http(s) URL ending with the version segment, e.g. https://api.example.com/v1' })
      .transform((s) => s.replace(/\/+$/, ''))
      .refine((s) => VERSION_SEGMENT.test(new URL(s).pathname), {
        message: 'has no version segment: the API lives under /v1 (e.g. https://api.example.com/v1); add it to the end of platform.baseUrl',
      }),
    apiKey: z.string().min(1, 'is empty: set PLATFORM_API_KEY or platform.apiKey'),
    timeZone: timeZone.default('UTC'),
    requestsPerSecond: z.number().positive().max(1000).default(10),
    /**
     * Room kept below requestsPerSecond, as a fraction of the sliding window:
     * at 0.01, 10 requests in any 1.01 s after the delays the answers showed
     * (the limiter logs each send at its send time plus how long the server
     * held it). Covers what no answer shows (clocks, timers). A 429 widens it
     * further for the account (src/platform/learned-limits.ts).
     */
    rateMargin: z.number().min(0).max(1).default(0.01),
    /**
     * Most requests sent at once when they wait (processes sharing the
     * budget through PostgreSQL; capped at requestsPerSecond). The rate is
     * the same whatever it is; 1 spaces every request evenly. Used only while
     * no 429 has been seen on the account lately.
     */
    burst: positiveInt.max(1000).default(5),
    /** Requests that may be in flight at once (pages fetched ahead). */
    maxInFlight: positiveInt.max(64).default(8),
    /** Bytes of page answers fetched ahead of the writer, at most (estimated from the last page's size; one page always). */
    maxBytesAhead: positiveInt.default(32 * 1024 * 1024),
    timeoutMs: positiveInt.default(30_000),
    retries: z.number().int().min(0).max(20).default(6),
    maxRetryAfterSeconds: positiveInt.default(120),
    /**
     * The platform leaves fields with empty values out of the items it sends: a missing key then means
     * empty (the column is set NULL). Off (default): a missing key leaves its column as it was, and the
     * run counts the item (rows_missing_keys).
     */
    omitsEmptyValues: z.boolean().default(false),
    /**
     * Processes that share this account name share one request budget through Postgres. Default: the
     * account's name under `accounts[]`; in the single-account form, derived from baseUrl + apiKey.
     */
    account: z.string().min(1).optional(),
    /**
     * Jobs of this account running at once, across every serve worker, so one account's slow platform never
     * takes every worker; 0 is no cap. Default: DEFAULT_MAX_CONCURRENT_JOBS with several accounts, else 0.
     */
    maxConcurrentJobs: z.number().int().min(0).max(1000).optional(),
  })
  .strict();

const scheduleSchema = z
  .object({
    pull: cron.optional(),
    push: cron.optional(),
    /** Reconcile by counts of Created ranges (costs what changed). */
    reconcile: cron.optional(),
    /**
     * The full reconcile (every ID). Default: weekly (FULL_RECONCILE_SCHEDULE, config-schedules.ts) when `reconcile` is
     * scheduled, else not at all; "off" turns it off.
     */
    reconcileFull: z.union([z.literal('off'), cron]).optional(),
  })
  .strict();

const listSchema = z
  .object({
    name: identifier,
    appID: z.string().min(1),
    listID: z.string().min(1),
    /** Mirror table name; defaults to `name`. */
    table: identifier.optional(),
    cursorField: z.string().min(1).default('Modified'),
    sortField: z.string().min(1).default('Created'),
    idField: z.string().min(1).default('ListDataID'),
    versionField: z.string().min(1).default('RowVersion'),
    lookbackDays: z.number().int().min(0).max(366).default(1),
    /** Minutes re-read before the last run's high-water modification time (clock skew, query lag). */
    overlapMinutes: z.number().int().min(0).max(1440).default(5),
    /** Hard ceiling on pages one read may ask for (besides the one TotalCount implies). */
    maxPages: positiveInt.max(1_000_000).default(20_000),
    pageSize: positiveInt.max(1000).default(1000),
    /**
     * Minutes a pull uses the field metadata it kept before asking `/fields` again (sooner when what the items
     * show says the fields changed, a write is refused for a field, or on `pull --refresh-schema`); 0 asks on every run.
     * A field removed and its slot reused between two pulls shows in no item: it reaches the mirror within this age.
     */
    fieldsMaxAgeMinutes: z.number().min(0).max(525_600).default(15),
    /** The older spelling of `fieldsMaxAgeMinutes`, in hours; when set it wins. */
    fieldsMaxAgeHours: z.number().min(0).max(8760).optional(),
    // A plain string is the pull schedule.
    schedule: z.preprocess((v) => (typeof v === 'string' ? { pull: v } : v), scheduleSchema).default({}),
    conflictPolicy: z.enum(['remote-wins', 'local-wins', 'manual']).default('remote-wins'),
    /**
     * `field`: a three-way merge per field; only fields both sides changed differently are a conflict, the rest
     * is sent at the platform's version. `item`: the whole change is one conflict (fields that must change together).
     */
    conflictScope: z.enum(['field', 'item']).default('field'),
    maxPushAttempts: positiveInt.max(100).default(5),
    /** A DELETE on a mirror row deletes the item on the platform (version-checked); off: deletes are refused. */
    pushDeletes: z.boolean().default(false),
    /** Days applied changes stay in listsync.outbox (for a look back) before a push prunes them. */
    appliedRetentionDays: z.number().int().min(0).max(3650).default(7),
    /** reconcile refuses to mark deletes when it saw fewer than this share of the mirror's live rows. */
    reconcileMinSeenRatio: z.number().min(0).max(1).default(0.5),
    /** Columns named from the fields' display names (`order_no`) or their field names (`text1`). */
    columnNames: z.enum(['display', 'field']).default('display'),
    /**
     * Pinned columns, by field name: a name (`{ "Text1": "status" }`), or a name and/or a type
     * (`{ "Text2": { "name": "tags", "type": "text[]" } }`) for metadata that does not say enough.
     */
    columns: z.record(z.string().min(1), columnPinOrName).default({}),
    /** Keep `<table>_history`: one row per version the mirror saw. */
    history: z.boolean().default(false),
    /** `serve` subscribes the list's item events and applies them within about a second (needs serve.publicUrl). */
    realtime: z.boolean().default(false),
    /** `reread`: an event is a notification, the item is re-read through the API; `body`: a newer version in the body is applied directly. */
    realtimeTrust: z.enum(['reread', 'body']).default('reread'),
    /** The account the list is under; listsync fills it in. Written, it must name that account (a list copied from a loaded config). */
    account: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((l, ctx) => {
    const byColumn = new Map<string, string>();
    for (const [field, column] of Object.entries(pinnedNames(l.columns))) {
      const other = byColumn.get(column);
      if (other !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['columns', field],
          message: `"${column}" is pinned for both ${other} and ${field}; give each field its own column`,
        });
      byColumn.set(column, field);
    }
  });

const mirrorSchemaName = identifier.refine((s) => s !== OWN_SCHEMA, {
  message: `"${OWN_SCHEMA}" holds listsync's own tables (runs, outbox, state); pick another schema for the mirror tables, e.g. "mirror"`,
});

/** One platform account of a deployment: its own client, request budget and (optionally) mirror schema. */
const accountSchema = z
  .object({
    /** Names the account in status, metrics and the console; its request budget's name unless `platform.account` is set. */
    name: identifier,
    platform: platformSchema,
    lists: z.array(listSchema).default([]),
    /** Mirror schema of this account's lists, users and directory tables; default `database.schema`. */
    schema: mirrorSchemaName.optional(),
  })
  .strict();

/** The account name of the single-account form (`platform` + `lists`) when `platform.account` does not name it. */
export const DEFAULT_ACCOUNT = 'default';

const configSchemaShape = z
  .object({
    /** The single-account form; absent when `accounts` is given. */
    platform: platformSchema.optional(),
    database: z
      .object({
        url: z.string().min(1, 'is empty: set DATABASE_URL or database.url'),
        schema: mirrorSchemaName.default('mirror'),
        poolMax: positiveInt.max(100).default(10),
        /**
         * Pages a pull writes at once, each on its own connection. 2 converts the next page while PostgreSQL
         * writes one: ~12% faster backfills than 1 on two cores, and a 1,000,000-item backfill still peaks
         * under 300 MB (npm run bench pipeline backfill-memory). 1 keeps a pull to one connection.
         */
        pageWriters: positiveInt.max(4).default(DEFAULT_PAGE_WRITERS),
        /** Schema of the live (and history) views, one per list; null turns them off. */
        reportingSchema: identifier.nullable().default('reporting'),
      })
      .strict(),
    lists: z.array(listSchema).default([]),
    /** Many accounts in one deployment, instead of `platform` + `lists`. */
    accounts: z.array(accountSchema).optional(),
    users: z
      .object({
        enabled: z.boolean().default(true),
        schedule: cron.optional(),
        table: identifier.default('platform_users'),
      })
      .strict()
      .default({ enabled: true, table: 'platform_users' }),
    directory: z
      .object({
        enabled: z.boolean().default(true),
        schedule: cron.optional(),
        departmentsTable: identifier.default('platform_departments'),
        groupsTable: identifier.default('platform_groups'),
        groupMembersTable: identifier.default('platform_group_members'),
        positionsTable: identifier.default('platform_positions'),
      })
      .strict()
      .default({
        enabled: true,
        departmentsTable: 'platform_departments',
        groupsTable: 'platform_groups',
        groupMembersTable: 'platform_group_members',
        positionsTable: 'platform_positions',
      }),
    serve: z
      .object({
        host: z.string().default('0.0.0.0'),
        port: z.number().int().min(0).max(65535).default(8080),
        /** The public base URL the platform reaches the receiver at, e.g. https://sync.example.com */
        publicUrl: z.url().optional(),
        maxLagMinutes: positiveInt.default(24 * 60),
        webhookBodyLimitBytes: positiveInt.default(256 * 1024),
        webhookDedupWindowMinutes: positiveInt.default(24 * 60),
        /**
         * Connections serve's listener serves at once (callbacks kept alive and reused); a request on a
         * further one waits briefly for room, else is answered 503 with Retry-After, and past twice this
         * many new ones are closed at once.
         */
        maxConnections: positiveInt.default(128),
        shutdownTimeoutMs: positiveInt.default(6_000),
        /**
         * Days of run history (`listsync.sync_runs`) serve keeps: older runs are removed hourly, except the
         * newest run of each outcome per list and job (the last success of a list pulled once a month stays).
         */
        runHistoryDays: z.number().int().min(1, 'is below 1: runs are kept at least a day (30 by default)').default(30),
        /** An item event of a realtime list still unapplied after this long makes /healthz degraded. */
        realtimeStaleAfterSeconds: positiveInt.default(120),
        /**
         * Jobs this process runs at once, taken from the queue every serve process shares; by default
         * sized to database.poolMax (two connections a job, three kept for HTTP and the receiver).
         */
        workers: positiveInt.max(100).optional(),
        /**
         * Seconds a job may go without its worker's heartbeat before another worker takes it over (a
         * worker killed or its machine lost); pulls, backfills and reconciles get twice this.
         */
        jobLeaseSeconds: z.number().int().min(5, 'is below 5: a lease shorter than the heartbeat would hand live jobs over').default(60),
        /** Times a job failing for a passing reason (platform 5xx, timeouts, the database away) is tried again, with backoff. */
        jobRetries: z.number().int().min(0).max(20).default(3),
        /**
         * Where the console listens (`host:port`, never the webhook port), or "off". Unset: DEFAULT_CONSOLE_ADDRESS,
         * and serve runs without the console when that address is taken (consoleListen).
         */
        console: consoleAddress.optional(),
        /**
         * The console's access token (`LISTSYNC_CONSOLE_TOKEN`). Unset: a console on a loopback address
         * answers loopback clients only; on any other address, serve generates one and prints it once.
         */
        consoleToken: z.string().min(16, 'is shorter than 16 characters: use a long random value (e.g. openssl rand -hex 24)').optional(),
      })
      .strict()
      .default({
        host: '0.0.0.0',
        port: 8080,
        maxLagMinutes: 24 * 60,
        webhookBodyLimitBytes: 256 * 1024,
        webhookDedupWindowMinutes: 24 * 60,
        maxConnections: 128,
        shutdownTimeoutMs: 6_000,
        runHistoryDays: 30,
        realtimeStaleAfterSeconds: 120,
        jobLeaseSeconds: 60,
        jobRetries: 3,
      }),
    log: z
      .object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') })
      .strict()
      .default({ level: 'info' }),
  })
  .strict();

export const configSchema = configSchemaShape.superRefine(checkPlacement).transform(withAccounts);

type ParsedConfig = z.output<typeof configSchemaShape>;
type ParsedList = z.output<typeof listSchema>;
type ParsedAccount = z.output<typeof accountSchema>;

/** A list with the account it belongs to. */
type PlacedList = ParsedList & { account: string };

/** One account, every default filled in: its lists know it, its mirror schema is set. */
interface NormalAccount extends Omit<ParsedAccount, 'lists' | 'schema' | 'platform'> {
  /** Its platform, `maxConcurrentJobs` settled (0: no cap). */
  platform: ParsedAccount['platform'] & { maxConcurrentJobs: number };
  lists: PlacedList[];
  schema: string;
  /** Where the account is written in the file, for messages: "" (the single form) or "accounts[1]." */
  keyPrefix: string;
}

/**
 * Both forms as accounts: `accounts[]` as written (each account's budget named by the account unless
 * `platform.account` says otherwise), or the single form as one account named by `platform.account`
 * or "default" (its budget keeps the name it had: the hash of baseUrl and apiKey). `lists` holds
 * every account's lists; `platform` is the first account's (single-account code paths).
 */
function withAccounts(cfg: ParsedConfig) {
  const accounts: NormalAccount[] = cfg.accounts
    ? cfg.accounts.map((a, i) => ({
        name: a.name,
        keyPrefix: `accounts[${i}].`,
        platform: {
          ...a.platform,
          account: a.platform.account ?? a.name,
          maxConcurrentJobs: a.platform.maxConcurrentJobs ?? (cfg.accounts!.length > 1 ? DEFAULT_MAX_CONCURRENT_JOBS : 0),
        },
        schema: a.schema ?? cfg.database.schema,
        lists: a.lists.map((l) => ({ ...l, account: a.name })),
      }))
    : [singleAccount(cfg)];
  const { accounts: _raw, ...rest } = cfg;
  return { ...rest, platform: accounts[0]!.platform, lists: accounts.flatMap((a) => a.lists), accounts };
}

function singleAccount(cfg: ParsedConfig): NormalAccount {
  const name = cfg.platform!.account ?? DEFAULT_ACCOUNT;
  return {
    name,
    keyPrefix: '',
    platform: { ...cfg.platform!, maxConcurrentJobs: cfg.platform!.maxConcurrentJobs ?? 0 },
    schema: cfg.database.schema,
    lists: cfg.lists.map((l) => ({ ...l, account: name })),
  };
}

interface Placed {
  list: ParsedList;
  /** The index of its account (0 in the single form), and its name. */
  account: number;
  accountName: string;
  path: (string | number)[];
  schema: string;
}

/** Every list with where it is written and its mirror schema. */
function placedLists(cfg: ParsedConfig): Placed[] {
  if (!cfg.accounts) {
    const accountName = cfg.platform?.account ?? DEFAULT_ACCOUNT;
    return cfg.lists.map((list, i) => ({ list, path: ['lists', i], schema: cfg.database.schema, account: 0, accountName }));
  }
  return cfg.accounts.flatMap((a, i) =>
    a.lists.map((list, j) => ({
      list,
      path: ['accounts', i, 'lists', j],
      schema: a.schema ?? cfg.database.schema,
      account: i,
      accountName: a.name,
    })),
  );
}

/** Rules across keys: the two forms, unique names, schemas and tables that do not collide. */
function checkPlacement(cfg: ParsedConfig, ctx: z.RefinementCtx): void {
  if (!checkForms(cfg, ctx)) return;
  checkSchemas(cfg, ctx);
  checkListNames(placedLists(cfg), ctx);
  for (const p of placedLists(cfg))
    if (p.list.account !== undefined && p.list.account !== p.accountName)
      ctx.addIssue({
        code: 'custom',
        path: [...p.path, 'account'],
        message: `names account "${p.list.account}", but the list is under account "${p.accountName}"; remove the key (listsync fills it in)`,
      });
  checkTables(cfg, placedLists(cfg), ctx);
  // The real-time applier re-reads items through one client, the first account's.
  const elsewhere = placedLists(cfg).find((p) => p.list.realtime && p.account > 0);
  if (elsewhere)
    ctx.addIssue({
      code: 'custom',
      path: [...elsewhere.path, 'realtime'],
      message: `is true on a list of ${formatPath(elsewhere.path.slice(0, 2))}: real time serves the lists of the first account (accounts[0]) only; turn it off here (scheduled pulls keep the list fresh) or move the list's account first`,
    });
  const realtime = placedLists(cfg).find((p) => p.list.realtime);
  if (realtime && cfg.serve.publicUrl === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['serve', 'publicUrl'],
      message: `is required when ${formatPath(realtime.path)}.realtime is true: set it to the HTTPS address the platform reaches "listsync serve" at (e.g. https://sync.example.com), or turn realtime off`,
    });
  }
}

/** Exactly one form: `platform` + `lists`, or `accounts` (at least one, names unique). */
function checkForms(cfg: ParsedConfig, ctx: z.RefinementCtx): boolean {
  const issue = (path: (string | number)[], message: string): false => {
    ctx.addIssue({ code: 'custom', path, message });
    return false;
  };
  if (!cfg.accounts) return cfg.platform ? true : issue(['platform'], 'is required: give "platform" and "lists", or "accounts"');
  if (cfg.platform)
    return issue(
      ['platform'],
      'is set beside "accounts": give each account its own "platform" under accounts[], and remove the top-level one',
    );
  if (cfg.lists.length)
    return issue(['lists'], 'is set beside "accounts": move each list into the "lists" of its account under accounts[]');
  if (cfg.accounts.length === 0)
    return issue(['accounts'], 'is empty: add an account ({ "name", "platform", "lists" }), or remove the key');
  const seen = new Map<string, number>();
  for (const [i, a] of cfg.accounts.entries()) {
    const first = seen.get(a.name);
    if (first !== undefined)
      return issue(['accounts', i, 'name'], `"${a.name}" is also the name of accounts[${first}]; give each account its own name`);
    seen.set(a.name, i);
  }
  return true;
}

/** The reporting schema is neither listsync's own nor any mirror schema. */
function checkSchemas(cfg: ParsedConfig, ctx: z.RefinementCtx): void {
  const reporting = cfg.database.reportingSchema;
  if (reporting === null) return;
  if (reporting === 'listsync' || reporting === cfg.database.schema)
    ctx.addIssue({
      code: 'custom',
      path: ['database', 'reportingSchema'],
      message: `"${reporting}" is ${reporting === 'listsync' ? "listsync's own schema" : 'the mirror schema (database.schema)'}; the views need a schema of their own (default "reporting"), or null to turn them off`,
    });
  cfg.accounts?.forEach((a, i) => {
    if (a.schema === reporting)
      ctx.addIssue({
        code: 'custom',
        path: ['accounts', i, 'schema'],
        message: `"${reporting}" is the reporting schema (database.reportingSchema); give the account's mirror tables another schema`,
      });
  });
}

/** List names are unique across the file: the registry, runs and commands know a list by its name alone. */
function checkListNames(placed: readonly Placed[], ctx: z.RefinementCtx): void {
  const seen = new Map<string, Placed>();
  for (const p of placed) {
    const first = seen.get(p.list.name);
    if (first)
      ctx.addIssue({
        code: 'custom',
        path: [...p.path, 'name'],
        message: `duplicate list name "${p.list.name}": ${formatPath(first.path)} has it too; list names are unique across the file, so rename one`,
      });
    else seen.set(p.list.name, p);
  }
}

/** No two lists of two accounts share a mirror table (in one schema) or a reporting view; none takes a directory table's name. */
function checkTables(cfg: ParsedConfig, placed: readonly Placed[], ctx: z.RefinementCtx): void {
  const directoryTables = new Set([
    cfg.directory.departmentsTable,
    cfg.directory.groupsTable,
    cfg.directory.groupMembersTable,
    cfg.directory.positionsTable,
    cfg.users.table,
  ]);
  const tables = new Map<string, Placed>();
  const views = new Map<string, Placed>();
  for (const p of placed) {
    const table = p.list.table ?? p.list.name;
    if (directoryTables.has(table))
      ctx.addIssue({
        code: 'custom',
        path: [...p.path, 'table'],
        message: `"${table}" is a directory table (users or directory); set ${formatPath(p.path)}.table to another name`,
      });
    const clash = tables.get(`${p.schema}.${table}`) ?? (cfg.database.reportingSchema === null ? undefined : views.get(table));
    // Two lists of one account on one table are refused when a run meets the table (mirror-ownership.test.ts).
    if (clash && clash.list.name !== p.list.name && clash.account !== p.account)
      ctx.addIssue({
        code: 'custom',
        path: [...p.path, 'table'],
        message: `"${table}" is also the table of ${formatPath(clash.path)} (${clash.schema === p.schema ? `both in schema ${p.schema}` : 'both have a view in the reporting schema'}); set ${formatPath(p.path)}.table to another name`,
      });
    tables.set(`${p.schema}.${table}`, p);
    views.set(table, p);
  }
}

export type Config = DeepReadonly<z.output<typeof configSchema>>;
export type ListConfig = Config['lists'][number];
export type PlatformConfig = Config['platform'];
export type AccountConfig = Config['accounts'][number];
export type ConflictPolicy = ListConfig['conflictPolicy'];

type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
}
const defOf = (s: z.ZodType | undefined): SchemaDef | undefined => (s as unknown as { _zod?: { def: SchemaDef } } | undefined)?._zod?.def;

/** The keys the object schema at `path` accepts (through defaults, optionals, preprocessing and arrays). */
export function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let cur: z.ZodType | undefined = schema;
  for (const step of [...path, undefined]) {
    for (let def = defOf(cur); def; def = defOf(cur)) {
      if (def.innerType) cur = def.innerType;
      else if (def.type === 'pipe') cur = defOf(def.out)?.type === 'transform' ? def.in : def.out;
      else break;
    }
    const def = defOf(cur);
    if (step === undefined) return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
    if (typeof step === 'number') cur = def?.type === 'array' ? def.element : undefined;
    else cur = def?.type === 'object' ? def.shape?.[String(step)] : undefined;
  }
  return [];
}

/** A key as messages name it: `platform.apiKey`, `lists[2].name`, `(root)` for the whole file. */
export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}

/**
 * Every key the config file takes, as documented: `section.key` for the sections, `lists[].key`
 * for a list's keys (a section without sub-keys is its own name). docs/configuration.md has one
 * row per key, checked by test/docs.test.ts.
 */
export function configKeyPaths(): string[] {
  return keysAt(configSchema, []).flatMap((section) => {
    const inList = keysAt(configSchema, [section, 0]);
    if (inList.length) return inList.map((k) => `${section}[].${k}`);
    const inSection = keysAt(configSchema, [section]);
    return inSection.length ? inSection.map((k) => `${section}.${k}`) : [section];
  });
}
