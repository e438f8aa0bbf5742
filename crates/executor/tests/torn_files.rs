//! Snapshot and schema-log writes torn, cut short or corrupted through the fault-injecting
//! file system (`permafrost_io::FaultyFs`), and what recovery does then, rule by rule as
//! docs/format.md states them ("Snapshot, version 2" and "Schema log, version 1"): it
//! repairs what a crash can leave (a snapshot never renamed, a schema change whose record
//! was being written) without losing an acknowledged change, and refuses the rest, naming
//! the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use permafrost_executor::datadir::{self, OpenOptions};
use permafrost_executor::settings::DbSettings;
use permafrost_executor::{Config, Database, LogConfig, LogMode, SnapshotConfig};
use permafrost_io::FaultyFs;
use permafrost_types::Value;

fn config(dir: &Path) -> Config {
    let mut log = LogConfig::new(dir.join("log"));
    // Acknowledged is durable.
    log.mode = LogMode::Sync;
    // The smallest segments: a snapshot's cut removes the ones it covers.
    log.segment_bytes = 1 << 20;
    // No helper thread writing through the file system: a snapshot writer forked while it
    // held the fault-injecting file system's lock would wait for it forever.
    log.preallocate = false;
    let mut snaps = SnapshotConfig::new(dir.join("snapshots"));
    snaps.interval = None;
    snaps.log_bytes = 0;
    Config::builder()
        .partitions(2)
        .memory_limit(64 << 20)
        .command_log(log)
        .snapshots(snaps)
        .build()
        .unwrap()
}

fn insert(db: &Database, from: i64, to: i64) {
    let pad = "p".repeat(1000);
    for i in from..to {
        db.execute_sql(
            "INSERT INTO t (id, v) VALUES ($1, $2)",
            vec![Value::Int(i), Value::Text(pad.clone().into())],
        )
        .unwrap();
    }
}

