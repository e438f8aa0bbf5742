//! Damage to the command log after a crash: what is a torn tail (the one unsynced write,
//! never acknowledged: dropped, and said so) and what is damage to durable records (refused,
//! naming the file and offset; trimmed only when the operator asks, saying what was lost).
//! Each kind of damage (a page of zeros, a flipped byte, a cut) at the tail, in the middle
//! of the last segment with durable records after it, and in an earlier segment; logs of
//! the old format (versions 1 and 2) still replay.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use permafrost_durability::format::{
    LEGACY_RECORD_HEADER_LEN, LEGACY_SEGMENT_HEADER_LEN, Layout, RECORD_HEADER_LEN, check_segment_header,
    frame_legacy_record, frame_record, legacy_segment_header, parse_record_header, preallocated_segment_header,
    segment_file_name,
};
use permafrost_durability::{
    CommandLog, LogConfig, LogError, LogMode, LogReader, Request, TxnRecord, encode_record, trim_damaged_log,
};
use permafrost_io::{FaultyFs, Fs, RealFs};
use permafrost_types::Value;

fn rec(i: i64) -> TxnRecord {
    TxnRecord {
        zone: None,
        draws: None,
        partitions: vec![i as u32 % 3],
        now: 1_700_000_000_000_000 + i,
        seed: i as u64,
        request: Request::Call {
            procedure: "Put".into(),
            params: vec![Value::Int(i), Value::Text("v".repeat((i as usize * 13) % 300).into())],
        },
    }
}

fn big(i: i64) -> TxnRecord {
    TxnRecord {
        zone: None,
        draws: None,
        partitions: vec![0],
        now: i,
        seed: 1,
        request: Request::AdHoc {
            sql: "INSERT INTO t VALUES ($1, $2)".into(),
            params: vec![Value::Int(i), Value::bytes(vec![i as u8; 100_000])],
        },
    }
}

fn enc(r: &TxnRecord) -> Vec<u8> {
    let mut out = Vec::new();
    encode_record(r, &mut out);
    out
}

fn cfg(dir: &Path, segment_bytes: u64) -> LogConfig {
    let mut c = LogConfig::new(dir);
    c.mode = LogMode::Sync;
    c.group_commit_window = Duration::ZERO;
    c.segment_bytes = segment_bytes;
    c
}

