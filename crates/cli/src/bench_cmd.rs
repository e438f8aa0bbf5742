//! `permafrost bench ...`: the workloads' flags and running them.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use permafrost_bench::setup::{DataDir, Open};
use permafrost_bench::way::Mode;
use permafrost_bench::ycsb::{self, Mix, YcsbOptions};
use permafrost_bench::{tatp, tpcc, voter};
use permafrost_executor::settings::DbSettings;
use permafrost_executor::{Database, parse_size};

use crate::config_file::ConfigFile;
use crate::serve::parse_duration_arg;
use crate::settings::{BenchEngine, Flags};

#[derive(Subcommand)]
pub(crate) enum Workload {
    /// YCSB: point reads and updates of one table with Zipfian skew.
    Ycsb(Box<YcsbArgs>),
    /// TPC-C over the PostgreSQL wire protocol against Permafrost or any server that speaks
    /// it: the specification's tables and population, its five transactions in the full mix
    /// as interactive transactions (one statement per round trip), no think times, and its
    /// consistency conditions checked after the run.
    Tpcc(Box<TpccArgs>),
    /// Voter, H-Store's phone-in election: one short transaction per call that checks the
    /// contestant and the caller's vote limit and records the vote, embedded (default) or
    /// over the wire (one CALL, or an interactive transaction, per vote), its invariants
    /// checked after the run.
    Voter(Box<VoterArgs>),
    /// TATP, the telecom benchmark as H-Store runs it: subscribers, their access data,
    /// special facilities and call forwardings, seven short transactions routed by the
    /// subscriber (35/10/35/2/14/2/2), embedded (default) or over the wire (one CALL, or an
    /// interactive transaction, each), its invariants checked after the run.
    Tatp(Box<TatpArgs>),
    /// The disk under the data directory: sequential writes and random reads per block
    /// size, through the anti-cache's I/O path.
    Device(DeviceArgs),
    /// A series of YCSB runs in one process, written as JSON and a PNG chart: fig8 (merge
    /// policies), fig9a (block sizes), fig10 (access tracking), compare (anti-cache
    /// against in-memory, the judged ratios).
    Experiment(Box<ExperimentArgs>),
    /// Kill-and-restart: runs `permafrost serve` (command log sync) under a concurrent
    /// workload, kills it with SIGKILL at random moments, restarts it on its data directory
    /// and checks that every acknowledged change came back and that no transfer was
    /// applied in part.
    Crash(Box<CrashArgs>),
    /// Restart cost: loads YCSB records, takes a snapshot, runs updates after it, closes
    /// the database and times its recovery (snapshot load, then log replay).
    Recovery(RecoveryArgs),
    /// A PostgreSQL-protocol server that does no work: every query gets one canned row,
    /// from a blocking thread per connection. What a client reaches against it is the
    /// most any server can reach on this machine (`scripts/sysbench-cpu.sh`, system
    /// `floor`). Loopback addresses only; runs until stopped.
    WireFloor(WireFloorArgs),
}

/// The flags the seeds' benchmarks (TPC-C, Voter) share: where and how they run.
#[derive(Args, Debug)]
pub(crate) struct SeedArgs {
    /// What to run against: embedded (the stored procedures called in this process, with
    /// the engine flags below), server=HOST:PORT (Permafrost's `permafrost serve`, or
    /// PostgreSQL, over the PostgreSQL protocol) or mariadb=URL (MariaDB through its own
    /// driver, e.g. mysql://root@localhost/db?socket=/path). A server's socket directory
    /// serves as HOST (server=/run/postgresql:5432).
    #[arg(long, default_value = "embedded")]
    pub(crate) target: String,
    /// Over the wire: interactive (BEGIN, one statement per round trip, COMMIT) or
    /// procedures (one call of a stored procedure per transaction: Permafrost's built-in
    /// ones by CALL, PostgreSQL's PL/pgSQL functions by SELECT, MariaDB's procedures by
    /// CALL).
    #[arg(long, default_value = "interactive", value_parser = ["interactive", "procedures"])]
    pub(crate) mode: String,
    /// The user to connect as.
    #[arg(long, default_value = "permafrost")]
    pub(crate) user: String,
    /// The database to connect to.
    #[arg(long, default_value = "permafrost")]
    pub(crate) dbname: String,
    /// Terminals, each with one transaction in flight: one connection each over the wire
    /// (default 8); embedded, spread over the client threads (default 128 per partition:
    /// enough to fill group commits).
    #[arg(long)]
    pub(crate) clients: Option<usize>,
    /// Embedded: client threads calling the procedures. Default: one per partition.
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Seconds run before the measured ones.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) duration: f64,
    /// Seed of the population's and the terminals' random numbers.
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,
    /// Run on the tables an earlier run loaded (same scale) instead of creating and
    /// loading them again (over the wire only).
    #[arg(long, conflicts_with = "load_only")]
    pub(crate) no_load: bool,
    /// Create and load the tables, check the consistency conditions, and stop (a later
    /// run with --no-load runs on them).
    #[arg(long)]
    pub(crate) load_only: bool,
    /// Embedded: the engine's settings.
    #[command(flatten)]
    pub(crate) engine: Flags<BenchEngine>,
    /// Embedded: directory for the anti-cache's block files and the command log
    /// (DIR/anticache, which must be empty or absent). Default: a temporary directory.
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
}

