/**
 * The capture refuses, when the SQL is written, what write-back could never
 * deliver (test/sync/not-taken.test.ts, test/migrations.test.ts):
 *
 * - an edit of a column whose field the platform does not let one write
 *   (system, auto-number, calculated, marked read-only: src/mirror/read-only.ts);
 *   the platform would answer success and keep its own value;
 * - a multi-value array holding a NULL element (the platform's arrays have
 *   none: push would refuse the whole change).
 *
 * Each refusal is SQLSTATE P0001 with a message naming the column and the
 * field. The capture function takes three more trigger arguments after the
 * whole-number columns: the read-only columns, their fields' names (same
 * order), and the multi-value columns. Triggers attached with fewer arguments
 * check nothing more.
 */
import type { Knex } from 'knex';
import { captureFunctionV4 } from './20261126060000_write_back_settled.js';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(checkWritable());
  await knex.raw(captureFunctionV5());
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(captureFunctionV4());
  await knex.raw('drop function if exists listsync.mirror_check_writable(text, text, jsonb, jsonb, text[], text[], text[])');
}

function checkWritable(): string {
  return String.raw`
-- Refuses a write the platform would not take: a read-only field's column changed (or set by an INSERT), a
-- multi-value array with a NULL element. p_old is null for an INSERT; p_labels names the fields of p_readonly.
create or replace function listsync.mirror_check_writable(p_schema text, p_table text, p_new jsonb, p_old jsonb,
                                                          p_readonly text[], p_labels text[], p_multi text[]) returns void
language plpgsql
as $fn$
declare
  v_i   int;
  v_col text;
  v_val jsonb;
begin
  for v_i in 1 .. coalesce(array_length(p_readonly, 1), 0) loop
    v_col := p_readonly[v_i];
    v_val := p_new -> v_col;
    if (p_old is null and v_val is not null and v_val <> 'null'::jsonb) or (p_old is not null and v_val is distinct from (p_old -> v_col)) then
      raise exception using
        errcode = 'P0001',
        message = format('listsync: column %I of %I.%I holds %s, which the platform does not let one write (a system, auto-number or calculated field); the change was refused (row %s).', v_col, p_schema, p_table, coalesce(p_labels[v_i], 'a read-only field'), p_new ->> 'id'),
        hint = 'Edit the other columns; the platform sets this field itself.';
    end if;
  end loop;
  foreach v_col in array p_multi loop
    v_val := p_new -> v_col;
    if v_val is not null and jsonb_typeof(v_val) = 'array' and v_val @> '[null]'::jsonb
       and (p_old is null or v_val is distinct from (p_old -> v_col)) then
      raise exception using
        errcode = 'P0001',
        message = format('listsync: column %I of %I.%I is a multi-value field; its array holds a NULL element, which the platform cannot store, so the change was refused (row %s).', v_col, p_schema, p_table, p_new ->> 'id'),
        hint = 'Leave NULL elements out (e.g. array_remove(x, NULL)); an empty array or NULL clears the field.';
    end if;
  end loop;
end
$fn$;
`;
}

/** The capture function of 20261126060000, with the writable check after each value check. */
export function captureFunctionV5(): string {
  const v4 = captureFunctionV4();
  const declare = `  v_integer text[] := coalesce(TG_ARGV[6], '{}')::text[];\n`;
  const insertCheck = `perform listsync.mirror_check_values(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, null, v_removed, v_integer);\n`;
  const updateCheck = `perform listsync.mirror_check_values(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, v_old, v_removed, v_integer);\n`;
  for (const part of [declare, insertCheck, updateCheck])
    if (!v4.includes(part)) throw new Error(`capture function V4 changed: "${part.trim()}" not found`);
  return v4
    .replace(
      declare,
      declare +
        `  v_readonly text[] := coalesce(TG_ARGV[7], '{}')::text[];\n` +
        `  v_labels   text[] := coalesce(TG_ARGV[8], '{}')::text[];\n` +
        `  v_multi    text[] := coalesce(TG_ARGV[9], '{}')::text[];\n`,
    )
    .replace(
      insertCheck,
      insertCheck +
        `    perform listsync.mirror_check_writable(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, null, v_readonly, v_labels, v_multi);\n`,
    )
    .replace(
      updateCheck,
      updateCheck +
        `  perform listsync.mirror_check_writable(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, v_old, v_readonly, v_labels, v_multi);\n`,
    );
}
