create or replace function listsync.mirror_capture() returns trigger
language plpgsql
as $fn$
declare
  v_list    text   := TG_ARGV[0];
  v_cols    text[] := coalesce(TG_ARGV[1], '{}')::text[];
  v_numeric text[] := coalesce(TG_ARGV[2], '{}')::text[];
  v_new     jsonb;
  v_old     jsonb;
  v_changes jsonb := '{}'::jsonb;
  v_col     text;
  v_val     jsonb;
begin
  if current_setting('listsync.writer', true) = 'on' then
    if TG_OP = 'DELETE' then return OLD; end if;
    return NEW;
  end if;

  if TG_OP = 'TRUNCATE' then
    raise exception using
      errcode = 'P0001',
      message = format('listsync: truncating %I.%I is not supported: the platform interface has no deletes. Nothing was removed.', TG_TABLE_SCHEMA, TG_TABLE_NAME),
      hint = 'Delete the items in the platform UI; the next reconcile marks them with _deleted_at.';
  end if;

  if TG_OP = 'DELETE' then
    raise exception using
      errcode = 'P0001',
      message = format('listsync: deletes are not supported by the platform interface; row %s was not deleted. Mark it in the platform UI instead.', OLD.id),
      hint = 'The next reconcile marks items deleted on the platform with _deleted_at.';
  end if;

  v_new := to_jsonb(NEW);

  if TG_OP = 'INSERT' then
    foreach v_col in array v_cols loop
      v_val := v_new -> v_col;
      if v_val is not null and v_val <> 'null'::jsonb then
        if v_col = any(v_numeric) and jsonb_typeof(v_val) = 'number' then
          v_val := to_jsonb(v_val #>> '{}');
        end if;
        v_changes := v_changes || jsonb_build_object(v_col, v_val);
      end if;
    end loop;
    insert into listsync.outbox (list_name, op, item_id, local_id, changes, base_version)
    values (v_list, 'create', null, NEW.id, v_changes, null);
    return NEW;
  end if;

  -- UPDATE
  v_old := to_jsonb(OLD);
  foreach v_col in array array['id', 'row_version', 'created_at', 'modified_at'] loop
    if (v_new -> v_col) is distinct from (v_old -> v_col) then
      raise exception using
        errcode = 'P0001',
        message = format('listsync: column %s of %I.%I is managed by listsync and cannot be changed (row %s). Edit the field columns instead.', v_col, TG_TABLE_SCHEMA, TG_TABLE_NAME, OLD.id);
    end if;
  end loop;

  foreach v_col in array v_cols loop
    v_val := v_new -> v_col;
    if v_val is distinct from (v_old -> v_col) then
      if v_val is null then
        v_val := 'null'::jsonb;
      elsif v_col = any(v_numeric) and jsonb_typeof(v_val) = 'number' then
        v_val := to_jsonb(v_val #>> '{}');
      end if;
      v_changes := v_changes || jsonb_build_object(v_col, v_val);
    end if;
  end loop;

  if v_changes = '{}'::jsonb then
    return NEW;
  end if;

  update listsync.outbox o
     set changes = o.changes || v_changes, updated_at = now()
   where o.list_name = v_list and o.op = 'create' and o.local_id = NEW.id
     and o.status in ('pending', 'sending', 'conflict');
  if found then
    return NEW;
  end if;

  insert into listsync.outbox as o (list_name, op, item_id, changes, base_version)
  values (v_list, 'update', NEW.id, v_changes, OLD.row_version)
  on conflict (list_name, item_id) where status in ('pending', 'sending', 'conflict') and item_id is not null
  do update set changes = o.changes || excluded.changes, updated_at = now();
  return NEW;
end
$fn$
