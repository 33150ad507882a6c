
    create or replace function listsync.try_cast(v text, target anyelement) returns anyelement
    language plpgsql stable as $fn$
    begin
      if v is null then return null; end if;
      execute format('select %L::%s', v, pg_typeof(target)) into target;
      return target;
    exception when others then
      return null;
    end
    $fn$