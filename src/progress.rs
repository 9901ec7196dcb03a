//! Progress of long operations (export, import, re-embedding): a bar with rows, rate and ETA
//! on a terminal, plain lines on stderr otherwise. Services report through [`Progress`] and
//! never know which one they got.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Where a long operation reports how far it is.
pub trait Progress: Send + Sync {
    /// A new phase of `total` rows begins.
    fn start(&self, label: &str, total: u64);
    /// `n` more rows of the current phase are done.
    fn advance(&self, n: u64);
    /// The current phase is over.
    fn finish(&self);
}

/// Reports nothing (the HTTP handlers).
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Progress on stderr: an indicatif bar per phase on a terminal, else a line at most every few
/// seconds.
pub struct Reporter {
    terminal: bool,
    bar: Mutex<Option<ProgressBar>>,
    lines: Mutex<Lines>,
}

#[derive(Default)]
struct Lines {
    label: String,
    total: u64,
    done: u64,
    started: Option<Instant>,
    last: Option<Instant>,
}

/// How often a plain progress line is written.
const LINE_EVERY: Duration = Duration::from_secs(2);

impl Reporter {
    /// Bars when stderr is a terminal, plain lines otherwise.
    pub fn stderr() -> Reporter {
        Reporter {
            terminal: std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
            lines: Mutex::new(Lines::default()),
        }
    }

    fn with_lines(&self, f: impl FnOnce(&mut Lines)) {
        f(&mut lock(&self.lines));
    }

    fn with_bar(&self, f: impl FnOnce(&ProgressBar)) {
        if let Some(bar) = lock(&self.bar).as_ref() {
            f(bar);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A new bar: each phase gets its own line, and a finished one stays on screen.
fn new_bar(label: &str, total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{msg:>10} [{bar:30}] {human_pos}/{human_len} rows  {rate}  ETA {eta}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0} rows/s", s.per_sec());
        })
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(label.to_string());
    bar
}

impl Lines {
    fn line(&mut self, now: Instant) {
        let secs = self.started.map_or(0.0, |s| now.duration_since(s).as_secs_f64());
        let rate = if secs > 0.0 { self.done as f64 / secs } else { 0.0 };
        eprintln!("{}: {}/{} rows ({rate:.0} rows/s, {secs:.1}s)", self.label, self.done, self.total);
        self.last = Some(now);
    }
}

impl Progress for Reporter {
    fn start(&self, label: &str, total: u64) {
        if self.terminal {
            *lock(&self.bar) = Some(new_bar(label, total));
            return;
        }
        self.with_lines(|l| {
            *l = Lines { label: label.to_string(), total, started: Some(Instant::now()), ..Lines::default() };
        });
    }

    fn advance(&self, n: u64) {
        if self.terminal {
            return self.with_bar(|bar| bar.inc(n));
        }
        self.with_lines(|l| {
            l.done += n;
            let now = Instant::now();
            if l.last.is_none_or(|t| now.duration_since(t) >= LINE_EVERY) {
                l.line(now);
            }
        });
    }

    fn finish(&self) {
        if self.terminal {
            return self.with_bar(ProgressBar::finish);
        }
        self.with_lines(|l| {
            if l.started.is_some() {
                l.line(Instant::now());
            }
        });
    }
}