/// Where a seeds' benchmark runs: embedded, or over the wire in a mode.
pub(crate) enum Way {
    /// The database opened from the engine flags, its partitions, and its data directory
    /// (a temporary one is removed when this is dropped, after the run).
    Embedded(Database, usize, Option<DataDir>),
    Wire(Box<tpcc::Target>, Mode),
    /// MariaDB through its own driver (mysql_async's URL).
    MariaDb(String, Mode),
}

impl SeedArgs {
    /// Where to run, from `--target` and `--mode`, refusing the flags that do not apply.
    fn way(&self) -> Result<Way, String> {
        if self.target == "embedded" {
            if self.mode != "interactive" {
                return Err("--mode applies to --target server=HOST:PORT (embedded runs the stored procedures)".into());
            }
            if self.no_load {
                return Err(
                    "--no-load applies to --target server=HOST:PORT (an embedded database starts empty)".into(),
                );
            }
            let (db, dir) = engine_settings(&self.engine, self.data_dir.as_deref())?
                .open()
                .map_err(|e| e.to_string())?;
            let partitions = db.partitions() as usize;
            return Ok(Way::Embedded(db, partitions, dir));
        }
        if self.threads.is_some() || self.data_dir.is_some() || self.engine.any_given() {
            return Err("--threads, --data-dir and the engine flags apply to --target embedded only".into());
        }
        let mode = match self.mode.as_str() {
            "procedures" => Mode::Procedures,
            _ => Mode::Interactive,
        };
        if let Some(url) = self.target.strip_prefix("mariadb=") {
            return Ok(Way::MariaDb(url.to_string(), mode));
        }
        let Some(addr) = self.target.strip_prefix("server=") else {
            return Err(format!(
                "--target {}: give embedded, server=HOST:PORT or mariadb=mysql://USER@HOST/DB[?socket=PATH]",
                self.target
            ));
        };
        let target = tpcc::Target::new(addr, &self.user, &self.dbname).map_err(|e| e.to_string())?;
        Ok(Way::Wire(Box::new(target), mode))
    }

    /// Terminals: `--clients`, else 8 over the wire and 128 per partition embedded.
    fn clients(&self, way: &Way) -> usize {
        match way {
            Way::Embedded(_, partitions, _) => self.clients.unwrap_or(128 * partitions),
            Way::Wire(..) | Way::MariaDb(..) => self.clients.unwrap_or(8),
        }
    }
}

/// Prints a seeds' benchmark's summary and writes its JSON report; `failed` is the error
/// when the run is not `ok`.
fn finish(
    summary: String,
    ok: bool,
    json: Option<&Path>,
    report: &impl serde::Serialize,
    failed: &str,
) -> Result<(), String> {
    print!("{summary}");
    write_json(json, report)?;
    if ok { Ok(()) } else { Err(failed.into()) }
}

#[derive(Args, Debug)]
pub(crate) struct TpccArgs {
    #[command(flatten)]
    pub(crate) run: SeedArgs,
    /// Warehouses loaded and run (TPC-C's unit of scale).
    #[arg(long, default_value_t = 2)]
    pub(crate) warehouses: u32,
    /// full (the specification's five transactions, 45/43/4/4/4, and inputs) or
    /// looking-glass (the OLTP-through-the-looking-glass paper's: New-Order and Payment
    /// half and half, 10 local items per order, home customers by id).
    #[arg(long, default_value = "full", value_parser = tpcc::Mix::parse)]
    pub(crate) mix: tpcc::Mix,
    /// Orders per district at load (the specification's 3,000, or more: the orders past
    /// them are delivered ones, a database that has taken orders for a long time).
    #[arg(long, default_value_t = 3000)]
    pub(crate) orders: u32,
}

/// Runs TPC-C; an error when a transaction failed or a consistency condition does not hold.
pub(crate) fn run_tpcc(a: TpccArgs) -> Result<(), String> {
    let way = a.run.way()?;
    let opts = tpcc::TpccOptions {
        warehouses: a.warehouses,
        clients: a.run.clients(&way),
        warmup: a.run.warmup,
        duration: a.run.duration,
        seed: a.run.seed,
        scale: tpcc::Scale::grown(a.orders),
        mix: a.mix,
        load: !a.run.no_load,
        run: !a.run.load_only,
    };
    let progress = !a.run.quiet;
    let report = match way {
        Way::Embedded(db, partitions, _dir) => {
            tpcc::embedded::run(&db, &opts, a.run.threads.unwrap_or(partitions), progress)
        }
        Way::Wire(target, mode) => tpcc::run(&target, &opts, mode, progress),
        Way::MariaDb(url, mode) => tpcc::mariadb::run(&url, &opts, mode, progress),
    }
    .map_err(|e| e.to_string())?;
    finish(
        report.summary(),
        report.ok(),
        a.run.json.as_deref(),
        &report,
        "TPC-C: a transaction failed or a consistency condition does not hold (above)",
    )
}

