-- Admin keys act for their own tenant; only operator keys reach across tenants (issue 49).
--
-- Until now a stored admin key could name any tenant in X-Tenant-ID and so read, change, export
-- and import every tenant's data: a key made for one customer was an operator of all of them.
-- From now on an admin key reaches its own tenant's /admin endpoints and console pages only,
-- and a key created with is_operator (always also an admin key) is what the old admin key was.
-- Existing admin keys become tenant-bound: the safe reading of a key nobody scoped. An operator
-- who needs cross-tenant access creates an operator key (`mnemo keys create --operator`) or uses
-- MNEMO_API_KEY.
ALTER TABLE api_keys ADD COLUMN is_operator boolean NOT NULL DEFAULT false;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_operator_is_admin CHECK (is_admin OR NOT is_operator);

-- Authentication needs the scope: the function's result gains a column, so it is replaced.
DROP FUNCTION mnemo_find_key(bytea);
CREATE FUNCTION mnemo_find_key(digest bytea)
RETURNS TABLE (key_id text, tenant_id text, is_admin boolean, is_operator boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT k.key_id, k.tenant_id, k.is_admin, k.is_operator FROM api_keys k
    WHERE k.key_sha256 = digest AND k.revoked_at IS NULL;
END
$$;
