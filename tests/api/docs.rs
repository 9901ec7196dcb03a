//! The generated parts of the documentation match what they are generated from, so they cannot
//! drift: `docs/configuration.md` holds `mnemo serve --help` (and a sentence for every variable it
//! lists), `docs/api.md` the operations of `openapi.json`. With `MNEMO_UPDATE_DOCS=1` (what
//! `scripts/docs-regen` sets) the tests rewrite the blocks instead of failing.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

const END: &str = "<!-- end generated -->";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Replaces the text between the line `<!-- generated: {what} ... -->` and [`END`] with `body`.
fn splice(doc: &str, what: &str, body: &str) -> String {
    let open = format!("<!-- generated: {what}");
    let start = doc.find(&open).unwrap_or_else(|| panic!("no `{open}` marker"));
    let start = start + doc[start..].find('\n').unwrap() + 1;
    let end = start + doc[start..].find(END).unwrap_or_else(|| panic!("no `{END}` after `{open}`"));
    format!("{}{body}{}", &doc[..start], &doc[end..])
}

/// Checks (or, under `MNEMO_UPDATE_DOCS`, rewrites) one generated block of a doc.
fn check_block(file: &str, what: &str, body: &str) {
    let path = root().join(file);
    let doc = std::fs::read_to_string(&path).unwrap();
    let want = splice(&doc, what, body);
    if std::env::var_os("MNEMO_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    assert!(doc == want, "{file} is out of date with {what}: run scripts/docs-regen and commit the result");
}

/// `mnemo serve --help` as the binary prints it, without any MNEMO_* variable of this process
/// (clap shows the current value of a set variable).
fn serve_help() -> String {
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_mnemo")).args(["serve", "--help"]).env_clear().output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn configuration_doc_is_serve_help_and_explains_every_variable() {
    let help = serve_help();
    check_block("docs/configuration.md", "mnemo serve --help", &format!("```text\n{}\n```\n", help.trim_end()));
    // Outside the generated block, the settings table has a row for every variable.
    let doc = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let prose = &doc[..doc.find("<!-- generated: mnemo serve --help").unwrap()];
    let vars: std::collections::BTreeSet<&str> = help
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("MNEMO_") && w.len() > 6)
        .collect();
    assert!(vars.len() > 40, "{vars:?}");
    let missing: Vec<&&str> = vars.iter().filter(|v| !prose.contains(&format!("`{v}`"))).collect();
    assert!(missing.is_empty(), "docs/configuration.md does not explain {missing:?} (add them to its table)");
}

#[test]
fn api_doc_lists_every_operation_of_the_openapi_document() {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("openapi.json")).unwrap()).unwrap();
    let mut by_tag: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let tag = op["tags"][0].as_str().unwrap_or("other").to_string();
            let summary = op["summary"].as_str().unwrap_or_default().replace('|', "\\|");
            by_tag.entry(tag).or_default().push(format!("| `{}` | `{path}` | {summary} |", method.to_uppercase()));
        }
    }
    let mut body = String::new();
    for (tag, rows) in by_tag {
        body.push_str(&format!("\n### {tag}\n\n| method | path | what it does |\n|---|---|---|\n"));
        for r in rows {
            body.push_str(&r);
            body.push('\n');
        }
    }
    body.push('\n');
    check_block("docs/api.md", "openapi.json operations", &body);
}
