//! The `permafrost` command.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod allocator;
mod bench_cmd;
mod config_file;
mod serve;
mod server_settings;
mod settings;

use bench_cmd::*;
use serve::*;

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
    Serve(Box<ServeArgs>),
    /// Run a benchmark and print its figures.
    Bench {
        #[command(subcommand)]
        workload: Workload,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    allocator::start_purger();
    let r = match cli.command {
        Command::Serve(a) => run_serve(*a),
        Command::Bench {
            workload: Workload::Ycsb(a),
        } => run_ycsb(*a),
        Command::Bench {
            workload: Workload::Tpcc(a),
        } => run_tpcc(*a),
        Command::Bench {
            workload: Workload::Voter(a),
        } => run_voter(*a),
        Command::Bench {
            workload: Workload::Tatp(a),
        } => run_tatp(*a),
        Command::Bench {
            workload: Workload::Device(a),
        } => run_device(a),
        Command::Bench {
            workload: Workload::Experiment(a),
        } => run_experiment(*a),
        Command::Bench {
            workload: Workload::Crash(a),
        } => run_crash(*a),
        Command::Bench {
            workload: Workload::Recovery(a),
        } => run_recovery(a),
        Command::Bench {
            workload: Workload::WireFloor(a),
        } => run_wire_floor(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
