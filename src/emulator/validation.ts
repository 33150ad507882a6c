import type { z } from 'zod';

/** `lists[0].fields[2].FieldType` from a zod issue path. */
export function formatPath(path: ReadonlyArray<PropertyKey>, prefix = ''): string {
  let out = prefix;
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out === '' ? '(root)' : out;
}

/** One line per issue, each naming the JSON path of the bad key and what is wrong with it. */
export function formatZodIssues(error: z.ZodError, prefix = ''): string {
  return error.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((k) => `${formatPath([...issue.path, k], prefix)}: unknown key`).join('\n');
      }
      return `${formatPath(issue.path, prefix)}: ${issue.message}`;
    })
    .join('\n');
}
