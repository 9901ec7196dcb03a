-- Gives every table with a tenant_id column row-level security confined to the tenant the
-- transaction names (mnemo.tenant); migrations call it after creating tables.
CREATE OR REPLACE FUNCTION public.mnemo_apply_tenant_policies()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
    t text;
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO mnemo_app', current_schema());
    FOR t IN
        SELECT c.table_name FROM information_schema.columns c
        JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
        WHERE c.table_schema = current_schema() AND c.column_name = 'tenant_id' AND tb.table_type = 'BASE TABLE'
    LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO mnemo_app', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('DROP POLICY IF EXISTS mnemo_tenant ON %I', t);
        EXECUTE format(
            'CREATE POLICY mnemo_tenant ON %I TO mnemo_app '
            'USING (tenant_id = current_setting(''mnemo.tenant'', true)) '
            'WITH CHECK (tenant_id = current_setting(''mnemo.tenant'', true))', t);
    END LOOP;
END $function$
;
