//! The command log: round trips, group commit, durability before acknowledgement, fault
//! injection (torn writes, failed fdatasync, a full disk, a power loss), torn tails,
//! corruption, rotation and truncation, and bad bytes that must never panic.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use permafrost_durability::format::{
    FORMAT_VERSION, LEGACY_RECORD_HEADER_LEN, LEGACY_SEGMENT_HEADER_LEN, MAX_UNSYNCED_SPAN, RECORD_HEADER_LEN,
    SEGMENT_HEADER_LEN, frame_legacy_record, frame_record, legacy_segment_header, segment_file_name, segment_header,
};
use permafrost_durability::{
    CommandLog, LogConfig, LogError, LogMode, LogReader, Request, TxnRecord, decode_record, encode_record,
};
use permafrost_io::{FaultyFs, Fs};
use permafrost_types::{Numeric, Value};
use proptest::prelude::*;

mod common;
use common::append_chunk_wait;

// ---------------------------------------------------------------------------------------
// Helpers

fn call(thread: i64, seq: i64) -> TxnRecord {
    TxnRecord {
        zone: None,
        draws: None,
        partitions: vec![thread as u32 % 4],
        now: 1_700_000_000_000_000 + seq,
        seed: (thread as u64) << 32 | seq as u64,
        request: Request::Call {
            procedure: "Vote".into(),
            params: vec![Value::Int(thread), Value::Int(seq)],
        },
    }
}

fn big(seq: i64, bytes: usize) -> TxnRecord {
    TxnRecord {
        zone: None,
        draws: None,
        partitions: vec![0, 1],
        now: seq,
        seed: 7,
        request: Request::AdHoc {
            sql: "INSERT INTO t VALUES (?, ?)".into(),
            params: vec![Value::Int(seq), Value::bytes(vec![seq as u8; bytes])],
        },
    }
}

fn enc(r: &TxnRecord) -> Vec<u8> {
    let mut out = Vec::new();
    encode_record(r, &mut out);
    out
}

/// Exact equality (the encoding is injective: value kinds, double bits, decimal scale).
fn same(a: &TxnRecord, b: &TxnRecord) -> bool {
    enc(a) == enc(b)
}

fn config(dir: &Path, mode: LogMode, window: Duration) -> LogConfig {
    let mut c = LogConfig::new(dir);
    c.mode = mode;
    c.group_commit_window = window;
    c
}

fn sync_cfg(dir: &Path) -> LogConfig {
    config(dir, LogMode::Sync, Duration::ZERO)
}

/// Appends and waits for the callback.
/// Sync mode with 1 MiB segments (the smallest), so that tests rotate soon.
fn small_segments(dir: &Path) -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        ..sync_cfg(dir)
    }
}

fn append_wait(log: &CommandLog, rec: &TxnRecord) -> (u64, Result<(), LogError>) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let lsn = log.append(
        enc(rec),
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    (lsn, rx.recv().expect("done is called"))
}

/// Appends; returns the LSN and whether `done` had run (and with what) when append returned.
fn append_now(log: &CommandLog, rec: &TxnRecord) -> (u64, Option<Result<(), LogError>>) {
    let slot: Arc<Mutex<Option<Result<(), LogError>>>> = Arc::default();
    let s = slot.clone();
    let lsn = log.append(enc(rec), Box::new(move |r| *s.lock().unwrap() = Some(r)));
    let r = slot.lock().unwrap().take();
    (lsn, r)
}

type ReadBack = (Vec<(u64, TxnRecord)>, Option<(PathBuf, u64)>);

/// Every record after `after`, and the torn tail if there is one.
fn read_all(dir: &Path, after: u64) -> ReadBack {
    let mut r = LogReader::open(dir, after).expect("open reader");
    let recs: Vec<_> = r.by_ref().collect::<Result<_, _>>().expect("log reads back");
    (recs, r.torn_tail())
}

fn read_err(dir: &Path, after: u64) -> (usize, LogError) {
    let mut n = 0;
    let mut r = match LogReader::open(dir, after) {
        Ok(r) => r,
        Err(e) => return (0, e),
    };
    for item in r.by_ref() {
        match item {
            Ok(_) => n += 1,
            Err(e) => return (n, e),
        }
    }
    panic!("expected an error after {n} records, torn tail {:?}", r.torn_tail());
}

fn only_segment(dir: &Path) -> PathBuf {
    let segs = segments(dir);
    assert_eq!(segs.len(), 1, "{segs:?}");
    segs[0].clone()
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

fn record_len(rec: &TxnRecord) -> u64 {
    (RECORD_HEADER_LEN + enc(rec).len()) as u64
}

/// A record's length in a segment of versions 1 and 2.
fn legacy_record_len(rec: &TxnRecord) -> u64 {
    (LEGACY_RECORD_HEADER_LEN + enc(rec).len()) as u64
}

// ---------------------------------------------------------------------------------------
// Settings

#[test]
fn settings_are_validated_and_name_themselves() {
    assert_eq!("off".parse::<LogMode>().unwrap(), LogMode::Off);
    assert_eq!("Async".parse::<LogMode>().unwrap(), LogMode::Async);
    assert_eq!(" sync ".parse::<LogMode>().unwrap(), LogMode::Sync);
    let e = "fast".parse::<LogMode>().unwrap_err();
    assert!(e.to_string().contains("command_log"), "{e}");
    assert!(e.to_string().contains("off, async, sync"), "{e}");
    assert_eq!(e.sqlstate(), "22023");

    let c = LogConfig::new("/tmp/x");
    assert_eq!(c.mode, LogMode::Sync);
    assert_eq!(c.group_commit_window, Duration::ZERO);
    assert_eq!(c.segment_bytes, 64 << 20);
    c.validate().unwrap();

    let mut w = c.clone();
    w.group_commit_window = Duration::from_millis(1001);
    let e = w.validate().unwrap_err();
    assert!(e.to_string().contains("group_commit_window"), "{e}");
    w.group_commit_window = Duration::ZERO;
    w.validate().unwrap();

    for bad in [(1 << 20) - 1, (4u64 << 30) + 1, 0] {
        let mut s = c.clone();
        s.segment_bytes = bad;
        let e = s.validate().unwrap_err();
        assert!(e.to_string().contains("log_segment_size"), "{e}");
        assert_eq!(e.sqlstate(), "22023");
    }
    for good in [1 << 20, 4u64 << 30] {
        let mut s = c.clone();
        s.segment_bytes = good;
        s.validate().unwrap();
    }
    // open validates.
    let dir = tempfile::tempdir().unwrap();
    let mut s = sync_cfg(dir.path());
    s.segment_bytes = 1;
    assert!(matches!(CommandLog::open(s), Err(LogError::Config(_))));
}

#[test]
fn sqlstates() {
    let io = LogError::Io {
        context: "x".into(),
        source: std::io::Error::from_raw_os_error(libc::EIO),
    };
    assert_eq!(io.sqlstate(), "58030");
    let full = LogError::Io {
        context: "x".into(),
        source: std::io::Error::from_raw_os_error(libc::ENOSPC),
    };
    assert_eq!(full.sqlstate(), "53100");
    assert!(full.is_disk_full());
    assert_eq!(full.duplicate().sqlstate(), "53100");
    let c = LogError::Corrupt {
        file: "f".into(),
        offset: 3,
        detail: "d".into(),
    };
    assert_eq!(c.sqlstate(), "XX001");
    assert!(c.to_string().contains("f, offset 3: d"), "{c}");
    assert_eq!(LogError::Failed("x".into()).sqlstate(), "58030");
}

// ---------------------------------------------------------------------------------------
// Modes and round trips

#[test]
fn sync_mode_round_trip_and_lsns_continue_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let recs: Vec<TxnRecord> = (0..10).map(|i| call(1, i)).collect();
    {
        let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
        assert_eq!(log.last_lsn(), 0);
        for (i, r) in recs.iter().enumerate() {
            let (lsn, res) = append_wait(&log, r);
            res.unwrap();
            assert_eq!(lsn, i as u64 + 1);
            assert!(log.durable_lsn() >= lsn);
        }
        let s = log.stats();
        assert_eq!((s.records, s.last_lsn, s.durable_lsn, s.segments), (10, 10, 10, 1));
        assert!(s.batches >= 1 && s.syncs > s.batches && !s.failed);
        // One segment (its start at open is not timed): every timed sync is a batch's.
        assert_eq!(s.sync_buckets.iter().sum::<u64>(), s.batches);
        assert!(s.sync_seconds_total > 0.0);
    }
    let seg = only_segment(dir.path());
    assert_eq!(seg.file_name().unwrap().to_str().unwrap(), "00000000000000000001.log");
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none());
    assert_eq!(back.len(), 10);
    for (i, (lsn, r)) in back.iter().enumerate() {
        assert_eq!(*lsn, i as u64 + 1);
        assert!(same(r, &recs[i]));
    }
    // Starting after an LSN skips what a snapshot covers.
    let (tail, _) = read_all(dir.path(), 7);
    assert_eq!(tail.iter().map(|r| r.0).collect::<Vec<_>>(), vec![8, 9, 10]);
    let (none, _) = read_all(dir.path(), 10);
    assert!(none.is_empty());

    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    assert_eq!(log.last_lsn(), 10);
    assert!(log.truncated_tail().is_none());
    let (lsn, res) = append_wait(&log, &call(2, 0));
    res.unwrap();
    assert_eq!(lsn, 11);
    drop(log);
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 11);
    assert!(same(&back[10].1, &call(2, 0)));
}

