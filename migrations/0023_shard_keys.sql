-- mnemo schema, part 23: every unique key of tenant data starts with tenant_id (the sharding
-- rules of docs/sharding.md, kept by tests/sharding.rs).
--
-- Webhook event ids are ULIDs: unique per tenant through the primary key (tenant_id, id), which
-- a distributed table can enforce; a global unique index on id alone cannot be (Citus refuses
-- a unique index without the distribution column). The operator's lookup by id alone keeps a
-- plain index.
DROP INDEX webhook_events_id;
CREATE INDEX webhook_events_by_id ON webhook_events (id);
