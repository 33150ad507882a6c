import { directorySchema } from './directory-data.js';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { FIELD_FLAG_STYLES, FIELD_META_ARRANGEMENTS } from './field-meta-forms.js';
import { FIELD_TYPE_PAIRS, SYSTEM_FIELD_NAMES } from './field-types.js';
import { PlatformZone } from './platform-time.js';
import { formatZodIssues } from './validation.js';
import { coerceError } from '../errors.js';

/**
 * The JSON seed file: time zone, seed number, API keys, users and lists with
 * their fields and items (or a number of items to generate). Validated with
 * zod; every error names the JSON path of the bad key.
 */

const identifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a field name: letters, digits and _, not starting with a digit');
const pathSegment = z.string().regex(/^[A-Za-z0-9_.~-]+$/, 'must be a non-empty path segment: letters, digits, _ . ~ -');

/** One field definition (seed files and `POST /_admin/lists/.../fields`). */
export const fieldSchema = z
  .strictObject({
    FieldName: identifier.meta({
      description:
        'The key items use: a storage slot as the platform names it (Text1, Bigint1, Decimal1, Datetime1, Bit1, File1) or any name. "Title" redefines the system field\'s display name.',
    }),
    Type: z.string().meta({
      description: `The control: input, textarea, radio, checkbox (multi-value), lookup, hyperlink, flowstatus, select, richtext, datepicker, switch, input_number, currency, percent, file-upload. Supported FieldType/Type pairs: ${FIELD_TYPE_PAIRS.join(', ')}`,
    }),
    FieldType: z
      .string()
      .meta({ description: 'The storage kind: Text, Bigint, Decimal, Datetime, Bit or File (see Type for the pairs allowed)' }),
    IsIndex: z.boolean().optional().meta({ description: 'Indexed: queries may filter and sort on it (default false)' }),
    IsUnique: z.boolean().optional(),
    DisplayName: z.string().optional().meta({ description: 'What a person calls the field, e.g. "Order No." (default: FieldName)' }),
    DefaultValue: z.string().optional(),
    Rules: z.record(z.string(), z.unknown()).optional().meta({
      description:
        'Options for radio/checkbox/select ({"Options": [...]}); DateFormat for Datetime: "yyyy-MM-dd" (date) or "yyyy-MM-dd HH:mm:ss" (date-time, the default)',
    }),
  })
  .superRefine((f, ctx) => {
    if (f.FieldName === 'Title') {
      if (f.FieldType !== 'Text' || f.Type !== 'input')
        ctx.addIssue({ code: 'custom', path: ['Type'], message: 'Title is a system field: Text/input' });
      return;
    }
    if ((SYSTEM_FIELD_NAMES as readonly string[]).includes(f.FieldName)) {
      ctx.addIssue({ code: 'custom', path: ['FieldName'], message: `"${f.FieldName}" is a system field and is added automatically` });
    }
    if (!(FIELD_TYPE_PAIRS as readonly string[]).includes(`${f.FieldType}/${f.Type}`)) {
      ctx.addIssue({
        code: 'custom',
        path: ['FieldType'],
        message: `FieldType/Type "${f.FieldType}/${f.Type}" is not supported; use one of ${FIELD_TYPE_PAIRS.join(', ')}`,
      });
    }
    const fmt = f.Rules?.['DateFormat'];
    if (fmt !== undefined && (f.FieldType !== 'Datetime' || (fmt !== 'yyyy-MM-dd' && fmt !== 'yyyy-MM-dd HH:mm:ss'))) {
      ctx.addIssue({
        code: 'custom',
        path: ['Rules', 'DateFormat'],
        message: 'DateFormat is for Datetime fields: "yyyy-MM-dd" or "yyyy-MM-dd HH:mm:ss"',
      });
    }
  });

const userSchema = z.strictObject({
  UserID: z
    .string()
    .regex(/^\d{1,19}$/, 'must be a string of up to 19 digits')
    .optional(),
  Name: z.string().min(1),
  Email: z.string().optional(),
  Account: z.string().optional(),
  Photo: z.string().optional(),
  LineManager: z.string().optional(),
});