#[test]
fn async_mode_acknowledges_at_once_and_writes_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(config(dir.path(), LogMode::Async, Duration::from_millis(5))).unwrap();
    for i in 0..50 {
        let (lsn, r) = append_now(&log, &call(0, i));
        assert_eq!(lsn, i as u64 + 1);
        assert!(matches!(r, Some(Ok(()))), "async done runs inside append");
    }
    log.sync().unwrap();
    assert_eq!(log.durable_lsn(), 50);
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 50);
    // Drop writes and syncs what is still queued.
    for i in 50..80 {
        append_now(&log, &call(0, i));
    }
    drop(log);
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 80);
    assert!(back.iter().enumerate().all(|(i, (_, r))| same(r, &call(0, i as i64))));
}

#[test]
fn off_mode_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let log = CommandLog::open(config(&dir, LogMode::Off, Duration::ZERO)).unwrap();
    for i in 0..3 {
        let (lsn, r) = append_now(&log, &call(0, i));
        assert_eq!(lsn, i as u64 + 1);
        assert!(matches!(r, Some(Ok(()))));
    }
    log.sync().unwrap();
    log.truncate_through(100).unwrap();
    assert_eq!(log.last_lsn(), 3);
    assert_eq!(log.stats().records, 0);
    drop(log);
    assert!(!dir.exists());
    // A missing directory reads as an empty log.
    let (back, torn) = read_all(&dir, 0);
    assert!(back.is_empty() && torn.is_none());
}

#[test]
fn a_second_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    let e = CommandLog::open(sync_cfg(dir.path()))
        .err()
        .expect("second writer refused");
    assert!(e.to_string().contains("in use"), "{e}");
    drop(log);
    CommandLog::open(sync_cfg(dir.path())).unwrap();
}

#[test]
fn a_panicking_callback_does_not_stop_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    log.append(enc(&call(0, 0)), Box::new(|_| panic!("callback bug")));
    let (lsn, r) = append_wait(&log, &call(0, 1));
    r.unwrap();
    assert_eq!(lsn, 2);
    log.sync().unwrap();
}

#[test]
fn stale_temporary_segments_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    drop(CommandLog::open(sync_cfg(dir.path())).unwrap());
    let tmp = dir.path().join(format!("{}.tmp", segment_file_name(99)));
    std::fs::write(&tmp, b"half a header").unwrap();
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    assert!(!tmp.exists());
    assert_eq!(log.last_lsn(), 0);
}

// ---------------------------------------------------------------------------------------
// Group commit

#[test]
fn group_commit_batches_many_records_per_fsync_under_concurrent_appenders() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(CommandLog::open(config(dir.path(), LogMode::Sync, Duration::from_millis(2))).unwrap());
    const THREADS: i64 = 8;
    const PER: i64 = 60;
    let lsns: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let log = log.clone();
                s.spawn(move || {
                    // Like a client: the next transaction after the previous one's ack.
                    (0..PER)
                        .map(|i| {
                            let (lsn, r) = append_wait(&log, &call(t, i));
                            r.unwrap();
                            lsn
                        })
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total = (THREADS * PER) as u64;
    let mut all: Vec<u64> = lsns.iter().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(all, (1..=total).collect::<Vec<_>>(), "LSNs are gap-free and unique");
    for l in &lsns {
        assert!(l.windows(2).all(|w| w[0] < w[1]), "per-thread commit order");
    }
    let s = log.stats();
    assert_eq!(s.records, total);
    assert!(
        s.batches * 2 <= total,
        "group commit: {} batches for {total} records",
        s.batches
    );
    // Each thread's records come back in its order, at the LSNs it was given.
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len() as u64, total);
    for (t, l) in lsns.iter().enumerate() {
        for (i, lsn) in l.iter().enumerate() {
            assert!(same(&back[*lsn as usize - 1].1, &call(t as i64, i as i64)));
        }
    }
}

#[test]
fn with_a_zero_window_a_burst_still_shares_batches() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(CommandLog::open(sync_cfg(dir.path())).unwrap());
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::scope(|s| {
        for t in 0..4 {
            let log = log.clone();
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..500 {
                    let tx = tx.clone();
                    log.append(
                        enc(&call(t, i)),
                        Box::new(move |r| {
                            tx.send(r.is_ok()).unwrap();
                        }),
                    );
                }
            });
        }
    });
    drop(tx);
    let oks: Vec<bool> = rx.iter().collect();
    assert_eq!(oks.len(), 2000);
    assert!(oks.iter().all(|ok| *ok));
    let s = log.stats();
    assert!(s.batches < 1000, "{} batches", s.batches);
}

// ---------------------------------------------------------------------------------------
// Durability before acknowledgement, and faults

#[test]
fn sync_mode_callbacks_come_only_after_the_data_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = Arc::new(
        CommandLog::open_with(
            config(dir.path(), LogMode::Sync, Duration::from_micros(300)),
            Arc::new(fs.clone()),
        )
        .unwrap(),
    );
    let seg = only_segment(dir.path());
    let rec_len = record_len(&call(0, 0));
    let violations = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for t in 0..4 {
            let (log, fs, seg, violations) = (log.clone(), fs.clone(), seg.clone(), violations.clone());
            s.spawn(move || {
                for i in 0..50 {
                    let (tx, rx) = crossbeam_channel::bounded(1);
                    let (fs2, seg2, v2) = (fs.clone(), seg.clone(), violations.clone());
                    let lsn_slot = Arc::new(Mutex::new(0u64));
                    let ls = lsn_slot.clone();
                    // Held until the LSN is known, so the callback (on the writer thread)
                    // waits for it.
                    let mut slot = lsn_slot.lock().unwrap();
                    *slot = {
                        // The callback checks, at the moment it runs, that its record is in
                        // the synced part of the file and nothing written is unsynced.
                        log.append(
                            enc(&call(t, i)),
                            Box::new(move |r| {
                                let lsn = *ls.lock().unwrap();
                                let end = SEGMENT_HEADER_LEN as u64 + lsn * rec_len;
                                let synced = fs2.synced_len(&seg2);
                                if fs2.unsynced_bytes() != 0 || lsn == 0 || synced < end {
                                    v2.lock().unwrap().push((lsn, synced, end));
                                }
                                tx.send(r).unwrap();
                            }),
                        )
                    };
                    drop(slot);
                    rx.recv().unwrap().unwrap();
                }
            });
        }
    });
    assert!(
        violations.lock().unwrap().is_empty(),
        "{:?}",
        violations.lock().unwrap()
    );
    assert_eq!(log.stats().records, 200);
}