#[derive(Args, Debug)]
pub(crate) struct VoterArgs {
    #[command(flatten)]
    pub(crate) run: SeedArgs,
    /// Contestants voted for (H-Store's 6).
    #[arg(long, default_value_t = 6)]
    pub(crate) contestants: i32,
    /// Votes a caller may cast (H-Store's 1,000).
    #[arg(long, default_value_t = 1000)]
    pub(crate) max_votes: i32,
    /// Phone numbers per area code (H-Store's ten million); fewer make callers call again
    /// and the vote limit fire.
    #[arg(long, default_value_t = 10_000_000)]
    pub(crate) numbers_per_area: i64,
    /// Votes loaded with the tables, before the run (a VOTES table that has taken calls
    /// before; the callers take turns, within --max-votes each).
    #[arg(long, default_value_t = 0)]
    pub(crate) votes: i64,
}

/// Runs Voter; an error when a call failed or an invariant does not hold.
pub(crate) fn run_voter(a: VoterArgs) -> Result<(), String> {
    let way = a.run.way()?;
    let opts = voter::VoterOptions {
        clients: a.run.clients(&way),
        warmup: a.run.warmup,
        duration: a.run.duration,
        seed: a.run.seed,
        contestants: a.contestants,
        max_votes: a.max_votes,
        numbers: a.numbers_per_area,
        votes: a.votes,
        load: !a.run.no_load,
        run: !a.run.load_only,
    };
    let progress = !a.run.quiet;
    let report = match way {
        Way::Embedded(db, partitions, _dir) => {
            voter::embedded::run(&db, &opts, a.run.threads.unwrap_or(partitions), progress)
        }
        Way::Wire(target, mode) => voter::run(&target, &opts, mode, progress),
        Way::MariaDb(url, mode) => voter::mariadb::run(&url, &opts, mode, progress),
    }
    .map_err(|e| e.to_string())?;
    finish(
        report.summary(),
        report.ok(),
        a.run.json.as_deref(),
        &report,
        "Voter: a call failed or an invariant does not hold (above)",
    )
}

#[derive(Args, Debug)]
pub(crate) struct TatpArgs {
    #[command(flatten)]
    pub(crate) run: SeedArgs,
    /// Subscribers loaded (100,000 is the description's unit of scale).
    #[arg(long, default_value_t = 100_000)]
    pub(crate) subscribers: u32,
}

/// Runs TATP; an error when a transaction failed or an invariant does not hold.
pub(crate) fn run_tatp(a: TatpArgs) -> Result<(), String> {
    let way = a.run.way()?;
    let opts = tatp::TatpOptions {
        subscribers: a.subscribers,
        clients: a.run.clients(&way),
        warmup: a.run.warmup,
        duration: a.run.duration,
        seed: a.run.seed,
        load: !a.run.no_load,
        run: !a.run.load_only,
    };
    let progress = !a.run.quiet;
    let report = match way {
        Way::Embedded(db, partitions, _dir) => {
            tatp::embedded::run(&db, &opts, a.run.threads.unwrap_or(partitions), progress)
        }
        Way::Wire(target, mode) => tatp::run(&target, &opts, mode, progress),
        Way::MariaDb(url, mode) => tatp::mariadb::run(&url, &opts, mode, progress),
    }
    .map_err(|e| e.to_string())?;
    finish(
        report.summary(),
        report.ok(),
        a.run.json.as_deref(),
        &report,
        "TATP: a transaction failed or an invariant does not hold (above)",
    )
}

#[derive(Args, Debug)]
pub(crate) struct WireFloorArgs {
    #[arg(long, default_value = "127.0.0.1:55690")]
    pub(crate) listen: std::net::SocketAddr,
}

