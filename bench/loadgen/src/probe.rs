//! What a run cost the machine: peak RSS of the sampled process, and CPU seconds per second
//! (cores) of that process, of all `postgres` processes, of this load generator, and of the
//! whole machine, all read from /proc.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Clock ticks per second of /proc/*/stat times (USER_HZ, 100 on Linux).
const HZ: f64 = 100.0;

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find(|l| l.starts_with(field))?.split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime of a process, in ticks, with its command name.
fn proc_ticks(path: &str) -> Option<(String, u64)> {
    let s = std::fs::read_to_string(path).ok()?;
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s[open + 1..close].to_string();
    let rest: Vec<&str> = s[close + 2..].split_whitespace().collect();
    // Fields 14 and 15 of stat; rest starts at field 3.
    let ut: u64 = rest.get(11)?.parse().ok()?;
    let st: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, ut + st))
}

fn postgres_ticks() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|e| proc_ticks(&format!("/proc/{}/stat", e.file_name().to_string_lossy())))
        .filter(|(comm, _)| comm == "postgres")
        .map(|(_, t)| t)
        .sum()
}

/// (busy, total) ticks of the whole machine.
fn machine_ticks() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> =
        s.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// The 1-minute load average.
pub fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

pub struct Probe {
    pid: Option<u32>,
    start: Instant,
    pid_ticks: u64,
    pg_ticks: u64,
    self_ticks: u64,
    machine: (u64, u64),
    load_start: f64,
    stop: Arc<AtomicBool>,
    max_rss_kib: Arc<AtomicU64>,
    sampler: Option<tokio::task::JoinHandle<()>>,
}

impl Probe {
    /// Resets the process's peak RSS (VmHWM) and starts sampling VmRSS every 50 ms.
    pub fn start(pid: Option<u32>) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let max_rss_kib = Arc::new(AtomicU64::new(0));
        let sampler = pid.map(|pid| {
            // "5" resets the peak RSS counter (VmHWM) to the current RSS.
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
            let (stop, max) = (stop.clone(), max_rss_kib.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(r) = status_kib(pid, "VmRSS:") {
                        max.fetch_max(r, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        });
        Probe {
            pid,
            start: Instant::now(),
            pid_ticks: pid.and_then(|p| proc_ticks(&format!("/proc/{p}/stat"))).map_or(0, |t| t.1),
            pg_ticks: postgres_ticks(),
            self_ticks: proc_ticks("/proc/self/stat").map_or(0, |t| t.1),
            machine: machine_ticks(),
            load_start: loadavg(),
            stop,
            max_rss_kib,
            sampler,
        }
    }

    /// Stops sampling; returns peak RSS and CPU use over the probe's lifetime.
    pub async fn finish(self) -> Value {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.sampler {
            let _ = s.await;
        }
        let secs = self.start.elapsed().as_secs_f64();
        let cores = |t: u64| t as f64 / HZ / secs;
        let (pid_now, hwm, rss_end) = match self.pid {
            Some(p) => (
                proc_ticks(&format!("/proc/{p}/stat")).map_or(0, |t| t.1),
                status_kib(p, "VmHWM:").unwrap_or(0),
                status_kib(p, "VmRSS:").unwrap_or(0),
            ),
            None => (0, 0, 0),
        };
        let sampled = self.max_rss_kib.load(Ordering::Relaxed);
        let (mb, mt) = machine_ticks();
        let machine_cores = (mb - self.machine.0) as f64 / ((mt - self.machine.1).max(1) as f64) * ncpu() as f64;
        json!({
            "rss_peak_mib": hwm.max(sampled) as f64 / 1024.0,
            "rss_end_mib": rss_end as f64 / 1024.0,
            "cpu_cores": {
                "mnemo": cores(pid_now.saturating_sub(self.pid_ticks)),
                "postgres": cores(postgres_ticks().saturating_sub(self.pg_ticks)),
                "loadgen": cores(proc_ticks("/proc/self/stat").map_or(0, |t| t.1).saturating_sub(self.self_ticks)),
                "machine_busy": machine_cores,
            },
            "loadavg_start": self.load_start,
            "loadavg_end": loadavg(),
        })
    }
}

fn ncpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
