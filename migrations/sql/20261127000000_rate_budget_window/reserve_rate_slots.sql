
    create or replace function listsync.reserve_rate_slots(
      p_account text, p_lead_ms double precision, p_window_ms double precision, p_cap integer,
      p_burst_window_ms double precision, p_burst integer, p_count integer, p_holder text)
    returns table (slots_ms double precision[], now_ms double precision, previous_holder text, previous_age_ms double precision)
    language plpgsql as $fn$
    declare
      b listsync.rate_budget%rowtype;
      recent double precision[];
      given double precision[] := '{}';
      t double precision;
      n integer;
    begin
      insert into listsync.rate_budget (account, next_slot, updated_at) values (p_account, '-infinity', clock_timestamp())
        on conflict (account) do nothing;
      select * into b from listsync.rate_budget where account = p_account for update;
      recent := b.recent_slots_ms;
      t := greatest(
        extract(epoch from clock_timestamp())::double precision * 1000 + p_lead_ms,
        coalesce(extract(epoch from b.paused_until)::double precision * 1000, '-infinity'::double precision),
        extract(epoch from b.next_slot)::double precision * 1000);
      for i in 1 .. greatest(1, p_count) loop
        n := coalesce(array_length(recent, 1), 0);
        if n >= p_cap then
          t := greatest(t, recent[n - p_cap + 1] + p_window_ms);
        end if;
        if n >= p_burst then
          t := greatest(t, recent[n - p_burst + 1] + p_burst_window_ms);
        end if;
        given := given || t;
        recent := recent || t;
      end loop;
      n := array_length(recent, 1);
      recent := recent[greatest(1, n - greatest(p_cap, 1) + 1) : n];
      update listsync.rate_budget
         set recent_slots_ms = recent,
             next_slot = to_timestamp(t / 1000),
             prior_holder = b.last_holder,
             prior_at = b.updated_at,
             updated_at = clock_timestamp(),
             last_holder = p_holder
       where account = p_account;
      return query select given, extract(epoch from clock_timestamp())::double precision * 1000, b.last_holder,
        extract(epoch from clock_timestamp() - b.updated_at)::double precision * 1000;
    end
    $fn$