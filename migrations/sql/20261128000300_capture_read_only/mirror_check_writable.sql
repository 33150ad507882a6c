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
