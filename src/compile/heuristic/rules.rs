//! The sentence patterns of the heuristic extractor: what drops a sentence or a clause, where
//! clauses split, and the triggers and copulas that read a fact, compiled once.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use crate::compile::fact::FactRule;
use crate::compile::frames::LEAD;
use crate::compile::updates::marks::CREDENTIALS;

/// Claim keys the triggers give.
pub(super) const NAME_KEY: &str = "identity.name";
pub(super) const EMPLOYER: &str = "employment.current_employer";
pub(super) const HOME: &str = "location.current_home";
pub(super) const TOOLS: &str = "tools.used";
pub(super) const PREFS: &str = "preferences";
pub(super) const TITLE: &str = "attr.job_title";

/// Optional adverb between subject and verb; dropped from the content.
const ADV: &str = r"(?:(?:currently|now|also|still)\s+)?";
/// Leading chatter that may precede an imperative or interrogative word.
const FILLER: &str = r"(?:[\s\p{P}]*(?:ok|okay|so|also|and|but|hey|hi|hello|btw|oh|well|alright|fyi|anyway|yeah|yes|thanks|cool|by\s+the\s+way|quick\s+update|just\s+so\s+you\s+know)\b)*[\s\p{P}]*";
/// A migration verb, the thing moved, what it moved from and the word before its new value
/// ("migrated the monorepo from yarn to pnpm").
const MIGRATION: &str = r"(?P<v>moved|migrated|switched|upgraded|downgraded|bumped|updated|changed|repointed|pointed|renamed|ported|rewrote|rebuilt|converted|transferred|reinstalled)(?P<o>\s+(?:(?:our|my|the|all)\s+)?[\w.-]+(?:\s+[\w.-]+){0,3}?)??(?:\s+over)?(?:\s+from\s+(?P<from>.+?))?\s+(?:over\s+)?(?:to|->|→|with|onto|into)\s+";
const NAME: &str = r"(?P<n>(?-i:\p{Lu}[\p{L}\p{M}'’\-]*(?:[ \t]+\p{Lu}[\p{L}\p{M}'’\-]*)*))";

/// How a trigger's captured value is bounded, validated and claimed.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
    /// Organisation or place: extra stop words, claim needs a name-like value.
    Place,
    /// Like `Place` but the value must start with a capital (e.g. "I'm at Globex").
    Capitalised,
    /// Tool usage: content keeps the purpose, the claim is the short tool name.
    Tool,
    /// Team membership or platform: a team noun or a capitalised value.
    Team,
    /// Job title: must start with an article or a capital ("a nurse", "Head of Design").
    Role,
    Pref,
}

/// A first-person phrase ("I work at", "we use") whose value follows it.
pub(super) struct Trigger {
    pub(super) rule: FactRule,
    pub(super) re: Regex,
    pub(super) kind: Kind,
    pub(super) key: Option<&'static str>,
}

/// Every pattern of the extractor.
pub(super) struct Rules {
    pub(super) clause_split: Regex,
    /// Any match drops the whole sentence: instructions, questions, conditionals, framing.
    pub(super) sentence_skip: Vec<Regex>,
    /// Any match drops one clause: hedged, negated, past, future, or about credentials.
    pub(super) clause_skip: Vec<Regex>,
    pub(super) taint: Regex,
    pub(super) place_stop: Regex,
    pub(super) team_stop: Regex,
    pub(super) team_noun: Regex,
    pub(super) tool_claim_stop: Regex,
    pub(super) my_name: Regex,
    pub(super) intro: Regex,
    pub(super) intro_tail: Regex,
    pub(super) my_is: Regex,
    pub(super) my_s: Regex,
    pub(super) bare_is: Regex,
    pub(super) migrate_bare: Regex,
    pub(super) fillers: Regex,
    pub(super) passive: Regex,
    pub(super) np_skip: Regex,
    pub(super) migrate: Regex,
    /// The next step of a chain told in one sentence ("…to Linear, and later to GitHub
    /// Projects"): the value after its last match is the current one.
    pub(super) chain_next: Regex,
    pub(super) triggers: Vec<Trigger>,
}

/// Built once; a bad pattern fails loudly on first use (`crate::patterns`).
pub(super) static RULES: LazyLock<Rules> = LazyLock::new(|| crate::patterns::built("sentence rules", build()));

