-- A log by id for a member of its project. An id says nothing of the day a log belongs to, so the
-- lookup probes every daily partition, and planning that afresh for each request (the app's
-- connections force custom plans) cost more than running it. PL/pgSQL keeps the statement's plan
-- for the session; with plan_cache_mode back to auto for the call, the plan is generic after a
-- few runs, the same for every id.
CREATE FUNCTION "log_for_member"(log_id bigint, member_id integer) RETURNS SETOF "logs"
LANGUAGE plpgsql STABLE
SET plan_cache_mode = 'auto'
AS $$
BEGIN
  RETURN QUERY
    SELECT l.* FROM logs l
     WHERE l.id = log_id
       AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = l.project_id AND m.user_id = member_id)
     LIMIT 1;
END
$$;
