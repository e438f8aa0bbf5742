//! The `permafrost` command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use permafrost_bench::setup::{self, DbSettings};
use permafrost_bench::ycsb::{self, Mix, YcsbOptions};
use permafrost_executor::parse_size;

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
    /// Run the database server: PostgreSQL clients connect to --listen.
    Serve(ServeArgs),
    /// Run a benchmark and print its figures.
    Bench {
        #[command(subcommand)]
        workload: Workload,
    },
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Address to listen on (other interfaces only when asked, e.g. 0.0.0.0:5433).
    #[arg(long, env = "PERMAFROST_LISTEN", default_value = "127.0.0.1:5433")]
    listen: std::net::SocketAddr,
    /// Directory of the database's files (the anti-cache's blocks under DIR/anticache).
    #[arg(long, env = "PERMAFROST_DATA_DIR", default_value = "./permafrost-data")]
    data_dir: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
}

/// The database's settings, shared by `serve` and the benchmarks (flags or environment).
#[derive(Args, Debug)]
struct EngineArgs {
    /// Memory budget (e.g. 64MiB, 2GiB, plain bytes). Default: half of RAM.
    #[arg(long, env = "PERMAFROST_MEMORY_LIMIT", value_parser = parse_size_arg)]
    memory_limit: Option<u64>,
    /// Partitions (executor threads). Default: number of CPU cores.
    #[arg(long, env = "PERMAFROST_PARTITIONS")]
    partitions: Option<u32>,
    /// Anti-caching: on (evict cold data to disk past the memory limit) or off.
    #[arg(long, env = "PERMAFROST_ANTICACHE", default_value = "on")]
    anticache: String,
    /// Bytes per eviction block, 1KiB to 4MiB.
    #[arg(long, env = "PERMAFROST_BLOCK_SIZE", value_parser = parse_size_arg)]
    block_size: Option<u64>,
    /// Merge policy for fetched blocks: tuple or block.
    #[arg(long, env = "PERMAFROST_MERGE", default_value = "tuple")]
    merge: String,
    /// Tuple-merge: fraction of a block that may be holes before it is merged whole.
    #[arg(long, env = "PERMAFROST_HOLE_THRESHOLD", default_value_t = 0.5)]
    hole_threshold: f64,
    /// How evicted data is retrieved: abort-restart or synchronous.
    #[arg(long, env = "PERMAFROST_RETRIEVAL", default_value = "abort-restart")]
    retrieval: String,
    /// Fraction of the memory limit at which eviction starts.
    #[arg(long, env = "PERMAFROST_EVICTION_THRESHOLD")]
    eviction_threshold: Option<f64>,
    /// Bytes evicted per round beyond what brings memory under the threshold.
    #[arg(long, env = "PERMAFROST_EVICTION_SIZE", value_parser = parse_size_arg)]
    eviction_size: Option<u64>,
    /// Cold-tuple policy: lru or clock.
    #[arg(long, env = "PERMAFROST_COLD_POLICY", default_value = "lru")]
    cold_policy: String,
    /// Fraction of transactions that update the LRU chain (the paper's alpha).
    #[arg(long, env = "PERMAFROST_LRU_SAMPLE_RATE")]
    lru_sample_rate: Option<f64>,
    /// Restarts allowed per transaction for evicted data.
    #[arg(long, env = "PERMAFROST_MAX_RESTARTS")]
    max_restarts: Option<u32>,
}

