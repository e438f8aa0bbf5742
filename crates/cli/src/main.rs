//! The `permafrost` command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use permafrost_bench::ycsb::{self, Mix, YcsbOptions};
use permafrost_executor::{Config, Database, parse_size};

/// Partition threads free memory that client threads allocated (call parameters) and the
/// other way round (results); mimalloc handles such cross-thread frees far better than the
/// system allocator. Tuple storage does not come from here (it is mapped directly).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Anti-caching: on (evict cold data to disk past the memory limit) or off.
    #[arg(long, default_value = "off")]
    anticache: String,
    /// Directory for the anti-cache's block files.
    #[arg(long)]
    data_dir: Option<PathBuf>,
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

fn open_database(c: &CommonArgs) -> Result<Database, String> {
    if c.target != "embedded" {
        return Err(format!(
            "--target {}: only the embedded target exists in this build (server and peer targets come with the network server)",
            c.target
        ));
    }
    match c.anticache.as_str() {
        "off" => {}
        "on" => return Err("--anticache on: the anti-cache is not part of this build yet".into()),
        other => return Err(format!("--anticache must be on or off, got \"{other}\"")),
    }
    if c.data_dir.is_some() {
        return Err("--data-dir: nothing is stored on disk by this build yet".into());
    }
    let mut b = Config::builder();
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
    Database::open(config).map_err(|e| e.to_string())
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
    let db = open_database(c)?;
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
