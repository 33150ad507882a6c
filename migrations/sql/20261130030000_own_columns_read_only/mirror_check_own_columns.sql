-- Refuses a user's write of a column listsync itself keeps: an UPDATE that changes one, an INSERT that sets
-- `_raw`, `_synced_at` or `_deleted_at` (an INSERT's id, version and dates are the create's own business).
-- p_old is null for an INSERT. listsync's own writes never get here: the capture trigger is skipped for them.
create or replace function listsync.mirror_check_own_columns(p_schema text, p_table text, p_new jsonb, p_old jsonb) returns void
language plpgsql
as $fn$
declare
  v_col  text;
  v_hint text;
begin
  foreach v_col in array array['id', 'row_version', 'created_at', 'modified_at', '_raw', '_synced_at', '_deleted_at'] loop
    if (p_old is not null and (p_new -> v_col) is distinct from (p_old -> v_col))
       or (p_old is null and v_col in ('_raw', '_synced_at', '_deleted_at') and (p_new -> v_col) is not null and (p_new -> v_col) <> 'null'::jsonb) then
      v_hint := case v_col
        when '_deleted_at' then 'To delete an item, DELETE its row (written back when lists[].pushDeletes is on) or delete it on the platform: the next reconcile sets _deleted_at.'
        when '_raw' then '_raw is the item as the platform sent it; edit the field columns and push sends them.'
        when '_synced_at' then '_synced_at is when listsync last wrote the row from the platform.'
        else 'Edit the field columns instead.'
      end;
      raise exception using
        errcode = 'P0001',
        message = format('listsync: column %s of %I.%I is managed by listsync and cannot be changed (row %s). Edit the field columns instead.',
                         v_col, p_schema, p_table, coalesce(p_old ->> 'id', p_new ->> 'id')),
        hint = v_hint;
    end if;
  end loop;
end
$fn$;