impl EngineArgs {
    fn settings(&self, data_dir: Option<PathBuf>) -> Result<DbSettings, String> {
        let anticache = match self.anticache.as_str() {
            "on" => true,
            "off" => false,
            other => return Err(format!("invalid setting anticache: \"{other}\" (expected on or off)")),
        };
        Ok(DbSettings {
            partitions: self.partitions,
            memory_limit: self.memory_limit,
            anticache,
            data_dir,
            block_size: self.block_size,
            merge: setup::parse_merge(&self.merge, self.hole_threshold)?,
            retrieval: setup::parse_retrieval(&self.retrieval)?,
            cold_policy: setup::parse_cold_policy(&self.cold_policy)?,
            eviction_threshold: self.eviction_threshold,
            eviction_size: self.eviction_size,
            max_restarts: self.max_restarts,
            lru_sample_rate: self.lru_sample_rate,
        })
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

fn run_serve(args: ServeArgs) -> Result<(), String> {
    let settings = args.engine.settings(Some(args.data_dir.join("anticache")))?;
    let (db, _dir) = settings.open().map_err(|e| e.to_string())?;
    let db = std::sync::Arc::new(db);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("permafrost-net")
        .build()
        .map_err(|e| format!("cannot start the network runtime: {e}"))?;
    rt.block_on(async {
        let listener = permafrost_server::bind(args.listen).await.map_err(|e| e.to_string())?;
        eprintln!(
            "permafrost {} listening on {} (PostgreSQL protocol {}), {} partitions, memory limit {} MiB, data in {}",
            env!("CARGO_PKG_VERSION"),
            args.listen,
            permafrost_server::PG_VERSION,
            db.partitions(),
            db.config().memory_limit >> 20,
            args.data_dir.display()
        );
        eprintln!("note: no command log yet: the data lives in memory and on the anti-cache's disk blocks only until the server stops");
        permafrost_server::serve(db.clone(), listener, shutdown_signal())
            .await
            .map_err(|e| e.to_string())?;
        eprintln!("shutting down");
        Ok::<(), String>(())
    })
}

#[derive(Subcommand)]
enum Workload {
    /// YCSB: point reads and updates of one table with Zipfian skew.
    Ycsb(YcsbArgs),
    /// The disk under the data directory: sequential writes and random reads per block
    /// size, through the anti-cache's I/O path.
    Device(DeviceArgs),
    /// A series of YCSB runs in one process, written as JSON and a PNG chart: fig8 (merge
    /// policies), fig9a (block sizes), fig10 (access tracking), compare (anti-cache
    /// against in-memory, the judged ratios).
    Experiment(ExperimentArgs),
}

#[derive(Args, Debug)]
struct ExperimentArgs {
    /// fig8, fig9a, fig10 or compare.
    name: String,
    /// Directory for <name>.json and <name>.png.
    #[arg(long, default_value = "docs/results")]
    out: PathBuf,
    /// Records (default: 500000; 1000000 for compare).
    #[arg(long)]
    records: Option<u64>,
    /// Bytes per tuple.
    #[arg(long, default_value_t = 1008)]
    tuple_size: usize,
    /// Seconds of warm-up before each measured run.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Seconds measured per run.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Times every configuration runs (interleaved); the median is plotted.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Partitions (default: number of CPU cores).
    #[arg(long)]
    partitions: Option<u32>,
    /// Client threads (default: one per partition).
    #[arg(long)]
    clients: Option<usize>,
    /// Operations each client keeps in flight.
    #[arg(long, default_value_t = 512)]
    in_flight: usize,
    /// compare: memory limit of the larger-than-memory runs.
    #[arg(long, value_parser = parse_size_arg)]
    memory_limit: Option<u64>,
    /// Directory for block files (default: temporary directories).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Run nothing: draw <out>/<name>.png again from <out>/<name>.json.
    #[arg(long)]
    replot: bool,
}

#[derive(Args, Debug)]
struct DeviceArgs {
    /// Directory on the disk to measure. Default: the system's temporary directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Size of the test file (reads fall anywhere in it).
    #[arg(long, default_value = "2GiB", value_parser = parse_size_arg)]
    file_size: u64,
    /// Block sizes to read, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_size_arg,
          default_value = "1KiB,4KiB,8KiB,16KiB,64KiB,256KiB,1MiB")]
    block_sizes: Vec<u64>,
    /// Reads kept in flight.
    #[arg(long, default_value_t = 64)]
    queue_depth: u32,
    /// Seconds of reads per block size.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s)
}

/// Flags every benchmark takes.
#[derive(Args, Debug)]
struct CommonArgs {
    #[command(flatten)]
    engine: EngineArgs,
    /// What to run against: embedded (in this process).
    #[arg(long, default_value = "embedded")]
    target: String,
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
    /// Directory for the anti-cache's block files. Default: a temporary directory,
    /// removed at exit.
    #[arg(long)]
    data_dir: Option<PathBuf>,
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

impl CommonArgs {
    fn settings(&self) -> Result<DbSettings, String> {
        self.engine.settings(self.data_dir.clone())
    }
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
    let (db, _data_dir) = c.settings()?.open().map_err(|e| e.to_string())?;
    let opts = YcsbOptions {
        clients: c.clients.unwrap_or(db.partitions() as usize),
        ..opts
    };
    opts.validate().map_err(|e| e.to_string())?;
    let target = ycsb::embedded::Embedded::new(db, true);
    let report = ycsb::run(&target, &opts, !c.quiet).map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    write_json(c.json.as_deref(), &report)?;
    if report.verify_errors > 0 {
        return Err(format!("{} reads failed verification", report.verify_errors));
    }
    Ok(())
}

fn run_device(a: DeviceArgs) -> Result<(), String> {
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

fn run_experiment(a: ExperimentArgs) -> Result<(), String> {
    use permafrost_bench::experiment;
    let params = experiment::Params {
        records: a.records,
        tuple_size: a.tuple_size,
        warmup: a.warmup,
        duration: a.duration,
        rounds: a.rounds,
        partitions: a.partitions,
        clients: a.clients,
        in_flight: a.in_flight,
        memory_limit: a.memory_limit,
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

fn write_json(path: Option<&std::path::Path>, value: &impl serde::Serialize) -> Result<(), String> {
    if let Some(path) = path {
        let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Serve(a) => run_serve(a),
        Command::Bench {
            workload: Workload::Ycsb(a),
        } => run_ycsb(a),
        Command::Bench {
            workload: Workload::Device(a),
        } => run_device(a),
        Command::Bench {
            workload: Workload::Experiment(a),
        } => run_experiment(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
