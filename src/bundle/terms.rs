//! Turning a task into a full-text query: its content words, OR-ed, for Postgres' english
//! configuration (which stems them, so "working" finds "works").

use std::collections::BTreeSet;
use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Days, NaiveDate, Utc};
use regex::Regex;

/// Words too common to say what a task is about.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "get", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "know", "me", "my", "need", "of", "on", "or", "our", "please", "she", "should",
    "so", "tell", "that", "the", "their", "them", "then", "there", "they", "this", "to", "us", "user", "user's",
    "users", "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would",
    "you", "your", "help", "want", "think",
];

/// The content words of a task, lower-cased, de-duplicated, in sorted order.
pub fn content_words(task: &str) -> Vec<String> {
    let words: BTreeSet<String> = task
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 2 && !STOPWORDS.contains(&w.as_str()))
        .collect();
    words.into_iter().collect()
}

/// Words that ask about many moments of a history at once (their order, a summary, how
/// something went over time), as the starts of words; and pairs of words that do.
const SPANNING_WORDS: &[&str] = &[
    "chronolog",
    "evolution",
    "evolv",
    "overview",
    "progress",
    "recap",
    "sequence",
    "summar",
    "throughout",
    "timeline",
];
const SPANNING_PAIRS: &[[&str; 2]] =
    &[["over", "time"], ["so", "far"], ["across", "our"], ["across", "the"], ["all", "the"], ["each", "step"]];

/// Whether a task asks about many moments of the subject's history at once: the order in which
/// things happened, a summary of progress, what changed over time. A bundle for such a task
/// shows many short pieces rather than a few long ones. "Order" counts as the noun of a
/// sequence ("the order in which", "in what order"), not as a verb or "in order to".
pub fn spans_history(task: &str) -> bool {
    let words: Vec<String> =
        task.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let before = |i: usize, any: &[&str]| i > 0 && any.contains(&words[i - 1].as_str());
    let after = |i: usize, any: &[&str]| words.get(i + 1).is_some_and(|n| any.contains(&n.as_str()));
    let spanning = |i: usize| {
        let w = words[i].as_str();
        if w == "order" {
            return before(i, &["the", "what", "which", "chronological", "right", "correct"]) && !after(i, &["to"])
                || after(i, &["of", "in"]) && !before(i, &["in"]);
        }
        SPANNING_WORDS.iter().any(|s| w.starts_with(s))
    };
    (0..words.len()).any(spanning)
        || words.windows(2).any(|p| SPANNING_PAIRS.iter().any(|[a, b]| p[0] == *a && p[1] == *b))
}

/// Month names, in order.
const MONTH_NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Weekday names. With the months: capitalised, but they say when, not who (dates have their
/// own signal, and the embedder reads them well).
const WEEKDAY_NAMES: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// The task as the embedder reads it: without the names in it (capitalised words that do not
/// open a sentence, possessives included), which the lexical lane and the speaker signal match
/// exactly. A small sentence embedder lets a name dominate a short question ("What does Maria
/// do to relax?" lies closest to every turn that greets Maria), so the cosine would measure
/// who is talked about rather than what. The task is kept whole when it is mostly capitalised
/// (a title) or when fewer than two content words would remain.
pub fn embedding_text(task: &str) -> std::borrow::Cow<'_, str> {
    let words: Vec<&str> = task.split_whitespace().collect();
    let mut kept: Vec<String> = Vec::with_capacity(words.len());
    let mut names = 0;
    let mut sentence_start = true;
    for w in &words {
        let core = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
        let core = core.strip_suffix("'s").or_else(|| core.strip_suffix("’s")).unwrap_or(core);
        let name = !sentence_start && is_name(core);
        sentence_start = w.ends_with(['.', '!', '?', ':', ';']);
        if name {
            names += 1;
            // the sentence's punctuation stays ("… with Gina?" keeps its question mark)
            let tail = w.trim_end_matches(['.', '!', '?', ',', ';', ':']);
            if let (Some(last), true) = (kept.last_mut(), tail.len() < w.len()) {
                *last = format!("{last}{}", &w[tail.len()..]);
            }
        } else {
            kept.push((*w).to_string());
        }
    }
    let rest = kept.join(" ");
    if names == 0 || 2 * names > words.len() || content_words(&rest).len() < 2 {
        return std::borrow::Cow::Borrowed(task);
    }
    std::borrow::Cow::Owned(rest)
}

/// A capitalised word with lower-case letters after its first ("Maria", "O'Neil"), not a
/// calendar word; acronyms ("API", "LGBTQ") and "I" are not names here.
fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    let Some(first) = chars.next() else { return false };
    let rest: Vec<char> = chars.collect();
    first.is_uppercase() && rest.iter().any(|c| c.is_lowercase()) && {
        let lower = word.to_lowercase();
        !MONTH_NAMES.contains(&lower.as_str()) && !WEEKDAY_NAMES.contains(&lower.as_str())
    }
}

