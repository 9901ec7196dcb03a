-- mnemo's schema: every table, index, trigger and row-level-security policy, as migrations
-- 0001-0061 had built it (the same `pg_dump --schema-only` output), in one file. Function bodies
-- live in sql/functions/ (one file each, installed after the migrations; sql/README.md).
--
-- A database migrated by 0001-0061 before this file existed is adopted, not migrated again: on
-- start its migration records are replaced by this one's (src/db/pool.rs, `adopt`). An older
-- database must first be brought to 0061 by a mnemo release that still has those migrations
-- (docs/operations.md, "Upgrading").
--
-- Every table with data of a subject carries tenant_id and subject_id and leads every key and
-- index with them: tenants stay apart, and the schema can be distributed by (tenant, subject)
-- (docs/sharding.md).

-- pgvector for vectors; btree_gin so the full-text indexes can lead with the subject's key.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- The server's pool runs as mnemo_app (SET ROLE after connecting, or a login role of the
-- operator's that is a member). It has no BYPASSRLS: every table with a tenant_id shows it only
-- the rows of the tenant the transaction names (mnemo.tenant; policies at the end). The few
-- cross-tenant operations are SECURITY DEFINER functions (sql/functions, docs/sharding.md).
DO $$
BEGIN
    CREATE ROLE mnemo_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL; -- created earlier, or by a concurrent migration of another database
END $$;

DO $$
BEGIN
    IF NOT pg_has_role(current_user, 'mnemo_app', 'MEMBER') THEN
        EXECUTE format('GRANT mnemo_app TO %I', current_user);
    END IF;
END $$;

-- Versions of a subject's memories and of a tenant's settings, each from one sequence: they only
-- grow and are never handed out twice, so a cached copy never matches a later state by accident.
CREATE SEQUENCE subject_version_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

CREATE SEQUENCE tenant_version_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

-- The functions the triggers and indexes below need when they are created. Their current bodies
-- are in sql/functions/ (installed after the migrations), like every other function's.
CREATE FUNCTION mnemo_episodes_fill_lexemes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.search_tsv := mnemo_episode_lexemes(NEW.payload);
    RETURN NEW;
END
$$;

CREATE FUNCTION mnemo_episodes_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND coalesce(current_setting('mnemo.erasure', true), '') = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% rows are append-only (% rejected)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE FUNCTION mnemo_subject_key(p_tenant text, p_subject text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT length(p_tenant)::text || ':' || p_tenant || p_subject
$$;

CREATE FUNCTION mnemo_subject_rows_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO subject_versions (tenant_id, subject_id, version)
    SELECT c.tenant_id, c.subject_id, nextval('subject_version_seq')
    FROM (SELECT DISTINCT tenant_id, subject_id FROM changed) c
    ORDER BY c.tenant_id, c.subject_id
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END $$;

CREATE FUNCTION mnemo_tenant_settings_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM mnemo_bump_tenant_version(OLD.tenant_id);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.tenant_id IS DISTINCT FROM OLD.tenant_id) THEN
        PERFORM mnemo_bump_tenant_version(NEW.tenant_id);
    END IF;
    RETURN NULL;
END $$;

-- Per-tenant API keys, stored as sha256 hashes only; revoked keys are kept (revoked_at).
CREATE TABLE api_keys (
    tenant_id text NOT NULL,
    key_id text NOT NULL,
    key_sha256 bytea NOT NULL,
    is_admin boolean DEFAULT false NOT NULL,
    label text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    is_operator boolean DEFAULT false NOT NULL,
    CONSTRAINT api_keys_operator_is_admin CHECK ((is_admin OR (NOT is_operator))),
    CONSTRAINT api_keys_pkey PRIMARY KEY (tenant_id, key_id)
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys USING btree (key_sha256);
CREATE UNIQUE INDEX api_keys_id ON api_keys USING btree (key_id);

-- How far compile has read each subject's episodes (by seq), and down to which seq older
-- episodes' passages have been written (NULL: nothing left to backfill).
CREATE TABLE compile_cursors (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    compiled_seq bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    passages_through bigint,
    CONSTRAINT compile_cursors_pkey PRIMARY KEY (tenant_id, subject_id)
);
CREATE INDEX compile_cursors_passages_through ON compile_cursors USING btree (tenant_id, subject_id) WHERE (passages_through IS NOT NULL);

-- Async compile jobs, shared by every mnemo process through FOR UPDATE SKIP LOCKED.
CREATE TABLE compile_jobs (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    id text NOT NULL,
    status text NOT NULL,
    memories_created integer DEFAULT 0 NOT NULL,
    error text,
    attempts integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    completed_at timestamp with time zone,
    heartbeat_at timestamp with time zone,
    llm_tokens_in bigint DEFAULT 0 NOT NULL,
    llm_tokens_out bigint DEFAULT 0 NOT NULL,
    episodes_done bigint DEFAULT 0 NOT NULL,
    episodes_total bigint,
    CONSTRAINT compile_jobs_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'running'::text, 'completed'::text, 'failed'::text]))),
    CONSTRAINT compile_jobs_pkey PRIMARY KEY (tenant_id, subject_id, id)
);
CREATE INDEX compile_jobs_finished ON compile_jobs USING btree (completed_at) WHERE (status = ANY (ARRAY['completed'::text, 'failed'::text]));
CREATE INDEX compile_jobs_open ON compile_jobs USING btree (status, created_at) WHERE (status = ANY (ARRAY['pending'::text, 'running'::text]));
CREATE UNIQUE INDEX compile_jobs_id ON compile_jobs USING btree (tenant_id, id);

