//! Pure signals the bundle derives from a conversation's shape rather than from one item:
//! a turn's similarity smoothed with its neighbours', and speakers a task names.

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
}
