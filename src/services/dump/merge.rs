//! `mnemo import --merge`: a subject dump added to a subject that already holds data, in the
//! same single transaction as any import (a refusal names its line and field; nothing stays).
//!
//! The rules, table by table:
//! - episodes are appended after the subject's last seq, in the dump's order; one whose
//!   idempotency key the subject already has is skipped (the existing episode stands for it:
//!   memories that cite it are pointed at the existing one);
//! - any other row whose `id` the tenant already uses (episodes, memories, supersession
//!   records, resolutions, snapshots) is refused, not remapped: rows cite each other by id
//!   (sources, supersessions, pins, receipts), so a conflict means the same data is being merged
//!   twice, or that the file is not what its owner thinks;
//! - sessions are not merged: a session id the subject already uses is refused (snapshots of
//!   the dump's sessions move with their episodes: `covers_through` and pins are rewritten);
//! - receipts are left out: a tenant's receipts form one hash chain (each names its position and
//!   its predecessor's hash), so the dump's receipts, which sit in another chain, would fork this
//!   one, and re-chaining them would change the hashes their signatures cover. They stay
//!   verifiable in the source and its dump;
//! - transaction time is the merge's: appended episodes' `created_at`, memories' `recorded_at`
//!   (and a `superseded_at` before it) and snapshots' `created_at` become the merge
//!   transaction's time, so "what did this subject's store hold at T" (bundles, receipts' replay)
//!   is unchanged for every T before the merge; valid time and `occurred_at` are kept;
//! - counters, the compile cursor, term statistics and the health cache are derived: the
//!   counter and cursor move past the appended episodes (compile resumes at the first the dump
//!   had not compiled), term counts are added for the appended rows, the cache is left as is.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{bail, Context};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::db;
use crate::db::dump::Table;

/// Tables whose dump rows a merge never writes (derived, or kept in their own chain).
const LEFT_OUT: &[&str] = &["subject_counters", "compile_cursors", "subject_terms", "subject_health_cache", "receipts"];

/// Tables whose rows carry an `id` that must be free in the tenant.
const WITH_IDS: &[&str] = &["episodes", "memories", "supersession_records", "resolutions", "session_snapshots"];

/// A merge in progress.
pub struct Merge {
    tenant: String,
    subject: String,
    /// The subject's last seq before the merge.
    base_seq: i64,
    next_seq: i64,
    /// The dump's compile cursor (its `compile_cursors` row comes before its episodes).
    dump_cursor: i64,
    /// Appended episodes: (seq in the dump, seq given), in order.
    seqs: Vec<(i64, i64)>,
    /// Appended episodes the dump had compiled.
    compiled: i64,
    /// Skipped episode id -> the existing episode with the same idempotency key.
    same_as: HashMap<String, String>,
    sessions: HashSet<String>,
    memories: Vec<Uuid>,
    /// The merge transaction's time, as rows write it.
    merged_at: DateTime<Utc>,
    /// Rows read but not written, per table.
    pub skipped: BTreeMap<String, u64>,
}

fn field<'a>(row: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    row.get(name).and_then(Value::as_str)
}

impl Merge {
    /// Starts merging into the subject: refused when compile has not caught up with it (the
    /// cursor could not move past the appended episodes without skipping those).
    pub async fn begin(conn: &mut PgConnection, tenant: &str, subject: &str) -> anyhow::Result<Merge> {
        db::compile::lock_subject(conn, tenant, subject).await?;
        let (last_seq, cursor) = db::dump::lock_seq_state(conn, tenant, subject).await?;
        if cursor < last_seq {
            bail!(
                "subject '{subject}' has {} episode(s) not yet compiled; compile it before merging into it",
                last_seq - cursor
            );
        }
        let sessions = db::dump::subject_sessions(conn, tenant, subject).await?.into_iter().collect();
        let merged_at = db::dump::transaction_time(conn).await?;
        Ok(Merge {
            tenant: tenant.into(),
            subject: subject.into(),
            base_seq: last_seq,
            next_seq: last_seq + 1,
            dump_cursor: 0,
            seqs: Vec::new(),
            compiled: 0,
            same_as: HashMap::new(),
            sessions,
            memories: Vec::new(),
            merged_at,
            skipped: BTreeMap::new(),
        })
    }

    fn stamp(&self) -> Value {
        Value::String(crate::model::time::isoformat(&self.merged_at))
    }

    fn skip(&mut self, table: &str) {
        *self.skipped.entry(table.to_string()).or_default() += 1;
    }

