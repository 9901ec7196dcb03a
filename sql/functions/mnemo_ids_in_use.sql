-- Which of the given episode and memory ids exist in any tenant (imports refuse ids another
-- tenant holds).
CREATE OR REPLACE FUNCTION public.mnemo_ids_in_use(p_episode_ids uuid[], p_memory_ids uuid[])
 RETURNS TABLE(kind text, id uuid)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT 'episode', e.id FROM episodes e WHERE e.id IN (SELECT unnest(p_episode_ids))
    UNION
    SELECT 'memory', m.id FROM memories m WHERE m.id IN (SELECT unnest(p_memory_ids))
    ORDER BY 1, 2
$function$
;