pub(crate) fn run_wire_floor(a: WireFloorArgs) -> Result<(), String> {
    permafrost_bench::wire_floor::serve(a.listen).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
pub(crate) struct RecoveryArgs {
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) records: u64,
    #[arg(long, default_value_t = 1008)]
    pub(crate) tuple_size: usize,
    /// The memory budget (small: most records evicted).
    #[arg(long, default_value = "128MiB", value_parser = parse_size_arg)]
    pub(crate) memory_limit: u64,
    #[arg(long, default_value_t = 2)]
    pub(crate) partitions: u32,
    /// YCSB updates after the snapshot (replayed at the restart).
    #[arg(long, default_value_t = 2_000_000)]
    pub(crate) updates: u64,
    #[arg(long, default_value_t = 0.99)]
    pub(crate) skew: f64,
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,
    /// Updates each of the two clients keeps in flight.
    #[arg(long, default_value_t = 4096)]
    pub(crate) in_flight: usize,
    /// Records compared before and after the restart.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) check_sample: u64,
    /// An empty directory for the database (default: a temporary one).
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct CrashArgs {
    /// Kill-and-restart iterations.
    #[arg(long, default_value_t = 200)]
    pub(crate) iterations: u32,
    /// Seed of the kill times and the workload's choices.
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,
    /// The permafrost binary to serve with. Default: this one.
    #[arg(long)]
    pub(crate) binary: Option<PathBuf>,
    /// Directory for the data directories (cycle-<n>, each removed once its iterations
    /// pass). Default: a temporary directory. Kept when a violation is found.
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Write all the figures as JSON to this file (after every iteration, and at the end).
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Start from a fresh data directory every K iterations (every event keeps index
    /// entries or a tombstone in the small memory budget).
    #[arg(long, default_value_t = 20)]
    pub(crate) fresh_every: u32,
    /// Continue the run whose report is --json (cut short: "complete": false), from the
    /// first data directory it did not finish; the other flags must be the run's.
    #[arg(long, requires = "json")]
    pub(crate) resume: bool,
    /// Run from this iteration (rounded down to the first of its data directory), to
    /// reproduce a late one.
    #[arg(long, default_value_t = 1)]
    pub(crate) first_iteration: u32,
    /// Seconds of workload before the kill: uniform between --min-run and --max-run.
    #[arg(long, default_value_t = 0.3)]
    pub(crate) min_run: f64,
    #[arg(long, default_value_t = 3.0)]
    pub(crate) max_run: f64,
    /// Accounts (each with about 900 bytes of padding).
    #[arg(long, default_value_t = 20_000)]
    pub(crate) accounts: u64,
    /// Workload connections.
    #[arg(long, default_value_t = 16)]
    pub(crate) connections: usize,
    /// Statements each connection keeps in flight (pipelined).
    #[arg(long, default_value_t = 8)]
    pub(crate) in_flight: usize,
    /// Event inserts per second at most: every row keeps index entries (then a tombstone)
    /// in memory, so the events of a data directory must fit what the memory limit can
    /// index.
    #[arg(long, default_value_t = 2000)]
    pub(crate) insert_rate: u64,
    /// The server's memory limit (small: eviction and merging run all the time).
    #[arg(long, default_value = "16MiB", value_parser = parse_size_arg)]
    pub(crate) memory_limit: u64,
    /// The server's command-log segment size (small: segments rotate often).
    #[arg(long, default_value = "1MiB", value_parser = parse_size_arg)]
    pub(crate) log_segment_size: u64,
    /// The server's partitions.
    #[arg(long, default_value_t = 2)]
    pub(crate) partitions: u32,
    /// The server's command log. sync is what is checked; async or off lose acknowledged
    /// changes in a crash, so with them the harness must report violations (a check of
    /// the harness itself).
    #[arg(long, default_value = "sync")]
    pub(crate) command_log: String,
    /// The server's --snapshot-interval.
    #[arg(long, default_value = "2s")]
    pub(crate) snapshot_interval: String,
    /// Percent of iterations that send CHECKPOINT shortly before the kill.
    #[arg(long, default_value_t = 30)]
    pub(crate) checkpoint_kill_pct: u32,
    /// Percent of iterations whose restart is also killed during recovery.
    #[arg(long, default_value_t = 25)]
    pub(crate) recovery_kill_pct: u32,
}

#[derive(Args, Debug)]
pub(crate) struct ExperimentArgs {
    /// fig8, fig9a, fig10, compare, durability (embedded, in this process) or paper (the
    /// anti-caching paper's YCSB comparison: Permafrost, MariaDB and MariaDB + memcached
    /// started here, each in a memory cgroup; needs root, mariadb-server and memcached).
    pub(crate) name: String,
    /// Directory for <name>.json and <name>.png.
    #[arg(long, default_value = "docs/results")]
    pub(crate) out: PathBuf,
    /// Records (default: 500000; 1000000 for compare).
    #[arg(long)]
    pub(crate) records: Option<u64>,
    /// Bytes per tuple.
    #[arg(long, default_value_t = 1008)]
    pub(crate) tuple_size: usize,
    /// Seconds of warm-up before each measured run (default: 3; 10 for paper).
    #[arg(long)]
    pub(crate) warmup: Option<f64>,
    /// Seconds measured per run (default: 10; 20 for paper).
    #[arg(long)]
    pub(crate) duration: Option<f64>,
    /// Times every configuration runs (interleaved); the median is plotted.
    #[arg(long, default_value_t = 1)]
    pub(crate) rounds: usize,
    /// Partitions (default: number of CPU cores).
    #[arg(long)]
    pub(crate) partitions: Option<u32>,
    /// Client threads (default: one per partition; 2 for paper).
    #[arg(long)]
    pub(crate) clients: Option<usize>,
    /// paper: connections in all, shared by the client threads (one statement in flight
    /// on each; default 16).
    #[arg(long)]
    pub(crate) connections: Option<usize>,
    /// paper: YCSB's and TPC-C's data sizes, as multiples of --memory-limit, comma-separated
    /// (default 1,2,4,8).
    #[arg(long, value_delimiter = ',')]
    pub(crate) ratios: Option<Vec<u32>>,
    /// paper: the Zipfian skews, comma-separated (default 1.5,1.0,0.5).
    #[arg(long, value_delimiter = ',')]
    pub(crate) skews: Option<Vec<f64>>,
    /// paper: the mixes, comma-separated (default read-only,read-heavy,write-heavy).
    #[arg(long, value_delimiter = ',', value_parser = Mix::parse)]
    pub(crate) mixes: Option<Vec<Mix>>,
    /// paper: the systems, comma-separated (default permafrost,mariadb,mariadb+memcached).
    #[arg(long, value_delimiter = ',', value_parser = permafrost_bench::paper::System::parse)]
    pub(crate) systems: Option<Vec<permafrost_bench::paper::System>>,
    /// paper: the parts to run, comma-separated (default ycsb,tpcc,voter,tatp).
    #[arg(long, value_delimiter = ',', value_parser = permafrost_bench::paper::Part::parse)]
    pub(crate) parts: Option<Vec<permafrost_bench::paper::Part>>,
    /// paper: Voter's and TATP's data sizes, as multiples of --memory-limit, comma-separated
    /// (default 1,4).
    #[arg(long, value_delimiter = ',')]
    pub(crate) oltp_ratios: Option<Vec<u32>>,
    /// paper: TPC-C's, Voter's and TATP's terminals (default 8).
    #[arg(long)]
    pub(crate) oltp_clients: Option<usize>,
    /// paper: what each system's cgroup holds beyond --memory-limit (the servers' own
    /// memory and the page cache of their files; default 128MiB).
    #[arg(long, value_parser = parse_size_arg)]
    pub(crate) cgroup_extra: Option<u64>,
    /// paper: memcached's share of the budget in MariaDB + memcached, in percent (default 50).
    #[arg(long)]
    pub(crate) memcached_percent: Option<u64>,
    /// Operations each client keeps in flight.
    #[arg(long, default_value_t = 512)]
    pub(crate) in_flight: usize,
    /// compare: memory limit of the larger-than-memory runs; paper: every system's memory
    /// budget (default 256MiB: the largest data set, 8x, is 2 GiB).
    #[arg(long, value_parser = parse_size_arg)]
    pub(crate) memory_limit: Option<u64>,
    /// durability: the command log's group commit window (default: the setting's default).
    #[arg(long, value_parser = parse_duration_arg)]
    pub(crate) group_commit_window: Option<std::time::Duration>,
    /// Directory for the runs' block files and command logs: each run gets a fresh
    /// run-<k> in it, removed after the run (default: temporary directories); paper: the
    /// servers' data directories.
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,
    /// Run nothing: draw <out>/<name>.png again from <out>/<name>.json.
    #[arg(long)]
    pub(crate) replot: bool,
}

#[derive(Args, Debug)]
pub(crate) struct DeviceArgs {
    /// Directory on the disk to measure. Default: the system's temporary directory.
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Size of the test file (reads fall anywhere in it).
    #[arg(long, default_value = "2GiB", value_parser = parse_size_arg)]
    pub(crate) file_size: u64,
    /// Block sizes to read, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_size_arg,
          default_value = "1KiB,4KiB,8KiB,16KiB,64KiB,256KiB,1MiB")]
    pub(crate) block_sizes: Vec<u64>,
    /// Reads kept in flight.
    #[arg(long, default_value_t = 64)]
    pub(crate) queue_depth: u32,
    /// Seconds of reads per block size.
    #[arg(long, default_value_t = 3.0)]
    pub(crate) seconds: f64,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
}

