//! Queries on the append-only `episodes` table.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::types::Json;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::lexemes::Tsvector;
use crate::model::episode::Stamp;
use crate::model::episode::{Episode, NewEpisode};

/// An episode row with one more column (`seq` or the idempotency key), flat as `query_as!`
/// fills it (it fills no nested struct).
#[derive(Debug)]
pub(crate) struct EpisodeWith<T> {
    pub id: Uuid,
    pub subject_id: String,
    pub source: String,
    pub kind: String,
    pub payload: Value,
    pub metadata: Value,
    pub provenance: Value,
    pub session_id: Option<String>,
    pub occurred_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub extra: T,
}

impl<T> EpisodeWith<T> {
    /// The episode and the extra column.
    pub(crate) fn split(self) -> (Episode, T) {
        let e = Episode {
            id: self.id,
            subject_id: self.subject_id,
            source: self.source,
            kind: self.kind,
            payload: self.payload,
            metadata: self.metadata,
            provenance: self.provenance,
            session_id: self.session_id,
            occurred_at: self.occurred_at,
            created_at: self.created_at,
        };
        (e, self.extra)
    }
}

/// Inserts an episode with the subject's next seq in one statement that also applies the
/// tenant, so it needs no transaction around it (the counter row stays locked until the
/// statement commits, which keeps seqs in commit order). None when the idempotency key is
/// already used for the subject (the consumed seq is a harmless gap): see [`by_keys`].
///
/// The statement starts with [`crate::db::scope::TENANT_CTE`], spelled out (the query macros take literals only).
/// Like every insert here it stores the row's lexemes itself: `lexemes` when the server computed
/// them (`crate::lexemes`, the very `tsvector` Postgres would make), else
/// `mnemo_episode_lexemes` (the expression `search_tsv` was once generated from: migration
/// 0038), which Postgres then prepares once with the statement's plan instead of once per
/// statement. The lexemes are bound `as _`: the query macros know no Rust type for `tsvector`,
/// and [`Tsvector`] encodes its binary form.
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    id: Uuid,
    e: &NewEpisode,
    lexemes: Option<&Tsvector>,
) -> sqlx::Result<Option<Stamp>> {
    let Some(key) = e.effective_key() else {
        // No key, no conflict to look for: the plain insert skips the speculative insertion
        // `ON CONFLICT` costs every row (see `insert_batch`).
        return sqlx::query_as!(
            Stamp,
            "WITH mnemo_tenant AS MATERIALIZED (SELECT set_config('mnemo.tenant', $1, true) AS tenant), \
             c AS (INSERT INTO subject_counters (tenant_id, subject_id, last_seq) SELECT $1, $2, 1 FROM mnemo_tenant \
               ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = subject_counters.last_seq + 1 \
               RETURNING last_seq) \
             INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, \
             provenance, occurred_at, seq, search_tsv) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, COALESCE($10, now()), c.last_seq, \
             COALESCE($11::tsvector, mnemo_episode_lexemes($7)) FROM c \
             RETURNING id, occurred_at, created_at",
            tenant,
            e.subject_id,
            id,
            e.session_id,
            e.source,
            e.kind,
            Json(&e.payload) as _,
            Json(&e.metadata) as _,
            Json(&e.provenance) as _,
            e.occurred_at,
            lexemes as _
        )
        .fetch_one(&mut *conn)
        .await
        .map(Some);
    };
    sqlx::query_as!(
        Stamp,
        "WITH mnemo_tenant AS MATERIALIZED (SELECT set_config('mnemo.tenant', $1, true) AS tenant), \
         c AS (INSERT INTO subject_counters (tenant_id, subject_id, last_seq) SELECT $1, $2, 1 FROM mnemo_tenant \
           ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = subject_counters.last_seq + 1 \
           RETURNING last_seq) \
         INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, \
         provenance, idempotency_key, occurred_at, seq, search_tsv) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, now()), c.last_seq, \
         COALESCE($12::tsvector, mnemo_episode_lexemes($7)) FROM c \
         ON CONFLICT (tenant_id, subject_id, md5(idempotency_key)) WHERE idempotency_key IS NOT NULL DO NOTHING \
         RETURNING id, occurred_at, created_at",
        tenant,
        e.subject_id,
        id,
        e.session_id,
        e.source,
        e.kind,
        Json(&e.payload) as _,
        Json(&e.metadata) as _,
        Json(&e.provenance) as _,
        key,
        e.occurred_at,
        lexemes as _
    )
    .fetch_optional(&mut *conn)
    .await
}

