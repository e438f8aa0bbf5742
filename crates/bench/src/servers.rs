//! The servers an experiment compares: Permafrost (`permafrost serve`), MariaDB and
//! memcached, each started by this process in a memory cgroup of the size the experiment
//! gives, on loopback or a unix socket, and stopped by its process id.
//!
//! The cgroup holds the server's whole footprint: its heap, and the page cache its reads
//! and writes fill (the kernel charges a cgroup for the pages its tasks bring in). Both
//! cgroup versions are supported: v1 (`/sys/fs/cgroup/memory/<name>`) and v2
//! (`/sys/fs/cgroup/<name>`, with the memory controller enabled at the root). Creating a
//! cgroup needs root, as MariaDB does when it is started as root here.

use std::io::Read;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::BenchError;

const V1_ROOT: &str = "/sys/fs/cgroup/memory";
const V2_ROOT: &str = "/sys/fs/cgroup";

/// How long a server may take to accept connections after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// How long a server may take to end after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(120);

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> BenchError {
    move |e| BenchError::Io(std::io::Error::new(e.kind(), format!("{what}: {e}")))
}

/// A memory cgroup, removed when dropped (after the processes in it ended).
pub struct Cgroup {
    dir: PathBuf,
    v2: bool,
}

impl Cgroup {
    /// Creates the cgroup `name` (emptied of an earlier one's limit) with a limit of
    /// `limit` bytes and no swap.
    pub fn create(name: &str, limit: u64) -> Result<Cgroup, BenchError> {
        let v1 = Path::new(V1_ROOT);
        let cg = if v1.is_dir() {
            Cgroup {
                dir: v1.join(name),
                v2: false,
            }
        } else if Path::new(V2_ROOT).join("cgroup.controllers").is_file() {
            let controllers =
                std::fs::read_to_string(Path::new(V2_ROOT).join("cgroup.subtree_control")).unwrap_or_default();
            if !controllers.split_whitespace().any(|c| c == "memory") {
                return Err(BenchError::Options(format!(
                    "the memory controller is not enabled for {V2_ROOT}'s children (echo +memory > {V2_ROOT}/cgroup.subtree_control)"
                )));
            }
            Cgroup {
                dir: Path::new(V2_ROOT).join(name),
                v2: true,
            }
        } else {
            return Err(BenchError::Options(format!(
                "no memory cgroup hierarchy at {V1_ROOT} or {V2_ROOT}: the servers cannot be held to the same budget"
            )));
        };
        // One an interrupted run left (empty, or its processes are gone) is replaced.
        let _ = std::fs::remove_dir(&cg.dir);
        std::fs::create_dir_all(&cg.dir).map_err(io_err(format!(
            "cannot create the cgroup {} (it needs root)",
            cg.dir.display()
        )))?;
        if cg.v2 {
            cg.write("memory.max", limit)?;
            let _ = cg.write("memory.swap.max", 0);
        } else {
            cg.write("memory.limit_in_bytes", limit)?;
            let _ = cg.write("memory.swappiness", 0);
        }
        Ok(cg)
    }

    fn write(&self, file: &str, value: u64) -> Result<(), BenchError> {
        let path = self.dir.join(file);
        std::fs::write(&path, value.to_string()).map_err(io_err(format!("cannot write {value} to {}", path.display())))
    }