pub(crate) fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s)
}

/// Flags every benchmark takes.
#[derive(Args, Debug)]
pub(crate) struct CommonArgs {
    #[command(flatten)]
    pub(crate) engine: Flags<BenchEngine>,
    /// What to run against: embedded (in this process), server=HOST:PORT (a running
    /// `permafrost serve`, over the PostgreSQL protocol) or mariadb=URL (MariaDB through its
    /// own driver, e.g. mysql://root@localhost/db?socket=/path; with --memcached, memcached
    /// in front of it). The engine flags apply to embedded only.
    #[arg(long, default_value = "embedded")]
    pub(crate) target: String,
    /// Client threads driving the load. Default: one per partition (embedded), 2 (server,
    /// mariadb).
    #[arg(long)]
    pub(crate) clients: Option<usize>,
    /// Server targets: connections in all, spread evenly over the client threads; each
    /// operation goes to the client's least busy connection, so with --in-flight no more
    /// than a client's connections each has one statement at a time (as ordinary clients
    /// do), and with more they pipeline. Default: 8 per client.
    #[arg(long)]
    pub(crate) connections: Option<usize>,
    /// Operations each client keeps in flight. Default: 512; mariadb: as many as a client's
    /// connections (each runs one statement at a time).
    #[arg(long)]
    pub(crate) in_flight: Option<usize>,
    /// Seconds of warm-up before measuring.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) duration: f64,
    /// Directory for the anti-cache's block files and the command log (DIR/anticache,
    /// which must be empty or absent). Default: a temporary directory, removed at exit.
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Do not draw a progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,
}

