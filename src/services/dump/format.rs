//! The lines of a mnemo dump (pure): a manifest, one line per row, a trailer with the checksum.
//!
//! ```text
//! {"format":"mnemo-dump","format_version":1,"tenant_id":"acme","subject_id":null,"exported_at":"…","tables":{"episodes":3,…}}
//! {"table":"episodes","row":{…}}
//! …
//! {"end":true,"rows":42,"sha256":"<hex of SHA-256 over every byte before this line>"}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` of the manifest.
pub const FORMAT: &str = "mnemo-dump";
/// The only version this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// The first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub format_version: u64,
    pub tenant_id: String,
    /// None: the whole tenant.
    pub subject_id: Option<String>,
    pub exported_at: String,
    /// Rows per table, in file order.
    pub tables: BTreeMap<String, u64>,
}

/// The last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trailer {
    pub end: bool,
    pub rows: u64,
    pub sha256: String,
}

/// A row line, as read.
#[derive(Debug)]
pub struct RowLine {
    pub table: String,
    pub row: serde_json::Map<String, Value>,
}

/// What one line of a dump is.
#[derive(Debug)]
pub enum Line {
    Row(RowLine),
    Trailer(Trailer),
}

/// A row line's text: the row is Postgres' `to_jsonb` text, written as it came.
pub fn row_line(table: &str, row_json: &str) -> String {
    format!("{{\"table\":{},\"row\":{row_json}}}", Value::String(table.to_string()))
}

/// Reads the manifest (line 1), refusing other formats and versions.
pub fn read_manifest(line: &str) -> Result<Manifest, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("line 1: not JSON ({e})"))?;
    if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(format!("line 1: field format: not a mnemo dump (expected \"{FORMAT}\")"));
    }
    match v.get("format_version") {
        Some(n) if n.as_u64() == Some(FORMAT_VERSION) => {}
        other => {
            let got = other.map_or_else(|| "none".to_string(), Value::to_string);
            return Err(format!("line 1: field format_version: unsupported version {got} (expected {FORMAT_VERSION})"));
        }
    }
    serde_json::from_value(v).map_err(|e| format!("line 1: {e}"))
}

/// Reads a line after the manifest: a row or the trailer; `n` is its line number.
pub fn read_line(n: usize, line: &str) -> Result<Line, String> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| format!("line {n}: not JSON at column {} ({e}); truncated or corrupted?", e.column()))?;
    let Value::Object(mut obj) = v else {
        return Err(format!("line {n}: must be a JSON object"));
    };
    if obj.contains_key("end") {
        return serde_json::from_value(Value::Object(obj))
            .map(Line::Trailer)
            .map_err(|e| format!("line {n}: trailer: {e}"));
    }
    let table = match obj.remove("table") {
        Some(Value::String(t)) => t,
        _ => return Err(format!("line {n}: field table: must be a string")),
    };
    match obj.remove("row") {
        Some(Value::Object(row)) => Ok(Line::Row(RowLine { table, row })),
        _ => Err(format!("line {n}: field row: must be an object")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trips_and_versions_are_checked() {
        let m = Manifest {
            format: FORMAT.into(),
            format_version: 1,
            tenant_id: "acme".into(),
            subject_id: None,
            exported_at: "2026-01-01T00:00:00+00:00".into(),
            tables: BTreeMap::from([("episodes".to_string(), 3)]),
        };
        let line = serde_json::to_string(&m).unwrap();
        assert_eq!(read_manifest(&line).unwrap(), m);
        let v2 = line.replace("\"format_version\":1", "\"format_version\":2");
        assert!(read_manifest(&v2).unwrap_err().contains("field format_version: unsupported version 2"));
        assert!(read_manifest("{\"format_version\":\"1.0\"}").unwrap_err().contains("field format"));
    }

    #[test]
    fn lines_name_what_is_wrong() {
        let row = row_line("episodes", "{\"id\": \"x\", \"seq\": 1}");
        assert_eq!(row, "{\"table\":\"episodes\",\"row\":{\"id\": \"x\", \"seq\": 1}}");
        assert!(matches!(read_line(2, &row).unwrap(), Line::Row(r) if r.table == "episodes" && r.row["seq"] == 1));
        assert!(read_line(7, &row[..row.len() - 4]).unwrap_err().starts_with("line 7: not JSON"));
        assert!(read_line(3, "{\"table\":1,\"row\":{}}").unwrap_err().contains("field table"));
        let end = read_line(9, "{\"end\":true,\"rows\":7,\"sha256\":\"ab\"}").unwrap();
        assert!(matches!(end, Line::Trailer(t) if t.rows == 7));
    }
}
