//! Opening the database a benchmark runs against, from the settings the command line (or an
//! experiment) gives ([`DbSettings`], the engine's): one place, so that `bench ycsb` and the
//! experiments that run many configurations build them the same way. A benchmark without a
//! data directory gets a temporary one.

use std::path::PathBuf;

use permafrost_executor::Database;
pub use permafrost_executor::settings::DbSettings;

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
