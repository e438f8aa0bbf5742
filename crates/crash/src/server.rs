//! The server under test: its process, its port, samples of what it was doing before a
//! kill, its stderr (and the recovery report in it).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use tokio_postgres::Client;

/// A `permafrost serve` process.
pub(super) struct Server {
    pub(super) child: Child,
    pub(super) port: u16,
    pub(super) started: Instant,
}

impl Server {
    pub(super) fn kill(&mut self) {
        // SIGKILL: no shutdown of any kind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(super) fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One of the server's samples.
#[derive(Debug, Clone, Default)]
pub(super) struct Sample {
    pub(super) at: Option<Instant>,
    pub(super) evictions: u64,
    pub(super) unevicted: u64,
    pub(super) cold: u64,
    pub(super) segments: u64,
}

/// The server's data directory layout.
fn layout(dir: &Path) -> permafrost_executor::datadir::Layout {
    permafrost_executor::datadir::Layout {
        root: dir.to_path_buf(),
    }
}

/// Whether a snapshot is being written: a `.tmp` snapshot file changed in the last 200 ms.
pub(super) fn snapshot_tmp_fresh(dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(layout(dir).snapshots()) else {
        return false;
    };
    rd.flatten().any(|e| {
        e.file_name().to_str().is_some_and(|n| n.ends_with(".tmp"))
            && e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|d| d < Duration::from_millis(200)))
    })
}

/// The log's segment files and their bytes.
pub(super) fn log_files(dir: &Path) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    if let Ok(rd) = std::fs::read_dir(layout(dir).command_log()) {
        for e in rd.flatten() {
            if e.file_name().to_str().is_some_and(|n| n.ends_with(".log")) {
                n += 1;
                bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    (n, bytes)
}

pub(super) async fn sample(admin: &Client, dir: &Path) -> Option<Sample> {
    let rows = admin.query("SELECT * FROM permafrost_stats", &[]).await.ok()?;
    let get = |name: &str| {
        rows.iter()
            .filter(|r| r.get::<_, String>(0) == name)
            .map(|r| r.get::<_, f64>(2))
            .sum::<f64>() as u64
    };
    let (segments, _) = log_files(dir);
    Some(Sample {
        at: Some(Instant::now()),
        evictions: get("permafrost_evictions_total"),
        unevicted: get("permafrost_unevicted_tuples_total"),
        cold: get("permafrost_cold_tuples"),
        segments,
    })
}

/// The last lines of the server's stderr.
pub(super) fn log_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text[text.len().saturating_sub(4000)..]).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n    ")
}

/// The server's stderr from `offset` on.
pub(super) fn log_since(path: &Path, offset: u64) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path)
        && f.seek(SeekFrom::Start(offset)).is_ok()
    {
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        s = String::from_utf8_lossy(&buf).into_owned();
    }
    s
}

/// Recovery figures from the server's stderr (its recovery report line).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Recovered {
    pub(super) records: u64,
    /// How long replaying took, when anything was replayed.
    pub(super) seconds: Option<f64>,
    pub(super) torn: bool,
    /// A snapshot was loaded; the base it needed (0: none).
    pub(super) snapshot: bool,
    pub(super) base: u64,
}

pub(super) fn parse_recovery(text: &str) -> Recovered {
    let Some(r) = permafrost_executor::RecoveryReport::from_lines(text) else {
        return Recovered::default();
    };
    Recovered {
        records: r.records,
        seconds: (r.records > 0).then_some(r.seconds),
        torn: r.torn_tail.is_some(),
        snapshot: r.snapshot.is_some(),
        base: r.snapshot.map_or(0, |s| s.base_epoch),
    }
}
