//! Build steps: `sqlx::migrate!` embeds the migrations at compile time, and the SQL function
//! files (`sql/functions/*.sql`) are embedded through a generated list; rebuild when either
//! folder changes.
#![allow(clippy::expect_used)] // a build script reports failure by panicking

use std::fmt::Write as _;

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=sql/functions");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/functions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("sql/functions")
        .map(|e| e.expect("sql/functions entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    let mut out = String::from("&[\n");
    for path in &files {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name");
        writeln!(out, "    ({name:?}, include_str!({:?})),", path.display().to_string()).expect("write");
    }
    out.push_str("]\n");
    let target = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("sql_functions.rs");
    std::fs::write(target, out).expect("write sql_functions.rs");
}