/// A `to_tsquery` expression OR-ing the task's content words, or None when it has none.
/// Only alphanumeric words reach the expression, so it cannot be malformed.
pub fn tsquery_for(task: &str) -> Option<String> {
    let words = content_words(task);
    (!words.is_empty()).then(|| words.join(SEPARATOR))
}

/// Between two words of [`tsquery_for`]'s expression.
const SEPARATOR: &str = " | ";

/// The content words an expression of [`tsquery_for`] OR-s, in its order.
pub fn words_of(tsquery: &str) -> Vec<String> {
    tsquery.split(SEPARATOR).map(str::to_string).collect()
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

static ISO: LazyLock<Regex> = LazyLock::new(|| crate::patterns::regex(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"));
static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    crate::patterns::regex(r"(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]{3,9})\.?,?\s+(\d{4})\b")
});
static MONTH_DAY: LazyLock<Regex> =
    LazyLock::new(|| crate::patterns::regex(r"(?i)\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b"));
static RELATIVE: LazyLock<Regex> = LazyLock::new(|| crate::patterns::regex(r"(?i)\b(today|yesterday)\b"));

fn month_number(name: &str) -> Option<u32> {
    let lower = name.to_lowercase();
    let prefix: String = lower.chars().take(3).collect();
    let full = MONTH_NAMES;
    let i = MONTHS.iter().position(|m| *m == prefix)?;
    // "mar" and "march" count, "marble" does not.
    (lower.len() <= 4 || full[i].starts_with(&lower)).then_some(i as u32 + 1)
}

/// Calendar dates a task mentions (ISO, "2 March 2026", "March 2, 2026", today, yesterday),
/// resolved against `as_of` for the relative ones; sorted, without duplicates.
pub fn task_dates(task: &str, as_of: DateTime<Utc>) -> Vec<NaiveDate> {
    let mut out = BTreeSet::new();
    for c in ISO.captures_iter(task) {
        let (y, m, d) = (c[1].parse().ok(), c[2].parse().ok(), c[3].parse().ok());
        if let (Some(y), Some(m), Some(d)) = (y, m, d) {
            out.extend(NaiveDate::from_ymd_opt(y, m, d));
        }
    }
    for (re, day_i, month_i) in [(&*DAY_MONTH, 1, 2), (&*MONTH_DAY, 2, 1)] {
        for c in re.captures_iter(task) {
            let d = c[day_i].parse().ok();
            let m = month_number(&c[month_i]);
            let y = c[3].parse().ok();
            if let (Some(y), Some(m), Some(d)) = (y, m, d) {
                out.extend(NaiveDate::from_ymd_opt(y, m, d));
            }
        }
    }
    let today = as_of.date_naive();
    for c in RELATIVE.captures_iter(task) {
        let day = if c[1].eq_ignore_ascii_case("today") { Some(today) } else { today.checked_sub_days(Days::new(1)) };
        out.extend(day);
    }
    out.into_iter().filter(|d| d.year() > 1900).collect()
}

static MONTH_YEAR: LazyLock<Regex> = LazyLock::new(|| crate::patterns::regex(r"(?i)\b([a-z]{3,9})\.?,?\s+(\d{4})\b"));
static IN_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    crate::patterns::regex(r"\b(?:[Ii]n|[Dd]uring|[Oo]f|[Ss]ince|[Bb]efore|[Aa]fter)\s+([A-Z][a-z]{2,8})\b")
});

/// A month a task names: "May 2023" (with its year) or "in June" (any year).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NamedMonth {
    /// The year, when the task gives one.
    pub year: Option<i32>,
    /// 1-12.
    pub month: u32,
}

impl NamedMonth {
    /// Whether `date` falls in this month.
    pub fn contains(&self, date: NaiveDate) -> bool {
        date.month() == self.month && self.year.is_none_or(|y| y == date.year())
    }
}

