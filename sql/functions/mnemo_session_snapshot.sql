-- A session's latest snapshot as of an instant, for the two context functions (their part 4 and
-- the pool's pinned turns); NULL when the session has none.
CREATE OR REPLACE FUNCTION public.mnemo_session_snapshot(p_tenant text, p_subject text, p_session text, p_as_of timestamp with time zone)
 RETURNS session_snapshots
 LANGUAGE sql
 STABLE
AS $function$
    SELECT * FROM session_snapshots s
    WHERE s.tenant_id = p_tenant AND s.subject_id = p_subject AND s.session_id = p_session
      AND s.created_at <= p_as_of
    ORDER BY s.position DESC LIMIT 1
$function$
;