const listSchema = z
  .strictObject({
    appID: pathSegment,
    listID: pathSegment,
    title: z.string().optional(),
    description: z.string().optional(),
    fields: z.array(fieldSchema).meta({
      description:
        'User-defined fields; the system fields (ListDataID, RowVersion, Title, Created, Modified, CreatedBy, ModifiedBy) are added automatically',
    }),
    items: z.array(z.record(z.string(), z.unknown())).optional().meta({
      description:
        'Items: field name -> string value as the platform stores it (dates "YYYY-MM-DD", date-times "YYYY-MM-DD HH:mm:ss", switches "1"/"0", multi-value a JSON-encoded array string, attachments a JSON-encoded array of {id, name, fileSize}). Optional ListDataID (digits), RowVersion, Created, Modified, CreatedBy, ModifiedBy.',
    }),
    generate: z
      .number()
      .int()
      .min(0)
      .max(5_000_000)
      .optional()
      .meta({ description: 'Items to generate after the given ones, with plausible values per field kind' }),
  })
  .superRefine((l, ctx) => {
    const seen = new Set<string>();
    l.fields.forEach((f, i) => {
      if (seen.has(f.FieldName))
        ctx.addIssue({ code: 'custom', path: ['fields', i, 'FieldName'], message: `field "${f.FieldName}" is defined twice` });
      seen.add(f.FieldName);
    });
  });

export const seedFileSchema = z
  .strictObject({
    $schema: z.string().optional().meta({ description: 'Path or URL of this JSON Schema (for editors)' }),
    referenceDate: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date "YYYY-MM-DD"')
      .refine(
        (d) => Number.isFinite(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d),
        'must be a real calendar date',
      )
      .optional()
      .meta({
        description:
          'Day (UTC) the generated data is anchored to; pin it so generated data does not change from day to day (default: today). --reference-date wins.',
      }),
    fieldMeta: z.enum(FIELD_META_ARRANGEMENTS).optional().meta({
      description:
        'How GET .../fields names storage kind and control: exported (FieldType = storage, Type = control; the default), swapped (the reverse), type-only (Type = storage, no FieldType, integer FieldID), control-only (Type = control, no FieldType: the likeliest real REST shape). --field-meta wins.',
    }),
    fieldFlags: z.enum(FIELD_FLAG_STYLES).optional().meta({
      description: 'How IsSort/IsIndex/IsSystem/IsUnique are written: boolean (default), number (1/0) or string ("true"/"false")',
    }),
    queryLagMs: z
      .number()
      .int()
      .min(0)
      .max(600_000)
      .optional()
      .meta({ description: 'A write shows in items/query only this many ms later (reads by ID show it at once). --query-lag wins.' }),
    timeZone: z
      .string()
      .refine((tz) => PlatformZone.isValid(tz), 'must be an IANA time zone such as "UTC" or "Europe/Berlin"')
      .optional()
      .meta({ description: "The platform's time zone: Created/Modified and date-times are written in it, without offset (default UTC)" }),
    seedNumber: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Seed of generated data: the same number gives the same data (default 1)' }),
    apiKeys: z
      .array(z.string().min(1, 'an API key must not be empty'))
      .min(1)
      .optional()
      .meta({ description: 'Accepted API keys (default ["emulator-key"])' }),
    users: z
      .union([z.strictObject({ count: z.number().int().min(1).max(100_000) }), z.array(userSchema).min(1)])
      .optional()
      .meta({
        description:
          'The users directory: {"count": n} generated users, or the users themselves; the first is the user the API key acts as (default 50 generated)',
      }),
    lists: z.array(listSchema).default([]),
    /** Departments, groups and positions; absent: derived from the users. An absent key inside: that endpoint answers 404. */
    directory: directorySchema.optional(),
  })
  .superRefine((s, ctx) => {
    const seen = new Set<string>();
    s.lists.forEach((l, i) => {
      const k = `${l.appID}/${l.listID}`;
      if (seen.has(k)) ctx.addIssue({ code: 'custom', path: ['lists', i, 'listID'], message: `list ${k} is defined twice` });
      seen.add(k);
    });
  });

/** The seed file format as a JSON Schema (shipped as seed.schema.json; a test keeps the two equal). */
export function seedJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(seedFileSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'listsync emulator seed file',
    description:
      'Users and lists for `listsync emulator --seed <file>` (and POST /_admin/reset {"seed": ...}). Regenerate with `npm run emulator:schema`.',
    ...rest,
  };
}

export type SeedFile = z.input<typeof seedFileSchema>;
export type ParsedSeedFile = z.output<typeof seedFileSchema>;
export type SeedList = ParsedSeedFile['lists'][number];

export class SeedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SeedError';
  }
}

/** Validates a seed object. `source` names it in messages (a file path). */
export function parseSeedFile(input: unknown, source = 'seed'): ParsedSeedFile {
  const r = seedFileSchema.safeParse(input);
  if (!r.success) throw new SeedError(`Invalid seed (${source}):\n${formatZodIssues(r.error)}`);
  return r.data;
}

/** Reads and validates a JSON seed file. */
export async function loadSeedFile(path: string): Promise<ParsedSeedFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new SeedError(`Cannot read the seed file ${path}: ${coerceError(cause).message}`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new SeedError(`The seed file ${path} is not valid JSON: ${coerceError(cause).message}`, { cause });
  }
  return parseSeedFile(json, path);
}