/// Where a batch's rows take their seqs: each distinct subject once with how many rows it has
/// (in byte order of the subject id: the order its counter rows are locked in, the same for
/// every batch, so concurrent batches cannot deadlock), and for each row its subject's count
/// and its own place among them (1-based, input order). A row's seq is then its subject's new
/// last seq minus the count plus its place.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SeqPlaces<'a> {
    pub subjects: Vec<&'a str>,
    pub counts: Vec<i64>,
    pub row_counts: Vec<i64>,
    pub row_places: Vec<i64>,
}

impl<'a> SeqPlaces<'a> {
    pub(crate) fn of(subject_ids: &[&'a str]) -> Self {
        let mut counts: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
        let row_places = subject_ids
            .iter()
            .map(|s| {
                let n = counts.entry(s).or_insert(0);
                *n += 1;
                *n
            })
            .collect();
        let row_counts = subject_ids.iter().map(|s| counts[s]).collect();
        SeqPlaces {
            subjects: counts.keys().copied().collect(),
            counts: counts.into_values().collect(),
            row_counts,
            row_places,
        }
    }
}

/// Inserts a batch in one statement that also applies the tenant: each subject's seqs are
/// reserved at once, in a fixed subject order (see [`SeqPlaces`]), and given out in input order.
/// Returns the new rows in input order; an input whose idempotency key is already used (by a
/// stored row or an earlier input of the batch) has none (see [`by_keys`]). `lexemes` has each
/// episode's lexemes where the server computed them (see [`insert`]).
///
/// The places are worked out here rather than by the statement (a `GROUP BY` and a window over
/// the rows): 4-8% less time in Postgres for a statement of eight episodes (pgbench, one client).
pub async fn insert_batch(
    conn: &mut PgConnection,
    tenant: &str,
    ids: &[Uuid],
    episodes: &[NewEpisode],
    lexemes: &[Option<Tsvector>],
) -> sqlx::Result<Vec<Stamp>> {
    let subjects: Vec<&str> = episodes.iter().map(|e| e.subject_id.as_str()).collect();
    let places = SeqPlaces::of(&subjects);
    let sessions: Vec<Option<&str>> = episodes.iter().map(|e| e.session_id.as_deref()).collect();
    let sources: Vec<&str> = episodes.iter().map(|e| e.source.as_str()).collect();
    let kinds: Vec<&str> = episodes.iter().map(|e| e.kind.as_str()).collect();
    let payloads: Vec<Json<&Map<String, Value>>> = episodes.iter().map(|e| Json(&e.payload)).collect();
    let metadata: Vec<Json<&Map<String, Value>>> = episodes.iter().map(|e| Json(&e.metadata)).collect();
    let provenance: Vec<Json<&Map<String, Value>>> = episodes.iter().map(|e| Json(&e.provenance)).collect();
    let keys: Vec<Option<String>> = episodes.iter().map(NewEpisode::effective_key).collect();
    let occurred: Vec<Option<DateTime<Utc>>> = episodes.iter().map(|e| e.occurred_at).collect();
    if keys.iter().all(Option::is_none) {
        // Without keys no row can conflict, and `ON CONFLICT` would still make every row a
        // speculative insertion (an extra WAL record and buffer lock each): about 8% of an
        // eight-row statement (pgbench, one client: 0.80-0.89 ms against 0.87-0.95).
        return sqlx::query_as!(
            Stamp,
            "WITH mnemo_tenant AS MATERIALIZED (SELECT set_config('mnemo.tenant', $1, true) AS tenant), \
             c AS (INSERT INTO subject_counters AS sc (tenant_id, subject_id, last_seq) \
               SELECT $1, s.subject_id, s.n FROM UNNEST($11::text[], $12::int8[]) WITH ORDINALITY AS s(subject_id, n, o), \
               mnemo_tenant ORDER BY s.o \
               ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = sc.last_seq + EXCLUDED.last_seq \
               RETURNING sc.subject_id, sc.last_seq) \
             INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, \
             provenance, occurred_at, seq, search_tsv) \
             SELECT $1, u.subject_id, u.id, u.session_id, u.source, u.kind, u.payload, u.metadata, u.provenance, \
             COALESCE(u.occurred_at, now()), c.last_seq - u.n + u.place, \
             COALESCE(u.lexemes, mnemo_episode_lexemes(u.payload)) \
             FROM UNNEST($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[], \
               $9::jsonb[], $10::timestamptz[], $13::int8[], $14::int8[], $15::tsvector[]) WITH ORDINALITY \
               AS u(id, subject_id, session_id, source, kind, payload, metadata, provenance, occurred_at, n, place, \
               lexemes, ord) \
             JOIN c ON c.subject_id = u.subject_id ORDER BY u.ord \
             RETURNING id, occurred_at, created_at",
            tenant,
            ids,
            &subjects as &[&str],
            &sessions as _,
            &sources as &[&str],
            &kinds as &[&str],
            &payloads as _,
            &metadata as _,
            &provenance as _,
            &occurred as _,
            &places.subjects as &[&str],
            &places.counts,
            &places.row_counts,
            &places.row_places,
            lexemes as _
        )
        .fetch_all(&mut *conn)
        .await;
    }
    sqlx::query_as!(
        Stamp,
        "WITH mnemo_tenant AS MATERIALIZED (SELECT set_config('mnemo.tenant', $1, true) AS tenant), \
         c AS (INSERT INTO subject_counters AS sc (tenant_id, subject_id, last_seq) \
           SELECT $1, s.subject_id, s.n FROM UNNEST($12::text[], $13::int8[]) WITH ORDINALITY AS s(subject_id, n, o), \
           mnemo_tenant ORDER BY s.o \
           ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = sc.last_seq + EXCLUDED.last_seq \
           RETURNING sc.subject_id, sc.last_seq) \
         INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, \
         provenance, idempotency_key, occurred_at, seq, search_tsv) \
         SELECT $1, u.subject_id, u.id, u.session_id, u.source, u.kind, u.payload, u.metadata, u.provenance, \
         u.key, COALESCE(u.occurred_at, now()), c.last_seq - u.n + u.place, \
         COALESCE(u.lexemes, mnemo_episode_lexemes(u.payload)) \
         FROM UNNEST($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[], \
           $9::jsonb[], $10::text[], $11::timestamptz[], $14::int8[], $15::int8[], $16::tsvector[]) WITH ORDINALITY \
           AS u(id, subject_id, session_id, source, kind, payload, metadata, provenance, key, occurred_at, n, place, \
           lexemes, ord) \
         JOIN c ON c.subject_id = u.subject_id ORDER BY u.ord \
         ON CONFLICT (tenant_id, subject_id, md5(idempotency_key)) WHERE idempotency_key IS NOT NULL DO NOTHING \
         RETURNING id, occurred_at, created_at",
        tenant,
        ids,
        &subjects as &[&str],
        &sessions as _,
        &sources as &[&str],
        &kinds as &[&str],
        &payloads as _,
        &metadata as _,
        &provenance as _,
        &keys as _,
        &occurred as _,
        &places.subjects as &[&str],
        &places.counts,
        &places.row_counts,
        &places.row_places,
        lexemes as _
    )
    .fetch_all(&mut *conn)
    .await
}

/// `mnemo_episode_lexemes(payload)::text` of each payload, in order: what Postgres stores for
/// them (the server's own rules are checked against it: `crate::lexemes::Lexer`).
pub async fn lexemes_of(pool: &sqlx::PgPool, payloads: &[Value]) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT mnemo_episode_lexemes(u.p)::text AS "lexemes!" FROM UNNEST($1::jsonb[]) WITH ORDINALITY AS u(p, o) ORDER BY u.o"#,
        payloads
    )
    .fetch_all(pool)
    .await
}