/// Runs `threads` appenders of `per` records each (each waits for its callback); returns
/// every (lsn, ok) outcome, sorted by LSN.
fn run_appenders(log: &Arc<CommandLog>, threads: i64, per: i64) -> Vec<(u64, Result<(), LogError>)> {
    let out = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for t in 0..threads {
            let (log, out) = (log.clone(), out.clone());
            s.spawn(move || {
                for i in 0..per {
                    let (lsn, r) = append_wait(&log, &call(t, i));
                    out.lock().unwrap().push((lsn, r));
                }
            });
        }
    });
    let mut v = std::mem::take(&mut *out.lock().unwrap());
    v.sort_by_key(|x| x.0);
    v
}

#[test]
fn a_failed_fsync_fails_exactly_that_batch_and_every_later_record() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = Arc::new(
        CommandLog::open_with(
            config(dir.path(), LogMode::Sync, Duration::from_millis(1)),
            Arc::new(fs.clone()),
        )
        .unwrap(),
    );
    // Five more batches succeed, the sixth sync fails.
    fs.fail_syncs_after(5, libc::EIO);
    let outcomes = run_appenders(&log, 4, 40);
    let lsns: Vec<u64> = outcomes.iter().map(|o| o.0).collect();
    assert_eq!(lsns, (1..=160).collect::<Vec<_>>());
    let first_err = outcomes.iter().position(|o| o.1.is_err()).expect("some records failed");
    assert!(
        outcomes[first_err..].iter().all(|o| o.1.is_err()),
        "never Ok after the failure"
    );
    assert!(first_err > 0, "the first batches succeeded");
    for (_, r) in &outcomes[first_err..] {
        let e = r.as_ref().unwrap_err();
        assert_eq!(e.sqlstate(), "58030", "{e}");
    }
    let s = log.stats();
    assert!(s.failed);
    assert_eq!(s.batches, 5);
    assert_eq!(s.durable_lsn, first_err as u64);
    assert_eq!(
        fs.failed_syncs(),
        1 + 1,
        "the batch's sync, then the best-effort cleanup's"
    );
    // A failed log answers at once.
    let (_, now) = append_now(&log, &call(9, 9));
    assert!(matches!(now, Some(Err(_))));
    assert!(log.sync().is_err());
    drop(log);
    // After a restart the log holds exactly the acknowledged records.
    fs.heal_syncs();
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none());
    assert_eq!(back.len(), first_err);
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    assert_eq!(log.last_lsn(), first_err as u64);
}

#[test]
fn a_torn_write_fails_the_batch_and_the_log_continues_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = CommandLog::open_with(sync_cfg(dir.path()), Arc::new(fs.clone())).unwrap();
    for i in 0..5 {
        append_wait(&log, &call(0, i)).1.unwrap();
    }
    fs.tear_next_write(20);
    let (lsn, r) = append_wait(&log, &call(0, 5));
    assert_eq!(lsn, 6);
    let e = r.unwrap_err();
    assert_eq!(e.sqlstate(), "58030");
    assert!(e.to_string().contains("cannot write"), "{e}");
    let (_, now) = append_now(&log, &call(0, 6));
    assert!(matches!(now, Some(Err(_))), "later appends fail at once");
    drop(log);
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    assert_eq!(log.last_lsn(), 5);
    let (lsn, r) = append_wait(&log, &call(1, 0));
    r.unwrap();
    assert_eq!(lsn, 6);
    drop(log);
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 6);
    assert!(same(&back[5].1, &call(1, 0)));
}

#[test]
fn a_full_disk_fails_the_record_and_keeps_what_was_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = CommandLog::open_with(sync_cfg(dir.path()), Arc::new(fs.clone())).unwrap();
    let rec_len = record_len(&call(0, 0));
    // Room for three records and a half.
    fs.set_space(3 * rec_len + rec_len / 2);
    let mut results = Vec::new();
    for i in 0..6 {
        results.push(append_wait(&log, &call(0, i)));
    }
    assert!(results[..3].iter().all(|r| r.1.is_ok()));
    for (_, r) in &results[3..] {
        let e = r.as_ref().unwrap_err();
        assert!(e.is_disk_full(), "{e}");
        assert_eq!(e.sqlstate(), "53100");
    }
    assert!(log.stats().failed);
    drop(log);
    let (back, torn) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 3);
    assert!(torn.is_none(), "the partial record was taken back out");
}

#[test]
fn a_full_disk_while_starting_a_segment_fails_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let mut cfg = small_segments(dir.path());
    // The next segment is created when it is needed (a preallocated one needs no space then).
    cfg.preallocate = false;
    let log = CommandLog::open_with(cfg.clone(), Arc::new(fs.clone())).unwrap();
    let rec = big(0, 300_000);
    let len = record_len(&rec);
    // Four records pass 1MiB; then there is no room for the next segment's header.
    fs.set_space(4 * len + 10);
    for i in 0..4 {
        append_wait(&log, &big(i, 300_000)).1.unwrap();
    }
    assert!(log.sync().is_err(), "rotation failed");
    assert!(log.stats().failed);
    let e = append_now(&log, &big(4, 10)).1.unwrap().unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    drop(log);
    fs.set_space(u64::MAX);
    assert_eq!(segments(dir.path()).len(), 1);
    let log = CommandLog::open(cfg).unwrap();
    assert_eq!(log.last_lsn(), 4);
    append_wait(&log, &big(4, 10)).1.unwrap();
    log.sync().unwrap();
    assert_eq!(log.stats().segments, 2, "rotates after the first batch");
    drop(log);
    assert_eq!(read_all(dir.path(), 0).0.len(), 5);
}

#[test]
fn after_a_power_loss_every_acknowledged_record_is_there() {
    for keep_unsynced in [0u64, 37, 1000] {
        power_loss_case(keep_unsynced, false, false);
    }
}

#[test]
fn after_a_power_loss_in_a_preallocated_segment_every_acknowledged_record_is_there() {
    for keep_unsynced in [0u64, 37, 1000, 20_000] {
        power_loss_case(keep_unsynced, true, false);
    }
}

/// Direct writes start at the page where the synced records end and write that page's
/// records again: a power loss during one must not take acknowledged records with it.
#[test]
fn after_a_power_loss_in_a_direct_segment_every_acknowledged_record_is_there() {
    for keep_unsynced in [0u64, 37, 1000, 20_000] {
        power_loss_case(keep_unsynced, true, true);
    }
}