    fn read(&self, file: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(file)).ok()
    }

    /// The file a process id is written to, to move that process into the cgroup.
    fn procs_file(&self) -> PathBuf {
        self.dir.join(if self.v2 { "cgroup.procs" } else { "tasks" })
    }

    /// The most memory the cgroup held since it was created or since [`Cgroup::reset_peak`].
    pub fn peak_bytes(&self) -> Option<u64> {
        let file = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        self.read(file)?.trim().parse().ok()
    }

    /// Starts the peak anew (v1 only: v2's `memory.peak` cannot be reset before Linux 6.12).
    pub fn reset_peak(&self) {
        if !self.v2 {
            let _ = self.write("memory.max_usage_in_bytes", 0);
        }
    }

    /// Processes the kernel killed for the cgroup's limit.
    pub fn oom_kills(&self) -> u64 {
        let file = if self.v2 { "memory.events" } else { "memory.oom_control" };
        self.read(file)
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("oom_kill ").and_then(|v| v.trim().parse().ok()))
            })
            .unwrap_or(0)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The kernel refuses while a process is still in it; the processes were stopped
        // before, but their exit may take a moment to reach the cgroup.
        for _ in 0..20 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// A server process, stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Process {
    name: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Process {
    /// Starts `program args` in `cgroup` (moved into it before it runs anything: a shell
    /// writes its own id to the cgroup and then executes the program), its output appended
    /// to `log`.
    pub fn spawn(
        name: &str,
        cgroup: &Cgroup,
        program: &Path,
        args: &[String],
        log: &Path,
    ) -> Result<Process, BenchError> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io_err(format!("cannot open {}", log.display())))?;
        let err = out.try_clone()?;
        let mut cmd = Command::new("/bin/sh");
        // SAFETY: between fork and exec the child makes only async-signal-safe calls
        // (`prctl`, `getppid`) about itself, and touches no memory of the parent's.
        let parent = unsafe { libc::getpid() };
        unsafe {
            cmd.pre_exec(move || {
                // The server ends (SIGTERM: its orderly shutdown) when this process does,
                // even killed: no server outlives an interrupted experiment. The signal
                // follows the spawning thread, which is the experiment's own.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("the experiment ended while its server started"));
                }
                Ok(())
            });
        }
        let child = cmd
            .arg("-c")
            .arg("echo $$ > \"$0\" && exec \"$@\"")
            .arg(cgroup.procs_file())
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(io_err(format!("cannot start {name} ({})", program.display())))?;
        Ok(Process {
            name: name.to_string(),
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// An error if the process has ended, with the end of its log.
    pub fn check_running(&mut self) -> Result<(), BenchError> {
        let status = match self.child.as_mut() {
            Some(c) => c.try_wait()?,
            None => None,
        };
        match status {
            None => Ok(()),
            Some(s) => Err(BenchError::Client(format!(
                "{} ended ({s}); the end of its log ({}):\n{}",
                self.name,
                self.log.display(),
                self.log_tail(8)
            ))),
        }
    }

    /// The last `lines` lines of the process's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Stops the process by its id: SIGTERM, and SIGKILL if it has not ended in
    /// [`STOP_TIMEOUT`]. Stopping a process that ended is a no-op.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        // Our own child, not yet reaped: its id is still its own.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .stderr(Stdio::null())
            .status();
        let start = Instant::now();
        while start.elapsed() < STOP_TIMEOUT {
            if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where `name` is installed: on the PATH, or in /usr/sbin (MariaDB's server, which a
/// non-login PATH may lack).
pub fn program(name: &str, package: &str) -> Result<PathBuf, BenchError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            BenchError::Options(format!(
                "{name} is not installed (Debian package {package}: apt-get install {package}; scripts/paper.sh installs it)"
            ))
        })
}

/// A free TCP port on loopback (free when asked: the server binds it a moment later).
pub fn free_port() -> Result<u16, BenchError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Waits until `ready` says yes, failing if the process ends or [`START_TIMEOUT`] passes.
fn wait_ready(p: &mut Process, mut ready: impl FnMut() -> bool) -> Result<(), BenchError> {
    let start = Instant::now();
    loop {
        p.check_running()?;
        if ready() {
            return Ok(());
        }
        if start.elapsed() > START_TIMEOUT {
            return Err(BenchError::Client(format!(
                "{} did not accept connections in {}s; the end of its log:\n{}",
                p.name,
                START_TIMEOUT.as_secs(),
                p.log_tail(8)
            )));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `permafrost serve` (the binary `binary`) on 127.0.0.1:`port` with its built-in defaults
/// (command log sync) and `--memory-limit memory_limit`, its data in `dir`.
pub fn permafrost(
    binary: &Path,
    dir: &Path,
    memory_limit: u64,
    port: u16,
    cgroup: &Cgroup,
) -> Result<Process, BenchError> {
    std::fs::create_dir_all(dir)?;
    let args: Vec<String> = [
        "serve",
        "--data-dir",
        &dir.join("data").to_string_lossy(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--metrics-listen",
        "off",
        "--memory-limit",
        &memory_limit.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut p = Process::spawn("permafrost", cgroup, binary, &args, &dir.join("server.log"))?;
    wait_ready(&mut p, || TcpStream::connect(("127.0.0.1", port)).is_ok())?;
    Ok(p)
}

/// MariaDB (InnoDB) with its data in `dir`: a buffer pool of `pool` bytes, O_DIRECT, the
/// log flushed at every commit, no TCP (its socket `dir/sock`), and a database `database`.
/// Returns the process and the URL a client connects with.
pub fn mariadb(dir: &Path, pool: u64, database: &str, cgroup: &Cgroup) -> Result<(Process, String), BenchError> {
    let install = program("mariadb-install-db", "mariadb-server")?;
    let server = program("mariadbd", "mariadb-server")?;
    std::fs::create_dir_all(dir)?;
    let data = dir.join("data");
    let out = Command::new(&install)
        .arg("--user=root")
        .arg(format!("--datadir={}", data.display()))
        .arg("--auth-root-authentication-method=normal")
        .output()
        .map_err(io_err(format!("cannot run {}", install.display())))?;
    if !out.status.success() {
        return Err(BenchError::Client(format!(
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        )));
    }
    let sock = dir.join("sock");
    // The buffer pool in MiB (MariaDB rounds it to its chunk size).
    let pool_mib = (pool >> 20).max(8);
    let args: Vec<String> = vec![
        "--user=root".into(),
        format!("--datadir={}", data.display()),
        format!("--socket={}", sock.display()),
        format!("--pid-file={}", dir.join("pid").display()),
        "--skip-networking".into(),
        format!("--innodb-buffer-pool-size={pool_mib}M"),
        "--innodb-flush-method=O_DIRECT".into(),
        "--innodb-flush-log-at-trx-commit=1".into(),
        "--innodb-log-file-size=256M".into(),
        "--aria-pagecache-buffer-size=8M".into(),
        "--key-buffer-size=8M".into(),
        "--max-connections=500".into(),
        "--performance-schema=OFF".into(),
        format!("--log-error={}", dir.join("err.log").display()),
    ];
    let mut p = Process::spawn("mariadb", cgroup, &server, &args, &dir.join("server.log"))?;
    p.log = dir.join("err.log");
    let base = format!("mysql://root@localhost/?socket={}", sock.display());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    wait_ready(&mut p, || rt.block_on(crate::mariadb::connect(&base)).is_ok())?;
    rt.block_on(async {
        let mut c = crate::mariadb::connect(&base).await?;
        crate::mariadb::exec_all(&mut c, [format!("CREATE DATABASE IF NOT EXISTS {database}")]).await
    })?;
    Ok((
        p,
        format!("mysql://root@localhost/{database}?socket={}", sock.display()),
    ))
}

/// memcached with `memory` bytes of cache on the unix socket `sock`.
pub fn memcached(sock: &Path, memory: u64, log: &Path, cgroup: &Cgroup) -> Result<Process, BenchError> {
    let server = program("memcached", "memcached")?;
    let _ = std::fs::remove_file(sock);
    let args: Vec<String> = vec![
        "-u".into(),
        "root".into(),
        "-s".into(),
        sock.display().to_string(),
        "-a".into(),
        "0700".into(),
        "-m".into(),
        (memory >> 20).max(1).to_string(),
        "-t".into(),
        "2".into(),
        "-c".into(),
        "1024".into(),
    ];
    let mut p = Process::spawn("memcached", cgroup, &server, &args, log)?;
    wait_ready(&mut p, || std::os::unix::net::UnixStream::connect(sock).is_ok())?;
    Ok(p)
}
