//! Snapshots: a database recovered from a snapshot plus the log after it holds what the
//! first one held, evicted data included; the log segments a snapshot covers are removed;
//! a torn or corrupt snapshot is passed over for the previous one; blocks a snapshot
//! refers to are not reused before a later snapshot completes.

mod common;

use std::path::Path;

use common::retry;
use permafrost_executor::{AntiCacheConfig, Config, Database, LogConfig, LogMode, Request, SnapshotConfig};
use permafrost_types::Value;

fn config(dir: &Path, memory: u64) -> Config {
    let mut log = LogConfig::new(dir.join("log"));
    log.mode = LogMode::Async;
    log.segment_bytes = 1 << 20;
    let mut snaps = SnapshotConfig::new(dir.join("snapshots"));
    // Only on demand in these tests.
    snaps.interval = None;
    snaps.log_bytes = 0;
    Config::builder()
        .partitions(2)
        .memory_limit(memory)
        .command_log(log)
        .snapshots(snaps)
        .anticache(AntiCacheConfig::new(dir.join("blocks")))
        .lru_sample_rate(1.0)
        .build()
        .unwrap()
}

fn checksum(db: &Database, rows: i64) -> Vec<Vec<Value>> {
    (0..rows)
        .step_by(2000)
        .flat_map(|lo| {
            db.execute_sql(
                "SELECT COUNT(*), SUM(n), SUM(id * n), MAX(tag) FROM big WHERE id >= $1 AND id < $2",
                vec![Value::Int(lo), Value::Int(lo + 2000)],
            )
            .unwrap()
            .to_values()
        })
        .collect()
}

const ROWS: i64 = 30_000;

fn fill(db: &Database, from: i64, to: i64) {
    let pad = "x".repeat(900);
    for i in from..to {
        retry(
            db,
            "INSERT INTO big (id, n, pad) VALUES ($1, 0, $2)",
            vec![Value::Int(i), Value::Text(pad.clone().into())],
        );
    }
}

fn update(db: &Database, step: usize, add: i64) {
    for i in (0..ROWS).step_by(step) {
        retry(
            db,
            "UPDATE big SET n = n + $1 WHERE id = $2",
            vec![Value::Int(i % 13 + add), Value::Int(i)],
        );
    }
}

fn schema(db: &Database) {
    db.execute_ddl("CREATE TABLE big (id BIGINT PRIMARY KEY, n BIGINT NOT NULL, pad TEXT, tag BIGSERIAL)")
        .unwrap();
    db.execute_ddl("CREATE INDEX big_n ON big (n)").unwrap();
    db.create_procedure(
        "CREATE PROCEDURE bump(k BIGINT) PARTITION ON k AS $$ UPDATE big SET n = n + 1 WHERE id = $1 $$",
    )
    .unwrap();
}

/// A new database in `dir` with the schema and rows `0..rows`.
fn filled(dir: &Path, memory: u64, rows: i64) -> Database {
    let db = Database::open(config(dir, memory)).unwrap();
    schema(&db);
    fill(&db, 0, rows);
    db
}

