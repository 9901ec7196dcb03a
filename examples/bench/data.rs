//! Synthetic, deterministic chat data for the benchmark: everyday chat episodes, context tasks,
//! and the planted-evidence history of the recall scenario.

use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use mnemo::model::episode::NewEpisode;

#[path = "../../bench/chat_text.rs"]
mod chat_text;
pub use chat_text::*;

fn episode(subject: &str, session: String, at: DateTime<Utc>, user: &str, reply: Option<&str>) -> NewEpisode {
    let mut messages = vec![json!({"role": "user", "content": user})];
    if let Some(r) = reply {
        messages.push(json!({"role": "assistant", "content": r}));
    }
    let mut payload = Map::new();
    payload.insert("messages".into(), Value::Array(messages));
    NewEpisode {
        subject_id: subject.to_string(),
        source: "chat".into(),
        kind: "message".into(),
        payload,
        metadata: Map::new(),
        provenance: Map::new(),
        session_id: Some(session),
        occurred_at: Some(at),
        idempotency_key: None,
    }
}

/// `n` chat episodes for `subject`, starting at `offset` in the deterministic stream (25 turns a
/// session, a session every day, about 60% with an assistant reply).
pub fn chat_episodes(subject: &str, offset: usize, n: usize) -> Vec<NewEpisode> {
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut out = Vec::with_capacity(n);
    for i in 0..offset + n {
        let user = user_message(&mut rng);
        let reply = rng.gen_bool(0.6).then(|| pick(&mut rng, REPLIES).to_string());
        if i < offset {
            continue;
        }
        let at = base_time() + Duration::days((i / 25) as i64) + Duration::minutes((i % 25) as i64 * 3);
        out.push(episode(subject, format!("s{:05}", i / 25), at, &user, reply.as_deref()));
    }
    out
}

/// A planted fact: the sentence the user said, the distinctive value, and a differently-phrased task.
pub struct Planted {
    pub evidence: &'static str,
    pub value: &'static str,
    pub task: &'static str,
}

/// Thirty facts planted in the recall history.
pub const PLANTED: &[Planted] = &[
    Planted { evidence: "My sister's name is Ines.", value: "Ines", task: "What is the user's sister called?" },
    Planted {
        evidence: "Our staging database runs on port 5433.",
        value: "5433",
        task: "Which port should I connect to for the pre-production Postgres?",
    },
    Planted { evidence: "I'm allergic to peanuts.", value: "peanuts", task: "What food allergy does the user have?" },
    Planted {
        evidence: "We have a beagle called Biscuit.",
        value: "Biscuit",
        task: "What's the name of the user's pet dog?",
    },
    Planted {
        evidence: "We ship to production every Thursday afternoon.",
        value: "Thursday",
        task: "On which weekday do releases go out?",
    },
    Planted {
        evidence: "My partner Tomas works night shifts at the hospital.",
        value: "Tomas",
        task: "Who is the user's significant other?",
    },
    Planted {
        evidence: "Our main repo is hosted on a self-managed Gitea instance.",
        value: "Gitea",
        task: "Where does the team keep its source code?",
    },
    Planted { evidence: "I drive a 2014 Volvo V70.", value: "Volvo", task: "What car does the user own?" },
    Planted {
        evidence: "My daughter Lucia just turned five.",
        value: "Lucia",
        task: "What's the name of the user's child?",
    },
    Planted {
        evidence: "Our on-call alerts go through PagerDuty.",
        value: "PagerDuty",
        task: "Which service wakes engineers up when something breaks at night?",
    },
    Planted {
        evidence: "I've been vegetarian for ten years.",
        value: "vegetarian",
        task: "Does the user have any dietary restrictions?",
    },
    Planted {
        evidence: "Every morning I grab a flat white on the way in.",
        value: "flat white",
        task: "What does the user usually drink at the start of the day?",
    },
    Planted {
        evidence: "Our Kubernetes clusters run in eu-west-3.",
        value: "eu-west-3",
        task: "Which cloud region hosts the infrastructure?",
    },
    Planted { evidence: "I grew up in Porto.", value: "Porto", task: "What is the user's hometown?" },
    Planted { evidence: "My manager is Priya Raman.", value: "Priya", task: "Who does the user report to?" },
    Planted {
        evidence: "I play the cello in a community orchestra.",
        value: "cello",
        task: "What musical instrument does the user practise?",
    },
    Planted {
        evidence: "The billing service is written in Elixir.",
        value: "Elixir",
        task: "What programming language is the payments backend implemented in?",
    },
    Planted {
        evidence: "My best half marathon time is 1:41.",
        value: "1:41",
        task: "What's the user's personal record over 21 km?",
    },
    Planted {
        evidence: "My laptop is a ThinkPad X1 Carbon.",
        value: "ThinkPad",
        task: "What computer does the user have?",
    },
    Planted {
        evidence: "We track all our tickets in Linear.",
        value: "Linear",
        task: "Which issue tracker does the team rely on?",
    },
    Planted {
        evidence: "Our wedding anniversary is June 14.",
        value: "June 14",
        task: "On what date did the user get married?",
    },
    Planted {
        evidence: "Our CI pipeline takes about 18 minutes end to end.",
        value: "18 minutes",
        task: "How long does a full build-and-test run last?",
    },
    Planted {
        evidence: "I'm learning Japanese with an evening class.",
        value: "Japanese",
        task: "Which foreign language is the user studying?",
    },
    Planted {
        evidence: "I boulder at the Basecamp climbing hall near the river.",
        value: "Basecamp",
        task: "Where does the user go to exercise?",
    },
    Planted {
        evidence: "The VPN endpoint is vpn.acme-internal.net.",
        value: "vpn.acme-internal.net",
        task: "What hostname gets me onto the corporate network from home?",
    },
    Planted {
        evidence: "My blood type is O negative.",
        value: "O negative",
        task: "What blood group does the user have?",
    },
    Planted {
        evidence: "Our design system is called Mosaic.",
        value: "Mosaic",
        task: "What's the name of the team's UI component library?",
    },
    Planted {
        evidence: "I catch the 7:52 train to the office.",
        value: "7:52",
        task: "When does the user's morning commute leave?",
    },
    Planted { evidence: "My landlord is Mr. Okafor.", value: "Okafor", task: "Who owns the apartment the user rents?" },
    Planted {
        evidence: "The cloud budget is 42,000 euros per quarter.",
        value: "42,000",
        task: "How much can the team spend on hosting every three months?",
    },
];

