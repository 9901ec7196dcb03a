//! Vocabulary and sentence generators of the synthetic chat data, shared (through `#[path]`) by
//! the in-process benchmark (`examples/bench/data.rs`) and the HTTP load generator
//! (`bench/loadgen/src/data.rs`), so both speak the same deterministic chat.
#![allow(dead_code)] // each includer uses a different part

use chrono::{DateTime, TimeZone, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The fixed seed every generator starts from.
pub const SEED: u64 = 0x6d6e_656d_6f21;

pub const EMPLOYERS: &[&str] = &[
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Stark Logistics",
    "Wayne Analytics",
    "Acme Robotics",
    "Vandelay Imports",
    "Soylent Foods",
    "Cyberdyne Systems",
    "Massive Dynamic",
    "Pied Piper",
];
pub const CITIES: &[&str] = &[
    "Lisbon",
    "Berlin",
    "Toronto",
    "Melbourne",
    "Austin",
    "Nairobi",
    "Seoul",
    "Oslo",
    "Valencia",
    "Denver",
    "Montreal",
    "Glasgow",
];
pub const TOOLS: &[(&str, &str)] = &[
    ("Neovim", "editing code"),
    ("Obsidian", "note taking"),
    ("Grafana", "dashboards"),
    ("Terraform", "infrastructure"),
    ("DuckDB", "ad-hoc analytics"),
    ("Figma", "mockups"),
    ("Notion", "planning"),
    ("Docker", "local development"),
    ("Slack", "team chat"),
    ("Jira", "sprint planning"),
    ("pytest", "testing"),
    ("Airflow", "data pipelines"),
    ("Ansible", "server setup"),
    ("Sentry", "error tracking"),
    ("Tailscale", "remote access"),
];
pub const ROLES: &[&str] = &[
    "a backend engineer",
    "a data scientist",
    "a product manager",
    "an SRE",
    "a frontend developer",
    "a security analyst",
    "an engineering manager",
];
pub const TEAMS: &[&str] = &["payments", "platform", "growth", "search", "data", "mobile", "infra"];
pub const PREFS: &[&str] = &[
    "dark mode",
    "short answers",
    "tea over coffee",
    "Python for scripting",
    "tabs over spaces",
    "bullet points over long paragraphs",
    "morning meetings",
];
pub const TOPICS: &[&str] = &[
    "database migrations",
    "the quarterly roadmap",
    "flaky integration tests",
    "our onboarding docs",
    "the incident last night",
    "rate limiting",
    "the hiring pipeline",
    "caching strategy",
    "the offsite agenda",
    "API versioning",
    "log retention",
    "the mobile release",
    "code review etiquette",
    "cost reduction",
    "the data warehouse",
    "feature flags",
    "accessibility fixes",
    "the on-call handbook",
];
pub const HOWTOS: &[&str] = &[
    "rebase a branch without losing my changes",
    "write a systemd unit for a small service",
    "speed up a slow SQL query with a join",
    "profile memory usage in a Python script",
    "set up a cron job that runs every weekday",
    "rotate logs with logrotate",
    "pin a dependency version in Cargo",
    "debug a websocket that disconnects randomly",
    "configure nginx as a reverse proxy",
    "write a good pull request description",
    "structure a design document",
    "estimate a project with a lot of unknowns",
    "batch inserts efficiently",
    "handle timezones in a scheduling app",
];
pub const PAIRS: &[(&str, &str)] = &[
    ("a mutex", "a semaphore"),
    ("TCP", "UDP"),
    ("a process", "a thread"),
    ("REST", "GraphQL"),
    ("OLTP", "OLAP"),
    ("a list", "a tuple in Python"),
    ("horizontal scaling", "vertical scaling"),
    ("unit tests", "integration tests"),
];
pub const FAILURES: &[(&str, &str)] = &[
    ("build", "timing out on CI"),
    ("container", "restarting every few minutes"),
    ("deploy script", "hanging at the health check"),
    ("cron job", "running twice"),
    ("test suite", "failing only on Fridays"),
    ("laptop", "overheating during video calls"),
];
pub const CHITCHAT: &[&str] = &[
    "Good morning! How's it going?",
    "Thanks, that was really helpful.",
    "Haha, fair enough.",
    "Ugh, long day today.",
    "Just got back from lunch, where were we?",
    "Okay, let's continue where we left off.",
    "That makes sense, thanks!",
    "Cool, I'll give it a try.",
    "Sorry for the slow reply, meetings all morning.",
    "Nice, that worked on the first attempt.",
    "Hmm, interesting.",
    "Happy Friday!",
    "I'm a bit tired today, let's keep it short.",
    "Great, moving on.",
    "Coffee first, then code.",
    "The weather has been awful all week.",
    "Finally some sunshine today.",
    "My team shipped the release yesterday, feeling relieved.",
];
pub const REPLIES: &[&str] = &[
    "Sure! Here's a short outline you can adapt: start with the goal, list the constraints, then the steps.",
    "Good question. The short version: it depends on your access pattern, so measure first.",
    "Glad it helped. Let me know if anything else comes up.",
    "Here is one way to do it: keep the change small, add a test, and roll it out behind a flag.",
    "That usually happens when two processes race for the same resource; adding a lock or a queue fixes it.",
    "Noted. Anything else you want to look at today?",
    "I'd check the logs around the failure first, then compare the configuration with a working environment.",
    "Happy to help. A checklist tends to work well for this kind of task.",
];

pub fn pick<'a, T>(rng: &mut StdRng, xs: &'a [T]) -> &'a T {
    // The lists are non-empty constants.
    &xs[rng.gen_range(0..xs.len())]
}

