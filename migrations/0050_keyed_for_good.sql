-- A database that has ever held an API key never falls back to open mode (issue 49).
--
-- Until now "are there keys?" meant "is any key live?", so revoking the last stored key of a
-- server without MNEMO_API_KEY made every keyless request an admin of every tenant again (and an
-- open-mode console cookie valid again, and a server on 0.0.0.0 open to the network). From now
-- on it means "has this database ever stored a key": any key row, live or revoked. Revocation
-- keeps the row (it sets revoked_at) and nothing in mnemo deletes key rows, so once true the
-- answer stays true. Going back to open mode is an operator's decision made in the database,
-- as its owner: delete the rows of api_keys.
CREATE OR REPLACE FUNCTION mnemo_keys_exist() RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM api_keys);
END
$$;