#[test]
fn recovery_starts_from_the_snapshot_and_replays_the_log_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let memory = 16 << 20;
    let (before, cut, t1) = {
        let db = filled(dir.path(), memory, ROWS);
        update(&db, 7, 1);
        db.execute_sql("UPDATE big SET n = 777777 WHERE id = 6", vec![])
            .unwrap();
        fill(&db, ROWS, ROWS + 3_000); // id 6 is cold by now
        let evicted = db.stats_now().unwrap().evicted_now;
        assert!(evicted > 10_000, "the run evicted only {evicted} tuples");
        let t1 = db
            .execute_sql("INSERT INTO big (id, n) VALUES (-1, 0) RETURNING tag", vec![])
            .unwrap()
            .to_values();
        db.execute_sql("DELETE FROM big WHERE id = -1", vec![]).unwrap();
        let segments_before = std::fs::read_dir(dir.path().join("log")).unwrap().count();
        let info = db.snapshot().unwrap();
        assert!(info.cut_lsn >= ROWS as u64, "{info:?}");
        assert!(info.pause_micros < 1_000_000, "{info:?}");
        let segments_after = std::fs::read_dir(dir.path().join("log")).unwrap().count();
        assert!(
            segments_after < segments_before,
            "segments the snapshot covers are removed ({segments_before} -> {segments_after})"
        );
        // After the snapshot: more updates (reaching evicted rows) and a procedure call.
        update(&db, 5, 2);
        db.call("bump", vec![Value::Int(3)]).unwrap();
        (checksum(&db, ROWS), info.cut_lsn, t1)
    };
    let db = Database::open(config(dir.path(), memory)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    let snap = report.snapshot.clone().expect("recovered from the snapshot");
    assert_eq!(snap.cut_lsn, cut);
    assert!(snap.evicted > 10_000, "{snap:?}");
    assert_eq!(
        report.records,
        (ROWS as u64).div_ceil(5) + 1,
        "only the log after the cut: {report:?}"
    );
    assert_eq!(checksum(&db, ROWS), before);
    // The sequence continues where it was (the snapshot saved it), and the secondary index
    // finds an evicted row.
    let t2 = db
        .execute_sql("INSERT INTO big (id, n) VALUES (-1, 0) RETURNING tag", vec![])
        .unwrap()
        .to_values();
    assert!(t2[0][0] > t1[0][0], "{t2:?} after {t1:?}");
    let by_n = db
        .execute_sql("SELECT id FROM big WHERE n = 777777", vec![])
        .unwrap()
        .to_values();
    assert_eq!(by_n, vec![vec![Value::Int(6)]]);
    // A second snapshot after recovery, then a third start from it.
    db.execute_sql("UPDATE big SET n = n + 100 WHERE id = 11", vec![])
        .unwrap();
    let again = checksum(&db, ROWS);
    let info = db.snapshot().unwrap();
    assert!(info.epoch > snap.epoch);
    drop(db);
    let db = Database::open(config(dir.path(), memory)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.snapshot.unwrap().epoch, info.epoch);
    assert_eq!(report.records, 0);
    assert_eq!(checksum(&db, ROWS), again);
}

#[test]
fn a_damaged_newest_snapshot_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let memory = 64 << 20;
    let before = {
        let db = filled(dir.path(), memory, 2_000);
        db.snapshot().unwrap();
        update(&db, 3, 1);
        checksum(&db, 2_000)
    };
    // A snapshot file that claims to be newer but was cut short.
    let snaps = dir.path().join("snapshots");
    let newest = std::fs::read_dir(&snaps).unwrap().next().unwrap().unwrap().path();
    let bytes = std::fs::read(&newest).unwrap();
    let fake = snaps.join("snapshot-00000000000000000099.pfsnap");
    std::fs::write(&fake, &bytes[..bytes.len() / 2]).unwrap();
    let db = Database::open(config(dir.path(), memory)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.warnings.len(), 1, "{report:?}");
    assert!(report.warnings[0].contains("00099"), "{:?}", report.warnings);
    assert_eq!(report.snapshot.unwrap().epoch, 1);
    assert_eq!(checksum(&db, 2_000), before);
    // The next snapshot is numbered after every file present (not 2: it never takes the
    // name of one, usable or not), and replaces them.
    let next = db.snapshot().unwrap();
    assert_eq!(next.epoch, 100);
    assert_eq!(snapshot_files(dir.path()), [100]);
    // A flipped byte in the middle is caught too: by a checksum, or, if it lands in a
    // section's length, by the length no longer fitting the file (both are tested one by
    // one in crates/durability/tests/snapshot_file.rs).
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x40;
    std::fs::write(&fake, &bad).unwrap();
    let err = permafrost_durability::snapshot::validate(&permafrost_io::RealFs, &fake).unwrap_err();
    assert!(err.to_string().contains("is unusable"), "{err}");
}