pub fn fact_sentence(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0 => format!("I work at {}.", pick(rng, EMPLOYERS)),
        1 => format!("Quick update: I work at {} now.", pick(rng, EMPLOYERS)),
        2 => format!("I live in {}.", pick(rng, CITIES)),
        3 => format!("I'm based in {} these days.", pick(rng, CITIES)),
        4 => {
            let (t, p) = pick(rng, TOOLS);
            format!("I use {t} for {p}.")
        }
        5 => {
            let (t, p) = pick(rng, TOOLS);
            format!("We use {t} for {p} at work.")
        }
        6 => format!("I work as {}.", pick(rng, ROLES)),
        7 => format!("I'm on the {} team.", pick(rng, TEAMS)),
        8 => format!("I prefer {}.", pick(rng, PREFS)),
        _ => format!("I live in {} and I work at {}.", pick(rng, CITIES), pick(rng, EMPLOYERS)),
    }
}

pub fn question_sentence(rng: &mut StdRng) -> String {
    match rng.gen_range(0..6) {
        0 => format!("How do I {}?", pick(rng, HOWTOS)),
        1 => {
            let (a, b) = pick(rng, PAIRS);
            format!("What's the difference between {a} and {b}?")
        }
        2 => format!("Can you help me write a short update about {}?", pick(rng, TOPICS)),
        3 => {
            let (what, how) = pick(rng, FAILURES);
            format!("Why does my {what} keep {how}?")
        }
        4 => format!("Could you summarize the main points about {} for me?", pick(rng, TOPICS)),
        _ => format!("Any tips for {}?", pick(rng, TOPICS)),
    }
}

pub fn chitchat_sentence(rng: &mut StdRng) -> String {
    pick(rng, CHITCHAT).to_string()
}

/// One user message of 1-3 sentences: a first-person fact, a question or chit-chat (mixed).
pub fn user_message(rng: &mut StdRng) -> String {
    let n = rng.gen_range(1..=3);
    let mut parts = Vec::with_capacity(n);
    for _ in 0..n {
        let r: f64 = rng.gen();
        parts.push(if r < 0.3 {
            fact_sentence(rng)
        } else if r < 0.65 {
            question_sentence(rng)
        } else {
            chitchat_sentence(rng)
        });
    }
    parts.join(" ")
}

/// When the synthetic history starts.
pub fn base_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).single().unwrap_or_else(Utc::now)
}

/// `n` distinct context tasks (what an agent would ask memory for before a prompt).
pub fn context_tasks(n: usize) -> Vec<String> {
    let mut tasks = Vec::new();
    let mut rng = StdRng::seed_from_u64(SEED ^ 0x7a5c);
    let templates: &[&dyn Fn(&mut StdRng) -> String] = &[
        &|_| "Where does the user currently work?".to_string(),
        &|_| "Which city does the user live in?".to_string(),
        &|r| format!("What does the user use for {}?", pick(r, TOOLS).1),
        &|r| format!("Help the user with {}.", pick(r, TOPICS)),
        &|r| format!("Draft a reply to the user's question about {}.", pick(r, TOPICS)),
        &|r| format!("The user asks how to {}; tailor the answer to their setup.", pick(r, HOWTOS)),
        &|r| format!("Explain {} vs {} at the user's level.", pick(r, PAIRS).0, pick(r, PAIRS).1),
        &|r| format!("Troubleshoot: the user's {} is {}.", pick(r, FAILURES).0, pick(r, FAILURES).1),
        &|_| "What is the user's role and team?".to_string(),
        &|_| "How does the user like answers to be formatted?".to_string(),
        &|r| format!("Recommend a tool for {} that fits what the user already runs.", pick(r, TOOLS).1),
        &|r| format!("Prepare notes for a meeting with the user on {}.", pick(r, TOPICS)),
    ];
    let mut seen = std::collections::HashSet::new();
    let mut attempts = 0;
    while tasks.len() < n && attempts < n * 200 {
        attempts += 1;
        let t = pick(&mut rng, templates)(&mut rng);
        // Distinct tasks, so the task-vector cache never answers for the embedder.
        let t = if seen.contains(&t) { format!("{t} (request {})", tasks.len()) } else { t };
        if seen.insert(t.clone()) {
            tasks.push(t);
        }
    }
    tasks
}