-- Console sign-ins, held server-side so signing out ends a session for every server.
CREATE TABLE console_sessions (
    tenant_id text NOT NULL,
    session_id bytea NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT console_sessions_pkey PRIMARY KEY (tenant_id, session_id)
);

-- Episode vectors (of each episode's opening), beside the append-only episodes.
CREATE TABLE episode_embeddings (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    episode_id uuid NOT NULL,
    embedding_model text NOT NULL,
    embedding vector NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT episode_embeddings_pkey PRIMARY KEY (tenant_id, subject_id, episode_id)
);
CREATE INDEX episode_embeddings_created ON episode_embeddings USING btree (tenant_id, subject_id, created_at);

-- Passages of long episodes: char ranges of the episode's text with a vector each, written
-- by compile and embedded by a background worker (pending: embedding IS NULL).
CREATE TABLE episode_passages (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    episode_id uuid NOT NULL,
    passage smallint NOT NULL,
    start_char integer NOT NULL,
    end_char integer NOT NULL,
    embedding_model text,
    embedding vector,
    embedded_at timestamp with time zone,
    claimed_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT episode_passages_check CHECK (((passage >= 1) AND (start_char >= 0) AND (end_char > start_char))),
    CONSTRAINT episode_passages_check1 CHECK ((((embedding IS NULL) = (embedding_model IS NULL)) AND ((embedding IS NULL) = (embedded_at IS NULL)))),
    CONSTRAINT episode_passages_pkey PRIMARY KEY (tenant_id, subject_id, episode_id, passage)
);
CREATE INDEX episode_passages_embedded ON episode_passages USING btree (tenant_id, subject_id, embedded_at);
CREATE INDEX episode_passages_pending ON episode_passages USING btree (tenant_id, created_at) WHERE (embedding IS NULL);

-- What happened, append-only: the guard trigger rejects UPDATE, TRUNCATE, and DELETE outside
-- erasure (mnemo.erasure = on). `seq` numbers a subject's episodes in commit order.
CREATE TABLE episodes (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    id uuid NOT NULL,
    session_id text,
    source text NOT NULL,
    type text NOT NULL,
    payload jsonb NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    provenance jsonb DEFAULT '{}'::jsonb NOT NULL,
    idempotency_key text,
    seq bigint NOT NULL,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    search_tsv tsvector NOT NULL,
    CONSTRAINT episodes_payload_check CHECK ((jsonb_typeof(payload) = 'object'::text)),
    CONSTRAINT episodes_subject_id_check CHECK (((char_length(subject_id) >= 1) AND (char_length(subject_id) <= 256))),
    CONSTRAINT episodes_pkey PRIMARY KEY (tenant_id, id)
);
CREATE INDEX episodes_subject_key_tsv ON episodes USING gin (mnemo_subject_key(tenant_id, subject_id), search_tsv) WITH (gin_pending_list_limit='512');
CREATE INDEX episodes_subject_order ON episodes USING btree (tenant_id, subject_id, occurred_at, created_at, id);
CREATE INDEX episodes_subject_session ON episodes USING btree (tenant_id, subject_id, session_id, occurred_at);
CREATE UNIQUE INDEX episodes_idempotency ON episodes USING btree (tenant_id, subject_id, md5(idempotency_key)) WHERE (idempotency_key IS NOT NULL);
CREATE UNIQUE INDEX episodes_subject_seq ON episodes USING btree (tenant_id, subject_id, seq);
CREATE TRIGGER episodes_append_only BEFORE UPDATE ON episodes FOR EACH ROW EXECUTE FUNCTION mnemo_episodes_guard();
CREATE TRIGGER episodes_delete_guard BEFORE DELETE ON episodes FOR EACH ROW WHEN ((COALESCE(current_setting('mnemo.erasure'::text, true), ''::text) <> 'on'::text)) EXECUTE FUNCTION mnemo_episodes_guard();
CREATE TRIGGER episodes_fill_lexemes BEFORE INSERT ON episodes FOR EACH ROW WHEN ((new.search_tsv IS NULL)) EXECUTE FUNCTION mnemo_episodes_fill_lexemes();
CREATE TRIGGER episodes_no_truncate BEFORE TRUNCATE ON episodes FOR EACH STATEMENT EXECUTE FUNCTION mnemo_episodes_guard();

-- Erasure certificates: the subject is named only by sha256(tenant \x1f subject).
CREATE TABLE erasures (
    tenant_id text NOT NULL,
    erasure_id text NOT NULL,
    subject_sha256 text NOT NULL,
    erased_at timestamp with time zone NOT NULL,
    certificate text NOT NULL,
    CONSTRAINT erasures_pkey PRIMARY KEY (tenant_id, erasure_id)
);
CREATE INDEX erasures_erased_at ON erasures USING btree (erased_at);
CREATE INDEX erasures_subject ON erasures USING btree (tenant_id, subject_sha256, erased_at);

-- Compiled memories, bitemporal: valid_from/valid_to (when true in the world),
-- recorded_at/superseded_at (when mnemo believed it); asserted_valid_to keeps valid_to as first
-- recorded. Superseded rows are never rewritten beyond status and those times.
CREATE TABLE memories (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    id uuid NOT NULL,
    kind text NOT NULL,
    content text NOT NULL,
    summary text DEFAULT ''::text NOT NULL,
    confidence double precision DEFAULT 1.0 NOT NULL,
    valid_from timestamp with time zone NOT NULL,
    valid_to timestamp with time zone,
    asserted_valid_to timestamp with time zone,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    superseded_at timestamp with time zone,
    source_episode_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    sensitivity_labels text[] DEFAULT '{}'::text[] NOT NULL,
    suggested_labels text[] DEFAULT '{}'::text[] NOT NULL,
    claim_key text,
    claim_bucket text,
    claim_single boolean DEFAULT false NOT NULL,
    order_at timestamp with time zone NOT NULL,
    order_tiebreak text NOT NULL,
    embedding vector,
    embedding_model text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, "left"(content, 250000))) STORED,
    CONSTRAINT memories_status_check CHECK ((status = ANY (ARRAY['active'::text, 'superseded'::text, 'tombstoned'::text]))),
    CONSTRAINT memories_pkey PRIMARY KEY (tenant_id, subject_id, id)
)
WITH (toast_tuple_target='4080');
ALTER TABLE ONLY memories ALTER COLUMN embedding SET STORAGE MAIN;
CREATE INDEX memories_by_id ON memories USING btree (tenant_id, id);
CREATE INDEX memories_source_episodes ON memories USING gin (source_episode_ids) WITH (fastupdate=off);
CREATE INDEX memories_subject_active ON memories USING btree (tenant_id, subject_id, kind) WHERE (status = 'active'::text);
CREATE INDEX memories_subject_created ON memories USING btree (tenant_id, subject_id, created_at, id);
CREATE INDEX memories_subject_current_claims ON memories USING btree (tenant_id, subject_id) WHERE (claim_single AND (superseded_at IS NULL));
CREATE INDEX memories_subject_current_facts ON memories USING btree (tenant_id, subject_id, valid_from) WHERE ((kind = ANY (ARRAY['profile_fact'::text, 'procedure'::text])) AND (superseded_at IS NULL));
CREATE INDEX memories_subject_key_tsv ON memories USING gin (mnemo_subject_key(tenant_id, subject_id), content_tsv) WITH (gin_pending_list_limit='512');
CREATE INDEX memories_subject_superseded ON memories USING btree (tenant_id, subject_id, superseded_at) WHERE (superseded_at IS NOT NULL);
CREATE INDEX memories_subject_valid_from ON memories USING btree (tenant_id, subject_id, valid_from);
CREATE INDEX memories_suggested ON memories USING btree (tenant_id, created_at DESC, id DESC) WHERE (suggested_labels <> '{}'::text[]);
CREATE INDEX memories_suggested_labels ON memories USING gin (suggested_labels) WHERE (suggested_labels <> '{}'::text[]);
CREATE TRIGGER memories_deleted_version AFTER DELETE ON memories REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER memories_inserted_version AFTER INSERT ON memories REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER memories_updated_version AFTER UPDATE ON memories REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();