/// Appends from three threads, loses power, and checks what survives: appended to the
/// first segment, or (`preallocated`) written over a preallocated one, through the page
/// cache or (`direct`) around it.
fn power_loss_case(keep_unsynced: u64, preallocated: bool, direct: bool) {
    {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        if direct {
            fs.take_direct_writes(false);
        }
        let mut cfg = config(dir.path(), LogMode::Sync, Duration::from_micros(200));
        cfg.segment_bytes = 1 << 20;
        let log = Arc::new(CommandLog::open_with(cfg, Arc::new(fs.clone())).unwrap());
        if preallocated {
            until_a_preallocated_segment_is_written(&log, dir.path());
        }
        let first = log.last_lsn();
        let acked = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        std::thread::scope(|s| {
            for t in 0..3 {
                let (log, acked, stop) = (log.clone(), acked.clone(), stop.clone());
                s.spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::SeqCst) {
                        let (lsn, r) = append_wait(&log, &call(t, i));
                        if r.is_ok() {
                            acked.lock().unwrap().push((lsn, t, i));
                        }
                        i += 1;
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(60));
            fs.power_loss(keep_unsynced).unwrap();
            std::thread::sleep(Duration::from_millis(10));
            stop.store(true, Ordering::SeqCst);
        });
        drop(log);
        let acked = acked.lock().unwrap().clone();
        assert!(!acked.is_empty());
        assert_eq!(fs.misaligned_writes(), 0);
        assert_eq!(fs.direct_writes() > 0, direct, "{} direct writes", fs.direct_writes());
        if preallocated {
            let last = segments(dir.path()).pop().unwrap();
            assert_eq!(segment_version(&last), 4, "the records went to a preallocated segment");
        }
        let (back, _torn) = read_all(dir.path(), 0);
        for (lsn, t, i) in &acked {
            let (l, r) = back.get(*lsn as usize - 1).expect("acknowledged record present");
            assert_eq!(l, lsn);
            assert!(same(r, &call(*t, *i)));
        }
        if keep_unsynced == 0 {
            assert_eq!(
                back.len() as u64,
                first + acked.len() as u64,
                "nothing unacknowledged survives"
            );
        }
        // The log opens, drops any torn tail and continues.
        let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
        assert_eq!(log.last_lsn(), back.len() as u64);
        let (lsn, r) = append_wait(&log, &call(7, 7));
        r.unwrap();
        assert_eq!(lsn, back.len() as u64 + 1);
    }
}

// ---------------------------------------------------------------------------------------
// Torn tails and corruption

/// A log of `n` records (real files), closed.
fn written_log(n: i64) -> (tempfile::TempDir, Vec<TxnRecord>) {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    let recs: Vec<TxnRecord> = (0..n).map(|i| call(0, i)).collect();
    for r in &recs {
        append_wait(&log, r).1.unwrap();
    }
    drop(log);
    (dir, recs)
}

#[test]
fn a_torn_tail_ends_reading_and_is_truncated_by_open() {
    let (template, recs) = written_log(6);
    let bytes = std::fs::read(only_segment(template.path())).unwrap();
    let last_at = (SEGMENT_HEADER_LEN as u64 + 5 * record_len(&recs[0])) as usize;
    assert_eq!(bytes.len() as u64, last_at as u64 + record_len(&recs[0]));
    let tears: Vec<(&str, Vec<u8>)> = vec![
        ("cut in the header", bytes[..last_at + 7].to_vec()),
        ("cut in the body", bytes[..bytes.len() - 3].to_vec()),
        ("bad checksum", {
            let mut b = bytes.clone();
            let n = b.len();
            b[n - 1] ^= 0x40;
            b
        }),
        ("zeros after a cut", {
            let mut b = bytes[..last_at + 20].to_vec();
            b.extend_from_slice(&[0u8; 4096]);
            b
        }),
        ("zeros after a complete record", {
            let mut b = bytes.clone();
            b.extend_from_slice(&[0u8; 100]);
            b
        }),
    ];
    for (what, torn_bytes) in tears {
        let dir = tempfile::tempdir().unwrap();
        let seg = dir.path().join(segment_file_name(1));
        std::fs::write(&seg, &torn_bytes).unwrap();
        let complete = if what == "zeros after a complete record" { 6 } else { 5 };
        let torn_at = if complete == 6 { bytes.len() } else { last_at } as u64;
        let (back, torn) = read_all(dir.path(), 0);
        assert_eq!(back.len(), complete, "{what}");
        assert_eq!(torn, Some((seg.clone(), torn_at)), "{what}");
        let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
        let cut = log.truncated_tail().map(|t| (t.file.clone(), t.offset));
        assert_eq!(cut, Some((seg.clone(), torn_at)), "{what}");
        assert_eq!(log.last_lsn(), complete as u64, "{what}");
        let (lsn, r) = append_wait(&log, &call(5, 5));
        r.unwrap();
        assert_eq!(lsn, complete as u64 + 1, "{what}");
        drop(log);
        let (back, torn) = read_all(dir.path(), 0);
        assert!(torn.is_none(), "{what}");
        assert_eq!(back.len(), complete + 1, "{what}");
        for (i, (_, r)) in back[..complete].iter().enumerate() {
            assert!(same(r, &recs[i]), "{what}");
        }
        assert!(same(&back[complete].1, &call(5, 5)));
    }
}

#[test]
fn corruption_in_the_middle_is_an_error_naming_file_and_offset() {
    let (dir, recs) = written_log(10);
    let seg = only_segment(dir.path());
    let mut bytes = std::fs::read(&seg).unwrap();
    let rl = record_len(&recs[0]) as usize;
    let third = SEGMENT_HEADER_LEN + 2 * rl;
    bytes[third + RECORD_HEADER_LEN + 3] ^= 1;
    std::fs::write(&seg, &bytes).unwrap();
    let (n, e) = read_err(dir.path(), 0);
    assert_eq!(n, 2);
    match &e {
        LogError::Corrupt { file, offset, detail } => {
            assert_eq!(file, &seg);
            assert_eq!(*offset, third as u64);
            assert!(
                detail.contains("checksum") && detail.contains("was durable"),
                "{detail}"
            );
        }
        other => panic!("{other}"),
    }
    assert_eq!(e.sqlstate(), "XX001");
    // The writer refuses to open over it rather than dropping acknowledged records.
    let e = CommandLog::open(sync_cfg(dir.path())).err().expect("open fails");
    assert!(matches!(e, LogError::Corrupt { .. }), "{e}");

    // A length field that points past the end, in the middle, is not taken for a torn tail.
    let (dir, _) = written_log(10);
    let seg = only_segment(dir.path());
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[third..third + 4].copy_from_slice(&1_000_000u32.to_le_bytes());
    std::fs::write(&seg, &bytes).unwrap();
    let (n, e) = read_err(dir.path(), 0);
    assert_eq!(n, 2);
    assert!(
        matches!(e, LogError::Corrupt { offset, .. } if offset == third as u64),
        "{e}"
    );
}

#[test]
fn bad_segment_headers_unknown_versions_and_misnamed_segments_are_errors() {
    let (template, _) = written_log(3);
    let bytes = std::fs::read(only_segment(template.path())).unwrap();
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    let mut magic = bytes.clone();
    magic[0] = b'X';
    cases.push(("magic", magic, "magic"));
    let mut crc = bytes.clone();
    crc[14] ^= 1;
    cases.push(("header checksum", crc, "checksum"));
    let mut version = bytes.clone();
    let mut h = segment_header(1);
    h[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let c = crc32c::crc32c(&h[..28]);
    h[28..32].copy_from_slice(&c.to_le_bytes());
    version[..SEGMENT_HEADER_LEN].copy_from_slice(&h);
    cases.push((
        "version",
        version,
        "states format version 5; this build reads versions 1 to 4",
    ));
    cases.push(("short", bytes[..10].to_vec(), "shorter than a segment header"));
    for (what, b, expect) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(segment_file_name(1)), &b).unwrap();
        let (_, e) = read_err(dir.path(), 0);
        assert!(e.to_string().contains(expect), "{what}: {e}");
        assert!(matches!(e, LogError::Corrupt { offset: 0, .. }), "{what}: {e}");
        assert!(CommandLog::open(sync_cfg(dir.path())).is_err(), "{what}");
    }
    // A segment whose name does not match its header.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(segment_file_name(2)), &bytes).unwrap();
    let (_, e) = read_err(dir.path(), 1);
    assert!(e.to_string().contains("its name 2"), "{e}");
}