    /// The seq a dump seq maps to: the last appended episode at or before it (what a snapshot's
    /// `covers_through` means: every episode up to that one).
    fn map_seq(&self, dump_seq: i64) -> i64 {
        let i = self.seqs.partition_point(|(d, _)| *d <= dump_seq);
        if i == 0 {
            self.base_seq
        } else {
            self.seqs[i - 1].1
        }
    }

    /// Turns one batch of a table's rows (with their line numbers) into the rows to insert.
    pub async fn batch(
        &mut self,
        conn: &mut PgConnection,
        table: &Table,
        rows: Vec<(usize, Value)>,
    ) -> anyhow::Result<Vec<Value>> {
        if table.name == "compile_cursors" {
            for (_, row) in &rows {
                self.dump_cursor = row.get("compiled_seq").and_then(Value::as_i64).unwrap_or(0);
            }
        }
        if LEFT_OUT.contains(&table.name) {
            for _ in &rows {
                self.skip(table.name);
            }
            return Ok(Vec::new());
        }
        let mut rows: Vec<(usize, Map<String, Value>)> = rows
            .into_iter()
            .map(|(n, v)| match v {
                Value::Object(m) => Ok((n, m)),
                _ => bail!("line {n}: field row: must be an object"),
            })
            .collect::<anyhow::Result<_>>()?;
        if table.name == "episodes" {
            rows = self.drop_known_episodes(conn, rows).await?;
        }
        if table.name == "episode_embeddings" || table.name == "episode_passages" {
            let before = rows.len();
            rows.retain(|(_, r)| field(r, "episode_id").is_none_or(|id| !self.same_as.contains_key(id)));
            for _ in rows.len()..before {
                self.skip(table.name);
            }
        }
        if WITH_IDS.contains(&table.name) {
            self.refuse_taken_ids(conn, table, &rows).await?;
        }
        let mut out = Vec::with_capacity(rows.len());
        for (n, mut row) in rows {
            if let Some(session) = field(&row, "session_id") {
                if self.sessions.contains(session) {
                    bail!("line {n}: field row.session_id: session '{session}' already exists in subject '{}'; sessions are not merged", self.subject);
                }
            }
            match table.name {
                "episodes" => self.append_episode(n, &mut row)?,
                "memories" => self.rewrite_memory(n, &mut row)?,
                "session_snapshots" => {
                    let ct = row.get("covers_through").and_then(Value::as_i64);
                    let ct = ct.with_context(|| format!("line {n}: field row.covers_through: must be a seq"))?;
                    row.insert("covers_through".into(), Value::from(self.map_seq(ct)));
                    row.insert("created_at".into(), self.stamp());
                    if let Some(Value::Array(pinned)) = row.get_mut("pinned") {
                        self.point_at_existing(pinned);
                    }
                }
                _ => {}
            }
            out.push(Value::Object(row));
        }
        Ok(out)
    }

    /// Leaves out episodes whose idempotency key the subject already has.
    async fn drop_known_episodes(
        &mut self,
        conn: &mut PgConnection,
        rows: Vec<(usize, Map<String, Value>)>,
    ) -> anyhow::Result<Vec<(usize, Map<String, Value>)>> {
        let keys: Vec<String> =
            rows.iter().filter_map(|(_, r)| field(r, "idempotency_key")).map(str::to_string).collect();
        let known: HashMap<String, String> = if keys.is_empty() {
            HashMap::new()
        } else {
            db::dump::idempotency_hits(conn, &self.tenant, &self.subject, &keys).await?.into_iter().collect()
        };
        let mut kept = Vec::with_capacity(rows.len());
        for (n, row) in rows {
            match field(&row, "idempotency_key").and_then(|k| known.get(k)) {
                Some(existing) => {
                    let id = field(&row, "id").with_context(|| format!("line {n}: field row.id: missing"))?;
                    self.same_as.insert(id.to_string(), existing.clone());
                    self.skip("episodes");
                }
                None => kept.push((n, row)),
            }
        }
        Ok(kept)
    }

    async fn refuse_taken_ids(
        &self,
        conn: &mut PgConnection,
        table: &Table,
        rows: &[(usize, Map<String, Value>)],
    ) -> anyhow::Result<()> {
        let mut line_of = HashMap::new();
        for (n, row) in rows {
            let id = field(row, "id").with_context(|| format!("line {n}: field row.id: missing"))?;
            line_of.insert(id.to_string(), *n);
        }
        let ids: Vec<String> = line_of.keys().cloned().collect();
        let taken = db::dump::ids_taken(conn, table, &self.tenant, &ids).await?;
        if let Some(n) = taken.iter().filter_map(|id| line_of.get(id)).min() {
            bail!(
                "line {n}: field row.id: {} id already used in tenant '{}' (a merge never reuses or remaps ids)",
                table.name,
                self.tenant
            );
        }
        Ok(())
    }

