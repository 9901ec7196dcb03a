//! Token buckets in Postgres, shared by every mnemo process.

use sqlx::PgConnection;

/// Takes one token from the tenant's bucket if it has one; returns (tokens left, allowed).
///
/// The bucket holds at most `capacity` tokens and refills at `per_sec`, lazily: the refill is
/// computed from the time of the last take. The upsert is atomic, so concurrent requests of
/// any number of processes serialise on the row. `now()` is the transaction's start, so a
/// transaction that waited for the row lock never counts negative time.
pub async fn take(
    conn: &mut PgConnection,
    tenant: &str,
    bucket: &str,
    capacity: f64,
    per_sec: f64,
) -> sqlx::Result<(f64, bool)> {
    // Only the conflicting row's own (locked, latest) values are read in SET: a subquery would
    // read the statement's snapshot and let concurrent takes double-spend a token.
    // The refill, LEAST($3, r.tokens + elapsed seconds * $4), is spelled out three times.
    let r = sqlx::query!(
        "INSERT INTO rate_buckets AS r (tenant_id, bucket, tokens, last_allowed, updated_at) \
         VALUES ($1, $2, $3::float8 - 1, true, now()) \
         ON CONFLICT (tenant_id, bucket) DO UPDATE SET \
             tokens = CASE WHEN LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - r.updated_at)::float8) * $4::float8) >= 1 \
                 THEN LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - r.updated_at)::float8) * $4::float8) - 1 \
                 ELSE LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - r.updated_at)::float8) * $4::float8) END, \
             last_allowed = LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - r.updated_at)::float8) * $4::float8) >= 1, \
             updated_at = GREATEST(r.updated_at, now()) \
         RETURNING tokens, last_allowed",
        tenant,
        bucket,
        capacity,
        per_sec
    )
    .fetch_one(conn)
    .await?;
    Ok((r.tokens, r.last_allowed))
}
