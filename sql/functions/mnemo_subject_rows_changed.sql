-- Trigger: bumps a subject's row version when its memories change, so servers know their kept
-- copies are stale.
CREATE OR REPLACE FUNCTION public.mnemo_subject_rows_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO subject_versions (tenant_id, subject_id, version)
    SELECT c.tenant_id, c.subject_id, nextval('subject_version_seq')
    FROM (SELECT DISTINCT tenant_id, subject_id FROM changed) c
    ORDER BY c.tenant_id, c.subject_id
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END $function$
;