#[test]
fn snapshots_need_recovery_first_and_a_configuration() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path(), 64 << 20, 10));
    let db = Database::open(config(dir.path(), 64 << 20)).unwrap();
    let err = db.snapshot().unwrap_err();
    assert!(err.to_string().contains("recovery"), "{err}");
    db.recover(vec![], &mut |_, _| {}).unwrap();
    db.snapshot().unwrap();
    let plain = Database::open(Config::builder().partitions(1).build().unwrap()).unwrap();
    let err = plain.snapshot().unwrap_err();
    assert!(err.to_string().contains("not configured"), "{err}");
}

#[test]
fn a_failed_snapshot_is_reported_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let memory = 64 << 20;
    let before = {
        let db = filled(dir.path(), memory, 2_000);
        // The writer process cannot create its file (a directory is in the way): it fails,
        // says why, and the database goes on.
        let obstacle = dir.path().join("snapshots/snapshot-00000000000000000001.pfsnap.tmp");
        std::fs::create_dir_all(&obstacle).unwrap();
        let err = db.snapshot().unwrap_err();
        assert!(err.to_string().contains("snapshot 1 failed"), "{err}");
        assert!(err.to_string().contains(".tmp"), "{err}");
        assert_eq!(db.snapshot_stats().2, 1, "counted as failed");
        update(&db, 3, 1);
        // The next one succeeds (a new number) and covers everything.
        std::fs::remove_dir(&obstacle).unwrap();
        let info = db.snapshot().unwrap();
        assert_eq!(info.epoch, 2);
        update(&db, 7, 1);
        checksum(&db, 2_000)
    };
    let db = Database::open(config(dir.path(), memory)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.snapshot.unwrap().epoch, 2);
    assert_eq!(checksum(&db, 2_000), before);
}

fn cold(db: &Database) -> (u64, u64, u64) {
    let t = db.table_stats().unwrap().into_iter().find(|t| t.name == "big").unwrap();
    (t.cold_tuples, t.cold_blocks, t.stale_tuples)
}