-- The digest of each SQL function file last installed (src/db/functions.rs).
CREATE TABLE mnemo_sql_functions (
    name text NOT NULL,
    sha256 text NOT NULL,
    installed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT mnemo_sql_functions_pkey PRIMARY KEY (name)
);

-- Each tenant's active policy bundle.
CREATE TABLE policy_active (
    tenant_id text NOT NULL,
    bundle_hash text NOT NULL,
    activated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT policy_active_pkey PRIMARY KEY (tenant_id)
);
CREATE TRIGGER policy_active_version AFTER INSERT OR DELETE OR UPDATE ON policy_active FOR EACH ROW EXECUTE FUNCTION mnemo_tenant_settings_changed();

-- Policy bundles, content-addressed and immutable: the text as uploaded, the hash over its
-- canonical JSON, so a replay finds the bundle a receipt was assembled under.
CREATE TABLE policy_bundles (
    tenant_id text NOT NULL,
    bundle_hash text NOT NULL,
    content text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT policy_bundles_pkey PRIMARY KEY (tenant_id, bundle_hash)
);
CREATE TRIGGER policy_bundles_version AFTER INSERT OR DELETE OR UPDATE ON policy_bundles FOR EACH ROW EXECUTE FUNCTION mnemo_tenant_settings_changed();

