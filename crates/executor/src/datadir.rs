//! A database's data directory: its layout, its lock, and opening a database in it with
//! recovery ([`open`]).
//!
//! The layout, under the directory given as `data_dir`: `permafrost.lock`; `schema.log`
//! (schema_log.rs); `commandlog/` (the command log's segments); `snapshots/`; and the block
//! files in `anticache/anticache/` (the layout since the first release: existing data
//! directories depend on it).
//!
//! The data directory belongs to one server at a time. The database holds the lock of
//! `DATA_DIR/permafrost.lock` (`permafrost_io::DirLock`: an exclusive `flock`, the file
//! naming the holder's process id) for as long as it is open, so a second server on the
//! same directory stops at start with a clear error instead of writing over the first
//! one's log, snapshots and block files. A lock cannot stop the other accident: the
//! directory removed (or replaced) under a running server, which then keeps writing
//! snapshots and log segments by path into whatever directory now has that name, possibly
//! one a new server uses. So a watchdog thread checks every second that the lock file at the
//! path is still the file locked; if it is not, the server stops at once (what is durable
//! stays durable; nothing more is written there).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use permafrost_io::{DirLock, Fs, LockError};

use crate::config::LogMode;
use crate::database::Database;
use crate::error::{Error, Result};
use crate::recovery::RecoveryReport;
use crate::schema_log::SchemaLog;
use crate::settings::DbSettings;

const LOCK_FILE: &str = "permafrost.lock";

/// Locks data directory `dir` (which exists) for the database opened in it, or says which
/// process has it.
pub fn lock(dir: &Path) -> Result<DirLock> {
    let config = |message: String| Error::Config {
        setting: "data_dir",
        message,
    };
    match DirLock::acquire(&dir.join(LOCK_FILE)) {
        Ok(l) => Ok(l),
        Err(LockError::Busy { owner }) => Err(config(format!(
            "data directory {} is in use by another permafrost server{} (one server per data directory)",
            dir.display(),
            owner.map(|o| format!(" (process {o})")).unwrap_or_default()
        ))),
        Err(e) => Err(config(e.to_string())),
    }
}

/// Starts a server's watchdog over the data directory's lock: every `every`, if the lock
/// file was removed or replaced, prints why and ends the process with status 70. It watches
/// a second handle on the same lock, which stays with the database.
pub fn watch(lock: &DirLock, every: Duration) -> Result<()> {
    let copy = lock
        .try_clone()
        .map_err(|e| Error::Internal(format!("cannot watch the lock file: {e}")))?;
    std::thread::Builder::new()
        .name("datadir-watch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                if !copy.still_ours() {
                    eprintln!(
                        "fatal: {} was removed or replaced while this server ran: the data directory is no \
                         longer this server's; stopping at once so as to write nothing more into it",
                        copy.path().display()
                    );
                    std::process::exit(70);
                }
            }
        })
        .map(|_| ())
        .map_err(|e| Error::Internal(format!("cannot start the data directory watchdog: {e}")))
}

/// The data directory's layout.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    /// The anti-cache's directory (`DbSettings::data_dir`).
    pub fn anticache(&self) -> PathBuf {
        self.root.join("anticache")
    }

    /// The block files.
    pub fn blocks(&self) -> PathBuf {
        self.anticache().join("anticache")
    }

    pub fn command_log(&self) -> PathBuf {
        self.root.join("commandlog")
    }

    pub fn snapshots(&self) -> PathBuf {
        self.root.join("snapshots")
    }

    pub fn schema_log(&self) -> PathBuf {
        self.root.join(crate::schema_log::FILE)
    }

    /// Where queries spill what passes their working memory (nameless temporary files:
    /// the folder stays empty).
    pub fn temp(&self) -> PathBuf {
        self.root.join("tmp")
    }
}

/// What the operator allows recovery to do beyond the safe default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenOptions {
    /// Damage to durable command-log records refuses the start (SQLSTATE XX001, naming the
    /// file and offset): starting would lose acknowledged transactions. With this set, the
    /// log is trimmed at the damage instead (`permafrost_durability::trim_damaged_log`:
    /// the dropped bytes are kept aside) and the report says what was lost
    /// ([`RecoveryReport::trimmed`]). Off by default; the server's
    /// `--recovery-trim-damaged-log`.
    pub trim_damaged_log: bool,
    /// The Rust procedures built into the program ([`crate::Library`]), available to
    /// recovery and then to `CREATE PROCEDURE ... LANGUAGE internal`.
    pub library: crate::Library,
}

