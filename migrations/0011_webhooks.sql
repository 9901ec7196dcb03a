-- mnemo schema, part 11: the webhook outbox.
--
-- Events are inserted in the same transaction as the change they announce, so an event exists
-- if and only if its change committed. A dispatcher in every server process claims due rows
-- (SKIP LOCKED, with a lease) and POSTs them to MNEMO_WEBHOOK_URL.
--
-- subject_id names the subject an event is about, so erasure (which checks every table with a
-- subject_id column) deletes a subject's events with the rest of its rows. It is NULL for events
-- that must outlive their subject (subject.deleted, whose payload is removed once delivered or
-- dead-lettered) and for batch events spanning several subjects (erasure strips the subject from
-- their subject_ids list instead).
CREATE TABLE webhook_events (
    tenant_id        text NOT NULL,
    id               text NOT NULL,
    subject_id       text,
    event            text NOT NULL,
    payload          jsonb,
    status           text NOT NULL DEFAULT 'pending',
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL DEFAULT 5,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_attempt_at  timestamptz,
    last_error       text,
    http_status      integer,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    PRIMARY KEY (tenant_id, id),
    CHECK (status IN ('pending', 'delivered', 'dead_letter')),
    CHECK (payload IS NULL OR jsonb_typeof(payload) = 'object')
);
-- Event ids are ULIDs, unique across tenants (the operator addresses one by id alone).
CREATE UNIQUE INDEX webhook_events_id ON webhook_events (id);
CREATE INDEX webhook_events_due ON webhook_events (status, next_attempt_at);
CREATE INDEX webhook_events_subject ON webhook_events (tenant_id, subject_id) WHERE subject_id IS NOT NULL;

SELECT mnemo_apply_tenant_policies();

-- The dispatcher's claim: due pending events of any tenant, oldest due first. The claim counts
-- as an attempt and leases the row (next_attempt_at moves past the delivery timeout), so another
-- replica takes it over only if this one dies before recording the outcome.
CREATE FUNCTION mnemo_claim_webhooks(batch integer, lease_secs double precision) RETURNS SETOF webhook_events
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    UPDATE webhook_events w SET attempts = w.attempts + 1, last_attempt_at = now(),
           next_attempt_at = now() + make_interval(secs => lease_secs)
    FROM (SELECT tenant_id, id FROM webhook_events
          WHERE status = 'pending' AND next_attempt_at <= now()
          ORDER BY next_attempt_at FOR UPDATE SKIP LOCKED LIMIT batch) c
    WHERE w.tenant_id = c.tenant_id AND w.id = c.id
    RETURNING w.*
$$;

-- Retention of finished events, across tenants. Locked rows are skipped (never waited for), so
-- this cannot deadlock with an erasure deleting the same rows.
CREATE FUNCTION mnemo_purge_webhooks(hours integer) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    WITH old AS (SELECT tenant_id, id FROM webhook_events
                 WHERE status IN ('delivered', 'dead_letter')
                   AND COALESCE(delivered_at, last_attempt_at, created_at) < now() - make_interval(hours => hours)
                 FOR UPDATE SKIP LOCKED),
         d AS (DELETE FROM webhook_events w USING old
               WHERE w.tenant_id = old.tenant_id AND w.id = old.id RETURNING 1)
    SELECT count(*) FROM d
$$;

-- The operator's view (admin routes): one page of events of every tenant or of one, newest first.
CREATE FUNCTION mnemo_webhook_page(p_status text, p_tenant text, p_limit integer, p_offset integer)
RETURNS SETOF webhook_events
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT * FROM webhook_events
    WHERE (p_status IS NULL OR status = p_status) AND (p_tenant IS NULL OR tenant_id = p_tenant)
    ORDER BY created_at DESC, id DESC LIMIT p_limit OFFSET p_offset
$$;

-- Counts by status (and the oldest pending event's creation time), for every tenant or one.
CREATE FUNCTION mnemo_webhook_stats(p_tenant text)
RETURNS TABLE (status text, events bigint, oldest timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT status, count(*), min(created_at) FROM webhook_events
    WHERE p_tenant IS NULL OR tenant_id = p_tenant
    GROUP BY status ORDER BY status
$$;

-- One event by id, whatever its tenant.
CREATE FUNCTION mnemo_webhook_get(p_id text) RETURNS SETOF webhook_events
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT * FROM webhook_events WHERE id = p_id
$$;

-- Puts a dead-lettered event (whose payload still exists) back in the queue with fresh attempts.
CREATE FUNCTION mnemo_webhook_retry(p_id text) RETURNS SETOF webhook_events
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    UPDATE webhook_events SET status = 'pending', attempts = 0, next_attempt_at = now(),
           last_error = NULL, http_status = NULL, delivered_at = NULL
    WHERE id = p_id AND status = 'dead_letter' AND payload IS NOT NULL
    RETURNING *
$$;