/// A stored episode with the idempotency key it was recorded under.
#[derive(Debug)]
pub struct KeyedEpisode {
    pub episode: Episode,
    pub idempotency_key: String,
}

/// The stored episodes recorded under these (subject, idempotency key) pairs.
pub async fn by_keys(
    conn: &mut PgConnection,
    tenant: &str,
    subjects: &[&str],
    keys: &[&str],
) -> sqlx::Result<Vec<KeyedEpisode>> {
    let rows = sqlx::query_as!(
        EpisodeWith::<String>,
        r#"SELECT id, subject_id, source, type AS kind, payload, metadata, provenance, session_id, occurred_at,
           created_at, idempotency_key AS "extra!"
           FROM UNNEST($2::text[], $3::text[]) AS k(k_subject, k_key)
           JOIN episodes e ON e.tenant_id = $1 AND e.subject_id = k.k_subject
           AND md5(e.idempotency_key) = md5(k.k_key) AND e.idempotency_key = k.k_key"#,
        tenant,
        subjects as &[&str],
        keys as &[&str]
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let (episode, idempotency_key) = r.split();
            KeyedEpisode { episode, idempotency_key }
        })
        .collect())
}

/// Which episodes a timeline page holds: `occurred_at` within `since..=until`, `type` among
/// `kinds` (each None = no limit).
#[derive(Debug, Clone, Default)]
pub struct EpisodeFilter {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub kinds: Option<Vec<String>>,
}

