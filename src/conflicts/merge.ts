/**
 * The three-way merge of one local change against the platform's item, field
 * by field, with the values the change was made on (its base: the mirror's
 * `_raw` when the edit was captured). Pure: no I/O; values are compared in
 * the platform's form by the `same` the caller gives (src/mirror/same-value.ts).
 *
 * For each field the edit names:
 * - the platform still holds the base value: only the user changed it, it is
 *   sent (`send`);
 * - the platform holds the user's value already: the same value on both
 *   sides, no conflict, nothing to send (`same`);
 * - the platform changed it to another value: both changed it differently,
 *   a conflict (`conflicts`), which the list's policy decides
 *   (src/conflicts/policy.ts);
 * - the field is no longer on the platform: never sent, no conflict (`removed`).
 * Fields only the platform changed are not in the edit: they stay the
 * platform's. A base that is unknown (no `_raw`) cannot tell who changed a
 * field: every field whose value differs is a conflict.
 *
 * A create has nothing to merge against (everything is sent); a delete is
 * one decision about the whole item (a conflict when any field moved from
 * the base). Table-tested in test/conflicts/merge.test.ts.
 */
import type { Item } from '../platform/types.js';

/** A field the edit names, with its value in the platform's form (the wire string). */
export interface LocalField {
  field: string;
  local: string;
  /** The field was removed from the platform. */
  removed?: boolean;
}

export interface FieldConflict {
  field: string;
  base: unknown;
  local: string;
  remote: unknown;
}

export interface FieldMerge {
  /** Fields only the user changed: sent, at the platform's current version. */
  send: Record<string, string>;
  /** Fields the platform already holds with the user's value. */
  same: string[];
  /** Fields both sides changed to different values. */
  conflicts: FieldConflict[];
  /** Fields the platform no longer has. */
  removed: string[];
}

/** Whether two platform values of `field` are the same value. */
export type SameValue = (field: string, a: unknown, b: unknown) => boolean;

export function mergeFields(input: { local: readonly LocalField[]; base: Item | null; remote: Item; same: SameValue }): FieldMerge {
  const { base, remote, same } = input;
  const out: FieldMerge = { send: {}, same: [], conflicts: [], removed: [] };
  for (const f of input.local) {
    if (f.removed) {
      out.removed.push(f.field);
      continue;
    }
    const now = remote[f.field];
    if (same(f.field, f.local, now)) out.same.push(f.field);
    else if (base !== null && same(f.field, base[f.field], now)) out.send[f.field] = f.local;
    else out.conflicts.push({ field: f.field, base: base?.[f.field] ?? null, local: f.local, remote: now ?? null });
  }
  return out;
}

export type ChangeMerge = { kind: 'send-all' } | { kind: 'fields'; merge: FieldMerge } | { kind: 'delete' } | { kind: 'item-conflict' };

/**
 * One change against the platform's item: a create sends everything; an
 * update merges field by field; a delete goes ahead only while every field
 * still holds its base value (`fields`: the item's fields), else the whole
 * item is in conflict.
 */
export function mergeChange(
  input:
    | { op: 'create' }
    | { op: 'update'; local: readonly LocalField[]; base: Item | null; remote: Item; same: SameValue }
    | { op: 'delete'; fields: readonly string[]; base: Item | null; remote: Item; same: SameValue },
): ChangeMerge {
  if (input.op === 'create') return { kind: 'send-all' };
  if (input.op === 'update') return { kind: 'fields', merge: mergeFields(input) };
  const { base, remote, same } = input;
  const moved = base === null || input.fields.some((f) => !same(f, base[f], remote[f]));
  return moved ? { kind: 'item-conflict' } : { kind: 'delete' };
}
