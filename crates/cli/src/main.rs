//! The `permafrost` command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use permafrost_bench::ycsb::{self, Mix, YcsbOptions};
use permafrost_executor::{AntiCacheConfig, ColdPolicy, Config, Database, MergePolicy, Retrieval, parse_size};

#[derive(Parser)]
#[command(
    name = "permafrost",
    version,
    about = "A main-memory OLTP database that keeps working when the data outgrows memory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a benchmark and print its figures.
    Bench {
        #[command(subcommand)]
        workload: Workload,
    },
}

#[derive(Subcommand)]
enum Workload {
    /// YCSB: point reads and updates of one table with Zipfian skew.
    Ycsb(YcsbArgs),
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s)
}

/// Flags every benchmark takes.
#[derive(Args, Debug)]
struct CommonArgs {
    /// What to run against: embedded (in this process).
    #[arg(long, default_value = "embedded")]
    target: String,
    /// Memory budget of the database (e.g. 64MiB, 2GiB, plain bytes). Default: half of RAM.
    #[arg(long, value_parser = parse_size_arg)]
    memory_limit: Option<u64>,
    /// Partitions (executor threads). Default: number of CPU cores.
    #[arg(long)]
    partitions: Option<u32>,
    /// Client threads driving the load. Default: one per partition.
    #[arg(long)]
    clients: Option<usize>,
    /// Operations each client keeps in flight.
    #[arg(long, default_value_t = 512)]
    in_flight: usize,
    /// Seconds of warm-up before measuring.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Anti-caching: on (evict cold data to disk past the memory limit) or off (writes
    /// fail once the data fills the memory limit).
    #[arg(long, default_value = "on")]
    anticache: String,
    /// Directory for the anti-cache's block files. Default: a temporary directory,
    /// removed at exit.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Bytes per eviction block, 1KiB to 4MiB.
    #[arg(long, value_parser = parse_size_arg)]
    block_size: Option<u64>,
    /// Merge policy for fetched blocks: tuple (only requested tuples) or block (all).
    #[arg(long, default_value = "tuple")]
    merge: String,
    /// Tuple-merge: fraction of a block that may be holes before it is merged whole.
    #[arg(long, default_value_t = 0.5)]
    hole_threshold: f64,
    /// How evicted data is retrieved: abort-restart or synchronous.
    #[arg(long, default_value = "abort-restart")]
    retrieval: String,
    /// Fraction of the memory limit at which eviction starts.
    #[arg(long)]
    eviction_threshold: Option<f64>,
    /// Bytes evicted per round beyond what brings memory under the threshold.
    #[arg(long, value_parser = parse_size_arg)]
    eviction_size: Option<u64>,
    /// Cold-tuple policy: lru (the paper's chain) or clock.
    #[arg(long, default_value = "lru")]
    cold_policy: String,
    /// Restarts allowed per transaction for evicted data.
    #[arg(long)]
    max_restarts: Option<u32>,
    /// Fraction of transactions that update the LRU chain (the paper's alpha).
    #[arg(long)]
    lru_sample_rate: Option<f64>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Args, Debug)]
struct YcsbArgs {
    /// Records in the table.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Bytes per tuple: an 8-byte key and 10 equal text fields.
    #[arg(long, default_value_t = 1008)]
    tuple_size: usize,
    /// read-only (100% reads), read-heavy (90/10) or write-heavy (50/50).
    #[arg(long, default_value = "read-heavy", value_parser = Mix::parse)]
    mix: Mix,
    /// Zipfian constant s of the key distribution (0 = uniform).
    #[arg(long, default_value_t = 0.99)]
    skew: f64,
    #[command(flatten)]
    common: CommonArgs,
}

/// Where the anti-cache keeps its blocks for this run.
enum DataDir {
    Given(PathBuf),
    Temporary(tempfile::TempDir),
}

impl DataDir {
    fn path(&self) -> PathBuf {
        match self {
            DataDir::Given(p) => p.join("anticache"),
            DataDir::Temporary(t) => t.path().to_path_buf(),
        }
    }
}

fn anticache_config(c: &CommonArgs, dir: &DataDir) -> Result<AntiCacheConfig, String> {
    let mut ac = AntiCacheConfig::new(dir.path());
    if let Some(b) = c.block_size {
        ac.block_size = b as usize;
    }
    ac.merge = match c.merge.as_str() {
        "tuple" => MergePolicy::Tuple {
            hole_threshold: c.hole_threshold,
        },
        "block" => MergePolicy::Block,
        other => return Err(format!("--merge must be tuple or block, got \"{other}\"")),
    };
    ac.retrieval = match c.retrieval.as_str() {
        "abort-restart" => Retrieval::AbortRestart,
        "synchronous" => Retrieval::Synchronous,
        other => {
            return Err(format!(
                "--retrieval must be abort-restart or synchronous, got \"{other}\""
            ));
        }
    };
    ac.cold_policy = match c.cold_policy.as_str() {
        "lru" => ColdPolicy::Lru,
        "clock" => ColdPolicy::Clock,
        other => return Err(format!("--cold-policy must be lru or clock, got \"{other}\"")),
    };
    if let Some(t) = c.eviction_threshold {
        ac.eviction_threshold = t;
    }
    if let Some(s) = c.eviction_size {
        ac.eviction_size = s;
    }
    Ok(ac)
}

fn open_database(c: &CommonArgs) -> Result<(Database, Option<DataDir>), String> {
    if c.target != "embedded" {
        return Err(format!(
            "--target {}: only the embedded target exists in this build (server and peer targets come with the network server)",
            c.target
        ));
    }
    let mut b = Config::builder();
    let dir = match c.anticache.as_str() {
        "off" => None,
        "on" => {
            let dir = match &c.data_dir {
                Some(d) => DataDir::Given(d.clone()),
                None => DataDir::Temporary(
                    tempfile::Builder::new()
                        .prefix("permafrost-bench-")
                        .tempdir()
                        .map_err(|e| format!("cannot create a temporary directory for the anti-cache: {e}"))?,
                ),
            };
            b = b.anticache(anticache_config(c, &dir)?);
            Some(dir)
        }
        other => return Err(format!("--anticache must be on or off, got \"{other}\"")),
    };
    if let Some(n) = c.max_restarts {
        b = b.max_restarts(n);
    }
    if let Some(p) = c.partitions {
        b = b.partitions(p);
    }
    if let Some(m) = c.memory_limit {
        b = b.memory_limit(m);
    }
    if let Some(a) = c.lru_sample_rate {
        b = b.lru_sample_rate(a);
    }
    let config = b.build().map_err(|e| e.to_string())?;
    Ok((Database::open(config).map_err(|e| e.to_string())?, dir))
}

fn run_ycsb(args: YcsbArgs) -> Result<(), String> {
    let c = &args.common;
    let opts = YcsbOptions {
        records: args.records,
        tuple_size: args.tuple_size,
        mix: args.mix,
        skew: args.skew,
        clients: 1,
        in_flight: c.in_flight,
        warmup: c.warmup,
        duration: c.duration,
        seed: c.seed,
    };
    let (db, _data_dir) = open_database(c)?;
    let opts = YcsbOptions {
        clients: c.clients.unwrap_or(db.partitions() as usize),
        ..opts
    };
    opts.validate().map_err(|e| e.to_string())?;
    let target = ycsb::embedded::Embedded::new(db);
    let report = ycsb::run(&target, &opts, !c.quiet).map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    if let Some(path) = &c.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if report.verify_errors > 0 {
        return Err(format!("{} reads failed verification", report.verify_errors));
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Bench {
            workload: Workload::Ycsb(a),
        } => run_ycsb(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
