//! Agent-supplied structured memory candidates (`statewave.memory_candidates`).
//!
//! When an agent already knows what to remember, it can say so directly. The list is
//! all-or-nothing: one malformed entry means the caller uses the heuristic path instead,
//! so a half-valid batch never produces a partial, misleading set of memories.

use serde_json::{Map, Value};

use crate::model::memory::MemoryKind;

/// Confidence assumed when a candidate gives none (or gives a non-number).
const DEFAULT_CONFIDENCE: f64 = 0.9;

/// One memory proposed by the agent, with its kind already mapped to a mnemo kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub kind: MemoryKind,
    pub text: String,
    pub metadata: Map<String, Value>,
    pub claim: Option<Value>,
    pub confidence: f64,
}

/// Parses `payload.statewave.memory_candidates`; `None` means "fall back to heuristics".
pub fn structured_candidates(payload: &Value) -> Option<Vec<Candidate>> {
    let list = payload.get("statewave")?.get("memory_candidates")?.as_array()?;
    if list.is_empty() {
        return None;
    }
    list.iter().map(candidate).collect()
}

/// Maps an agent-facing kind name to a mnemo memory kind (exact, lower-case); an agent
/// cannot propose an `artifact_ref`.
fn map_kind(kind: &str) -> Option<MemoryKind> {
    match kind {
        "domain_fact" | "fact" => Some(MemoryKind::ProfileFact),
        _ => MemoryKind::parse(kind).filter(|k| *k != MemoryKind::ArtifactRef),
    }
}

fn candidate(value: &Value) -> Option<Candidate> {
    let obj = value.as_object()?;
    let kind = map_kind(obj.get("kind")?.as_str()?)?;
    let text = obj.get("text")?.as_str()?.replace('\0', "").trim().to_string();
    if text.is_empty() {
        return None;
    }
    let confidence = obj
        .get("confidence")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite())
        .map_or(DEFAULT_CONFIDENCE, |c| c.clamp(0.0, 1.0));
    let metadata = obj.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    // Claim shape is validated by the claims module; here we only require an object.
    let claim = obj.get("claim").filter(|c| c.is_object()).cloned();
    Some(Candidate { kind, text, metadata, claim, confidence })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wrap(cands: Value) -> Value {
        json!({"statewave": {"memory_candidates": cands}})
    }

    fn parse(p: &Value) -> Vec<Candidate> {
        match structured_candidates(p) {
            Some(c) => c,
            None => panic!("expected candidates for {p}"),
        }
    }

    #[test]
    fn parses_full_candidate() {
        let p = wrap(json!([{
            "kind": "fact",
            "text": "  User works at Globex \u{0} ",
            "metadata": {"source": "agent"},
            "claim": {"key": "employment.current_employer", "value": "Globex"},
            "confidence": 0.75
        }]));
        let got = parse(&p);
        assert_eq!(got.len(), 1);
        let c = &got[0];
        assert_eq!(c.kind, MemoryKind::ProfileFact);
        assert_eq!(c.text, "User works at Globex");
        assert_eq!(c.metadata.get("source"), Some(&json!("agent")));
        assert_eq!(c.claim, Some(json!({"key": "employment.current_employer", "value": "Globex"})));
        assert!((c.confidence - 0.75).abs() < 1e-12);
    }

    #[test]
    fn kind_map() {
        let cases = [
            ("domain_fact", MemoryKind::ProfileFact),
            ("fact", MemoryKind::ProfileFact),
            ("profile_fact", MemoryKind::ProfileFact),
            ("episode_summary", MemoryKind::EpisodeSummary),
            ("procedure", MemoryKind::Procedure),
        ];
        for (input, want) in cases {
            let p = wrap(json!([{"kind": input, "text": "x"}]));
            assert_eq!(parse(&p)[0].kind, want, "{input}");
        }
    }

    #[test]
    fn unmappable_kinds_fall_back() {
        for bad in [json!("Fact"), json!("PROCEDURE"), json!("summary"), json!("artifact_ref"), json!(""), json!(1)] {
            let p = wrap(json!([{"kind": bad, "text": "x"}]));
            assert_eq!(structured_candidates(&p), None, "{bad}");
        }
        assert_eq!(structured_candidates(&wrap(json!([{"text": "x"}]))), None);
    }

    #[test]
    fn defaults_when_optional_fields_missing_or_wrong() {
        let p = wrap(json!([
            {"kind": "procedure", "text": "deploy with make"},
            {"kind": "fact", "text": "y", "metadata": [1, 2], "claim": "nope", "confidence": "high"},
            {"kind": "fact", "text": "z", "metadata": null, "claim": null, "confidence": null}
        ]));
        let got = parse(&p);
        assert_eq!(got.len(), 3);
        for c in &got {
            assert!(c.metadata.is_empty());
            assert_eq!(c.claim, None);
            assert!((c.confidence - 0.9).abs() < 1e-12);
        }
    }

    #[test]
    fn confidence_is_clamped() {
        let p = wrap(json!([
            {"kind": "fact", "text": "a", "confidence": 1.7},
            {"kind": "fact", "text": "b", "confidence": -0.2},
            {"kind": "fact", "text": "c", "confidence": 0},
            {"kind": "fact", "text": "d", "confidence": 1}
        ]));
        let got: Vec<f64> = parse(&p).iter().map(|c| c.confidence).collect();
        assert_eq!(got, vec![1.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn one_bad_candidate_rejects_the_batch() {
        let good = json!({"kind": "fact", "text": "ok"});
        let bads = [
            json!("just a string"),
            json!(null),
            json!({"kind": "fact"}),
            json!({"kind": "fact", "text": "   "}),
            json!({"kind": "fact", "text": "\u{0}"}),
            json!({"kind": "fact", "text": 12}),
            json!({"kind": "opinion", "text": "x"}),
        ];
        for bad in bads {
            let p = wrap(json!([good.clone(), bad.clone()]));
            assert_eq!(structured_candidates(&p), None, "{bad}");
        }
    }

    #[test]
    fn missing_or_empty_container_falls_back() {
        assert_eq!(structured_candidates(&json!({})), None);
        assert_eq!(structured_candidates(&json!({"statewave": {}})), None);
        assert_eq!(structured_candidates(&json!({"statewave": "x"})), None);
        assert_eq!(structured_candidates(&wrap(json!([]))), None);
        assert_eq!(structured_candidates(&wrap(json!({"kind": "fact"}))), None);
        assert_eq!(structured_candidates(&json!(null)), None);
        assert_eq!(structured_candidates(&json!({"memory_candidates": [{"kind": "fact", "text": "x"}]})), None);
    }

    #[test]
    fn preserves_order() {
        let p = wrap(json!([
            {"kind": "episode_summary", "text": "first"},
            {"kind": "fact", "text": "second"}
        ]));
        let texts: Vec<String> = parse(&p).into_iter().map(|c| c.text).collect();
        assert_eq!(texts, vec!["first", "second"]);
    }
}
