-- mnemo schema, part 37: every server learns of every erasure.
--
-- A server keeps copies of subjects between context calls (small subjects' rows, large
-- subjects' lexical indexes). The server that erases a subject drops its own copies at once;
-- every other server, and the erasing one when the erasure came through the console or the
-- `mnemo erase` command, learns of it from this function, which each server polls about once a
-- second, and drops its copies of the subject then. It returns what the certificates already
-- expose: tenant, certificate id and the subject's digest, never the subject id.
--
-- `erased_at` is taken by the erasing server just before its commit; the window is read on the
-- database's clock and is wide (the caller's choice, minutes) so that a late commit or a skewed
-- clock of the erasing server still falls inside it.

CREATE INDEX erasures_erased_at ON erasures (erased_at);

CREATE FUNCTION mnemo_erasures_recent(p_window_secs double precision)
RETURNS TABLE (tenant_id text, erasure_id text, subject_sha256 text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT e.tenant_id, e.erasure_id, e.subject_sha256 FROM erasures e
    WHERE e.erased_at > now() - make_interval(secs => p_window_secs)
    ORDER BY e.erased_at, e.tenant_id, e.erasure_id
$$;

REVOKE ALL ON FUNCTION mnemo_erasures_recent(double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_erasures_recent(double precision) TO mnemo_app;
