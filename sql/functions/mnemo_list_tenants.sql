-- Every tenant with data, across tenants (operator listings).
CREATE OR REPLACE FUNCTION public.mnemo_list_tenants()
 RETURNS TABLE(tenant_id text, created_at timestamp with time zone)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT tenant_id, created_at FROM tenants ORDER BY tenant_id
$function$
;
