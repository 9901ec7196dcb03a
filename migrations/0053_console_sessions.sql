-- Console sessions are held server-side, so signing out ends one for every server (issue 49).
--
-- A console cookie is signed, and was valid until its expiry: signing out only cleared the
-- browser's copy, so a copied cookie kept working for the session's whole life. Now sign-in
-- stores a row per session and every console request checks it; sign-out deletes it. Every
-- mnemo process on the database sees the same rows. The row keeps the sha256 of the session's
-- nonce, never the cookie. A session belongs to the tenant of the key that signed in; the
-- operator key's and open mode's sessions to the tenant `default`.
CREATE TABLE console_sessions (
    tenant_id   text NOT NULL,
    session_id  bytea NOT NULL,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id)
);
SELECT mnemo_apply_tenant_policies();
