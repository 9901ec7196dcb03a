//! `mnemo eval FILE`: the recall protocol of [`crate::eval`] on a dataset, against a running
//! server (`--url`) or one it starts for the run on a fresh embedded Postgres.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Args;

use crate::eval::formats::{self, Format};
use crate::eval::run::{run, Target};

/// `mnemo eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The dataset: mnemo JSONL (one conversation a line), LoCoMo or BEAM JSON.
    pub file: PathBuf,
    /// The dataset's format (detected from the file when unset).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// A running server to evaluate (unset: start one for the run on a fresh embedded Postgres
    /// in a temporary directory, with the default embedder, and stop it after).
    #[arg(long, env = "MNEMO_EVAL_URL")]
    pub url: Option<String>,
    /// The API key for `--url`.
    #[arg(long, env = "MNEMO_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Token budgets to ask each question at.
    #[arg(long, value_delimiter = ',', default_value = "1000,2000,4000")]
    pub budgets: Vec<usize>,
    /// Only these conversations (by id; comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Subjects are named `<prefix><conversation id>`; the default is unique to the run, so runs
    /// against one server never mix.
    #[arg(long)]
    pub subject_prefix: Option<String>,
    /// Also write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also write the report as a self-contained HTML page here.
    #[arg(long)]
    pub html: Option<PathBuf>,
}

/// Runs the evaluation and prints the report.
pub fn eval(args: EvalArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file).with_context(|| args.file.display().to_string())?;
    let mut conversations = formats::read(&text, args.format).with_context(|| args.file.display().to_string())?;
    if !args.only.is_empty() {
        conversations.retain(|c| args.only.contains(&c.id));
    }
    if conversations.is_empty() {
        bail!("no conversation to evaluate");
    }
    if args.budgets.is_empty() || args.budgets.contains(&0) {
        bail!("--budgets takes token budgets of at least 1");
    }
    let mut server = None;
    let url = match &args.url {
        Some(u) => u.clone(),
        None => {
            let s = Embedded::start()?;
            let url = s.url.clone();
            server = Some(s);
            url
        }
    };
    let run_id = ulid::Ulid::new().to_string().to_lowercase();
    let target = Target {
        url,
        api_key: args.api_key.clone(),
        subject_prefix: args.subject_prefix.clone().unwrap_or_else(|| format!("eval:{run_id}:")),
        budgets: args.budgets.clone(),
    };
    let bar = indicatif::ProgressBar::new(0);
    let result = run(&target, &conversations, &bar);
    drop(server);
    let tally = result?;
    print!("{}", tally.text());
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&tally.json())? + "\n")?;
    }
    if let Some(path) = &args.html {
        let title =
            format!("mnemo eval: {}", args.file.file_name().map_or_else(String::new, |n| n.to_string_lossy().into()));
        std::fs::write(path, tally.html(&title))?;
    }
    Ok(())
}

/// A `mnemo serve` child on a fresh embedded Postgres in a temporary directory; stopped (and
/// its directory removed) when dropped.
struct Embedded {
    child: Child,
    dir: PathBuf,
    url: String,
}

impl Embedded {
    fn start() -> anyhow::Result<Embedded> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = std::env::temp_dir().join(format!("mnemo-eval-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir)?;
        // The model files a server finds under its data dir: those of the data dir `mnemo serve`
        // would use here (MNEMO_DATA_DIR, else ./.mnemo), when present.
        let data_dir = std::env::var_os("MNEMO_DATA_DIR").map_or_else(|| PathBuf::from(".mnemo"), PathBuf::from);
        let models = data_dir.join("models");
        if models.is_dir() {
            std::os::unix::fs::symlink(std::fs::canonicalize(&models)?, dir.join("models")).ok();
        }
        let child = Command::new(std::env::current_exe()?)
            .arg("serve")
            .env("MNEMO_ADDR", format!("127.0.0.1:{port}"))
            .env("MNEMO_DATA_DIR", &dir)
            .env_remove("MNEMO_DATABASE_URL")
            .env_remove("MNEMO_API_KEY")
            .stdout(std::process::Stdio::null())
            .spawn()
            .context("starting mnemo serve")?;
        let mut server = Embedded { child, dir, url: format!("http://127.0.0.1:{port}") };
        let started = Instant::now();
        loop {
            if ureq::get(&format!("{}/healthz", server.url)).timeout(Duration::from_secs(2)).call().is_ok() {
                return Ok(server);
            }
            if let Some(status) = server.child.try_wait()? {
                bail!("mnemo serve exited ({status}) before it answered");
            }
            if started.elapsed() > Duration::from_secs(600) {
                bail!("mnemo serve did not answer within 10 minutes");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        // SIGTERM: the server drains and stops its embedded Postgres.
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(60) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new(std::env::current_exe().unwrap_or_else(|_| "mnemo".into()))
            .args(["pg", "stop", "--data-dir"])
            .arg(&self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
