-- Looks an API key up by its sha256 digest, across tenants (authentication comes before a tenant
-- is known).
CREATE OR REPLACE FUNCTION public.mnemo_find_key(digest bytea)
 RETURNS TABLE(key_id text, tenant_id text, is_admin boolean, is_operator boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT k.key_id, k.tenant_id, k.is_admin, k.is_operator FROM api_keys k
    WHERE k.key_sha256 = digest AND k.revoked_at IS NULL;
END
$function$
;