/// Near-misses placed in the filler: same topic as some planted facts, different values.
const DISTRACTORS: &[&str] = &[
    "My cousin's name is Marta.",
    "Our production database runs on port 5432.",
    "My colleague is allergic to cats.",
    "My neighbour has a cat called Pixel.",
    "We deploy the mobile app on Mondays.",
    "My brother drives a Fiat Panda.",
    "Our analytics jobs run in us-east-1.",
    "My old laptop was a MacBook Air.",
    "The frontend is written in TypeScript.",
    "I used to play the guitar in a band.",
    "Our old design system was called Tiles.",
    "The staging deploys take about five minutes.",
];

/// The recall history: `sessions` x `turns` episodes of filler with every planted fact replacing
/// one turn, and each fact's (session, turn) position.
pub fn recall_history(subject: &str, sessions: usize, turns: usize) -> (Vec<NewEpisode>, Vec<(usize, usize)>) {
    let mut rng = StdRng::seed_from_u64(SEED ^ 0x4ec0);
    let total = sessions * turns;
    let mut positions = Vec::new();
    for k in 0..PLANTED.len() {
        let s = (k * sessions) / PLANTED.len();
        let t = (k * 11 + 3) % turns;
        positions.push((s, t));
    }
    let mut distractor_at: Vec<usize> = (0..total).collect();
    distractor_at.shuffle(&mut rng);
    let distractor_at: Vec<usize> = distractor_at
        .into_iter()
        .filter(|i| !positions.contains(&(i / turns, i % turns)))
        .take(DISTRACTORS.len())
        .collect();
    let mut out = Vec::with_capacity(total);
    for i in 0..total {
        let (s, t) = (i / turns, i % turns);
        let reply_roll: f64 = rng.gen();
        let filler = user_message(&mut rng);
        let reply_pick = pick(&mut rng, REPLIES).to_string();
        let user = if let Some(k) = positions.iter().position(|&p| p == (s, t)) {
            PLANTED[k].evidence.to_string()
        } else if let Some(d) = distractor_at.iter().position(|&x| x == i) {
            format!("{} {}", pick(&mut rng, CHITCHAT), DISTRACTORS[d])
        } else {
            filler
        };
        let reply = (reply_roll < 0.6).then_some(reply_pick);
        let at = base_time() + Duration::days(2 * s as i64) + Duration::minutes(2 * t as i64);
        out.push(episode(subject, format!("session-{:02}", s + 1), at, &user, reply.as_deref()));
    }
    (out, positions)
}

/// Fails when a value could be found without retrieving its evidence (it appears in filler or in its task).
pub fn check_recall_data(history: &[NewEpisode]) -> anyhow::Result<()> {
    for p in PLANTED {
        if p.task.contains(p.value) {
            anyhow::bail!("task for {:?} contains its value", p.value);
        }
        let holders = history.iter().filter(|e| Value::Object(e.payload.clone()).to_string().contains(p.value)).count();
        if holders != 1 {
            anyhow::bail!("value {:?} appears in {holders} episodes, expected exactly its evidence", p.value);
        }
    }
    Ok(())
}

/// True when the task shares a content word (crude 5-letter stem) with the evidence.
pub fn lexical_overlap(p: &Planted) -> bool {
    const STOP: &[&str] = &[
        "what", "which", "where", "when", "does", "have", "that", "this", "with", "from", "user", "user's", "the",
        "into", "about", "every", "name",
    ];
    let stems = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '\'')
            .map(|w| w.to_lowercase())
            .filter(|w| w.len() >= 4 && !STOP.contains(&w.as_str()))
            .map(|w| w.chars().take(5).collect())
            .collect()
    };
    let ev = stems(p.evidence);
    stems(p.task).iter().any(|w| ev.contains(w))
}