/// Appends and waits until the record is durable (acknowledged).
fn ack(log: &CommandLog, r: &TxnRecord) -> u64 {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let lsn = log.append(
        enc(r),
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    rx.recv().unwrap().expect("acknowledged");
    lsn
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

/// Where each record of a segment starts, and its LSN (read with the format's helpers).
fn records(path: &Path) -> Vec<(u64, u64)> {
    let b = std::fs::read(path).unwrap();
    let h = check_segment_header(&b).unwrap();
    let l: Layout = h.layout;
    let mut at = l.segment_header_len;
    let mut out = Vec::new();
    while let Some(r) = parse_record_header(&l, &b[at..]) {
        if r.lsn == 0 {
            break;
        }
        out.push((at as u64, r.lsn));
        at += l.record_header_len + r.len as usize;
    }
    out
}

/// Every record's LSN, or the error; and the torn tail (file, offset).
type Read = (Result<Vec<u64>, LogError>, Option<(PathBuf, u64)>);

fn read(dir: &Path) -> Read {
    let mut r = match LogReader::open(dir, 0) {
        Ok(r) => r,
        Err(e) => return (Err(e), None),
    };
    let got: Result<Vec<u64>, LogError> = r.by_ref().map(|x| x.map(|(l, _)| l)).collect();
    (got, r.torn_tail())
}

fn corrupt(e: LogError) -> (PathBuf, u64, String) {
    assert_eq!(e.sqlstate(), "XX001", "{e}");
    match e {
        LogError::Corrupt { file, offset, detail } => (file, offset, detail),
        other => panic!("not corruption: {other}"),
    }
}

/// A log of `n` records in one appended segment, each acknowledged before the next was
/// appended (so every record's write states the ones before it durable).
fn one_segment(n: i64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(cfg(dir.path(), 64 << 20)).unwrap();
    for i in 0..n {
        ack(&log, &rec(i));
    }
    drop(log);
    let seg = segments(dir.path()).pop().unwrap();
    (dir, seg)
}

/// A log whose last segment is preallocated (version 4), holding `extra` more small
/// records after the ones that filled the earlier segments; returns the last segment.
fn preallocated_last(extra: i64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(cfg(dir.path(), 1 << 20)).unwrap();
    let version = |p: &Path| check_segment_header(&std::fs::read(p).unwrap()).unwrap().layout.version;
    let mut i = 0;
    while segments(dir.path()).last().is_none_or(|p| version(p) != 4) {
        ack(&log, &big(i));
        i += 1;
        assert!(i < 400, "no preallocated segment");
    }
    for j in 0..extra {
        ack(&log, &rec(j));
    }
    drop(log);
    let seg = segments(dir.path()).pop().unwrap();
    (dir, seg)
}

#[derive(Debug, Clone, Copy)]
enum Harm {
    /// 4 KiB of zeros from this offset (within the file).
    ZeroPage(u64),
    /// One byte flipped.
    Flip(u64),
    /// The file cut at this length.
    Cut(u64),
}

fn harm(path: &Path, h: Harm) {
    let mut b = std::fs::read(path).unwrap();
    match h {
        Harm::ZeroPage(at) => {
            let end = (at as usize + 4096).min(b.len());
            b[at as usize..end].fill(0);
        }
        Harm::Flip(at) => b[at as usize] ^= 0x20,
        Harm::Cut(len) => b.truncate(len as usize),
    }
    std::fs::write(path, b).unwrap();
}

/// The reported defect: 4 KiB overwritten with zeros a quarter of the way into the last
/// segment, acknowledged records after it. Version 2 took it for a torn write and dropped
/// them quietly; now it is refused, by the reader and by the writer, naming the file, the
/// offset and the LSNs that follow.
#[test]
fn damage_in_the_middle_of_the_last_segment_with_durable_records_after_it_is_refused() {
    for (what, appended) in [("appended", true), ("preallocated", false)] {
        for kind in 0..2 {
            let (dir, seg) = if appended {
                one_segment(400)
            } else {
                preallocated_last(400)
            };
            let recs = records(&seg);
            let (at, lsn) = recs[recs.len() / 4];
            let h = if kind == 0 {
                Harm::ZeroPage(at / 4096 * 4096 + 4096)
            } else {
                Harm::Flip(at + RECORD_HEADER_LEN as u64 + 3)
            };
            harm(&seg, h);
            let (got, torn) = read(dir.path());
            let (file, offset, detail) = corrupt(got.expect_err(what));
            assert_eq!(file, seg, "{what} {h:?}");
            assert!(torn.is_none());
            // The damaged record starts at or before the harm.
            let damaged = recs
                .iter()
                .rev()
                .find(|(o, _)| *o == offset)
                .expect("a record's offset");
            assert!(damaged.1 >= lsn && damaged.1 <= lsn + 40, "{what} {h:?}: {detail}");
            assert!(detail.contains("was durable") && detail.contains(" to "), "{detail}");
            let last = recs.last().unwrap().1;
            assert!(
                detail.contains(&format!("to {last}")),
                "names the LSNs after it: {detail}"
            );
            let e = CommandLog::open(cfg(dir.path(), 1 << 20))
                .err()
                .expect("the writer refuses too");
            assert_eq!(corrupt(e).1, offset);
        }
    }
}

/// A preallocated segment is never shortened by a crash (its length is synced before its
/// header is written), so one cut short lost records: refused, even at a record boundary.
#[test]
fn a_preallocated_segment_cut_short_is_refused() {
    let (dir, seg) = preallocated_last(400);
    let recs = records(&seg);
    for cut in [recs[100].0 + 7, recs[100].0, recs.last().unwrap().0 + 30] {
        let copy = tempfile::tempdir().unwrap();
        for p in segments(dir.path()) {
            std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
        }
        let seg_copy = copy.path().join(seg.file_name().unwrap());
        harm(&seg_copy, Harm::Cut(cut));
        let (file, offset, detail) = corrupt(read(copy.path()).0.expect_err("refused"));
        assert_eq!(file, seg_copy);
        assert!(offset <= cut, "{offset} {cut}");
        assert!(detail.contains("shorter than the"), "{detail}");
        assert!(CommandLog::open(cfg(copy.path(), 1 << 20)).is_err());
    }
}

/// Damage to the last record only: what a crash during its (unsynced, never acknowledged)
/// write leaves. Dropped, with its offset and length reported, and the log goes on.
#[test]
fn damage_to_the_last_record_only_is_a_torn_tail_and_is_trimmed() {
    type Case = (&'static str, bool, fn(u64, u64) -> Harm);
    let cases: Vec<Case> = vec![
        ("zeros, appended", true, |at, _| Harm::ZeroPage(at)),
        ("flipped byte, appended", true, |at, _| Harm::Flip(at + 30)),
        ("cut, appended", true, |at, _| Harm::Cut(at + 9)),
        // (Zeros from the record's very start would be the end of the records there: the
        // same, without a torn tail to report.)
        ("zeros, preallocated", false, |at, _| Harm::ZeroPage(at + 4)),
        ("flipped byte, preallocated", false, |at, _| Harm::Flip(at + 30)),
    ];
    for (what, appended, h) in cases {
        let (dir, seg) = if appended {
            one_segment(50)
        } else {
            preallocated_last(50)
        };
        let recs = records(&seg);
        let (at, lsn) = *recs.last().unwrap();
        let len = std::fs::metadata(&seg).unwrap().len();
        harm(&seg, h(at, len));
        let (got, torn) = read(dir.path());
        let got = got.expect(what);
        assert_eq!(*got.last().unwrap(), lsn - 1, "{what}");
        assert_eq!(torn, Some((seg.clone(), at)), "{what}");
        let log = CommandLog::open(cfg(dir.path(), 1 << 20)).unwrap();
        let t = log.truncated_tail().expect(what).clone();
        assert_eq!(
            (t.file.clone(), t.offset, t.lsn, t.later_records),
            (seg.clone(), at, lsn, 0),
            "{what}"
        );
        assert!(t.bytes > 0 && t.bytes <= len - at, "{what}: {t:?}");
        assert_eq!(log.last_lsn(), lsn - 1);
        assert_eq!(ack(&log, &rec(7)), lsn, "{what}: LSNs go on from the dropped one");
        drop(log);
        let (got, torn) = read(dir.path());
        assert_eq!(got.unwrap().len() as u64, lsn, "{what}");
        assert!(torn.is_none(), "{what}");
        if !appended {
            assert_eq!(
                std::fs::metadata(&seg).unwrap().len(),
                len,
                "a preallocated segment keeps its length"
            );
        }
    }
}

/// The one unsynced write may reach the disk in any order of pages: valid records after
/// the damaged one that state it was not durable yet are that write's, and go with it,
/// however far away they are; one stating that it was durable makes the damage a refusal.
#[test]
fn records_of_the_same_unsynced_write_after_the_damage_are_a_torn_tail() {
    let len = 8 << 20;
    let mut b = preallocated_segment_header(1, len).to_vec();
    let mut starts = Vec::new();
    // Records 1 to 5 each synced alone; 6 to 50 one write (large, so reaching far).
    for lsn in 1..=50u64 {
        starts.push(b.len() as u64);
        let durable = if lsn <= 6 { lsn - 1 } else { 5 };
        frame_record(lsn, durable, &enc(&big(lsn as i64)), &mut b);
    }
    assert!(b.len() as u64 > (4 << 20) + 200_000, "the write reaches past 4 MiB");
    b.resize(len as usize, 0);
    for (damaged, torn) in [(6usize, true), (5, false)] {
        let dir = tempfile::tempdir().unwrap();
        let seg = dir.path().join(segment_file_name(1));
        let mut bytes = b.clone();
        let at = starts[damaged - 1];
        bytes[at as usize + 100..at as usize + 4196].fill(0);
        std::fs::write(&seg, &bytes).unwrap();
        let (got, t) = read(dir.path());
        if torn {
            assert_eq!(got.unwrap().len(), 5);
            assert_eq!(t, Some((seg.clone(), at)));
            let log = CommandLog::open(cfg(dir.path(), len)).unwrap();
            assert_eq!(log.truncated_tail().unwrap().later_records, 44);
        } else {
            let (file, offset, detail) = corrupt(got.unwrap_err());
            assert_eq!((file, offset), (seg.clone(), at));
            assert!(
                detail.contains("record 6") && detail.contains("LSN 5 was synced"),
                "{detail}"
            );
        }
    }
}

/// Damage of any kind in a segment that is not the last is refused, naming that file.
#[test]
fn damage_in_an_earlier_segment_is_refused() {
    let (template, _) = preallocated_last(10);
    for h in [Harm::ZeroPage(200_000), Harm::Flip(300_000), Harm::Cut(500_000)] {
        let dir = tempfile::tempdir().unwrap();
        for p in segments(template.path()) {
            std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
        }
        let first = segments(dir.path())[0].clone();
        harm(&first, h);
        let (file, _, detail) = corrupt(read(dir.path()).0.expect_err("refused"));
        assert_eq!(file, first, "{h:?}");
        assert!(detail.contains("not the last"), "{h:?}: {detail}");
    }
}

/// A missing segment, and a log starting after what a snapshot covers, are refused naming
/// the file.
#[test]
fn a_missing_segment_and_a_gap_after_the_snapshot_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommandLog::open(cfg(dir.path(), 1 << 20)).unwrap();
    for i in 0..40 {
        ack(&log, &big(i));
    }
    drop(log);
    let segs = segments(dir.path());
    assert!(segs.len() >= 3, "{segs:?}");
    let after_gap = segs[2].clone();
    std::fs::remove_file(&segs[1]).unwrap();
    let (file, offset, detail) = corrupt(read(dir.path()).0.expect_err("refused"));
    assert_eq!((file, offset), (after_gap, 0));
    assert!(detail.contains("a segment is missing"), "{detail}");
    std::fs::remove_file(&segs[0]).unwrap();
    // Records 1 on are needed (no snapshot), the log starts later.
    let (file, _, detail) = corrupt(LogReader::open(dir.path(), 0).err().expect("refused"));
    assert_eq!(file, segs[2]);
    assert!(detail.contains("removed before a snapshot"), "{detail}");
}

/// With the operator's trim, a refused log is cut at the damage: what was dropped is said
/// exactly (file, offset, first and last LSN, records), the dropped bytes are kept aside,
/// and the log then opens and goes on from the first dropped LSN.
#[test]
fn trimming_cuts_the_log_at_the_damage_and_says_what_was_lost() {
    // In the middle of the last segment.
    let (dir, seg) = one_segment(400);
    let recs = records(&seg);
    let (at, lsn) = recs[100];
    harm(&seg, Harm::Flip(at + 40));
    let t = trim_damaged_log(dir.path(), &RealFs).unwrap().expect("trimmed");
    assert_eq!((t.file.clone(), t.offset, t.first_lsn), (seg.clone(), at, lsn));
    assert_eq!((t.last_lsn, t.records), (Some(400), Some(400 - lsn + 1)));
    assert!(t.removed_segments.is_empty());
    assert!(
        t.kept_in.join(seg.file_name().unwrap()).exists(),
        "the damaged segment is kept aside"
    );
    assert!(t.describe().contains(&format!("LSN {lsn} to 400")), "{}", t.describe());
    assert_eq!(
        trim_damaged_log(dir.path(), &RealFs).unwrap(),
        None,
        "nothing more to trim"
    );
    let log = CommandLog::open(cfg(dir.path(), 64 << 20)).unwrap();
    assert_eq!(log.last_lsn(), lsn - 1);
    assert_eq!(ack(&log, &rec(1)), lsn);
    drop(log);
    assert_eq!(read(dir.path()).0.unwrap().len() as u64, lsn);

    // In an earlier segment: the later segments go too.
    let (dir, _) = preallocated_last(10);
    let segs = segments(dir.path());
    let recs = records(&segs[0]);
    let (at, lsn) = recs[3];
    harm(&segs[0], Harm::ZeroPage(at + 1000));
    let t = trim_damaged_log(dir.path(), &RealFs).unwrap().expect("trimmed");
    assert_eq!((t.file.clone(), t.offset, t.first_lsn), (segs[0].clone(), at, lsn));
    assert_eq!(t.removed_segments, segs[1..].to_vec());
    assert!(t.last_lsn.unwrap() > segs.len() as u64 * 5);
    assert_eq!(read(dir.path()).0.unwrap().len() as u64, lsn - 1);

    // A preallocated segment cut short: it gets its length back; how much was cut is unknown.
    let (dir, seg) = preallocated_last(50);
    let len = std::fs::metadata(&seg).unwrap().len();
    let (at, lsn) = records(&seg)[20];
    harm(&seg, Harm::Cut(at));
    let t = trim_damaged_log(dir.path(), &RealFs).unwrap().expect("trimmed");
    assert_eq!((t.offset, t.first_lsn, t.last_lsn, t.records), (at, lsn, None, None));
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), len);
    assert_eq!(read(dir.path()).0.unwrap().last(), Some(&(lsn - 1)));

    // A torn tail is not the trim's business (the writer drops it); an intact log neither.
    let (dir, seg) = one_segment(20);
    assert_eq!(trim_damaged_log(dir.path(), &RealFs).unwrap(), None);
    let (at, _) = *records(&seg).last().unwrap();
    harm(&seg, Harm::Flip(at + 30));
    assert_eq!(trim_damaged_log(dir.path(), &RealFs).unwrap(), None);
}