#[test]
fn rotation_truncation_and_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_segments(dir.path());
    let log = CommandLog::open(cfg.clone()).unwrap();
    let recs: Vec<TxnRecord> = (0..40).map(|i| big(i, 100_000)).collect();
    for r in &recs {
        append_wait(&log, r).1.unwrap();
    }
    let segs = log.segments();
    assert!(segs.len() >= 3, "{segs:?}");
    assert_eq!(log.stats().segments, segs.len() as u64);
    for (first, path) in &segs {
        assert_eq!(path.file_name().unwrap().to_str().unwrap(), segment_file_name(*first));
        let len = std::fs::metadata(path).unwrap().len();
        assert!(
            len <= (1 << 20) + record_len(&recs[0]),
            "a segment passes the size by one batch at most"
        );
    }
    assert_eq!(segs[0].0, 1);
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 40);
    assert!(
        back.iter()
            .enumerate()
            .all(|(i, (l, r))| *l == i as u64 + 1 && same(r, &recs[i]))
    );
    // Reading from the middle of the second segment.
    let mid = segs[1].0 + 2;
    let (from_mid, _) = read_all(dir.path(), mid);
    assert_eq!(from_mid.first().unwrap().0, mid + 1);
    assert_eq!(from_mid.len() as u64, 40 - mid);

    // Truncating through a LSN inside the second segment removes only the first.
    log.truncate_through(segs[1].0 + 1).unwrap();
    assert_eq!(log.segments(), segs[1..].to_vec());
    assert!(!segs[0].1.exists());
    // Records before the second segment are gone: reading from 0 is an error.
    let (_, e) = read_err(dir.path(), 0);
    assert!(e.to_string().contains("removed before a snapshot"), "{e}");
    let (rest, _) = read_all(dir.path(), segs[1].0 - 1);
    assert_eq!(rest.len() as u64, 40 - (segs[1].0 - 1));
    // Exactly at a segment's last LSN.
    log.truncate_through(segs[2].0 - 1).unwrap();
    assert_eq!(log.segments(), segs[2..].to_vec());
    // The segment being written stays, whatever the LSN.
    log.truncate_through(u64::MAX).unwrap();
    assert_eq!(log.segments().len(), 1);
    let last_first = log.segments()[0].0;
    drop(log);
    let log = CommandLog::open(cfg).unwrap();
    assert_eq!(log.last_lsn(), 40);
    assert_eq!(append_wait(&log, &big(40, 10)).0, 41);
    drop(log);
    let (rest, _) = read_all(dir.path(), last_first - 1);
    assert_eq!(rest.last().unwrap().0, 41);
}

#[test]
fn a_missing_middle_segment_and_damage_in_a_closed_segment_are_errors() {
    let make = || {
        let dir = tempfile::tempdir().unwrap();
        let cfg = small_segments(dir.path());
        let log = CommandLog::open(cfg).unwrap();
        for i in 0..30 {
            append_wait(&log, &big(i, 100_000)).1.unwrap();
        }
        let segs = log.segments();
        assert!(segs.len() >= 3);
        drop(log);
        (dir, segs)
    };
    let (dir, segs) = make();
    std::fs::remove_file(&segs[1].1).unwrap();
    let (n, e) = read_err(dir.path(), 0);
    assert_eq!(n as u64, segs[1].0 - 1);
    assert!(e.to_string().contains("a gap"), "{e}");

    // A cut at the end of a segment that is not the last is not a torn tail.
    let (dir, segs) = make();
    let len = std::fs::metadata(&segs[0].1).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&segs[0].1).unwrap();
    f.set_len(len - 5).unwrap();
    let (_, e) = read_err(dir.path(), 0);
    assert!(e.to_string().contains("not the last"), "{e}");
}

// ---------------------------------------------------------------------------------------
// Property tests

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<u64>().prop_map(|b| Value::Double(f64::from_bits(b))),
        (any::<i64>(), 0u32..=28).prop_map(|(m, scale)| Value::Decimal(Numeric::new(m, scale))),
        "-?[0-9]{29,90}(\\.[0-9]{1,40})?".prop_map(|s| Value::Decimal(s.parse().unwrap())),
        any::<i64>().prop_map(Value::Timestamp),
        any::<i64>().prop_map(Value::TimestampTz),
        any::<i32>().prop_map(Value::Date),
        ".{0,24}".prop_map(|s: String| Value::Text(s.into_boxed_str())),
        proptest::collection::vec(any::<u8>(), 0..48).prop_map(|v| Value::Bytes(v.into_boxed_slice())),
    ]
}

