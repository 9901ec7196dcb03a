//! Pure signals the bundle derives from a conversation's shape rather than from one item:
//! a turn's similarity smoothed with its neighbours', speakers a task names, and whose words a
//! task asks about.

use std::collections::BTreeSet;

/// Roles that name a part in a conversation rather than a person; a task saying "the user"
/// names no one in particular.
const GENERIC_ROLES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "tool",
    "human",
    "ai",
    "bot",
    "agent",
    "model",
    "unknown",
    "function",
    "developer",
];

/// A turn's cosine blended with those of the turns before and after it in the same session:
/// an answer often repeats few of the question's words, while the turn that asked it does.
/// `(own + w_prev * prev + w_next * next) / (1 + w_prev + w_next)` over the neighbours present;
/// None when the turn has no cosine of its own.
pub fn smooth(own: Option<f64>, prev: Option<f64>, next: Option<f64>, w_prev: f64, w_next: f64) -> Option<f64> {
    let own = own?;
    let (mut sum, mut weight) = (own, 1.0);
    for (c, w) in [(prev, w_prev), (next, w_next)] {
        if let Some(c) = c {
            sum += w * c;
            weight += w;
        }
    }
    Some(sum / weight)
}

/// The task's words, lower-cased (letters and digits), for matching names.
pub fn task_words(task: &str) -> BTreeSet<String> {
    task.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether the task names this speaker: every word of the role appears in the task, and the
/// role is a name rather than a generic part ("user", "assistant").
pub fn speaker_named(task_words: &BTreeSet<String>, role: &str) -> bool {
    let role = role.trim().to_lowercase();
    if role.is_empty() || GENERIC_ROLES.contains(&role.as_str()) {
        return false;
    }
    let mut words = role.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).peekable();
    words.peek().is_some() && words.all(|w| task_words.contains(w))
}

/// Verbs of saying, as the starts of their forms ("mention" finds "mentioned"), after which a
/// task asks about words someone said. "brought"/"bring" and "point" count only with "up"/"out".
const SAYING: &[&str] = &[
    "mention",
    "said",
    "say",
    "told",
    "tell",
    "ask",
    "shar",
    "talk",
    "discuss",
    "describ",
    "explain",
    "suggest",
    "recommend",
    "propos",
    "repl",
    "answer",
    "express",
    "complain",
    "admit",
    "confess",
    "bring",
    "brought",
    "point",
];

/// Words that may stand between a subject and its verb of saying ("I first mentioned", "I had
/// already said", "I've been talking").
const BETWEEN: &[&str] = &[
    "ve",
    "have",
    "had",
    "been",
    "did",
    "first",
    "ever",
    "previously",
    "originally",
    "initially",
    "also",
    "just",
    "already",
    "earlier",
    "later",
    "last",
    "even",
    "specifically",
    "actually",
    "once",
    "recently",
    "then",
];

/// Words before a subject that make its verb a question about now, not about words said
/// ("should I mention", "can I ask").
const ASKING_NOW: &[&str] = &["can", "could", "would", "will", "should", "shall", "may", "might", "do", "does"];

/// Whether a task asks about the user's own words: "what did I mention about…", "the order in
/// which I brought up…", "what has the user told you…". Such a task is answered by the user's
/// turns, whatever the answers around them discuss. (A task about what the agent said is not
/// the mirror image: an answer is found with the question it answers, and the lanes' neighbours
/// already bring both; favouring the agent's turns lost the questions on the BEAM dev chats.)
pub fn asks_own_words(task: &str) -> bool {
    let words: Vec<String> =
        task.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    words.iter().enumerate().any(|(i, w)| {
        let subject = w == "i" || (w == "user" && i > 0 && words[i - 1] == "the");
        subject && !(i > 0 && ASKING_NOW.contains(&words[i - 1].as_str())) && saying_follows(&words[i + 1..])
    })
}

/// Whether a turn of these roles is the user's.
pub fn by_user(roles: &[String]) -> bool {
    roles.iter().any(|r| matches!(r.as_str(), "user" | "human"))
}

/// Whether a verb of saying opens `rest` (after at most two of [`BETWEEN`]).
fn saying_follows(rest: &[String]) -> bool {
    let skipped = rest.iter().take(2).take_while(|w| BETWEEN.contains(&w.as_str())).count();
    let Some(verb) = rest.get(skipped) else { return false };
    let next = rest.get(skipped + 1).map(String::as_str);
    match verb.as_str() {
        v if v.starts_with("bring") || v == "brought" => next == Some("up"),
        v if v.starts_with("point") => next == Some("out"),
        v => SAYING.iter().any(|s| v.starts_with(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoothing_blends_present_neighbours() {
        assert_eq!(smooth(None, Some(0.9), Some(0.9), 0.5, 0.5), None);
        assert_eq!(smooth(Some(0.4), None, None, 0.5, 0.5), Some(0.4));
        assert_eq!(smooth(Some(0.2), Some(0.8), None, 1.0, 0.5), Some(0.5));
        let both = smooth(Some(0.3), Some(0.6), Some(0.0), 0.5, 0.5).unwrap();
        assert!((both - 0.3).abs() < 1e-12);
    }

    #[test]
    fn names_speakers_not_roles() {
        let words = task_words("What did Caroline's friend Jean-Luc say to the user?");
        assert!(speaker_named(&words, "Caroline"));
        assert!(speaker_named(&words, " jean-luc "));
        assert!(!speaker_named(&words, "Melanie"));
        assert!(!speaker_named(&words, "user"));
        assert!(!speaker_named(&words, "Caroline Smith"));
        assert!(!speaker_named(&words, "--"));
    }

    #[test]
    fn tasks_about_the_users_own_words() {
        for task in [
            "Can you list the order in which I brought up the parts of my thesis?",
            "How many times did I mention my cover letter?",
            "What have I told you about my diet?",
            "What did the user say about their allergies?",
            "Which books have I already talked about?",
            "Remind me what I asked about the deployment last week",
            "What did I ask and what did you answer about the VPN?",
        ] {
            assert!(asks_own_words(task), "{task}");
        }
        for task in [
            "How did you recommend organising my submissions?",
            "Can you explain how the cache works?",
            "Should I mention my gap year in the letter?",
            "I brought my laptop to the meeting, what should I prepare?",
            "Where did I put the invoice for the bike?",
            "Can you tell me the order of the deployment steps?",
            "What did Caroline say about the camping trip?",
            "I work at Acme, what do you think?",
        ] {
            assert!(!asks_own_words(task), "{task}");
        }
        assert!(by_user(&["user".into()]) && by_user(&["human".into()]));
        assert!(!by_user(&["assistant".into()]) && !by_user(&["Caroline".into()]));
    }
}
