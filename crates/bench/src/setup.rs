//! Opening the database a benchmark runs against, from the settings the command line (or an
//! experiment) gives ([`DbSettings`], the engine's): one place, so that `bench ycsb` and the
//! experiments that run many configurations build them the same way. A benchmark without a
//! data directory gets a temporary one.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use permafrost_executor::Database;
pub use permafrost_executor::settings::DbSettings;
use permafrost_types::Value;

use crate::BenchError;

/// Where a run keeps its blocks; a temporary directory is removed when this is dropped.
pub enum DataDir {
    Given(PathBuf),
    Temporary(tempfile::TempDir),
}

impl DataDir {
    pub fn path(&self) -> PathBuf {
        match self {
            DataDir::Given(p) => p.join("anticache"),
            DataDir::Temporary(t) => t.path().to_path_buf(),
        }
    }
}

/// Opening a benchmark's database.
pub trait Open {
    /// Opens an empty database with these settings, in a temporary directory when none is
    /// given and one is needed. Keep the returned directory alive as long as the database.
    fn open(&self) -> Result<(Database, Option<DataDir>), BenchError>;
}

impl Open for DbSettings {
    fn open(&self) -> Result<(Database, Option<DataDir>), BenchError> {
        let logged = self.command_log != permafrost_executor::LogMode::Off;
        let dir = if self.anticache || logged {
            Some(match &self.data_dir {
                Some(d) => DataDir::Given(d.clone()),
                None => DataDir::Temporary(tempfile::Builder::new().prefix("permafrost-bench-").tempdir().map_err(
                    |e| BenchError::Options(format!("cannot create a temporary directory for the database: {e}")),
                )?),
            })
        } else {
            None
        };
        let db = self.open_in(dir.as_ref().map(|d| d.path()).as_deref())?;
        Ok((db, dir))
    }
}

/// How long a load statement refused for a retryable reason (the memory budget while
/// eviction catches up) is tried again before the load gives up.
const LOAD_STALL: Duration = Duration::from_secs(60);

/// Runs one loading statement of `what`, again while the database refuses it for a
/// retryable reason.
pub fn load_statement(db: &Database, sql: &str, what: &dyn std::fmt::Debug) -> Result<(), BenchError> {
    let first = Instant::now();
    loop {
        match db.execute_sql(sql, Vec::new()) {
            Ok(_) => return Ok(()),
            Err(e) if e.is_retryable() && first.elapsed() < LOAD_STALL => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(BenchError::Client(format!("loading {what:?}: {e}"))),
        }
    }
}

/// The count a counting query (one row, one bigint) returns, or its error's text: what the
/// seeds' benchmarks check their conditions with, embedded.
pub fn count(db: &Database, sql: &str, params: Vec<Value>) -> Result<i64, String> {
    let rows = db.execute_sql(sql, params).map_err(|e| e.to_string())?;
    (!rows.is_empty())
        .then(|| rows.row(0).get_i64(0))
        .flatten()
        .ok_or_else(|| "the query returned no count".to_string())
}
