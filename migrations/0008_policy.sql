-- mnemo schema, part 8: policy bundles (content-addressed, immutable) and each tenant's
-- active bundle. The stored text is exactly what the operator uploaded; the hash is over the
-- bundle's canonical JSON, so replays can find the bundle a receipt was assembled under.
CREATE TABLE policy_bundles (
    tenant_id    text NOT NULL,
    bundle_hash  text NOT NULL,
    content      text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, bundle_hash)
);

CREATE TABLE policy_active (
    tenant_id     text PRIMARY KEY,
    bundle_hash   text NOT NULL,
    activated_at  timestamptz NOT NULL DEFAULT now()
);

SELECT mnemo_apply_tenant_policies();
