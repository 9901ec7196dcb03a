//! Tallying an evaluation and writing its report: text for the terminal, JSON for machines, a
//! self-contained HTML page (an inline SVG chart, no scripts, no external files) for people.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::Question;

/// Counts of one (budget, category) cell.
#[derive(Debug, Default, Clone, Copy)]
struct Cell {
    questions: usize,
    hits: usize,
    coverage: f64,
    /// Questions naming stale turns, and bundles that showed one of them and no evidence turn.
    with_stale: usize,
    stale_only: usize,
}

/// Everything one run measured.
#[derive(Debug, Default)]
pub struct Tally {
    budgets: Vec<usize>,
    cells: BTreeMap<(usize, String), Cell>,
    latencies: BTreeMap<usize, Vec<f64>>,
    tokens: BTreeMap<usize, usize>,
    pub turns: usize,
    pub chars: usize,
    pub ingest_secs: f64,
    pub compile_secs: f64,
    pub compile_calls: usize,
}

impl Tally {
    pub fn new(budgets: &[usize]) -> Self {
        Tally { budgets: budgets.to_vec(), ..Tally::default() }
    }

    /// Records one bundle's answer to `q` at `budget`.
    pub fn add(&mut self, budget: usize, q: &Question, shown: &HashSet<String>, tokens: usize, ms: f64) {
        let found = q.evidence.iter().filter(|e| shown.contains(*e)).count();
        let cell = self.cells.entry((budget, q.category.clone())).or_default();
        cell.questions += 1;
        cell.hits += usize::from(found == q.evidence.len());
        cell.coverage += found as f64 / q.evidence.len().max(1) as f64;
        if !q.stale.is_empty() {
            cell.with_stale += 1;
            let current = q.current.iter().any(|c| shown.contains(c));
            cell.stale_only += usize::from(!current && q.stale.iter().any(|s| shown.contains(s)));
        }
        self.latencies.entry(budget).or_default().push(ms);
        *self.tokens.entry(budget).or_default() += tokens;
    }

    fn categories(&self) -> Vec<String> {
        let set: std::collections::BTreeSet<&String> = self.cells.keys().map(|(_, c)| c).collect();
        set.into_iter().cloned().collect()
    }

    /// The cell of every category at `budget` together.
    fn all(&self, budget: usize) -> Cell {
        self.cells.iter().filter(|((b, _), _)| *b == budget).fold(Cell::default(), |mut a, (_, c)| {
            a.questions += c.questions;
            a.hits += c.hits;
            a.coverage += c.coverage;
            a.with_stale += c.with_stale;
            a.stale_only += c.stale_only;
            a
        })
    }

    /// The report as JSON: per budget, recall and coverage overall and by category, stale-only
    /// bundles, latency percentiles and mean tokens; and the compile rate.
    pub fn json(&self) -> Value {
        let budgets: Vec<Value> = self
            .budgets
            .iter()
            .map(|&b| {
                let all = self.all(b);
                let by: serde_json::Map<String, Value> = self
                    .categories()
                    .into_iter()
                    .filter_map(|c| self.cells.get(&(b, c.clone())).map(|cell| (c, cell_json(cell))))
                    .collect();
                let mut ms = self.latencies.get(&b).cloned().unwrap_or_default();
                ms.sort_by(f64::total_cmp);
                json!({
                    "budget": b,
                    "all": cell_json(&all),
                    "categories": by,
                    "latency_ms": {"p50": percentile(&ms, 0.5), "p95": percentile(&ms, 0.95)},
                    "mean_tokens": self.tokens.get(&b).copied().unwrap_or(0) as f64 / all.questions.max(1) as f64,
                })
            })
            .collect();
        json!({
            "protocol": "mnemo-eval-1: a hit is every evidence turn in the bundle",
            "budgets": budgets,
            "compile": {
                "turns": self.turns,
                "characters": self.chars,
                "ingest_seconds": round3(self.ingest_secs),
                "compile_seconds": round3(self.compile_secs),
                "compile_calls": self.compile_calls,
                "turns_per_second": round3(self.turns as f64 / self.compile_secs.max(1e-9)),
            },
        })
    }

