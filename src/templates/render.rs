//! The template text language: `{field}` inserts a value; `[ ... ]` is an optional part, kept
//! only when every field inside it has a value; `{{ }} [[ ]]` are literal braces and brackets.
//! Values are inserted once and never re-read as template text.

use std::collections::BTreeMap;

/// One parsed piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Field(String),
    /// Optional part (flat: optional parts do not nest).
    Optional(Vec<Piece>),
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Parses a template; errors name the problem (catalogue tests run every built-in through it).
pub fn parse(template: &str) -> Result<Vec<Piece>, String> {
    let mut top: Vec<Piece> = Vec::new();
    let mut group: Option<Vec<Piece>> = None;
    let mut text = String::new();
    let mut chars = template.chars().peekable();
    let flush = |text: &mut String, out: &mut Vec<Piece>| {
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(text)));
        }
    };
    while let Some(c) = chars.next() {
        let doubled = matches!(c, '{' | '}' | '[' | ']') && chars.peek() == Some(&c);
        if doubled {
            chars.next();
            text.push(c);
            continue;
        }
        match c {
            '{' => {
                let mut name = String::new();
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed || !valid_name(&name) {
                    return Err(format!("bad field reference {{{name}}}"));
                }
                let out = group.as_mut().unwrap_or(&mut top);
                flush(&mut text, out);
                out.push(Piece::Field(name));
            }
            '}' => return Err("unmatched '}'".into()),
            '[' if group.is_some() => return Err("optional parts do not nest".into()),
            '[' => {
                flush(&mut text, &mut top);
                group = Some(Vec::new());
            }
            ']' => {
                let mut inner = group.take().ok_or("unmatched ']'")?;
                flush(&mut text, &mut inner);
                top.push(Piece::Optional(inner));
            }
            _ => text.push(c),
        }
    }
    if group.is_some() {
        return Err("unclosed '['".into());
    }
    flush(&mut text, &mut top);
    Ok(top)
}

/// Every field a template refers to, and whether the reference is inside an optional part.
pub fn references(pieces: &[Piece]) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for p in pieces {
        match p {
            Piece::Field(f) => out.push((f.clone(), false)),
            Piece::Optional(inner) => out.extend(references(inner).into_iter().map(|(f, _)| (f, true))),
            Piece::Text(_) => {}
        }
    }
    out
}

/// Appends literal text; a '.' right after a value that already ends a sentence is dropped
/// ("Reason: it is faster." + "." stays one full stop).
fn push_text(out: &mut String, text: &str) {
    match text.strip_prefix('.') {
        Some(rest) if out.ends_with(['.', '!', '?']) => out.push_str(rest),
        _ => out.push_str(text),
    }
}

fn render_into(out: &mut String, pieces: &[Piece], values: &BTreeMap<String, String>) {
    for p in pieces {
        match p {
            Piece::Text(t) => push_text(out, t),
            Piece::Field(f) => out.push_str(values.get(f).map_or("", String::as_str)),
            Piece::Optional(inner) => {
                if references(inner).iter().all(|(f, _)| values.get(f).is_some_and(|v| !v.is_empty())) {
                    render_into(out, inner, values);
                }
            }
        }
    }
}

/// Renders parsed pieces with the values (trimmed of surrounding whitespace).
pub fn render(pieces: &[Piece], values: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    render_into(&mut out, pieces, values);
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn run(t: &str, pairs: &[(&str, &str)]) -> String {
        render(&parse(t).unwrap(), &vals(pairs))
    }

    #[test]
    fn fields_and_optional_parts() {
        let t = "The user prefers {preference}[ ({topic})].[ Reason: {reason}.]";
        assert_eq!(run(t, &[("preference", "tea")]), "The user prefers tea.");
        assert_eq!(run(t, &[("preference", "tea"), ("topic", "drinks")]), "The user prefers tea (drinks).");
        assert_eq!(
            run(t, &[("preference", "tea"), ("reason", "It is calming.")]),
            "The user prefers tea. Reason: It is calming."
        );
    }

    #[test]
    fn values_are_never_template_text() {
        let t = "Note: {a}[ and {b}]";
        assert_eq!(run(t, &[("a", "{b} [x]"), ("b", "")]), "Note: {b} [x]");
    }

    #[test]
    fn escapes_and_errors() {
        assert_eq!(run("{{literal}} [[x]] {a}", &[("a", "1")]), "{literal} [x] 1");
        for bad in ["{Bad}", "{}", "x}", "[a [b]]", "[unclosed", "closed]", "{open"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn references_know_what_is_optional() {
        let refs = references(&parse("{a} [{b} {c}] {a}").unwrap());
        assert_eq!(refs, vec![("a".into(), false), ("b".into(), true), ("c".into(), true), ("a".into(), false)]);
    }

    #[test]
    fn lines_render_without_trailing_blank() {
        let t = "[Name: {name}\n][Email: {email}\n]";
        assert_eq!(run(t, &[("email", "a@b.co")]), "Email: a@b.co");
    }
}