#[derive(Args, Debug)]
pub(crate) struct YcsbArgs {
    /// Records in the table.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) records: u64,
    /// Bytes per tuple: an 8-byte key and 10 equal text fields.
    #[arg(long, default_value_t = 1008)]
    pub(crate) tuple_size: usize,
    /// read-only (100% reads), read-heavy (90/10) or write-heavy (50/50).
    #[arg(long, default_value = "read-heavy", value_parser = Mix::parse)]
    pub(crate) mix: Mix,
    /// Zipfian constant s of the key distribution (0 = uniform).
    #[arg(long, default_value_t = 0.99)]
    pub(crate) skew: f64,
    /// With --target mariadb=URL: memcached at HOST:PORT (or a unix socket's path) in
    /// front of MariaDB, as the anti-caching paper's MySQL + memcached: reads look in
    /// memcached first and store what they read from MariaDB there; writes delete the key.
    #[arg(long)]
    pub(crate) memcached: Option<String>,
    /// A report an earlier run wrote with --json (e.g. docs/results/embedded-ycsb.json):
    /// its throughput is printed next to this run's, with the ratio, and a warning when
    /// this run is less than 80 % of it (the machine is noisy: compare interleaved runs).
    #[arg(long)]
    pub(crate) baseline: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

/// This run's throughput next to the one recorded in `path` (a `--json` report).
fn against_baseline(path: &Path, tps: f64) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--baseline {}: {e}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("--baseline {}: not a JSON report: {e}", path.display()))?;
    let recorded = json
        .get("throughput_tps")
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(|| format!("--baseline {}: no throughput_tps in it", path.display()))?;
    let ratio = tps / recorded;
    let mut line = format!(
        "against the recorded run ({}): {tps:.0} txn/s now, {recorded:.0} recorded ({ratio:.2}x)",
        path.display()
    );
    if ratio < 0.8 {
        line.push_str(
            "\nwarning: less than 80 % of the recorded figure; run both builds in interleaved rounds before trusting it",
        );
    }
    Ok(line)
}

impl CommonArgs {
    /// The engine settings; refuses a data directory that holds an earlier run's files
    /// (its command log would be appended to, its block files found at start).
    pub(crate) fn settings(&self) -> Result<DbSettings, String> {
        engine_settings(&self.engine, self.data_dir.as_deref())
    }
}

/// The engine settings the flags give; refuses a data directory that holds an earlier
/// run's files (its command log would be appended to, its block files found at start).
fn engine_settings(engine: &Flags<BenchEngine>, data_dir: Option<&Path>) -> Result<DbSettings, String> {
    if let Some(d) = data_dir {
        let files = d.join("anticache");
        let used = std::fs::read_dir(&files).map(|mut e| e.next().is_some());
        if used.unwrap_or(false) {
            return Err(format!(
                "--data-dir {}: {} holds the files of an earlier run; give an empty or new directory (or remove that one)",
                d.display(),
                files.display()
            ));
        }
    }
    let mut settings = engine.resolve(&ConfigFile::default())?;
    settings.data_dir = data_dir.map(Path::to_path_buf);
    Ok(settings)
}