fn build() -> Result<Rules, regex::Error> {
    let re = Regex::new;
    let (i, im) = (r"\b(?P<s>i)\s+", r"\b(?P<s>i['’]?m|i\s+am)\s+");
    let trig = |rule, pat: String, kind, key| -> Result<Trigger, regex::Error> {
        Ok(Trigger { rule, re: Regex::new(&format!("(?i){pat}"))?, kind, key })
    };
    let triggers = vec![
        trig(FactRule::Employer, format!(r"{i}{ADV}(?P<v>work\s+(?:at|for))\s+"), Kind::Place, Some(EMPLOYER))?,
        trig(FactRule::Employer, format!(r"{im}{ADV}(?P<v>employed\s+(?:at|by))\s+"), Kind::Place, Some(EMPLOYER))?,
        trig(FactRule::JobTitle, format!(r"{i}{ADV}(?P<v>work\s+as)\s+"), Kind::Role, Some(TITLE))?,
        trig(FactRule::LocatedAt, format!(r"{im}{ADV}(?P<v>at)\s+"), Kind::Capitalised, None)?,
        trig(FactRule::OnTeam, format!(r"{im}{ADV}(?P<v>on)\s+"), Kind::Team, None)?,
        trig(FactRule::Home, format!(r"{i}{ADV}(?P<v>live\s+in)\s+"), Kind::Place, Some(HOME))?,
        trig(FactRule::Home, format!(r"{im}{ADV}(?P<v>(?:based|located)\s+in)\s+"), Kind::Place, Some(HOME))?,
        trig(FactRule::Origin, format!(r"{im}(?P<v>(?:originally\s+)?from)\s+"), Kind::Capitalised, None)?,
        trig(FactRule::Origin, format!(r"{i}(?P<v>(?:originally\s+)?come\s+from)\s+"), Kind::Capitalised, None)?,
        trig(FactRule::Tool, format!(r"{i}{ADV}(?P<v>use)\s+"), Kind::Tool, Some(TOOLS))?,
        trig(FactRule::Preference, format!(r"{i}{ADV}(?P<v>prefer)\s+"), Kind::Pref, Some(PREFS))?,
        trig(FactRule::TeamTool, format!(r"\b(?P<s>we)\s+{ADV}(?P<v>use|run)\s+"), Kind::Tool, Some(TOOLS))?,
        trig(FactRule::TeamOn, format!(r"\b(?P<s>we['’]re|we\s+are)\s+{ADV}(?P<v>on)\s+"), Kind::Team, Some(TOOLS))?,
    ];
    Ok(Rules {
        clause_split: re(
            // A new clause starts with a new first-person subject, or with a negated tail after a
            // comma ("the cache node is 10.0.4.12, no auth"), which then governs only itself.
            r"(?i)(?:\s*,\s*(?:(?:and|but|so|also|plus)\s+)?|\s+(?:and|but|so|plus)\s+)(?:(?:now|currently|also)\s+)?(?P<n>(?:i|my|we|our)\b)|\s*[,—–]\s*(?P<neg>(?:no|not|never|without|nothing|none)\b)",
        )?,
        sentence_skip: [
            // Instructions and meta-instructions, anywhere in the sentence.
            r"(?i)\b(?:remember|memori[sz]e|forget|ignore|disregard|always|never|please|pls|plz|override|bypass|jailbreak|pretend|role-?play)\b|\bfrom\s+now\s+on\b|\bgoing\s+forward\b|\bhenceforth\b|\byou\s+(?:must|should|need\s+to|have\s+to|will|shall|are\s+to|can|could|may|might)\b|\byou(?:\s+are|['’]re)\b|\bmake\s+sure\b|\bkeep\s+in\s+mind\b|\bbe\s+sure\b|\b(?:note|assistant|system|instructions?|reminder|important|todo|rule|admin|developer|ai|bot)\s*[:,]|\b(?:new|updated|previous|prior|earlier)\s+(?:instructions?|rules?|prompts?)\b|\b(?:store|save|record|add|update|set|write|log|put|mark|note)\s+(?:this|that|it|down|the\s+fact|my)\b|\b(?:user|human)\s*:|\[/?inst\]|<\|[^|]*\|>|<</?sys>>|</?[a-z][\w:-]*(?:\s[^>]*)?>".to_string(),
            // Imperative opening.
            format!(r"(?i)^{FILLER}(?:remember|forget|ignore|disregard|note|always|never|please|make|ensure|pretend|act|imagine|assume|suppose|store|save|record|write|add|set|call|tell|list|show|give|use|treat|consider|respond|reply|answer|say|stop|start|keep|let['’]s|let\s+us|do|don['’]t|be|delete|remove|change|switch|go|run|try|check|help|explain|summari[sz]e|translate|create|fix|find|send|put|mark|look|read|print|return|include|avoid|share|provide|generate|rename|replace|learn|memori[sz]e)\b"),
            // Question opening.
            format!(r"(?i)^{FILLER}(?:what|how|where|when|why|who|whom|whose|which|can|could|would|will|shall|should|do|does|did|is|are|am|was|were|have|has|had|may|might|must|isn['’]t|aren['’]t|don['’]t|doesn['’]t|didn['’]t|won['’]t|wouldn['’]t|couldn['’]t|shouldn['’]t|anyone|anybody|any\s+idea|tell\s+me|wondering)\b"),
            // Conditionals and role-play govern every clause of the sentence.
            r"(?i)\b(?:if|unless|whether|suppose|supposing|imagine|pretend|hypothetically|assuming|in\s+case|what\s+if|let['’]s\s+say|as\s+if|as\s+though)\b".to_string(),
            // Framing of pasted material: the framed content is data, not a statement.
            r"(?i)\b(?:(?:shows?|showed|shown|showing|pops?|popped|comes?|came|turns?|turned)\s+up|appear(?:s|ed)?\s+in|(?:error|message|output|logs?|exception|trace|traceback|stack\s*trace|response|warning|stderr|stdout|console|terminal|screen)\s+(?:says?|said|reads?|shows?|showed|printed|prints|contains|states?|stated)|here(?:['’]s|\s+is|\s+are|\s+was|\s+it\s+is)|i\s+(?:got|get|see|saw|found|received|keep\s+getting|am\s+getting|['’]m\s+getting)\s+(?:this|these|the\s+following|that|an?\s+(?:error|message|warning|exception))|it\s+(?:printed|prints|says|said|outputs|output|returned|returns|shows|showed|logged|logs|spits|spat|threw|throws|reads|gave)|the\s+following|as\s+follows|says|said|told|tells|wrote|writes|replied|asked|claims|claimed|according\s+to|(?:error|warning|exception|output|logs?|message|stderr|stdout|response)s?\s*:)".to_string(),
        ]
        .iter()
        .map(|p| Regex::new(p))
        .collect::<Result<_, _>>()?,
        clause_skip: [
            // Hedges.
            r"(?i)\b(?:might|maybe|perhaps|probably|possibly|could|would|should|must|thinking\s+(?:about|of)|considering|consider|planning\s+to|wants?\s+to|wanna|hoping|hopefully|not\s+sure|unsure|guess|supposedly|think|believe|suspect|assume|apparently|allegedly|likely|unlikely|wish|wonder|kind\s+of|sort\s+of|kinda|sorta|seems?|seemingly|if|unless|whether|ideally|theoretically|hypothetically|pretend|imagine)\b|['’]d\b".to_string(),
            // Case-sensitive: capitalised "May", "Will", "Hope" mid-sentence are usually names.
            r"\b(?:may|will|hope|once)\b|^\W*(?:May|Will|Hope|Once)\b".to_string(),
            // Negation.
            r"(?i)\b(?:not|never|no|none|nobody|nothing|neither|nor|without|cannot|nowhere|nope|dont|doesnt|didnt|isnt|arent|wasnt|werent|cant|wont|aint|hardly|barely|no\s+longer)\b|n['’]t\b".to_string(),
            // Past or historical.
            r"(?i)\b(?:used\s+to|previously|formerly|former|before|until|till|was|were|had|did|ago|last\s+(?:year|month|week|quarter|time|night|weekend|summer|winter|spring|fall|autumn)|yesterday|back\s+then|in\s+the\s+past|any\s*more|earlier|ex-)\b".to_string(),
            // Future.
            r"(?i)\b(?:going\s+to|gonna|next\s+(?:week|month|year|quarter|time|weekend|summer|winter|spring|fall|autumn)|soon|someday|some\s+day|plans?\s+to|plan\s+on|planning|planned|tomorrow|upcoming|about\s+to|later|eventually|shortly)\b|['’]ll\b".to_string(),
            // Credentials never become memories, whatever the phrasing.
            CREDENTIALS.to_string(),
        ]
        .iter()
        .map(|p| Regex::new(p))
        .collect::<Result<_, _>>()?,
        taint: re(r"(?i):\s*$|\b(?:following|below|as\s+follows)\b")?,
        place_stop: re(r"(?i)\s+(?:with|near|for|in|as|on|from|at|by|during|doing|via)\b")?,
        team_stop: re(r"(?i)\s+(?:at|in|for|with|from|since|as)\b")?,
        team_noun: re(r"(?i)\b(?:team|squad|crew|group|staff|project|committee|rotation|org|department|dept|unit)\b")?,
        tool_claim_stop: re(
            r"(?i)\s+(?:for|to|with|on|in|at|as|via|because|daily|every|mostly|mainly|primarily|exclusively|instead|over|when|whenever|all)\b",
        )?,
        my_name: re(&format!(r"(?i)\b(?P<s>my)\s+(?P<v>name\s+is|name['’]s)\s+{NAME}"))?,
        intro: re(&format!(r"(?i)\b(?P<s>i['’]?m|i\s+am)\s+{NAME}"))?,
        intro_tail: re(r"(?i)^(?:\s*$|\s*[,.;:!]|\s+(?:and|from|here|btw|by\s+the\s+way)\b)")?,
        my_is: re(r"(?i)\b(?P<s>my|our|the)\s+(?P<np>[\p{L}\p{N}'’\-]+(?:\s+[\p{L}\p{N}'’\-]+){0,3}?)\s+(?P<v>(?:is|are)(?:\s+(?:with|through|via))?|(?:(?:now|currently|still)\s+)?(?:runs(?:\s+on)?|uses|sits\s+(?:at|on)|lives\s+(?:at|in)|points\s+(?:at|to)|goes\s+to|go\s+to))\s+")?,
        // "my phone's a Pixel 8" (only when no "is" reading exists, see `clause_facts`).
        my_s: re(r"(?i)\b(?P<s>my|our|the)\s+(?P<np>[\p{L}\p{N}\-]+(?:\s+[\p{L}\p{N}\-]+){0,3}?)(?P<v>['’]s)\s+")?,
        // Terse chat drops the possessive: "gym is Ironworks", "CI runs on Jenkins", "bazel disk
        // cache lives at /mnt/ssd/bazel-cache".
        bare_is: re(&format!(
            r"(?i){LEAD}(?P<s>)(?P<np>[\p{{L}}\p{{N}}\-]+(?:\s+[\p{{L}}\p{{N}}'’\-]+){{0,3}}?)(?P<v>\s+(?:is|are)(?:\s+(?:now|currently|still))?(?:\s+(?:at|on|in))?|['’]s|\s+(?:now\s+)?(?:lives?|runs?|sits?|points?|goes|go|pushe?s?|resides?|stays?|is\s+hosted|are\s+hosted)(?:\s+(?:now|currently|still))?\s+(?:at|on|in|to))\s+"
        ))?,
        // "migrated the monorepo to pnpm", told without a subject at the start of a clause.
        migrate_bare: re(&format!(
            r"(?i){LEAD}(?P<s>)(?:(?:just|finally|recently|also)\s+)?{MIGRATION}"
        ))?,
        // "built with Angular", "hosted in Frankfurt": a participle describes, a frame reads it.
        passive: re(
            r"(?i)^(?:\w+ed|built|written|made|done|run|set|kept|held|known|seen|taken|given|shown|driven|ridden)\s+(?:with|in|on|by|at|to|from|using|via|into|onto|for|as|under)\b",
        )?,
        // Spoken fillers and politeness tails ("if you need it") that govern nothing.
        fillers: re(r"(?i)(?:,\s*)?\b(?:uh+|um+|umm+|erm+|er|ah+|hmm+|mhm|you\s+know|if\s+(?:u|you)\s+(?:need|want)(?:\s+(?:it|me|to))?|if\s+(?:that|it)\s+(?:matters|helps)|if\s+needed|if\s+necessary|if\s+that['’]s\s+(?:useful|helpful)|just\s+in\s+case|in\s+case\s+(?:u|you)\s+need(?:\s+it)?)\b(?:\s*,)?|,\s*like\s*,|\blike,\s+")?,
        np_skip: re(
            r"(?i)^(?:name|name['’]s)$|\b(?:question|point|problem|issue|concern|guess|idea|understanding|hope|answer|request|suggestion|bad|fault|pleasure|thoughts?|worry|fear|take|opinion|bet)\b",
        )?,
        migrate: re(&format!(
            r"(?i)\b(?P<s>i|we)(?:['’]ve|\s+have)?\s+(?:(?:recently|finally|just|also)\s+)?{MIGRATION}"
        ))?,
        chain_next: re(
            r"(?i)(?:,\s*|\s+)(?:and\s+)?(?:then|later(?:\s+on)?|after\s+that|eventually|finally|since\s+then|now)\s*,?\s+(?:over\s+|on\s+)?(?:to|->|→|onto|into)\s+",
        )?,
        triggers,
    })
}

/// Where a match starts in its clause.
pub(super) fn pos(c: &Captures) -> usize {
    c.get(0).map_or(0, |m| m.start())
}

/// A named group's text, empty when it did not take part.
pub(super) fn group<'a>(c: &Captures<'a>, name: &str) -> &'a str {
    c.name(name).map_or("", |m| m.as_str())
}

/// The clause text right after the whole match: where the value starts.
pub(super) fn rest<'a>(c: &Captures, clause: &'a str) -> &'a str {
    c.get(0).map_or("", |m| &clause[m.end()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_compile() {
        if let Err(e) = build() {
            panic!("rule regexes must compile: {e}");
        }
        LazyLock::force(&RULES);
    }
}