fn txn_record() -> impl Strategy<Value = TxnRecord> {
    let params = || proptest::collection::vec(value(), 0..10);
    let request = prop_oneof![
        ("[A-Za-z_][A-Za-z0-9_]{0,15}", params()).prop_map(|(procedure, params)| Request::Call { procedure, params }),
        (".{0,60}", params()).prop_map(|(sql, params)| Request::AdHoc { sql, params }),
        ".{0,60}".prop_map(|sql| Request::Schema { sql }),
    ];
    (
        proptest::collection::btree_set(any::<u32>(), 1..5),
        any::<i64>(),
        any::<u64>(),
        request,
    )
        .prop_map(|(p, now, seed, request)| TxnRecord {
            zone: None,
            draws: None,
            partitions: p.into_iter().collect(),
            now,
            seed,
            request,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn records_round_trip_exactly(rec in txn_record()) {
        let body = enc(&rec);
        let back = decode_record(&body).unwrap();
        prop_assert!(same(&back, &rec));
        prop_assert_eq!(&back.partitions, &rec.partitions);
        prop_assert_eq!(back.now, rec.now);
        prop_assert_eq!(back.seed, rec.seed);
        // And the value kinds survive (Value's == treats 1 and 1.0 alike; this does not).
        let kinds = |r: &TxnRecord| match &r.request {
            Request::Call { params, .. } | Request::AdHoc { params, .. } => {
                params.iter().map(|v| v.as_ref().kind_name()).collect::<Vec<_>>()
            }
            Request::Schema { .. } => vec![],
        };
        prop_assert_eq!(kinds(&back), kinds(&rec));
    }

    #[test]
    fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_record(&bytes);
    }

    #[test]
    fn decoding_a_mutated_record_never_panics(
        rec in txn_record(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut body = enc(&rec);
        for (at, b) in edits {
            let i = at.index(body.len());
            body[i] = b;
        }
        let _ = decode_record(&body);
        let _ = decode_record(&body[..cut.index(body.len() + 1)]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn records_round_trip_through_the_log(recs in proptest::collection::vec(txn_record(), 1..20)) {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = CommandLog::open(config(dir.path(), LogMode::Async, Duration::ZERO)).unwrap();
            for (i, r) in recs.iter().enumerate() {
                prop_assert_eq!(append_now(&log, r).0, i as u64 + 1);
            }
            log.sync().unwrap();
        }
        let (back, torn) = read_all(dir.path(), 0);
        prop_assert!(torn.is_none());
        prop_assert_eq!(back.len(), recs.len());
        for ((lsn, b), (i, r)) in back.iter().zip(recs.iter().enumerate()) {
            prop_assert_eq!(*lsn, i as u64 + 1);
            prop_assert!(same(b, r));
        }
    }
}

/// Two segments (LSNs 1..=12 and 13..=25) built with the format's own helpers: of this
/// build's version 3 (each record written and synced alone), or of the old version 1.
fn two_segments(legacy: bool) -> (Vec<u8>, Vec<u8>, Vec<TxnRecord>) {
    let recs: Vec<TxnRecord> = (0..25)
        .map(|i| if i % 3 == 0 { big(i, 40) } else { call(i % 4, i) })
        .collect();
    let segment = |first: u64, recs: &[TxnRecord]| {
        let mut s = if legacy {
            legacy_segment_header(first, 1).to_vec()
        } else {
            segment_header(first).to_vec()
        };
        for (lsn, r) in (first..).zip(recs) {
            if legacy {
                frame_legacy_record(lsn, &enc(r), &mut s);
            } else {
                frame_record(lsn, lsn - 1, &enc(r), &mut s);
            }
        }
        s
    };
    (segment(1, &recs[..12]), segment(13, &recs[12..]), recs)
}

#[derive(Debug, Clone)]
enum Mutation {
    Set(prop::sample::Index, u8),
    Flip(prop::sample::Index, u8),
    Cut(prop::sample::Index),
    Append(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<prop::sample::Index>(), 0u8..8).prop_map(|(i, bit)| Mutation::Flip(i, bit)),
        any::<prop::sample::Index>().prop_map(Mutation::Cut),
        proptest::collection::vec(any::<u8>(), 1..40).prop_map(Mutation::Append),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Set(i, b) if !bytes.is_empty() => {
            let at = i.index(bytes.len());
            bytes[at] = *b;
        }
        Mutation::Flip(i, bit) if !bytes.is_empty() => {
            let at = i.index(bytes.len());
            bytes[at] ^= 1 << bit;
        }
        Mutation::Cut(i) => bytes.truncate(i.index(bytes.len() + 1)),
        Mutation::Append(extra) => bytes.extend_from_slice(extra),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Reading a damaged log never panics and never returns a record that was not written:
    /// every record it yields is the original at that LSN, in order, and it stops at the
    /// first damage (an error, or a torn tail in the last segment).
    #[test]
    fn reading_a_damaged_log_never_panics_or_lies(
        in_last in any::<bool>(),
        legacy in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let (mut a, mut b, recs) = two_segments(legacy);
        let target = if in_last { &mut b } else { &mut a };
        for m in &mutations {
            mutate(target, m);
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(segment_file_name(1)), &a).unwrap();
        std::fs::write(dir.path().join(segment_file_name(13)), &b).unwrap();
        let mut reader = LogReader::open(dir.path(), 0).unwrap();
        let mut next = 1u64;
        let mut failed = false;
        for item in reader.by_ref() {
            match item {
                Ok((lsn, r)) => {
                    prop_assert_eq!(lsn, next);
                    prop_assert!(same(&r, &recs[lsn as usize - 1]), "record {} differs", lsn);
                    next += 1;
                }
                Err(e) => {
                    prop_assert!(matches!(e, LogError::Corrupt { .. }), "{}", e);
                    failed = true;
                }
            }
        }
        let cut = mutations.iter().any(|m| matches!(m, Mutation::Cut(_)));
        if !failed && reader.torn_tail().is_none() && !(in_last && cut) {
            // Undamaged in effect (e.g. a byte set to its own value): everything is there.
            // (Only a cut of the last segment at a record boundary shortens a log cleanly.)
            prop_assert_eq!(next, 26);
        }
        if !in_last && reader.torn_tail().is_some() {
            prop_assert!(false, "a torn tail outside the last segment");
        }
        // The writer opens over it without panicking; when it accepts the last segment
        // and the damage was there, the log then reads back cleanly.
        let opened = CommandLog::open(sync_cfg(dir.path()));
        if let Ok(log) = opened {
            let lsn = log.last_lsn();
            drop(log);
            if in_last {
                let (back, torn) = read_all(dir.path(), 0);
                prop_assert!(torn.is_none());
                prop_assert_eq!(back.len() as u64, lsn);
            }
        }
    }
}

/// The fault-injecting file system is usable by other crates' tests through the trait.
#[test]
fn faulty_fs_is_a_log_fs() {
    fn takes(_: Arc<dyn Fs>) {}
    takes(Arc::new(FaultyFs::new()));
}

#[test]
fn a_chunk_appends_its_records_with_consecutive_lsns_and_one_callback() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    let (first, _) = append_wait(&log, &call(0, 0));
    let recs: Vec<TxnRecord> = (1..=5).map(|i| call(1, i)).collect();
    let mut chunk = permafrost_durability::Chunk::new();
    for r in &recs {
        chunk.push_with(|out| encode_record(r, out)).unwrap();
    }
    assert_eq!(chunk.len(), 5);
    let (last, result) = append_chunk_wait(&log, chunk);
    assert_eq!(last, first + 5);
    result.unwrap();
    // Durable when the callback ran.
    assert!(log.durable_lsn() >= last);
    drop(log);
    let (back, _) = read_all(dir.path(), first);
    assert_eq!(back.len(), 5);
    for (i, (lsn, r)) in back.iter().enumerate() {
        assert_eq!(*lsn, first + 1 + i as u64);
        assert!(same(r, &recs[i]));
    }
}

#[test]
fn a_barrier_is_called_once_everything_before_it_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(CommandLog::open(sync_cfg(dir.path())).unwrap());
    for i in 0..50 {
        log.append(enc(&call(0, i)), Box::new(|_| {}));
    }
    let last = log.last_lsn();
    let (tx, rx) = std::sync::mpsc::channel();
    let l2 = log.clone();
    log.barrier(Box::new(move |r| {
        let _ = tx.send((r, l2.durable_lsn()));
    }));
    let (r, durable) = rx.recv().unwrap();
    r.unwrap();
    assert!(
        durable >= last,
        "durable {durable} < {last} when the barrier was called"
    );
    // Async mode: at once.
    let dir2 = tempfile::tempdir().unwrap();
    let log = CommandLog::open(config(dir2.path(), LogMode::Async, Duration::from_millis(1))).unwrap();
    let called = Arc::new(AtomicBool::new(false));
    let c = called.clone();
    log.barrier(Box::new(move |r| {
        r.unwrap();
        c.store(true, Ordering::SeqCst);
    }));
    assert!(called.load(Ordering::SeqCst));
}

#[test]
fn written_pages_leave_the_page_cache_only_once_synced() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = CommandLog::open_with(sync_cfg(dir.path()), Arc::new(fs.clone())).unwrap();
    let recs: Vec<TxnRecord> = (0..400).map(|i| big(i, 3000)).collect();
    for r in &recs {
        append_wait(&log, r).1.unwrap();
    }
    let (dropped, unsynced) = fs.dropped_from_cache();
    // 400 records of about 3 KB: over a MiB written, most of it let go of.
    assert!(dropped >= 512 << 10, "only {dropped} bytes dropped from the page cache");
    assert_eq!(unsynced, 0, "pages dropped before their data was synced");
    assert_eq!(dropped % 4096, 0, "whole pages only");
    drop(log);
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len(), recs.len());
    assert!(back.iter().zip(&recs).all(|((_, a), b)| same(a, b)));
}

#[test]
fn chunk_buffers_come_back_for_reuse_and_keep_no_old_records() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    let mut expected = Vec::new();
    let mut reused = false;
    for round in 0..20 {
        let mut chunk = log.chunk();
        assert!(chunk.is_empty());
        let recs: Vec<TxnRecord> = (0..(round % 4 + 1)).map(|i| call(round, i)).collect();
        for r in &recs {
            chunk.push_with(|out| encode_record(r, out)).unwrap();
        }
        reused |= chunk.capacity() > 0 && round > 0;
        append_chunk_wait(&log, chunk).1.unwrap();
        expected.extend(recs);
    }
    drop(log);
    let (back, _) = read_all(dir.path(), 0);
    assert_eq!(back.len(), expected.len());
    assert!(back.iter().zip(&expected).all(|((_, a), b)| same(a, b)));
    assert!(reused, "no chunk buffer came back");
}

// ---------------------------------------------------------------------------------------
// Preallocated segments

/// The format version in a segment file's header.
fn segment_version(path: &Path) -> u32 {
    let b = std::fs::read(path).unwrap();
    u32::from_le_bytes(b[8..12].try_into().unwrap())
}

/// Appends records of 100 KB until the log writes into a preallocated segment (the
/// first one the writer starts once the helper thread has one ready).
fn until_a_preallocated_segment_is_written(log: &CommandLog, dir: &Path) {
    for i in 0..400 {
        append_wait(log, &big(i, 100_000)).1.unwrap();
        if segments(dir).last().is_some_and(|p| segment_version(p) == 4) {
            return;
        }
    }
    panic!("no preallocated segment after 400 records of 100 KB in 1 MiB segments");
}