pub(crate) fn run_ycsb(args: YcsbArgs) -> Result<(), String> {
    let c = &args.common;
    let opts = YcsbOptions {
        records: args.records,
        tuple_size: args.tuple_size,
        mix: args.mix,
        skew: args.skew,
        clients: 1,
        in_flight: c.in_flight.unwrap_or(512),
        warmup: c.warmup,
        duration: c.duration,
        seed: c.seed,
    };
    let target = ycsb::TargetSpec::parse(&c.target).map_err(|e| e.to_string())?;
    if args.memcached.is_some() && !matches!(target, ycsb::TargetSpec::MariaDb(_)) {
        return Err("--memcached applies to --target mariadb=URL only".into());
    }
    let report = match target {
        ycsb::TargetSpec::Embedded => {
            if c.connections.is_some() {
                return Err("--connections applies to --target server=HOST:PORT only".into());
            }
            let (db, _data_dir) = c.settings()?.open().map_err(|e| e.to_string())?;
            let opts = YcsbOptions {
                clients: c.clients.unwrap_or(db.partitions() as usize),
                ..opts
            };
            opts.validate().map_err(|e| e.to_string())?;
            let target = ycsb::embedded::Embedded::new(db, true);
            ycsb::run(&target, &opts, !c.quiet).map_err(|e| e.to_string())?
        }
        ycsb::TargetSpec::Server(addr) => {
            let opts = YcsbOptions {
                clients: c.clients.unwrap_or(2),
                ..opts
            };
            opts.validate().map_err(|e| e.to_string())?;
            let connections = c.connections.unwrap_or(8 * opts.clients);
            let target = ycsb::server::Server::new(&addr, connections).map_err(|e| e.to_string())?;
            ycsb::run(&target, &opts, !c.quiet).map_err(|e| e.to_string())?
        }
        ycsb::TargetSpec::MariaDb(url) => {
            let clients = c.clients.unwrap_or(2);
            let connections = c.connections.unwrap_or(8 * clients);
            // A MariaDB connection runs one statement at a time: by default every
            // connection busy, none waiting.
            let in_flight = c.in_flight.unwrap_or((connections / clients).max(1));
            let opts = YcsbOptions {
                clients,
                in_flight,
                ..opts
            };
            opts.validate().map_err(|e| e.to_string())?;
            let target =
                ycsb::mariadb::MariaDb::new(&url, args.memcached.as_deref(), connections).map_err(|e| e.to_string())?;
            ycsb::run(&target, &opts, !c.quiet).map_err(|e| e.to_string())?
        }
    };
    println!("{}", report.summary());
    if let Some(path) = &args.baseline {
        println!("{}", against_baseline(path, report.throughput_tps)?);
    }
    write_json(c.json.as_deref(), &report)?;
    if report.verify_errors > 0 {
        return Err(format!("{} reads failed verification", report.verify_errors));
    }
    Ok(())
}

pub(crate) fn run_device(a: DeviceArgs) -> Result<(), String> {
    let dir = a.data_dir.unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let opts = permafrost_bench::device::DeviceOptions {
        file_bytes: a.file_size,
        block_sizes: a.block_sizes.iter().map(|&b| b as usize).collect(),
        queue_depth: a.queue_depth,
        seconds: a.seconds,
    };
    let report = permafrost_bench::device::measure(&dir, &opts).map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    write_json(a.json.as_deref(), &report)
}