-- Token buckets shared by every mnemo process: one row per (tenant, 'tenant' | 'key:<id>').
CREATE TABLE rate_buckets (
    tenant_id text NOT NULL,
    bucket text NOT NULL,
    tokens double precision NOT NULL,
    last_allowed boolean NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT rate_buckets_pkey PRIMARY KEY (tenant_id, bucket)
);

-- The head of each tenant's receipt chain; emitters lock this row, so the chain never forks.
CREATE TABLE receipt_chain_heads (
    tenant_id text NOT NULL,
    last_seq bigint NOT NULL,
    last_hash text NOT NULL,
    CONSTRAINT receipt_chain_heads_pkey PRIMARY KEY (tenant_id)
);

-- Receipts and the per-tenant hash chain: bodies as canonical JSON text (exact bytes);
-- erasure replaces a body by its tombstone and keeps the hashes.
CREATE TABLE receipts (
    tenant_id text NOT NULL,
    receipt_id text NOT NULL,
    subject_id text NOT NULL,
    seq bigint NOT NULL,
    prev_hash text NOT NULL,
    receipt_hash text NOT NULL,
    mode text NOT NULL,
    parent_receipt_id text,
    context_hash text NOT NULL,
    body text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    tombstoned_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT receipts_status_check CHECK ((status = ANY (ARRAY['active'::text, 'tombstoned'::text]))),
    CONSTRAINT receipts_pkey PRIMARY KEY (tenant_id, receipt_id)
);
CREATE INDEX receipts_active_created ON receipts USING btree (tenant_id, created_at) WHERE (status = 'active'::text);
CREATE INDEX receipts_subject ON receipts USING btree (tenant_id, subject_id, receipt_id);
CREATE UNIQUE INDEX receipts_chain ON receipts USING btree (tenant_id, seq);

