create or replace function listsync.mirror_capture() returns trigger
language plpgsql
as $fn$
declare
  v_list    text   := TG_ARGV[0];
  v_cols    text[] := coalesce(TG_ARGV[1], '{}')::text[];
  v_numeric text[] := coalesce(TG_ARGV[2], '{}')::text[];
  v_deletes boolean := coalesce(TG_ARGV[3], '') = 'push-deletes';
  v_vfield  text   := coalesce(TG_ARGV[4], '');
  v_removed text[] := coalesce(TG_ARGV[5], '{}')::text[];
  v_integer text[] := coalesce(TG_ARGV[6], '{}')::text[];
  v_readonly text[] := coalesce(TG_ARGV[7], '{}')::text[];
  v_labels   text[] := coalesce(TG_ARGV[8], '{}')::text[];
  v_multi    text[] := coalesce(TG_ARGV[9], '{}')::text[];
  v_base    bigint;
  v_new     jsonb;
  v_old     jsonb;
  v_changes jsonb := '{}'::jsonb;
  v_col     text;
  v_val     jsonb;
  v_create  record;
  v_open    record;
  v_writer  text;
begin
  if current_setting('listsync.writer', true) = 'on' then
    if TG_OP = 'DELETE' then return OLD; end if;
    return NEW;
  end if;

  if TG_OP = 'TRUNCATE' then
    raise exception using
      errcode = 'P0001',
      message = format('listsync: truncating %I.%I is not supported: it would remove every row without writing anything back. Nothing was removed.', TG_TABLE_SCHEMA, TG_TABLE_NAME),
      hint = 'Delete rows with DELETE (written back when lists[].pushDeletes is on), or delete the items in the platform UI; the next reconcile marks them with _deleted_at.';
  end if;

  if TG_OP = 'DELETE' then
    -- 1. A local row whose create is not confirmed: the delete withdraws the create.
    select o.id, o.status, o.sends into v_create
      from listsync.outbox o
     where o.list_name = v_list and o.op = 'create' and o.local_id = OLD.id and o.status in ('pending', 'sending', 'failed', 'conflict')
     order by o.id desc limit 1
     for update;
    if found then
      if v_create.status = 'pending' and v_create.sends = 0 then
        update listsync.outbox
           set status = 'superseded', sent_changes = null, updated_at = now(),
               last_error = 'withdrawn: the local row was deleted before it was sent to the platform'
         where id = v_create.id;
      else
        update listsync.outbox
           set withdrawn_at = now(), updated_at = now(), next_attempt_at = now(),
               status = case when status = 'sending' then status else 'pending' end
         where id = v_create.id;
      end if;
      return OLD;
    end if;

    if not v_deletes then
      raise exception using
        errcode = 'P0001',
        message = format('listsync: deletes are not written back for list "%s" (lists[].pushDeletes is off); row %s was not deleted.', v_list, OLD.id),
        hint = 'Set "pushDeletes": true on the list in the config (it takes effect at the next push or pull) to delete items on the platform by deleting their rows, or delete the item in the platform UI: the next reconcile marks it with _deleted_at.';
    end if;

    -- 2. Captured: the row stays, marked deleted, until push settles the delete.
    v_old := to_jsonb(OLD);
    if (v_old ->> '_deleted_at') is not null then
      select 1 into v_open from listsync.outbox o
       where o.list_name = v_list and o.item_id = OLD.id and o.status in ('pending', 'sending', 'conflict');
      if found then return null; end if;
      -- Already gone from the platform (reconcile marked it): nothing to write back.
      return OLD;
    end if;
    foreach v_col in array v_cols loop
      v_val := v_old -> v_col;
      if v_val is null then
        v_val := 'null'::jsonb;
      elsif v_col = any(v_numeric) and jsonb_typeof(v_val) = 'number' then
        v_val := to_jsonb(v_val #>> '{}');
      end if;
      v_changes := v_changes || jsonb_build_object(v_col, v_val);
    end loop;

    select o.id, o.status, o.op into v_open from listsync.outbox o
     where o.list_name = v_list and o.item_id = OLD.id and o.status in ('pending', 'sending', 'conflict')
     for update;
    if found and v_open.status <> 'pending' then
      raise exception using
        errcode = 'P0001',
        message = format('listsync: row %s has a change that is %s; it was not deleted. Delete it once that change is settled.', OLD.id,
                         case when v_open.status = 'conflict' then 'in conflict ("listsync conflicts" shows it)' else 'being sent by a push' end);
    end if;
    if found then
      -- The open edit is replaced by the delete, on the version it was made on.
      update listsync.outbox
         set op = 'delete', changes = v_changes, sent_changes = null, updated_at = now()
       where id = v_open.id;
    else
      insert into listsync.outbox (list_name, op, item_id, changes, base_version)
      values (v_list, 'delete', OLD.id, v_changes, listsync.mirror_base_version(v_old, v_vfield));
    end if;
    -- Marking the row is listsync's own write (own columns are refused to users): marked as such for this one
    -- statement, then the transaction's mark is put back, so the user's later statements are still captured.
    v_writer := current_setting('listsync.writer', true);
    perform set_config('listsync.writer', 'on', true);
    execute format('update %I.%I set _deleted_at = now() where id = $1', TG_TABLE_SCHEMA, TG_TABLE_NAME) using OLD.id;
    perform set_config('listsync.writer', coalesce(v_writer, ''), true);
    return null;
  end if;

  v_new := to_jsonb(NEW);

  if TG_OP = 'INSERT' then
    perform listsync.mirror_check_own_columns(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, null);
    perform listsync.mirror_check_values(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, null, v_removed, v_integer);
    perform listsync.mirror_check_writable(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, null, v_readonly, v_labels, v_multi);
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
  perform listsync.mirror_check_own_columns(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, v_old);

  perform listsync.mirror_check_values(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, v_old, v_removed, v_integer);
  perform listsync.mirror_check_writable(TG_TABLE_SCHEMA, TG_TABLE_NAME, v_new, v_old, v_readonly, v_labels, v_multi);
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
  values (v_list, 'update', NEW.id, v_changes, listsync.mirror_base_version(v_old, v_vfield))
  on conflict (list_name, item_id) where status in ('pending', 'sending', 'conflict') and item_id is not null
  do update set changes = o.changes || excluded.changes, updated_at = now();
  return NEW;
end
$fn$
