-- Whether any API key was ever stored: a database that had keys never reopens to keyless access.
CREATE OR REPLACE FUNCTION public.mnemo_keys_exist()
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    RETURN EXISTS (SELECT 1 FROM api_keys);
END
$function$
;