    /// Episode ids of skipped episodes replaced by the existing episode's.
    fn point_at_existing(&self, ids: &mut [Value]) {
        for id in ids {
            if let Some(existing) = id.as_str().and_then(|s| self.same_as.get(s)) {
                *id = Value::String(existing.clone());
            }
        }
    }

    fn append_episode(&mut self, n: usize, row: &mut Map<String, Value>) -> anyhow::Result<()> {
        let dump_seq = row
            .get("seq")
            .and_then(Value::as_i64)
            .with_context(|| format!("line {n}: field row.seq: must be an integer"))?;
        if self.seqs.last().is_some_and(|(d, _)| *d >= dump_seq) {
            bail!("line {n}: field row.seq: episodes must come in seq order");
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.seqs.push((dump_seq, seq));
        if dump_seq <= self.dump_cursor {
            // Compiled episodes are a prefix of the dump's seqs, so they stay a prefix here.
            self.compiled += 1;
        }
        row.insert("seq".into(), Value::from(seq));
        row.insert("created_at".into(), self.stamp());
        Ok(())
    }

    fn rewrite_memory(&mut self, n: usize, row: &mut Map<String, Value>) -> anyhow::Result<()> {
        if let Some(Value::Array(sources)) = row.get_mut("source_episode_ids") {
            self.point_at_existing(sources);
        }
        // Compile orders a batch's memories by their episode's seq (`<seq:020>:<index:04>`).
        if let Some(tiebreak) = field(row, "order_tiebreak") {
            if let Some((seq, rest)) = tiebreak.split_once(':') {
                if let Ok(seq) = seq.parse::<i64>() {
                    let mapped = self.seqs.iter().find(|(d, _)| *d == seq).map_or(self.map_seq(seq), |(_, s)| *s);
                    row.insert("order_tiebreak".into(), Value::String(format!("{mapped:020}:{rest}")));
                }
            }
        }
        row.insert("recorded_at".into(), self.stamp());
        let superseded = field(row, "superseded_at").and_then(|t| DateTime::parse_from_rfc3339(t).ok());
        if superseded.is_some_and(|t| t < self.merged_at) {
            row.insert("superseded_at".into(), self.stamp());
        }
        let id = field(row, "id").and_then(|s| Uuid::parse_str(s).ok());
        self.memories.push(id.with_context(|| format!("line {n}: field row.id: must be a UUID"))?);
        Ok(())
    }

    /// After the last row: counter, cursor and term counts follow the appended rows.
    pub async fn finish(self, conn: &mut PgConnection) -> anyhow::Result<BTreeMap<String, u64>> {
        let last = self.next_seq - 1;
        if last > self.base_seq {
            db::dump::set_last_seq(conn, &self.tenant, &self.subject, last).await?;
        }
        db::compile::advance_cursor(conn, &self.tenant, &self.subject, self.base_seq + self.compiled).await?;
        db::terms::count_batch(conn, &self.tenant, &self.subject, &self.memories, self.base_seq, last).await?;
        Ok(self.skipped)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn merge(base: i64, seqs: Vec<(i64, i64)>) -> Merge {
        Merge {
            tenant: "t".into(),
            subject: "s".into(),
            base_seq: base,
            next_seq: base + 1 + seqs.len() as i64,
            dump_cursor: 0,
            seqs,
            compiled: 0,
            same_as: HashMap::new(),
            sessions: HashSet::new(),
            memories: Vec::new(),
            merged_at: Utc::now(),
            skipped: BTreeMap::new(),
        }
    }

    #[test]
    fn covered_seqs_map_to_the_last_appended_episode_at_or_before() {
        // Dump seqs 1, 2, 4 appended as 11, 12, 13 (dump seq 3 was a known idempotency key).
        let m = merge(10, vec![(1, 11), (2, 12), (4, 13)]);
        assert_eq!([m.map_seq(0), m.map_seq(1), m.map_seq(3), m.map_seq(4), m.map_seq(9)], [10, 11, 12, 13, 13]);
    }

    #[test]
    fn memories_follow_their_episodes() {
        let mut m = merge(10, vec![(1, 11), (2, 12)]);
        m.same_as.insert("e-old".into(), "e-existing".into());
        let id = Uuid::new_v4().to_string();
        let mut row = serde_json::json!({"id": id, "source_episode_ids": ["e-old", "e-new"],
                                         "order_tiebreak": "00000000000000000002:0001"});
        m.rewrite_memory(5, row.as_object_mut().unwrap()).unwrap();
        assert_eq!(row["source_episode_ids"], serde_json::json!(["e-existing", "e-new"]));
        assert_eq!(row["order_tiebreak"], "00000000000000000012:0001");
    }
}