/// Months a task names without a day: "in May 2023", "May, 2023", and a capitalised month name
/// after "in", "during", "of", "since", "before" or "after" ("camping in June"). A full date
/// ("8 May 2023") also names its month. Sorted, without duplicates.
pub fn task_months(task: &str) -> Vec<NamedMonth> {
    let mut out = BTreeSet::new();
    {
        for c in MONTH_YEAR.captures_iter(task) {
            if let (Some(month), Ok(year)) = (month_number(&c[1]), c[2].parse::<i32>()) {
                if year > 1900 {
                    out.insert(NamedMonth { year: Some(year), month });
                }
            }
        }
    }
    {
        for c in IN_MONTH.captures_iter(task) {
            // Bare "May" is too often the verb; it counts only with a year.
            if c[1].eq_ignore_ascii_case("may") {
                continue;
            }
            if let Some(month) = month_number(&c[1]) {
                if !out.iter().any(|m: &NamedMonth| m.month == month) {
                    out.insert(NamedMonth { year: None, month });
                }
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_about_many_moments_are_told_from_tasks_about_one() {
        for task in [
            "Can you list the order in which I brought up the parts of the app?",
            "Give me a summary of how the thesis went",
            "Summarize our discussions about the garden",
            "How has my training plan evolved?",
            "What progress did we make on the migration over time?",
            "Walk me through the timeline of the move",
            "What did I ask about across our conversations?",
            "Recap everything so far",
        ] {
            assert!(spans_history(task), "{task}");
        }
        for task in [
            "What port does the API listen on?",
            "In order to deploy, which flag do I need?",
            "Which database did I order the migration to use?",
            "I ordered a new keyboard, when does it arrive?",
            "What is my sister's name?",
            "How do I fix the timeout error in the worker?",
        ] {
            assert!(!spans_history(task), "{task}");
        }
    }

    #[test]
    fn the_words_of_an_expression_are_the_content_words_it_was_made_of() {
        for task in ["Where does the user work now?", "kafka consumer lag (request 214)", "x"] {
            let words = super::content_words(task);
            match super::tsquery_for(task) {
                Some(q) => assert_eq!(super::words_of(&q), words, "{task}"),
                None => assert!(words.is_empty(), "{task}"),
            }
        }
    }

    #[test]
    fn embedding_text_leaves_names_to_the_other_signals() {
        assert_eq!(embedding_text("What activities does Melanie partake in?"), "What activities does partake in?");
        assert_eq!(
            embedding_text("Where did Caroline's grandma give her the necklace?"),
            "Where did grandma give her the necklace?"
        );
        // sentence starts, acronyms, "I", months and weekdays stay
        assert_eq!(
            embedding_text("Did I deploy the API in May? Maria said the LGBTQ event moved to Friday"),
            "Did I deploy the API in May? Maria said the LGBTQ event moved to Friday"
        );
        assert_eq!(embedding_text("When did Jon visit Rome with his sister Gina?"), "When did visit with his sister?");
        assert_eq!(embedding_text("When did Jon visit Rome?"), "When did Jon visit Rome?");
        // nothing left to embed, or a title: the task stays whole
        assert_eq!(embedding_text("Tell me about Sweden"), "Tell me about Sweden");
        assert_eq!(embedding_text("Deploy The Payment Service"), "Deploy The Payment Service");
        assert_eq!(embedding_text("which editor do I use?"), "which editor do I use?");
    }

    #[test]
    fn finds_dates_in_tasks() {
        let as_of = DateTime::parse_from_rfc3339("2026-03-10T12:00:00Z").unwrap().with_timezone(&Utc);
        let d = |y, m, dd| NaiveDate::from_ymd_opt(y, m, dd).unwrap();
        assert_eq!(task_dates("What happened on 2026-03-02?", as_of), vec![d(2026, 3, 2)]);
        assert_eq!(task_dates("on 2 March 2026 and March 4th, 2026", as_of), vec![d(2026, 3, 2), d(2026, 3, 4)]);
        assert_eq!(task_dates("what did we discuss yesterday", as_of), vec![d(2026, 3, 9)]);
        assert!(task_dates("the marble 12 2026 thing", as_of).is_empty());
        assert!(task_dates("2026-13-40", as_of).is_empty());
    }

    #[test]
    fn finds_months_in_tasks() {
        let m = |year, month| NamedMonth { year, month };
        assert_eq!(task_months("What did she do in July 2023?"), vec![m(Some(2023), 7)]);
        assert_eq!(task_months("on 1 February, 2023"), vec![m(Some(2023), 2)]);
        assert_eq!(task_months("When did he go camping in June?"), vec![m(None, 6)]);
        assert_eq!(task_months("in June 2023 and again in June"), vec![m(Some(2023), 6)]);
        assert!(task_months("May I ask what happened in May?").is_empty());
        assert!(task_months("the marble 2026 thing, in junes").is_empty());
        let june = m(None, 6);
        assert!(june.contains(NaiveDate::from_ymd_opt(2021, 6, 3).unwrap()));
        assert!(!m(Some(2023), 6).contains(NaiveDate::from_ymd_opt(2021, 6, 3).unwrap()));
    }

    #[test]
    fn builds_an_or_query_of_content_words() {
        assert_eq!(tsquery_for("Where does the user work?").as_deref(), Some("work"));
        assert_eq!(tsquery_for("What is the name of the user's dog?").as_deref(), Some("dog | name"));
        assert_eq!(tsquery_for("what is it?"), None);
        assert_eq!(tsquery_for("a&b | c:* ! (x)"), None, "operators never reach the query");
        assert_eq!(tsquery_for("Paris 2026"), Some("2026 | paris".into()));
    }
}