#[test]
fn segments_after_the_first_are_preallocated_and_read_back_with_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_segments(dir.path());
    let log = CommandLog::open(cfg.clone()).unwrap();
    until_a_preallocated_segment_is_written(&log, dir.path());
    let mut n = log.last_lsn();
    // Two more segments' worth: rotations into preallocated segments.
    for i in 0..20 {
        append_wait(&log, &big(n as i64 + i, 100_000)).1.unwrap();
    }
    n += 20;
    // On a loaded machine the helper may not have the next segment ready when the writer
    // rotates (it then starts an ordinary one): go on until the last one is preallocated.
    for _ in 0..400 {
        if segments(dir.path()).last().is_some_and(|p| segment_version(p) == 4) {
            break;
        }
        append_wait(&log, &big(n as i64, 100_000)).1.unwrap();
        n += 1;
    }
    let segs = segments(dir.path());
    assert_eq!(segment_version(&segs[0]), 3, "the first segment is appended to");
    let last = segs.last().unwrap();
    assert_eq!(segment_version(last), 4);
    assert!(segs.iter().filter(|p| segment_version(p) == 4).count() >= 2, "{segs:?}");
    for p in &segs[1..] {
        let len = std::fs::metadata(p).unwrap().len();
        assert!(len >= 1 << 20, "{p:?} has {len} bytes");
    }
    drop(log);
    assert!(
        !dir.path().join("preallocated.log.tmp").exists(),
        "a spare segment is removed when the log closes"
    );
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none(), "the zeros after the last record are no torn tail");
    assert_eq!(back.len() as u64, n);
    assert!(back.iter().enumerate().all(|(i, (l, _))| *l == i as u64 + 1));

    // Reopened, the log goes on in the last segment's zeros: the file does not grow.
    let last_len = std::fs::metadata(last).unwrap().len();
    let log = CommandLog::open(cfg).unwrap();
    assert!(log.truncated_tail().is_none());
    assert_eq!(log.last_lsn(), n);
    let (lsn, r) = append_wait(&log, &call(3, 3));
    r.unwrap();
    assert_eq!(lsn, n + 1);
    drop(log);
    assert_eq!(std::fs::metadata(last).unwrap().len(), last_len);
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none());
    assert_eq!(back.len() as u64, n + 1);
    assert!(same(&back[n as usize].1, &call(3, 3)));
}

#[test]
fn preallocation_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = small_segments(dir.path());
    cfg.preallocate = false;
    let log = CommandLog::open(cfg).unwrap();
    for i in 0..40 {
        append_wait(&log, &big(i, 100_000)).1.unwrap();
    }
    assert!(log.segments().len() >= 3);
    drop(log);
    assert!(segments(dir.path()).iter().all(|p| segment_version(p) == 3));
}

/// A preallocated segment of the old version 2 (which earlier builds wrote, and this one
/// reads with version 2's rules) of `len` bytes holding `recs` as records 1, 2, ..., and
/// where each record starts.
fn preallocated_segment(recs: &[TxnRecord], len: usize) -> (Vec<u8>, Vec<usize>) {
    let mut b = legacy_segment_header(1, 2).to_vec();
    let mut starts = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        starts.push(b.len());
        frame_legacy_record(i as u64 + 1, &enc(r), &mut b);
    }
    assert!(b.len() <= len);
    b.resize(len, 0);
    (b, starts)
}

#[test]
fn a_preallocated_segment_ends_at_its_zeros_and_a_torn_write_in_it_may_keep_any_pages() {
    let recs: Vec<TxnRecord> = (0..10).map(|i| call(0, i)).collect();
    let (clean, starts) = preallocated_segment(&recs, 64 << 10);
    let write = |bytes: &[u8]| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(segment_file_name(1)), bytes).unwrap();
        dir
    };

    // Only zeros after the last record: the end, not a torn tail.
    let dir = write(&clean);
    let (back, torn) = read_all(dir.path(), 0);
    assert_eq!((back.len(), torn), (10, None));
    // The same zeros in a version 1 segment are a torn tail.
    let mut v1 = clean.clone();
    v1[..LEGACY_SEGMENT_HEADER_LEN].copy_from_slice(&legacy_segment_header(1, 1));
    let d1 = write(&v1);
    let (back, torn) = read_all(d1.path(), 0);
    assert_eq!(back.len(), 10);
    assert_eq!(torn.unwrap().1, starts[9] as u64 + legacy_record_len(&recs[9]));

    // The last write held records 7 to 10; a crash kept its later pages, not the one in
    // the middle of record 7: a torn tail at record 7, however valid 8 to 10 are.
    let mut lost_page = clean.clone();
    lost_page[starts[6] + 20..starts[7]].fill(0);
    let dir = write(&lost_page);
    let (back, torn) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 6);
    assert_eq!(torn.unwrap().1, starts[6] as u64);
    let log = CommandLog::open(sync_cfg(dir.path())).unwrap();
    assert_eq!(log.last_lsn(), 6);
    append_wait(&log, &call(9, 9)).1.unwrap();
    drop(log);
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none());
    assert_eq!(back.len(), 7);
    assert!(same(&back[6].1, &call(9, 9)));
    // Its first header lost too (all zeros), with later records kept: still a torn tail.
    let mut lost_header = clean.clone();
    lost_header[starts[6]..starts[7]].fill(0);
    let dir = write(&lost_header);
    let (back, torn) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 6);
    assert_eq!(torn.unwrap().1, starts[6] as u64);
}

#[test]
fn damage_followed_by_valid_records_further_than_one_write_can_reach_is_corruption() {
    // 60 records of 100 KB: 6 MB, more than MAX_UNSYNCED_SPAN after the second.
    let recs: Vec<TxnRecord> = (0..60).map(|i| big(i, 100_000)).collect();
    let total: u64 = recs.iter().map(legacy_record_len).sum::<u64>() + LEGACY_SEGMENT_HEADER_LEN as u64;
    assert!(total > MAX_UNSYNCED_SPAN + 2 * legacy_record_len(&recs[0]));
    let (clean, starts) = preallocated_segment(&recs, total as usize + 4096);
    let dir = tempfile::tempdir().unwrap();
    let seg = dir.path().join(segment_file_name(1));
    let mut bytes = clean.clone();
    bytes[starts[1] + LEGACY_RECORD_HEADER_LEN + 10] ^= 1;
    std::fs::write(&seg, &bytes).unwrap();
    let (n, e) = read_err(dir.path(), 0);
    assert_eq!(n, 1);
    assert!(
        matches!(&e, LogError::Corrupt { offset, detail, .. }
            if *offset == starts[1] as u64 && detail.contains("valid record follows")),
        "{e}"
    );
    assert!(
        CommandLog::open(sync_cfg(dir.path())).is_err(),
        "acknowledged records are not dropped"
    );
    // Damage within one write's reach of the end is taken for a torn write.
    let mut bytes = clean;
    bytes[starts[57] + LEGACY_RECORD_HEADER_LEN + 10] ^= 1;
    std::fs::write(&seg, &bytes).unwrap();
    let (back, torn) = read_all(dir.path(), 0);
    assert_eq!(back.len(), 57);
    assert_eq!(torn.unwrap().1, starts[57] as u64);
}

#[test]
fn a_batch_reaching_past_the_unsynced_span_is_synced_in_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = CommandLog::open_with(sync_cfg(dir.path()), Arc::new(fs.clone())).unwrap();
    let recs: Vec<TxnRecord> = (0..60).map(|i| big(i, 100_000)).collect();
    let mut chunk = log.chunk();
    for r in &recs {
        chunk.push_with(|out| encode_record(r, out)).unwrap();
    }
    let (syncs, batches) = (fs.syncs(), log.stats().batches);
    append_chunk_wait(&log, chunk).1.unwrap();
    // 6 MB in pieces of at most 4 MiB and a record: two syncs for one batch.
    assert_eq!(log.stats().batches, batches + 1);
    assert_eq!(fs.syncs() - syncs, 2);
    assert_eq!(fs.unsynced_bytes(), 0);
    drop(log);
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none());
    assert_eq!(back.len(), 60);
    assert!(back.iter().zip(&recs).all(|((_, a), b)| same(a, b)));
}

