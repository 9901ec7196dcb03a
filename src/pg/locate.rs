//! Finding the PostgreSQL server binaries and the account to run them as.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// The command that installs everything mnemo needs on Debian/Ubuntu.
pub const INSTALL_HINT: &str = "run `scripts/bootstrap` (installs PostgreSQL and pgvector)";

/// Finds a bin dir holding `initdb`, `pg_ctl` and `postgres`: `pg_config --bindir`, then
/// `/usr/lib/postgresql/*/bin` newest major first.
pub fn find_bindir() -> anyhow::Result<PathBuf> {
    let has_all = |d: &Path| ["initdb", "pg_ctl", "postgres"].iter().all(|b| d.join(b).is_file());
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if has_all(&dir) {
                return Ok(dir);
            }
        }
    }
    let mut candidates: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((major, e.path().join("bin")))
        })
        .filter(|(_, d)| has_all(d))
        .collect();
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    match candidates.into_iter().next() {
        Some((_, d)) => Ok(d),
        None => bail!("PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found; {INSTALL_HINT}"),
    }
}

/// The uid/gid to run Postgres as: the `postgres` account when mnemo runs as root, else none.
pub fn service_account() -> anyhow::Result<Option<(u32, u32)>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let user = nix::unistd::User::from_name("postgres")
        .context("looking up the postgres account")?
        .context("PostgreSQL refuses to run as root and there is no `postgres` account; run `scripts/bootstrap` or run mnemo as a normal user")?;
    Ok(Some((user.uid.as_raw(), user.gid.as_raw())))
}

/// True when every ancestor of `dir` lets an unrelated account pass through (o+x).
pub fn traversable_by_others(dir: &Path) -> bool {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        match std::fs::metadata(d) {
            Ok(m) if m.permissions().mode() & 0o001 != 0 => {}
            Ok(_) => return false,
            Err(_) => {} // not created yet: its parent decides
        }
        cur = d.parent();
    }
    true
}
