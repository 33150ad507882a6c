-- The platform's last known version of a mirror row (given as jsonb): the greater of row_version (a refill
-- marker, -1, or NULL count as unknown) and the version field of _raw (the item as received; after a write,
-- the version the write produced, until the re-read brings the whole item). NULL when neither holds one.
create or replace function listsync.mirror_base_version(p_row jsonb, p_vfield text) returns bigint
language plpgsql immutable
as $fn$
declare
  v_row  bigint;
  v_raw  bigint;
  v_text text;
begin
  if jsonb_typeof(p_row -> 'row_version') = 'number' and (p_row ->> 'row_version')::numeric >= 0 then
    v_row := (p_row ->> 'row_version')::numeric::bigint;
  end if;
  if p_vfield <> '' then
    v_text := btrim(p_row -> '_raw' ->> p_vfield);
    if v_text ~ '^[0-9]{1,18}$' then v_raw := v_text::bigint; end if;
  end if;
  return greatest(v_row, v_raw);
end
$fn$;

-- Refuses a write of values the platform cannot take: an edit of a removed field's column, a fraction in a
-- whole-number field's column. p_old is null for an INSERT.
create or replace function listsync.mirror_check_values(p_schema text, p_table text, p_new jsonb, p_old jsonb,
                                                        p_removed text[], p_integer text[]) returns void
language plpgsql
as $fn$
declare
  v_col text;
  v_val jsonb;
begin
  foreach v_col in array p_removed loop
    v_val := p_new -> v_col;
    if (p_old is null and v_val is not null and v_val <> 'null'::jsonb) or (p_old is not null and v_val is distinct from (p_old -> v_col)) then
      raise exception using
        errcode = 'P0001',
        message = format('listsync: column %I of %I.%I keeps the data of a field that was removed from the platform; it cannot be written back, so the change was refused (row %s).', v_col, p_schema, p_table, p_new ->> 'id'),
        hint = 'Edit the other columns; "listsync discover" shows which fields the list has now.';
    end if;
  end loop;
  foreach v_col in array p_integer loop
    v_val := p_new -> v_col;
    if v_val is not null and jsonb_typeof(v_val) = 'number' and (p_old is null or v_val is distinct from (p_old -> v_col))
       and (v_val #>> '{}')::numeric <> trunc((v_val #>> '{}')::numeric) then
      raise exception using
        errcode = 'P0001',
        message = format('listsync: column %I of %I.%I holds a whole-number field on the platform; %s is not a whole number, so the change was refused (row %s).', v_col, p_schema, p_table, v_val #>> '{}', p_new ->> 'id'),
        hint = 'Round the value (e.g. round(x)) before writing it.';
    end if;
  end loop;
end
$fn$;
