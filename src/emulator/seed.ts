import { directorySchema } from './directory.js';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { FIELD_TYPE_PAIRS, SYSTEM_FIELD_NAMES } from './field-types.js';
import { PlatformZone } from './platform-time.js';
import { formatZodIssues } from './validation.js';

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
    FieldName: identifier,
    Type: z.string(),
    FieldType: z.string(),
    IsIndex: z.boolean().optional(),
    IsUnique: z.boolean().optional(),
    DisplayName: z.string().optional(),
    DefaultValue: z.string().optional(),
    Rules: z.record(z.string(), z.unknown()).optional(),
  })
  .superRefine((f, ctx) => {
    if (f.FieldName === 'Title') {
      if (f.FieldType !== 'Text' || f.Type !== 'input') ctx.addIssue({ code: 'custom', path: ['Type'], message: 'Title is a system field: Text/input' });
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
      ctx.addIssue({ code: 'custom', path: ['Rules', 'DateFormat'], message: 'DateFormat is for Datetime fields: "yyyy-MM-dd" or "yyyy-MM-dd HH:mm:ss"' });
    }
  });

const userSchema = z.strictObject({
  UserID: z.string().regex(/^\d{1,19}$/, 'must be a string of up to 19 digits').optional(),
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
    fields: z.array(fieldSchema),
    items: z.array(z.record(z.string(), z.unknown())).optional(),
    generate: z.number().int().min(0).max(5_000_000).optional(),
  })
  .superRefine((l, ctx) => {
    const seen = new Set<string>();
    l.fields.forEach((f, i) => {
      if (seen.has(f.FieldName)) ctx.addIssue({ code: 'custom', path: ['fields', i, 'FieldName'], message: `field "${f.FieldName}" is defined twice` });
      seen.add(f.FieldName);
    });
  });

export const seedFileSchema = z
  .strictObject({
    $schema: z.string().optional(),
    timeZone: z.string().refine((tz) => PlatformZone.isValid(tz), 'must be an IANA time zone such as "UTC" or "Europe/Berlin"').optional(),
    seedNumber: z.number().int().optional(),
    apiKeys: z.array(z.string().min(1, 'an API key must not be empty')).min(1).optional(),
    users: z.union([z.strictObject({ count: z.number().int().min(1).max(100_000) }), z.array(userSchema).min(1)]).optional(),
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
    throw new SeedError(`Cannot read the seed file ${path}: ${(cause as Error).message}`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new SeedError(`The seed file ${path} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  return parseSeedFile(json, path);
}