/// A log written by an earlier build (a version 1 segment, then version 2 ones) replays,
/// read with those versions' rules; the writer continues it in a new segment of this
/// build's format.
#[test]
fn a_log_in_the_old_format_still_replays_and_is_continued_in_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut lsn = 1u64;
    for (version, n) in [(1u32, 10u64), (2, 10), (2, 5)] {
        let mut b = legacy_segment_header(lsn, version).to_vec();
        for _ in 0..n {
            frame_legacy_record(lsn, &enc(&rec(lsn as i64)), &mut b);
            lsn += 1;
        }
        if version == 2 {
            b.resize(b.len() + 64 * 1024, 0);
        }
        std::fs::write(dir.path().join(segment_file_name(lsn - n)), b).unwrap();
    }
    let (got, torn) = read(dir.path());
    assert_eq!(got.unwrap(), (1..=25).collect::<Vec<u64>>());
    assert!(torn.is_none());
    let mut r = LogReader::open(dir.path(), 0).unwrap();
    for (i, item) in r.by_ref().enumerate() {
        let (l, got) = item.unwrap();
        assert_eq!(enc(&got), enc(&rec(l as i64)), "record {i}");
    }
    let log = CommandLog::open(cfg(dir.path(), 1 << 20)).unwrap();
    assert_eq!(log.last_lsn(), 25);
    assert_eq!(ack(&log, &rec(26)), 26);
    drop(log);
    let segs = segments(dir.path());
    assert_eq!(segs.len(), 4);
    let newest = check_segment_header(&std::fs::read(&segs[3]).unwrap()).unwrap();
    assert_eq!((newest.first_lsn, newest.layout.version), (26, 3));
    assert_eq!(read(dir.path()).0.unwrap().len(), 26);
    // The old version 2 rule still applies to old segments: damage with valid records
    // close behind it is a torn tail there.
    let last_old = &segs[2];
    let mut b = std::fs::read(last_old).unwrap();
    let at = LEGACY_SEGMENT_HEADER_LEN + LEGACY_RECORD_HEADER_LEN + 5;
    b[at] ^= 1;
    std::fs::write(last_old, b).unwrap();
    std::fs::remove_file(&segs[3]).unwrap();
    let (got, torn) = read(dir.path());
    assert_eq!(got.unwrap().len(), 20);
    assert_eq!(torn, Some((last_old.clone(), LEGACY_SEGMENT_HEADER_LEN as u64)));
}

/// The reader goes through the I/O seam: a file system's read failures reach it.
#[test]
fn reads_go_through_the_file_system_seam() {
    let (dir, _) = one_segment(5);
    let fs = FaultyFs::new();
    let fs_arc: Arc<dyn Fs> = Arc::new(fs.clone());
    let n = LogReader::open_with(dir.path(), 0, fs_arc.clone()).unwrap().count();
    assert_eq!(n, 5);
    fs.fail_segment_reads(true);
    let mut r = LogReader::open_with(dir.path(), 0, fs_arc.clone()).unwrap();
    let e = r.next().unwrap().unwrap_err();
    assert!(matches!(e, LogError::Io { .. }), "{e}");
    assert!(CommandLog::open_with(cfg(dir.path(), 1 << 20), fs_arc).is_err());
    fs.fail_segment_reads(false);
}