fn snapshot_files(dir: &Path) -> Vec<u64> {
    permafrost_durability::snapshot::list(&permafrost_io::RealFs, &dir.join("snapshots"))
        .unwrap()
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

#[test]
fn later_snapshots_record_the_block_directory_as_differences() {
    let dir = tempfile::tempdir().unwrap();
    let memory = 16 << 20;
    let (before, stats, last, rows) = {
        let db = filled(dir.path(), memory, ROWS);
        let first = db.snapshot().unwrap();
        assert_eq!(first.base_epoch, 0, "the first snapshot lists the whole directory");
        assert_eq!(first.directory_entries, first.blocks_live);
        assert!(first.blocks_live > 1_000, "{first:?}");
        // A few updates merge some evicted tuples back (tuple-merge leaves holes) and evict
        // others: the next snapshot lists what changed.
        update(&db, 97, 1);
        // Inserts until eviction has written new blocks (rounds run as memory fills, so
        // how many inserts that takes depends on timing).
        let evicted = db.stats_now().unwrap().evicted_tuples;
        let mut rows = ROWS;
        while db.stats_now().unwrap().evicted_tuples < evicted + 500 {
            assert!(rows < ROWS + 20_000, "no eviction after {} more rows", rows - ROWS);
            fill(&db, rows, rows + 500);
            rows += 500;
        }
        let second = db.snapshot().unwrap();
        assert_eq!(second.base_epoch, first.epoch, "{second:?}");
        assert!(
            second.directory_entries > 0 && second.directory_entries * 4 < second.blocks_live,
            "{second:?}"
        );
        update(&db, 89, 2);
        let third = db.snapshot().unwrap();
        assert_eq!(third.base_epoch, first.epoch, "{third:?}");
        // The base is kept, the snapshot in between is not.
        assert_eq!(snapshot_files(dir.path()), [first.epoch, third.epoch]);
        // Changing most blocks makes the difference larger than half the directory: the
        // snapshot after that one lists it whole again and the old base goes.
        update(&db, 1, 3);
        let fourth = db.snapshot().unwrap();
        assert_eq!(fourth.base_epoch, first.epoch);
        assert!(fourth.directory_entries * 2 > fourth.blocks_live, "{fourth:?}");
        update(&db, 101, 4);
        let fifth = db.snapshot().unwrap();
        assert_eq!(fifth.base_epoch, 0, "{fifth:?}");
        assert_eq!(snapshot_files(dir.path()), [fifth.epoch]);
        update(&db, 103, 5);
        let sixth = db.snapshot().unwrap();
        assert_eq!(sixth.base_epoch, fifth.epoch, "{sixth:?}");
        // Nothing after the last snapshot: the recovered directory must match exactly
        // (taken before the checksum, which reads evicted rows back).
        let stats = cold(&db);
        (checksum(&db, rows), stats, sixth.epoch, rows)
    };
    let db = Database::open(config(dir.path(), memory)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.snapshot.as_ref().unwrap().epoch, last, "{report:?}");
    assert_eq!(report.records, 0);
    let after = cold(&db);
    assert!(after.2 > 0, "tuple-merge left holes: {after:?}");
    assert_eq!(after, stats, "cold tuples, blocks and holes (recounted at load)");
    assert_eq!(checksum(&db, rows), before);
    // The first snapshot after a restart lists the whole directory.
    db.execute_sql("UPDATE big SET n = n + 1 WHERE id = 1", vec![]).unwrap();
    let info = db.snapshot().unwrap();
    assert_eq!(info.base_epoch, 0, "{info:?}");
    assert_eq!(snapshot_files(dir.path()), [info.epoch]);
}

/// Rewrites snapshot `path` (version 2, whole directories) as the previous build wrote it:
/// version 1, a 48-byte header, PARTITION without the live count, directory entries with
/// holes.
fn to_version_1(path: &Path) {
    use permafrost_durability::snapshot::{Dec, Enc, SnapshotReader, SnapshotWriter, kind};
    let (mut r, h) = SnapshotReader::open(&permafrost_io::RealFs, path).unwrap();
    assert_eq!((r.version(), h.base_epoch), (2, 0));
    let tmp = tempfile::tempdir().unwrap();
    let mut w = SnapshotWriter::create(&permafrost_io::RealFs, tmp.path(), &h).unwrap();
    while let Some((k, body)) = r.next_section().unwrap() {
        let body = match k {
            kind::PARTITION => body[..12].to_vec(),
            kind::BLOCKS => {
                let mut d = Dec::new(&body);
                let mut e = Enc::default();
                e.u32(d.u32("u32").unwrap());
                let n = d.u32("u32").unwrap();
                e.u32(n);
                for _ in 0..n {
                    e.u32(d.u32("u32").unwrap());
                    e.u16(d.u16("u16").unwrap());
                    e.u16(d.u16("u16").unwrap());
                    e.u16(0);
                    e.u16(d.u16("u16").unwrap());
                }
                e.0
            }
            _ => body,
        };
        w.section(k, &body).unwrap();
    }
    let (written, _) = w.finish().unwrap();
    let bytes = std::fs::read(written).unwrap();
    let mut v1 = bytes[..48].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    v1[40..44].fill(0);
    let crc = crc32c::crc32c(&v1[..44]);
    v1[44..48].copy_from_slice(&crc.to_le_bytes());
    v1.extend_from_slice(&bytes[56..]);
    std::fs::write(path, v1).unwrap();
}

#[test]
fn a_version_1_snapshot_of_the_previous_build_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let memory = 16 << 20;
    let (before, info) = {
        let db = filled(dir.path(), memory, ROWS);
        update(&db, 97, 1);
        let info = db.snapshot().unwrap();
        assert_eq!(info.base_epoch, 0);
        update(&db, 89, 2);
        (checksum(&db, ROWS), info)
    };
    to_version_1(&info.path);
    assert_eq!(
        permafrost_durability::snapshot::SnapshotReader::open(&permafrost_io::RealFs, &info.path)
            .unwrap()
            .0
            .version(),
        1
    );
    let db = Database::open(config(dir.path(), memory)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    let snap = report.snapshot.clone().unwrap();
    assert_eq!(snap.epoch, info.epoch, "{report:?}");
    assert_eq!(snap.blocks, info.blocks_live);
    assert_eq!(checksum(&db, ROWS), before);
    // The next snapshot is written in the current version, whole.
    let next = db.snapshot().unwrap();
    assert_eq!(next.base_epoch, 0);
    let (r, _) = permafrost_durability::snapshot::SnapshotReader::open(&permafrost_io::RealFs, &next.path).unwrap();
    assert_eq!(r.version(), permafrost_durability::snapshot::VERSION);
}

#[test]
fn a_dropped_database_is_closed_when_drop_returns_even_while_a_periodic_snapshot_runs() {
    // Snapshots as often as the periodic thread looks (every 100 ms), each taking a while
    // (30,000 rows of 900 bytes): the thread often holds the database when the application
    // drops it. The application's drop must still be the one that closes it (the command
    // log's lock released), so reopening at once never finds the log in use.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 256 << 20);
    if let Some(s) = cfg.snapshots.as_mut() {
        s.interval = Some(std::time::Duration::from_millis(1));
    }
    {
        let db = Database::open(cfg.clone()).unwrap();
        schema(&db);
        fill(&db, 0, ROWS);
    }
    let rounds = 12;
    let mut updates = 0;
    for round in 0..rounds {
        let db = Database::open(cfg.clone()).unwrap_or_else(|e| panic!("round {round}: {e}"));
        db.recover(vec![], &mut |_, _| {}).unwrap();
        // Commits for 100-160 ms, so that a snapshot is due when the thread looks.
        let until = std::time::Instant::now() + std::time::Duration::from_millis(100 + 5 * round);
        while std::time::Instant::now() < until {
            retry(
                &db,
                "UPDATE big SET n = n + 1 WHERE id = $1",
                vec![Value::Int(updates % ROWS)],
            );
            updates += 1;
        }
    }
    let db = Database::open(cfg).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    let n = db.execute_sql("SELECT SUM(n) FROM big", vec![]).unwrap().to_values();
    assert_eq!(n, vec![vec![Value::Int(updates)]]);
}

#[test]
fn a_snapshot_writer_holds_no_descriptor_of_the_server_so_another_database_reopens_meanwhile() {
    // The writer is a forked copy of the process: had it kept the descriptors it inherited,
    // another database of the process (here `other`), closed while a snapshot is being
    // written, could not be opened again until the writer exits (its command log's lock
    // file would still be open, so still locked).
    let dir = tempfile::tempdir().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let other_config = || {
        let mut log = LogConfig::new(other_dir.path().join("log"));
        log.mode = LogMode::Async;
        Config::builder().partitions(1).command_log(log).build().unwrap()
    };
    let db = filled(dir.path(), 256 << 20, 8_000);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let snapshots = s.spawn(|| {
            for _ in 0..6 {
                db.snapshot().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut reopened = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            // A writer forked a moment ago holds the descriptors until its first step
            // closes them; on a loaded machine that step may wait to be scheduled, so a
            // reopen may be refused for a few milliseconds (never for a snapshot's length).
            let mut tries = 0;
            let other = loop {
                match Database::open(other_config()) {
                    Ok(o) => break o,
                    Err(e) if tries < 100 && e.to_string().contains("in use by another writer") => {
                        tries += 1;
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    Err(e) => panic!("reopen {reopened} (after {tries} tries): {e}"),
                }
            };
            std::thread::sleep(std::time::Duration::from_millis(1));
            drop(other);
            reopened += 1;
        }
        snapshots.join().unwrap();
        assert!(reopened > 6, "only {reopened} reopenings while the snapshots ran");
    });
}

/// A value as large as a row may be goes into a snapshot and comes back from it; a row
/// larger than a snapshot section can hold is refused when it is written (54000), so no
/// later snapshot fails for it.
#[test]
fn the_largest_row_accepted_is_snapshotted_and_a_larger_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(50 << 20);
    {
        let db = Database::open(config(dir.path(), 1 << 30)).unwrap();
        db.recover(vec![], &mut |_, _| {}).unwrap();
        db.execute_sql("CREATE TABLE blobs (id BIGINT PRIMARY KEY, a TEXT, b TEXT)", vec![])
            .unwrap();
        db.execute_sql(
            "INSERT INTO blobs VALUES (1, $1, 'small')",
            vec![Value::text(big.as_str())],
        )
        .unwrap();
        let too_big = "y".repeat(61 << 20);
        let e = db
            .execute_sql(
                "INSERT INTO blobs VALUES (2, $1, NULL)",
                vec![Value::text(too_big.as_str())],
            )
            .unwrap_err();
        assert_eq!(e.sqlstate(), "54000", "{e}");
        // Two values that are each small enough but not together.
        let e = db
            .execute_sql(
                "UPDATE blobs SET b = $1 WHERE id = 1",
                vec![Value::text("z".repeat(20 << 20))],
            )
            .unwrap_err();
        assert_eq!(e.sqlstate(), "54000", "{e}");
        db.snapshot().unwrap();
    }
    let db = Database::open(config(dir.path(), 1 << 30)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert!(report.snapshot.is_some(), "{report:?}");
    let rows = db
        .execute_sql("SELECT id, length(a), b FROM blobs", vec![])
        .unwrap()
        .to_values();
    assert_eq!(
        rows,
        vec![vec![Value::Int(1), Value::Int(50 << 20), Value::text("small")]]
    );
}

/// A bulk insert (what COPY runs) is one multi-partition record in the log: replay stores
/// every row again; one that failed stored nothing, then or after a restart.
#[test]
fn a_bulk_insert_is_all_or_nothing_and_replays_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let cols = vec!["id".to_string(), "n".to_string()];
    let rows =
        |from: i64, to: i64| -> Vec<Value> { (from..to).flat_map(|i| [Value::Int(i), Value::Int(i * 2)]).collect() };
    {
        let db = Database::open(config(dir.path(), 1 << 30)).unwrap();
        db.recover(vec![], &mut |_, _| {}).unwrap();
        db.execute_sql("CREATE TABLE b (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)", vec![])
            .unwrap();
        assert_eq!(
            common::block_on(db.submit(Request::rows("b", &cols, rows(0, 3_000))))
                .map(|r| r.affected)
                .unwrap(),
            3_000
        );
        // Row 2,500 repeats a key: none of the 1,000 rows stays.
        let mut bad = rows(2_000, 2_500);
        bad.extend(rows(10, 11));
        bad.extend(rows(2_500, 3_000));
        let e = common::block_on(db.submit(Request::rows("b", &cols, bad)))
            .map(|r| r.affected)
            .unwrap_err();
        assert_eq!(e.sqlstate(), "23505", "{e}");
        let mut null = rows(5_000, 5_500);
        null.extend([Value::Int(9_999), Value::Null]);
        let e = common::block_on(db.submit(Request::rows("b", &cols, null)))
            .map(|r| r.affected)
            .unwrap_err();
        assert_eq!(e.sqlstate(), "23502", "{e}");
    }
    let db = Database::open(config(dir.path(), 1 << 30)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert!(report.records >= 2, "{report:?}");
    let n = db
        .execute_sql("SELECT count(*), sum(n) FROM b", vec![])
        .unwrap()
        .to_values();
    assert_eq!(
        n,
        vec![vec![Value::Int(3_000), Value::Int(2 * (0..3_000).sum::<i64>())]]
    );
}