-- One resolution per (tenant, subject, session); POST /v1/resolutions upserts it.
CREATE TABLE resolutions (
    tenant_id text NOT NULL,
    id uuid NOT NULL,
    subject_id text NOT NULL,
    session_id text NOT NULL,
    status text NOT NULL,
    resolution_summary text,
    resolved_at timestamp with time zone,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT resolutions_status_check CHECK ((status = ANY (ARRAY['open'::text, 'resolved'::text, 'unresolved'::text]))),
    CONSTRAINT resolutions_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT resolutions_tenant_id_subject_id_session_id_key UNIQUE (tenant_id, subject_id, session_id)
);
CREATE INDEX resolutions_recent ON resolutions USING btree (tenant_id, subject_id, updated_at DESC, id DESC);

-- Per-session metadata documents.
CREATE TABLE session_metadata (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    session_id text NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT session_metadata_metadata_check CHECK ((jsonb_typeof(metadata) = 'object'::text)),
    CONSTRAINT session_metadata_pkey PRIMARY KEY (tenant_id, subject_id, session_id)
);

-- Working-memory snapshots of a session, never rewritten: `position` numbers them from 1 (the
-- compare-and-swap's last wall); `covers_through` is the last seq the summary stands for.
CREATE TABLE session_snapshots (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    session_id text NOT NULL,
    id uuid NOT NULL,
    "position" integer NOT NULL,
    prev_id uuid,
    summary text NOT NULL,
    pinned uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    covers_through bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT session_snapshots_check CHECK ((("position" = 1) = (prev_id IS NULL))),
    CONSTRAINT session_snapshots_position_check CHECK (("position" >= 1)),
    CONSTRAINT session_snapshots_pkey PRIMARY KEY (tenant_id, subject_id, id),
    CONSTRAINT session_snapshots_tenant_id_subject_id_session_id_position_key UNIQUE (tenant_id, subject_id, session_id, "position")
);
CREATE TRIGGER session_snapshots_append_only BEFORE UPDATE ON session_snapshots FOR EACH ROW EXECUTE FUNCTION mnemo_episodes_guard();
CREATE TRIGGER session_snapshots_delete_guard BEFORE DELETE ON session_snapshots FOR EACH ROW WHEN ((COALESCE(current_setting('mnemo.erasure'::text, true), ''::text) <> 'on'::text)) EXECUTE FUNCTION mnemo_episodes_guard();
CREATE TRIGGER session_snapshots_no_truncate BEFORE TRUNCATE ON session_snapshots FOR EACH STATEMENT EXECUTE FUNCTION mnemo_episodes_guard();

-- The last seq handed out per subject, incremented inside the ingest transaction, so a later
-- seq commits only after every earlier one: a compile cursor never skips an episode.
CREATE TABLE subject_counters (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    last_seq bigint NOT NULL,
    CONSTRAINT subject_counters_pkey PRIMARY KEY (tenant_id, subject_id)
);

-- The last health state seen per subject, so a transition is announced once.
CREATE TABLE subject_health_cache (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    last_state text NOT NULL,
    last_score integer NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT subject_health_cache_pkey PRIMARY KEY (tenant_id, subject_id)
);

-- Per-subject document frequency of each lexeme; `common_since` is when the count reached
-- the common-term threshold (such terms are left out of the subject's full-text queries).
CREATE TABLE subject_terms (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    source text NOT NULL,
    lexeme text NOT NULL,
    df bigint NOT NULL,
    common_since timestamp with time zone,
    CONSTRAINT subject_terms_df_check CHECK ((df > 0)),
    CONSTRAINT subject_terms_source_check CHECK ((source = ANY (ARRAY['memory'::text, 'episode'::text]))),
    CONSTRAINT subject_terms_pkey PRIMARY KEY (tenant_id, subject_id, source, lexeme)
);

-- A version per subject, bumped by any change to its memories or supersessions (the
-- in-process caches of small subjects and lexical indexes key on it).
CREATE TABLE subject_versions (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    version bigint NOT NULL,
    CONSTRAINT subject_versions_pkey PRIMARY KEY (tenant_id, subject_id)
);

-- One row per supersession decision (never memory text or claim values).
CREATE TABLE supersession_records (
    tenant_id text NOT NULL,
    subject_id text NOT NULL,
    id uuid NOT NULL,
    superseded_memory_id uuid NOT NULL,
    superseding_memory_id uuid,
    rule text NOT NULL,
    claim_key text,
    score double precision,
    threshold double precision,
    compile_job_id text,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT supersession_records_pkey PRIMARY KEY (tenant_id, subject_id, id)
);
CREATE INDEX supersession_superseded ON supersession_records USING btree (tenant_id, superseded_memory_id);
CREATE TRIGGER supersessions_deleted_version AFTER DELETE ON supersession_records REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER supersessions_inserted_version AFTER INSERT ON supersession_records REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER supersessions_updated_version AFTER UPDATE ON supersession_records REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();

-- Per-tenant configuration document (claim_keys, receipts, ...); edited by the admin API.
CREATE TABLE tenant_configs (
    tenant_id text NOT NULL,
    config jsonb DEFAULT '{}'::jsonb NOT NULL,
    version integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tenant_configs_pkey PRIMARY KEY (tenant_id)
);
CREATE TRIGGER tenant_configs_version AFTER INSERT OR DELETE OR UPDATE ON tenant_configs FOR EACH ROW EXECUTE FUNCTION mnemo_tenant_settings_changed();

-- A version per tenant, bumped by any change to its configuration or policy.
CREATE TABLE tenant_versions (
    tenant_id text NOT NULL,
    version bigint NOT NULL,
    CONSTRAINT tenant_versions_pkey PRIMARY KEY (tenant_id)
);

-- Known tenants.
CREATE TABLE tenants (
    tenant_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tenants_pkey PRIMARY KEY (tenant_id)
);

-- The webhook outbox: an event is inserted in the transaction of the change it announces, so
-- it exists if and only if the change committed; dispatchers claim due rows.
CREATE TABLE webhook_events (
    tenant_id text NOT NULL,
    id text NOT NULL,
    subject_id text,
    event text NOT NULL,
    payload jsonb,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_attempt_at timestamp with time zone,
    last_error text,
    http_status integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    CONSTRAINT webhook_events_payload_check CHECK (((payload IS NULL) OR (jsonb_typeof(payload) = 'object'::text))),
    CONSTRAINT webhook_events_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'dead_letter'::text]))),
    CONSTRAINT webhook_events_pkey PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webhook_events_by_id ON webhook_events USING btree (id);
CREATE INDEX webhook_events_due ON webhook_events USING btree (status, next_attempt_at);
CREATE INDEX webhook_events_subject ON webhook_events USING btree (tenant_id, subject_id) WHERE (subject_id IS NOT NULL);

-- Row-level security: every table with a tenant_id admits mnemo_app to the rows of the tenant
-- the transaction names, and nothing else (later migrations call mnemo_apply_tenant_policies()).
DO $$
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
        EXECUTE format(
            'CREATE POLICY mnemo_tenant ON %I TO mnemo_app '
            'USING (tenant_id = current_setting(''mnemo.tenant'', true)) '
            'WITH CHECK (tenant_id = current_setting(''mnemo.tenant'', true))', t);
    END LOOP;
END $$;
GRANT USAGE ON SEQUENCE tenant_version_seq, subject_version_seq TO mnemo_app;

-- The migration bookkeeping is readable (for /ops-style checks), never writable, by the app.
DO $$
BEGIN
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        GRANT SELECT ON _sqlx_migrations TO mnemo_app;
    END IF;
END $$;
