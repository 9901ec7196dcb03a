-- mnemo schema, part 18: what a compile job cost when the LLM compiler ran it (tokens sent to
-- and received from the model, summed over the job's batches; 0 for the heuristic compiler).

ALTER TABLE compile_jobs
    ADD COLUMN llm_tokens_in  bigint NOT NULL DEFAULT 0,
    ADD COLUMN llm_tokens_out bigint NOT NULL DEFAULT 0;
