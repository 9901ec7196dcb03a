-- mnemo schema, part 61: passages for the episodes compiled before part 60. A subject's
-- passages_through is the highest seq whose episodes may still lack their passages (NULL: none
-- may); the passage worker (services::passages) walks it down to nothing, writing the missing
-- ranges, which it then embeds like compile's. Compile leaves it alone: it writes the passages of
-- every episode it reads.
ALTER TABLE compile_cursors ADD COLUMN passages_through bigint;
UPDATE compile_cursors SET passages_through = compiled_seq WHERE compiled_seq > 0;
CREATE INDEX compile_cursors_passages_through ON compile_cursors (tenant_id, subject_id)
    WHERE passages_through IS NOT NULL;
