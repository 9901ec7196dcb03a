//! Build steps: `sqlx::migrate!` embeds the migrations at compile time, and the SQL function
//! files (`sql/functions/*.sql`) are embedded through a generated list; rebuild when either
//! folder changes.
#![allow(clippy::expect_used)] // a build script reports failure by panicking

use std::fmt::Write as _;

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=sql/functions");
    // The checkout being built (read when the script runs, not when it was compiled: a target
    // directory shared by two checkouts reuses a compiled script).
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let dir = std::path::Path::new(&root).join("sql/functions");
    // A dependency-only build (cargo chef's skeleton in the Dockerfile) has no sql/ folder: it
    // gets an empty list, and the real build that follows embeds the files.
    let mut files: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.expect("sql/functions entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            .collect(),
        Err(_) => {
            println!("cargo:warning=sql/functions/ not found: no SQL function files embedded");
            Vec::new()
        }
    };
    files.sort();
    let mut out = String::from("&[\n");
    for path in &files {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name");
        // Named from the crate's own root when it compiles, so the list stays right for a
        // checkout whose script output is reused from another one (same files, other path).
        let file = format!("/sql/functions/{name}.sql");
        writeln!(out, "    ({name:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {file:?}))),").expect("write");
    }
    out.push_str("]\n");
    let target = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("sql_functions.rs");
    std::fs::write(target, out).expect("write sql_functions.rs");
}
