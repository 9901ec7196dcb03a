-- mnemo schema, part 13: memory vectors stay in the row.
--
-- A memory row with a 384-dim vector is ~2.2 kB, over the 2 kB TOAST threshold, and `vector`
-- columns default to EXTERNAL storage, so Postgres moved every vector to the TOAST table: each
-- exact cosine in a context lane then cost a TOAST lookup (about 16 us a row warm; 160 ms for a
-- 10k-memory subject with MiniLM). MAIN keeps the vector inline and moves the text out first.
-- Rows written before this keep their layout until rewritten (re-embedding rewrites them).
ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN;