#[test]
fn a_power_loss_turns_unsynced_overwrites_back_into_zeros() {
    for (keep, expect) in [(0u64, &b"\0\0\0"[..]), (2, &b"ab\0"[..]), (10, &b"abc"[..])] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let fs = FaultyFs::new();
        let mut f = fs.create(&path).unwrap();
        f.write_all_at(&[0u8; 4096], 0).unwrap();
        f.sync_data().unwrap();
        assert_eq!(fs.synced_len(&path), 4096);
        f.write_all_at(b"abc", 100).unwrap();
        assert_eq!(fs.unsynced_bytes(), 3);
        assert_eq!(fs.synced_len(&path), 100, "durable only up to the overwrite");
        f.write_all_at(b"xyz", 5000).unwrap();
        fs.power_loss(keep).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[100..103], expect, "keep {keep}");
        assert!(bytes[..100].iter().chain(&bytes[103..4096]).all(|&b| b == 0));
        // What was appended past the synced length goes, unless the kept bytes reach it.
        assert_eq!(bytes.len(), if keep >= 4903 { 5003 } else { 4096 }, "keep {keep}");
    }
}

#[test]
fn writes_into_a_preallocated_segment_fill_their_last_page_with_zeros_and_appended_ones_do_not() {
    const PAGE: u64 = 4096;
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let cfg = small_segments(dir.path());
    let log = CommandLog::open_with(cfg.clone(), Arc::new(fs.clone())).unwrap();
    // The first segment is appended to: its writes end where the records end.
    append_wait(&log, &call(1, 1)).1.unwrap();
    let first = segments(dir.path())[0].clone();
    let (_, end) = fs.last_write(&first).unwrap();
    assert_ne!(end % PAGE, 0, "a small record after the header ends inside a page");
    assert_eq!(
        std::fs::metadata(&first).unwrap().len(),
        end,
        "no zeros after the records"
    );

    until_a_preallocated_segment_is_written(&log, dir.path());
    let last = segments(dir.path()).last().unwrap().clone();
    let mut ends = Vec::new();
    for i in 0..5 {
        append_wait(&log, &call(2, i)).1.unwrap();
        let (start, end) = fs.last_write(&last).unwrap();
        assert_eq!(end % PAGE, 0, "write {start}..{end} does not fill its last page");
        assert!(end > start && end - start < 2 * PAGE, "{start}..{end}");
        ends.push((start, end));
    }
    // Each write starts where the records before it end, inside the page the previous one
    // filled with zeros.
    assert!(ends.windows(2).all(|w| w[1].0 < w[0].1 && w[1].0 > w[0].0), "{ends:?}");
    let n = log.last_lsn();
    drop(log);
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none());
    assert_eq!(back.len() as u64, n);

    // Reopened in that segment, the log goes on filling pages.
    let log = CommandLog::open_with(cfg, Arc::new(fs.clone())).unwrap();
    append_wait(&log, &call(3, 0)).1.unwrap();
    let (start, end) = fs.last_write(&last).unwrap();
    assert_eq!(end % PAGE, 0, "{start}..{end} after a restart");
    drop(log);
    let (back, torn) = read_all(dir.path(), 0);
    assert!(torn.is_none());
    assert_eq!(back.len() as u64, n + 1);
}

// ---------------------------------------------------------------------------------------
// Direct writes into preallocated segments

/// Records of many sizes (so that batches end anywhere inside a page), appended from two
/// threads into 1 MiB segments through `fs`; returns them by LSN.
fn varied_records_through(fs: Arc<dyn Fs>, dir: &Path, n: i64) -> Vec<TxnRecord> {
    let log = Arc::new(CommandLog::open_with(small_segments(dir), fs).unwrap());
    let written = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for t in 0..2 {
            let (log, written) = (log.clone(), written.clone());
            s.spawn(move || {
                for i in 0..n {
                    let rec = big(t * n + i, ((i * 7919 + t * 31) % 9000) as usize);
                    let (lsn, r) = append_wait(&log, &rec);
                    r.unwrap();
                    written.lock().unwrap().push((lsn, rec));
                }
            });
        }
    });
    drop(log);
    let mut w = Arc::try_unwrap(written).unwrap().into_inner().unwrap();
    w.sort_by_key(|(l, _)| *l);
    w.into_iter().map(|(_, r)| r).collect()
}

fn assert_reads_back(dir: &Path, written: &[TxnRecord]) {
    let (back, torn) = read_all(dir, 0);
    assert!(torn.is_none());
    assert_eq!(back.len(), written.len());
    for (i, ((lsn, got), want)) in back.iter().zip(written).enumerate() {
        assert_eq!(*lsn, i as u64 + 1);
        assert!(same(got, want), "record {lsn} differs");
    }
}

#[test]
fn direct_writes_keep_every_record_of_every_size() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    fs.take_direct_writes(false);
    let written = varied_records_through(Arc::new(fs.clone()), dir.path(), 600);
    assert_eq!(fs.misaligned_writes(), 0, "every direct write is aligned");
    assert!(fs.direct_writes() > 100, "{} direct writes", fs.direct_writes());
    assert!(
        segments(dir.path()).iter().filter(|p| segment_version(p) == 4).count() >= 2,
        "rotated into preallocated segments"
    );
    assert_reads_back(dir.path(), &written);
}

#[test]
fn a_file_system_that_refuses_direct_writes_gets_them_through_the_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    fs.take_direct_writes(true);
    let written = varied_records_through(Arc::new(fs.clone()), dir.path(), 300);
    assert_eq!(fs.direct_writes(), 0);
    assert!(segments(dir.path()).iter().any(|p| segment_version(p) == 4));
    assert_reads_back(dir.path(), &written);
}

/// Whether files in `dir` can be opened with `O_DIRECT`.
fn takes_o_direct(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(dir.join("probe"))
        .is_ok()
}

/// The open flags of this process's descriptors for `path`.
fn open_flags(path: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let fd = e.ok()?.file_name();
            (std::fs::read_link(Path::new("/proc/self/fd").join(&fd)).ok()? == path).then_some(fd)
        })
        .filter_map(|fd| {
            let info = std::fs::read_to_string(Path::new("/proc/self/fdinfo").join(fd)).ok()?;
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        })
        .collect()
}

#[test]
fn the_real_file_system_writes_preallocated_segments_around_the_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let direct = takes_o_direct(dir.path());
    let logdir = dir.path().join("log");
    let log = CommandLog::open(small_segments(&logdir)).unwrap();
    until_a_preallocated_segment_is_written(&log, &logdir);
    // The segment's file is renamed into place before the writer makes it direct; a
    // record acknowledged after that comes from a batch written once it had.
    append_wait(&log, &call(1, 1)).1.unwrap();
    let last = segments(&logdir).pop().unwrap();
    assert_eq!(segment_version(&last), 4);
    let flags = open_flags(&last);
    assert_eq!(flags.len(), 1, "the writer holds the segment open once: {flags:?}");
    assert_eq!(
        flags[0] & libc::O_DIRECT as u32 != 0,
        direct,
        "O_DIRECT where the file system takes it ({direct})"
    );
    let first = log.last_lsn() as i64;
    let mut written: Vec<TxnRecord> = Vec::new();
    for i in 0..200 {
        let rec = big(first + i, (i as usize * 37) % 5000);
        append_wait(&log, &rec).1.unwrap();
        written.push(rec);
    }
    let n = log.last_lsn() as i64;
    drop(log);
    let (back, torn) = read_all(&logdir, 0);
    assert!(torn.is_none());
    assert_eq!(back.len() as i64, n);
    for (got, want) in back[back.len() - written.len()..].iter().zip(&written) {
        assert!(same(&got.1, want));
    }
}