    /// The report as text for the terminal.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let cats = self.categories();
        let _ = write!(out, "{:>7} {:>7} {:>9}", "budget", "recall", "coverage");
        for c in &cats {
            let _ = write!(out, " {:>12}", short(c));
        }
        let _ = writeln!(out, " {:>8} {:>8} {:>10}", "p50 ms", "p95 ms", "stale-only");
        let report = self.json();
        for b in report["budgets"].as_array().into_iter().flatten() {
            let _ = write!(
                out,
                "{:>7} {:>7.3} {:>9.3}",
                b["budget"].as_u64().unwrap_or(0),
                b["all"]["recall"].as_f64().unwrap_or(0.0),
                b["all"]["coverage"].as_f64().unwrap_or(0.0)
            );
            for c in &cats {
                match b["categories"][c]["recall"].as_f64() {
                    Some(r) => {
                        let _ = write!(out, " {r:>12.3}");
                    }
                    None => {
                        let _ = write!(out, " {:>12}", "-");
                    }
                }
            }
            let _ = writeln!(
                out,
                " {:>8.1} {:>8.1} {:>10}",
                b["latency_ms"]["p50"].as_f64().unwrap_or(0.0),
                b["latency_ms"]["p95"].as_f64().unwrap_or(0.0),
                b["all"]["stale_only"].as_u64().unwrap_or(0)
            );
        }
        let c = &report["compile"];
        let _ = writeln!(
            out,
            "compile: {} turns in {:.1} s ({:.1} turns/s, {} calls); ingest {:.1} s",
            c["turns"],
            self.compile_secs,
            c["turns_per_second"].as_f64().unwrap_or(0.0),
            c["compile_calls"],
            self.ingest_secs
        );
        out
    }

    /// The report as a self-contained HTML page with a chart of recall by category and budget.
    pub fn html(&self, title: &str) -> String {
        let cats = self.categories();
        let report = self.json();
        let colors = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756"];
        let (bar_w, gap, h) = (14.0, 18.0, 200.0);
        let group = bar_w * self.budgets.len() as f64 + gap;
        let width = 60.0 + group * (cats.len() + 1) as f64;
        let mut svg = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{}" role="img" aria-label="recall by category and budget">"#,
            h + 90.0
        );
        for tick in 0..=4 {
            let y = 10.0 + h - h * tick as f64 / 4.0;
            let _ = write!(
                svg,
                r##"<line x1="40" x2="{width}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="34" y="{}" font-size="10" text-anchor="end">{:.2}</text>"##,
                y + 3.0,
                tick as f64 / 4.0
            );
        }
        let labels: Vec<&str> = std::iter::once("all").chain(cats.iter().map(String::as_str)).collect();
        for (g, label) in labels.iter().enumerate() {
            let x0 = 50.0 + group * g as f64;
            for (i, b) in report["budgets"].as_array().into_iter().flatten().enumerate() {
                let r = if *label == "all" { &b["all"]["recall"] } else { &b["categories"][*label]["recall"] };
                let r = r.as_f64().unwrap_or(0.0);
                let _ = write!(
                    svg,
                    r#"<rect x="{}" y="{}" width="{bar_w}" height="{}" fill="{}"><title>{} @ {}: {r:.3}</title></rect>"#,
                    x0 + bar_w * i as f64,
                    10.0 + h - h * r,
                    h * r,
                    colors[i % colors.len()],
                    escape(label),
                    b["budget"]
                );
            }
            let _ = write!(
                svg,
                r#"<text x="{}" y="{}" font-size="10" transform="rotate(35 {} {})">{}</text>"#,
                x0,
                h + 24.0,
                x0,
                h + 24.0,
                escape(&short(label))
            );
        }
        for (i, b) in self.budgets.iter().enumerate() {
            let _ = write!(
                svg,
                r#"<rect x="{}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{}" font-size="10">{b} tokens</text>"#,
                50.0 + 90.0 * i as f64,
                h + 70.0,
                colors[i % colors.len()],
                64.0 + 90.0 * i as f64,
                h + 79.0
            );
        }
        svg.push_str("</svg>");
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
             <style>body{{font-family:system-ui,sans-serif;margin:2rem}}pre{{background:#f6f6f6;padding:1rem}}</style>\
             </head><body><h1>{t}</h1><p>All-evidence recall: a question is a hit when every evidence turn is in \
             the bundle.</p>{svg}<h2>Figures</h2><pre>{}</pre><h2>JSON</h2><pre>{}</pre></body></html>\n",
            escape(&self.text()),
            escape(&serde_json::to_string_pretty(&report).unwrap_or_default()),
            t = escape(title),
        )
    }
}

fn cell_json(c: &Cell) -> Value {
    let n = c.questions.max(1) as f64;
    json!({
        "questions": c.questions,
        "hits": c.hits,
        "recall": round3(c.hits as f64 / n),
        "coverage": round3(c.coverage / n),
        "with_stale": c.with_stale,
        "stale_only": c.stale_only,
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The value at quantile `q` of sorted `v` (nearest rank), 0 when empty.
fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    round3(v[i])
}

/// A category name cut to fit a column.
fn short(c: &str) -> String {
    c.chars().take(12).collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(category: &str, evidence: &[&str], stale: &[&str]) -> Question {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Question::new("?".into(), category.into(), list(evidence), list(stale))
    }

    #[test]
    fn hits_need_every_evidence_turn_and_stale_only_bundles_are_counted() {
        let mut t = Tally::new(&[1000]);
        let shown = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<HashSet<_>>();
        t.add(1000, &q("a", &["1", "2"], &[]), &shown(&["1", "2"]), 100, 3.0);
        t.add(1000, &q("a", &["1", "2"], &[]), &shown(&["1"]), 100, 5.0);
        t.add(1000, &q("update", &["9"], &["8"]), &shown(&["8"]), 100, 7.0);
        let j = t.json();
        let b = &j["budgets"][0];
        assert_eq!(b["all"]["hits"], 1);
        assert_eq!(b["categories"]["a"]["recall"], 0.5);
        assert_eq!(b["categories"]["a"]["coverage"], 0.75);
        assert_eq!(b["all"]["stale_only"], 1);
        assert_eq!(b["latency_ms"]["p50"], 5.0);
        let html = t.html("run <1>");
        assert!(html.starts_with("<!DOCTYPE html>") && html.contains("run &lt;1&gt;") && html.contains("<svg"));
        assert!(t.text().contains("stale-only"));
    }
}