pub(crate) fn run_experiment(a: ExperimentArgs) -> Result<(), String> {
    use permafrost_bench::experiment;
    if a.name == "paper" {
        return run_paper(a);
    }
    let paper_only = [
        ("--connections", a.connections.is_some()),
        ("--ratios", a.ratios.is_some()),
        ("--skews", a.skews.is_some()),
        ("--mixes", a.mixes.is_some()),
        ("--systems", a.systems.is_some()),
        ("--parts", a.parts.is_some()),
        ("--oltp-ratios", a.oltp_ratios.is_some()),
        ("--oltp-clients", a.oltp_clients.is_some()),
        ("--cgroup-extra", a.cgroup_extra.is_some()),
        ("--memcached-percent", a.memcached_percent.is_some()),
    ];
    if let Some((flag, _)) = paper_only.iter().find(|(_, given)| *given) {
        return Err(format!("{flag} is for the paper experiment only, not {}", a.name));
    }
    let params = experiment::Params {
        records: a.records,
        tuple_size: a.tuple_size,
        warmup: a.warmup.unwrap_or(3.0),
        duration: a.duration.unwrap_or(10.0),
        rounds: a.rounds,
        partitions: a.partitions,
        clients: a.clients,
        in_flight: a.in_flight,
        memory_limit: a.memory_limit,
        group_commit_window: a.group_commit_window,
        data_dir: a.data_dir.clone(),
        seed: a.seed,
    };
    let spec = experiment::spec(&a.name, &params).map_err(|e| e.to_string())?;
    if a.replot {
        let png = experiment::replot(&spec, &a.out).map_err(|e| e.to_string())?;
        println!("wrote {}", png.display());
        return Ok(());
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report = experiment::run(&spec, a.rounds, &command, a.data_dir.as_deref()).map_err(|e| e.to_string())?;
    for f in &report.findings {
        let verdict = match f.met {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "",
        };
        println!(
            "{}: {:.4} {} {} ({})",
            f.name,
            f.value,
            f.target.as_deref().unwrap_or(""),
            verdict,
            f.note
        );
    }
    let (json, png) = experiment::write(&report, &spec, &a.out).map_err(|e| e.to_string())?;
    println!("wrote {} and {}", json.display(), png.display());
    Ok(())
}

/// `bench experiment paper`.
fn run_paper(a: ExperimentArgs) -> Result<(), String> {
    use permafrost_bench::paper;
    if a.replot {
        return Err("paper cannot be drawn again from its JSON yet (--replot is for the embedded experiments)".into());
    }
    if a.records.is_some() || a.partitions.is_some() || a.group_commit_window.is_some() {
        return Err("paper takes no --records (the data is --ratios times --memory-limit), --partitions or --group-commit-window (the server runs with its defaults)".into());
    }
    let d = paper::PaperOptions::default();
    let clients = a.clients.unwrap_or(d.clients);
    let connections = a.connections.unwrap_or(d.connections);
    let o = paper::PaperOptions {
        memory_limit: a.memory_limit.unwrap_or(d.memory_limit),
        cgroup_extra: a.cgroup_extra.unwrap_or(d.cgroup_extra),
        memcached_percent: a.memcached_percent.unwrap_or(d.memcached_percent),
        ratios: a.ratios.unwrap_or(d.ratios),
        mixes: a.mixes.unwrap_or(d.mixes),
        skews: a.skews.unwrap_or(d.skews),
        systems: a.systems.unwrap_or(d.systems),
        parts: a.parts.unwrap_or(d.parts),
        oltp_ratios: a.oltp_ratios.unwrap_or(d.oltp_ratios),
        oltp_clients: a.oltp_clients.unwrap_or(d.oltp_clients),
        tpcc_warehouses: d.tpcc_warehouses,
        tuple_size: a.tuple_size,
        warmup: a.warmup.unwrap_or(d.warmup),
        duration: a.duration.unwrap_or(d.duration),
        rounds: a.rounds,
        clients,
        connections,
        // One statement in flight on each of a client thread's connections.
        in_flight: connections.div_ceil(clients.max(1)),
        seed: a.seed,
        work_dir: a.data_dir,
        binary: None,
    };
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report =
        paper::run(&o, &command, std::io::IsTerminal::is_terminal(&std::io::stderr())).map_err(|e| e.to_string())?;
    for f in &report.findings {
        println!("{}: {} of {} cells", f.claim, f.agree, f.cells);
    }
    let files = paper::write(&report, &a.out).map_err(|e| e.to_string())?;
    println!(
        "wrote {}",
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

pub(crate) fn run_crash(a: CrashArgs) -> Result<(), String> {
    use permafrost_crash as crash;
    let binary = match a.binary {
        Some(b) => b,
        None => std::env::current_exe().map_err(|e| format!("cannot find this binary (give --binary): {e}"))?,
    };
    let opts = crash::CrashOptions {
        iterations: a.iterations,
        first_iteration: a.first_iteration,
        seed: a.seed,
        binary,
        data_dir: a.data_dir,
        fresh_every: a.fresh_every,
        run_min: a.min_run,
        run_max: a.max_run,
        accounts: a.accounts,
        connections: a.connections,
        in_flight: a.in_flight,
        insert_rate: a.insert_rate,
        memory_limit: a.memory_limit,
        segment_bytes: a.log_segment_size,
        partitions: a.partitions,
        command_log: a.command_log,
        snapshot_interval: a.snapshot_interval,
        checkpoint_kill_pct: a.checkpoint_kill_pct,
        recovery_kill_pct: a.recovery_kill_pct,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        progress: a.json.clone(),
        ..crash::CrashOptions::new(PathBuf::new())
    };
    let previous = match (&a.json, a.resume) {
        (Some(path), true) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("--resume: cannot read {}: {e}", path.display()))?;
            Some(serde_json::from_str(&text).map_err(|e| format!("--resume: {}: {e}", path.display()))?)
        }
        _ => None,
    };
    let report = crash::resume(&opts, previous).map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    write_json(a.json.as_deref(), &report)?;
    if !report.violations.is_empty() {
        return Err(format!(
            "{} violation(s), the first at iteration {} (seed {})",
            report.violations.len(),
            report.violations[0].iteration,
            report.violations[0].seed
        ));
    }
    Ok(())
}

pub(crate) fn run_recovery(a: RecoveryArgs) -> Result<(), String> {
    use permafrost_bench::recovery;
    let opts = recovery::RecoveryOptions {
        records: a.records,
        tuple_size: a.tuple_size,
        memory_limit: a.memory_limit,
        partitions: a.partitions,
        updates: a.updates,
        skew: a.skew,
        seed: a.seed,
        in_flight: a.in_flight.max(1),
        check_sample: a.check_sample,
        data_dir: a.data_dir,
    };
    let started = std::time::Instant::now();
    let report = recovery::run(&opts, &|phase| {
        eprintln!("[{:7.1}s] {phase}", started.elapsed().as_secs_f64())
    })
    .map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    write_json(a.json.as_deref(), &report)?;
    if report.mismatches > 0 {
        return Err(format!("{} records differ after the restart", report.mismatches));
    }
    Ok(())
}

pub(crate) fn write_json(path: Option<&std::path::Path>, value: &impl serde::Serialize) -> Result<(), String> {
    if let Some(path) = path {
        let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