/// Opens the database in data directory `root` (created if missing) with `settings`: locks
/// the directory, lays it out, opens the schema log, recovers (the newest snapshot, then
/// the command log after it; with the command log off, the schema from the schema log
/// alone) and attaches the schema log, so that every schema change from then on is
/// recorded there. `progress` hears how far the log's replay got. Returns the database,
/// which holds the lock until it is dropped, and what recovery did. A damaged command log
/// refuses the start ([`open_with`] can trim it).
pub fn open(
    settings: &DbSettings,
    root: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Database, RecoveryReport)> {
    open_with(settings, root, OpenOptions::default(), progress)
}

/// [`open`] with what the operator allows recovery to do ([`OpenOptions`]).
pub fn open_with(
    settings: &DbSettings,
    root: &Path,
    options: OpenOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Database, RecoveryReport)> {
    open_with_fs(settings, root, options, Arc::new(permafrost_io::RealFs), progress)
}

/// [`open_with`] with every file of the data directory (the command log, snapshots, the
/// schema log, the block files) read and written through `fs` (tests inject faults with
/// [`permafrost_io::FaultyFs`]). The lock file is the real file system's: a lock is between
/// processes.
pub fn open_with_fs(
    settings: &DbSettings,
    root: &Path,
    options: OpenOptions,
    fs: Arc<dyn Fs>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Database, RecoveryReport)> {
    fs.create_dir_all(root).map_err(|e| Error::Config {
        setting: "data_dir",
        message: format!("cannot create {}: {e}", root.display()),
    })?;
    let lock = lock(root)?;
    let layout = Layout {
        root: root.to_path_buf(),
    };
    let mut settings = settings.clone();
    settings.data_dir = Some(layout.anticache());
    settings.log_dir = Some(layout.command_log());
    let logged = settings.command_log != LogMode::Off;
    if logged {
        settings.snapshot_dir = Some(layout.snapshots());
    }
    // Before the log is opened for writing (which refuses damage it does not cut off).
    let trimmed = if logged && options.trim_damaged_log {
        permafrost_durability::trim_damaged_log(&layout.command_log(), &*fs)?
    } else {
        None
    };
    let mut config = settings.config(Some(&layout.blocks()))?;
    config.temp_dir = Some(layout.temp());
    let db = Database::open_with_fs(config, fs.clone())?;
    db.provide_internal(options.library.clone());
    let (schema_log, statements) = SchemaLog::open(&*fs, root)?;
    let report = if logged {
        let mut report = db.recover(Vec::new(), progress)?;
        report.trimmed = trimmed.as_ref().map(Into::into);
        if report.records == 0 && report.snapshot.is_none() {
            // A database that ran without a command log: its schema comes from the schema
            // log (and goes into the command log from now on).
            db.replay_schema(&statements)?;
            report.schema_log_changes = statements.len() as u64;
        }
        report
    } else {
        let mut report = RecoveryReport::default();
        let has_log = fs
            .list_dir(&layout.command_log())
            .map(|d| d.iter().any(|p| p.extension().is_some_and(|x| x == "log")))
            .unwrap_or(false);
        if has_log {
            report.warnings.push(format!(
                "command_log is off, so the command log in {} is not replayed: the rows it holds are not loaded \
                 (start with --command-log sync to recover them)",
                layout.command_log().display()
            ));
        }
        db.replay_schema(&statements)?;
        report.schema_log_changes = statements.len() as u64;
        report
    };
    let mut report = report;
    report.warnings.extend(schema_log.dropped_tail().map(str::to_string));
    db.attach_data_dir(lock, schema_log);
    Ok((db, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_a_replaced_lock_file_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let lock = lock(dir.path()).unwrap();
        assert!(lock.still_ours());
        let e = super::lock(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("in use by another permafrost server") && e.contains("process"),
            "{e}"
        );
        // So is a second database opened in the same directory while the first is open.
        let (_db, _) = open(&settings(LogMode::Off), &dir.path().join("d"), &mut |_, _| {}).unwrap();
        assert!(open(&settings(LogMode::Off), &dir.path().join("d"), &mut |_, _| {}).is_err());
        std::fs::remove_file(dir.path().join(LOCK_FILE)).unwrap();
        assert!(!lock.still_ours());
        std::fs::write(dir.path().join(LOCK_FILE), "1\n").unwrap();
        assert!(!lock.still_ours(), "a new file at the same path is not ours");
    }

    /// A log whose durable records are damaged refuses the start, naming the file and
    /// offset; with the operator's trim it starts with the records before the damage and
    /// the report says what was dropped.
    #[test]
    fn a_damaged_log_refuses_the_start_unless_the_operator_trims_it() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (db, _) = open(&settings(LogMode::Sync), dir.path(), &mut |_, _| {}).unwrap();
            db.execute_sql("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)", vec![])
                .unwrap();
            for i in 0..300i64 {
                db.execute_sql(
                    "INSERT INTO t VALUES ($1, $2)",
                    vec![permafrost_types::Value::Int(i), permafrost_types::Value::Int(i)],
                )
                .unwrap();
            }
        }
        let seg = std::fs::read_dir(dir.path().join("commandlog"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .max()
            .unwrap();
        let mut bytes = std::fs::read(&seg).unwrap();
        let at = bytes.len() / 4 / 4096 * 4096;
        bytes[at..at + 4096].fill(0);
        std::fs::write(&seg, &bytes).unwrap();

        let e = open(&settings(LogMode::Sync), dir.path(), &mut |_, _| {})
            .err()
            .expect("refused");
        assert_eq!(e.sqlstate(), "XX001", "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(&seg.display().to_string()) && msg.contains("offset"),
            "{msg}"
        );

        let trim = OpenOptions {
            trim_damaged_log: true,
            ..OpenOptions::default()
        };
        let (db, report) = open_with(&settings(LogMode::Sync), dir.path(), trim, &mut |_, _| {}).unwrap();
        let t = report.trimmed.clone().expect("the trim is reported");
        assert_eq!(t.file, seg.display().to_string());
        assert!(t.offset <= at as u64 && t.first_lsn > 1, "{t:?}");
        let last = t.last_lsn.expect("records after the damage were found");
        assert_eq!(t.records, Some(last - t.first_lsn + 1));
        assert_eq!(report.records, t.first_lsn - 1, "replayed up to the damage");
        let line = report.to_line();
        assert!(
            line.contains("\"trimmed\":{") && line.contains("\"version\":2"),
            "{line}"
        );
        db.execute_sql("INSERT INTO t VALUES (1000, 1)", vec![]).unwrap();
        drop(db);
        // The log now reads cleanly: the next start needs no trim.
        let (_, report) = open(&settings(LogMode::Sync), dir.path(), &mut |_, _| {}).unwrap();
        assert!(report.trimmed.is_none() && report.torn.is_none(), "{report:?}");
    }

    fn settings(log: LogMode) -> DbSettings {
        DbSettings {
            partitions: Some(2),
            anticache: false,
            command_log: log,
            ..DbSettings::default()
        }
    }

    #[test]
    fn schema_changes_come_back_from_the_schema_log_without_a_command_log() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (db, report) = open(&settings(LogMode::Off), dir.path(), &mut |_, _| {}).unwrap();
            assert_eq!(report.schema_log_changes, 0);
            db.execute_sql(
                "CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT) WITH (partition_by = 'id')",
                vec![],
            )
            .unwrap();
            db.execute_sql("CREATE INDEX accounts_owner ON accounts (owner)", vec![])
                .unwrap();
            db.execute_sql("CREATE TABLE gone (a INT)", vec![]).unwrap();
            db.execute_sql("DROP TABLE gone", vec![]).unwrap();
            db.create_procedure(
                "CREATE PROCEDURE owner_of(a BIGINT) PARTITION ON a AS $$ SELECT owner FROM accounts WHERE id = $1 $$",
            )
            .unwrap();
            // A change that fails is not recorded.
            assert!(db.execute_sql("CREATE TABLE accounts (x INT)", vec![]).is_err());
        }
        let (db, report) = open(&settings(LogMode::Off), dir.path(), &mut |_, _| {}).unwrap();
        assert_eq!(report.schema_log_changes, 5);
        let catalog = db.catalog();
        assert_eq!(catalog.table("accounts").expect("the table is back").indexes.len(), 2);
        assert!(catalog.table("gone").is_none());
        db.execute_sql("INSERT INTO accounts VALUES (7, 'g')", vec![]).unwrap();
        assert_eq!(
            db.call("owner_of", vec![permafrost_types::Value::Int(7)])
                .unwrap()
                .len(),
            1
        );
        drop(db);
        // With the command log on, the schema comes from the schema log once (the log holds
        // nothing yet), then from the log; the schema log keeps every change either way.
        {
            let (db, report) = open(&settings(LogMode::Sync), dir.path(), &mut |_, _| {}).unwrap();
            assert_eq!(report.schema_log_changes, 5);
            db.execute_sql("CREATE TABLE later (a INT)", vec![]).unwrap();
        }
        let (db, report) = open(&settings(LogMode::Sync), dir.path(), &mut |_, _| {}).unwrap();
        assert_eq!(report.schema_log_changes, 0, "{report:?}");
        assert!(db.catalog().table("later").is_some());
        drop(db);
        let (db, _) = open(&settings(LogMode::Off), dir.path(), &mut |_, _| {}).unwrap();
        assert!(db.catalog().table("later").is_some() && db.catalog().table("accounts").is_some());
    }
}