/// One page of a subject's episodes in (occurred_at, created_at, id) order, plus whether more exist.
#[allow(clippy::too_many_arguments)]
pub async fn page(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
    offset: i64,
    newest_first: bool,
    filter: &EpisodeFilter,
) -> sqlx::Result<(Vec<Episode>, bool)> {
    // Two statements, one per direction (an ORDER BY direction cannot be a parameter).
    let mut rows: Vec<Episode> = if newest_first {
        sqlx::query_as!(
            Episode,
            "SELECT id, subject_id, source, type AS kind, payload, metadata, provenance, session_id, occurred_at, \
             created_at FROM episodes WHERE tenant_id = $1 AND subject_id = $2 \
             AND ($5::timestamptz IS NULL OR occurred_at >= $5) AND ($6::timestamptz IS NULL OR occurred_at <= $6) \
             AND ($7::text[] IS NULL OR type = ANY($7)) \
             ORDER BY occurred_at DESC, created_at DESC, id DESC LIMIT $3 OFFSET $4",
            tenant,
            subject_id,
            limit + 1,
            offset,
            filter.since,
            filter.until,
            filter.kinds.as_deref()
        )
        .fetch_all(&mut *conn)
        .await?
    } else {
        sqlx::query_as!(
            Episode,
            "SELECT id, subject_id, source, type AS kind, payload, metadata, provenance, session_id, occurred_at, \
             created_at FROM episodes WHERE tenant_id = $1 AND subject_id = $2 \
             AND ($5::timestamptz IS NULL OR occurred_at >= $5) AND ($6::timestamptz IS NULL OR occurred_at <= $6) \
             AND ($7::text[] IS NULL OR type = ANY($7)) \
             ORDER BY occurred_at ASC, created_at ASC, id ASC LIMIT $3 OFFSET $4",
            tenant,
            subject_id,
            limit + 1,
            offset,
            filter.since,
            filter.until,
            filter.kinds.as_deref()
        )
        .fetch_all(&mut *conn)
        .await?
    };
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    if newest_first {
        rows.reverse();
    }
    Ok((rows, has_more))
}

#[cfg(test)]
mod tests {
    use super::SeqPlaces;

    #[test]
    fn each_subject_reserves_its_rows_once_in_byte_order_and_rows_keep_input_order() {
        let p = SeqPlaces::of(&["b", "a", "b", "é", "B", "b"]);
        assert_eq!(p.subjects, ["B", "a", "b", "é"]);
        assert_eq!(p.counts, [1, 1, 3, 1]);
        assert_eq!(p.row_counts, [3, 1, 3, 1, 1, 3]);
        assert_eq!(p.row_places, [1, 1, 2, 1, 1, 3]);
        // Seqs from a subject's new last seq L: L - count + place, so "b" gets L-2, L-1, L.
        assert_eq!(SeqPlaces::of(&[]).subjects, Vec::<&str>::new());
    }
}