fn count(db: &Database) -> i64 {
    match db.execute_sql("SELECT COUNT(*) FROM t", vec![]).unwrap().to_values()[0][0] {
        Value::Int(n) => n,
        ref v => panic!("count is {v:?}"),
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A database through `fs` with table `t` and rows `0..rows`, and snapshot 1 of them.
fn with_snapshot(dir: &Path, fs: &FaultyFs, rows: i64) -> Database {
    let db = Database::open_with_fs(config(dir), Arc::new(fs.clone())).unwrap();
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
        .unwrap();
    insert(&db, 0, rows);
    assert_eq!(db.snapshot().unwrap().epoch, 1);
    db
}

/// A torn snapshot write fails the snapshot (the writer process reports the error, its
/// `.tmp` file is removed), and after a power loss recovery starts from the previous
/// snapshot and replays the log after it: no acknowledged row is lost. A `.tmp` file a
/// crash left in the middle of its write is never read, and the next snapshot of that
/// number replaces it.
#[test]
fn a_torn_snapshot_is_never_loaded_and_the_previous_one_and_the_log_hold_everything() {
    let dir = tempfile::tempdir().unwrap();
    let snaps = dir.path().join("snapshots");
    let fs = FaultyFs::new();
    {
        let db = with_snapshot(dir.path(), &fs, 300);
        insert(&db, 300, 600);
        // The writer process takes the fault in its copy of the file system; the parent's
        // copy stays armed and is disarmed once the snapshot failed.
        fs.tear_next_write(100);
        let err = db.snapshot().unwrap_err().to_string();
        fs.disarm_next_write();
        assert!(err.contains("snapshot 2 failed") && err.contains(".tmp"), "{err}");
        assert_eq!(files(&snaps), ["snapshot-00000000000000000001.pfsnap"]);
        insert(&db, 600, 700);
        fs.power_loss(0).unwrap();
    }
    // A crash in the middle of snapshot 2's write leaves its prefix under the `.tmp` name.
    let one = std::fs::read(snaps.join("snapshot-00000000000000000001.pfsnap")).unwrap();
    let tmp = snaps.join("snapshot-00000000000000000002.pfsnap.tmp");
    std::fs::write(&tmp, &one[..one.len() / 2]).unwrap();

    let db = Database::open_with_fs(config(dir.path()), Arc::new(FaultyFs::new())).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.snapshot.as_ref().map(|s| s.epoch), Some(1), "{report:?}");
    assert!(report.warnings.is_empty(), "a .tmp file is not a snapshot: {report:?}");
    assert_eq!(count(&db), 700);
    let next = db.snapshot().unwrap();
    assert_eq!(next.epoch, 2);
    assert_eq!(files(&snaps), ["snapshot-00000000000000000002.pfsnap"]);
}

/// A byte changed on its way to the disk: the snapshot completes (nothing reports the
/// fault), the log segments it covers are removed, and at the restart its checksum fails.
/// It is passed over, the log no longer reaches back far enough for recovery without it,
/// and recovery refuses (XX001), naming the snapshot file and the offset of the damage.
#[test]
fn a_snapshot_with_a_flipped_byte_is_refused_naming_it_when_the_log_cannot_replace_it() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let path = {
        let db = Database::open_with_fs(config(dir.path()), Arc::new(fs.clone())).unwrap();
        db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
            .unwrap();
        // More than a segment of records.
        insert(&db, 0, 1_500);
        // Byte 5,000 of the snapshot's first write (1 MiB) is inside its rows.
        fs.flip_next_write(5_000);
        let info = db.snapshot().unwrap();
        fs.disarm_next_write();
        assert!(info.bytes > 5_000, "{info:?}");
        insert(&db, 1_500, 1_600);
        info.path
    };
    let first_segment = std::fs::read_dir(dir.path().join("log"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .min()
        .unwrap();
    assert_ne!(
        first_segment, "00000000000000000001.log",
        "the segments the snapshot covered are gone"
    );
    let db = Database::open_with_fs(config(dir.path()), Arc::new(FaultyFs::new())).unwrap();
    let err = db.recover(vec![], &mut |_, _| {}).unwrap_err();
    assert_eq!(err.sqlstate(), "XX001", "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "names the snapshot: {msg}");
    assert!(msg.contains("checksum mismatch") && msg.contains("at offset"), "{msg}");
}

/// The same flipped byte, while the log still holds every record from the first: the
/// snapshot is passed over with a warning naming it, and the log alone recovers every
/// acknowledged row.
#[test]
fn a_snapshot_with_a_flipped_byte_is_passed_over_when_the_log_holds_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let path = {
        let db = Database::open_with_fs(config(dir.path()), Arc::new(fs.clone())).unwrap();
        db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
            .unwrap();
        insert(&db, 0, 20);
        fs.flip_next_write(60);
        let info = db.snapshot().unwrap();
        fs.disarm_next_write();
        insert(&db, 20, 30);
        info.path
    };
    assert!(dir.path().join("log/00000000000000000001.log").exists());
    let db = Database::open_with_fs(config(dir.path()), Arc::new(FaultyFs::new())).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert!(report.snapshot.is_none(), "{report:?}");
    assert_eq!(report.warnings.len(), 1, "{report:?}");
    assert!(report.warnings[0].contains(&path.display().to_string()), "{report:?}");
    assert_eq!(count(&db), 30);
}

/// A data directory without a command log: its schema comes from the schema log.
fn settings() -> DbSettings {
    DbSettings {
        partitions: Some(2),
        anticache: false,
        command_log: LogMode::Off,
        ..DbSettings::default()
    }
}

fn open(dir: &Path, fs: &FaultyFs) -> permafrost_executor::Result<(Database, permafrost_executor::RecoveryReport)> {
    datadir::open_with_fs(
        &settings(),
        dir,
        OpenOptions::default(),
        Arc::new(fs.clone()),
        &mut |_, _| {},
    )
}

fn tables(db: &Database) -> Vec<String> {
    let mut names: Vec<String> = ["a", "b", "c"]
        .into_iter()
        .filter(|t| db.execute_sql(&format!("SELECT COUNT(*) FROM {t}"), vec![]).is_ok())
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

fn schema_log(dir: &Path) -> PathBuf {
    dir.join("schema.log")
}

/// The bytes of the header and of a record of `sql` (docs/format.md, "Schema log").
fn record_len(sql: &str) -> u64 {
    8 + sql.len() as u64
}

const A: &str = "CREATE TABLE a (x BIGINT PRIMARY KEY)";
const B: &str = "CREATE TABLE b (x BIGINT PRIMARY KEY)";
const C: &str = "CREATE TABLE c (x BIGINT PRIMARY KEY)";

/// A schema change whose record is torn by a crash: the change failed (it was never
/// acknowledged), and at the next open the cut-short last record is dropped, the file
/// truncated after the valid records, and the report says so, naming the file.
#[test]
fn a_schema_change_torn_by_a_crash_is_dropped_and_the_file_cut_after_the_valid_records() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    {
        let (db, _) = open(dir.path(), &fs).unwrap();
        db.execute_ddl(A).unwrap();
        fs.tear_next_write(10);
        let err = db.execute_ddl(B).unwrap_err().to_string();
        assert!(err.contains("schema.log"), "{err}");
        // The crash keeps the torn bytes.
        fs.power_loss(10).unwrap();
    }
    let valid = 12 + record_len(A);
    assert_eq!(std::fs::metadata(schema_log(dir.path())).unwrap().len(), valid + 10);
    let (db, report) = open(dir.path(), &FaultyFs::new()).unwrap();
    assert_eq!(tables(&db), ["a"]);
    assert_eq!(report.schema_log_changes, 1);
    assert_eq!(report.warnings.len(), 1, "{report:?}");
    let w = &report.warnings[0];
    assert!(
        w.contains("schema.log") && w.contains(&format!("dropped 10 bytes at byte {valid}")),
        "{w}"
    );
    assert_eq!(std::fs::metadata(schema_log(dir.path())).unwrap().len(), valid);
    // The log goes on after the valid records.
    db.execute_ddl(C).unwrap();
    drop(db);
    let (db, report) = open(dir.path(), &FaultyFs::new()).unwrap();
    assert_eq!(tables(&db), ["a", "c"]);
    assert!(report.warnings.is_empty(), "{report:?}");
}

/// A torn append the server lives through (a full disk, an I/O error): the change fails,
/// and the next change's record is written over the failed one's bytes, so the log stays
/// readable and holds exactly the acknowledged changes.
#[test]
fn a_failed_schema_log_append_is_written_over_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    {
        let (db, _) = open(dir.path(), &fs).unwrap();
        db.execute_ddl(A).unwrap();
        fs.tear_next_write(30);
        assert!(db.execute_ddl(B).is_err());
        db.execute_ddl(C).unwrap();
    }
    let len = std::fs::metadata(schema_log(dir.path())).unwrap().len();
    assert_eq!(len, 12 + record_len(A) + record_len(C));
    let (db, report) = open(dir.path(), &FaultyFs::new()).unwrap();
    assert_eq!(tables(&db), ["a", "c"]);
    assert!(report.warnings.is_empty(), "{report:?}");
}

/// A byte changed in a record before the last (here in the text of the first): the open
/// refuses, naming the file and the byte offset of the record (12: right after the
/// header), rather than drop the changes after it.
#[test]
fn a_flipped_byte_before_the_last_schema_record_is_refused_naming_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    {
        let (db, _) = open(dir.path(), &fs).unwrap();
        fs.flip_next_write(20);
        db.execute_ddl(A).unwrap();
        db.execute_ddl(B).unwrap();
    }
    let err = open(dir.path(), &FaultyFs::new()).err().expect("refused");
    let msg = err.to_string();
    assert!(msg.contains(&schema_log(dir.path()).display().to_string()), "{msg}");
    assert!(msg.contains("record at byte 12 fails its checksum"), "{msg}");
    assert_eq!(
        std::fs::metadata(schema_log(dir.path())).unwrap().len(),
        12 + record_len(A) + record_len(B),
        "nothing is cut off"
    );
}

/// A new schema log whose header write is torn by a crash holds no record (records are
/// appended only after the header is synced): it is started again. A header with another
/// magic is refused.
#[test]
fn a_torn_schema_log_header_starts_the_log_again_and_a_foreign_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    fs.tear_next_write(5);
    assert!(open(dir.path(), &fs).is_err());
    fs.power_loss(5).unwrap();
    assert_eq!(std::fs::read(schema_log(dir.path())).unwrap(), b"PFSCH");
    {
        let (db, _) = open(dir.path(), &FaultyFs::new()).unwrap();
        db.execute_ddl(A).unwrap();
    }
    let (db, _) = open(dir.path(), &FaultyFs::new()).unwrap();
    assert_eq!(tables(&db), ["a"]);
    drop(db);
    std::fs::write(schema_log(dir.path()), b"PFSXX").unwrap();
    let msg = open(dir.path(), &FaultyFs::new()).err().expect("refused").to_string();
    assert!(
        msg.contains("schema.log") && msg.contains("not a Permafrost schema log"),
        "{msg}"
    );
}
