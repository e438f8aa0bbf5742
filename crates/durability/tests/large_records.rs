//! Records larger than the writer's window (a COPY batch's): written through the window
//! in several writes and synced once, between small records of the same batch, in an
//! appended segment, a preallocated one and a direct one; read back whole; a call the
//! writer encodes as it writes it (`StreamedCall`) reads back as the call; and a write
//! torn in the middle of one loses only that record.

use std::path::Path;
use std::sync::Arc;

use permafrost_durability::{Chunk, CommandLog, LogConfig, LogError, LogMode, LogReader, Request, TxnRecord};
use permafrost_io::FaultyFs;
use permafrost_types::Value;

mod common;
use common::append_chunk_wait;

fn record(seq: i64, bytes: usize) -> TxnRecord {
    TxnRecord {
        zone: None,
        draws: None,
        partitions: vec![0, 1],
        now: seq,
        seed: 11,
        request: Request::AdHoc {
            sql: "INSERT INTO t VALUES (?, ?)".into(),
            // Not one repeated byte: a misplaced window would show.
            params: vec![
                Value::Int(seq),
                Value::bytes((0..bytes).map(|i| (i * 7 + seq as usize) as u8).collect::<Vec<u8>>()),
            ],
        },
    }
}

fn config(dir: &Path, segment_bytes: u64) -> LogConfig {
    let mut c = LogConfig::new(dir);
    c.mode = LogMode::Sync;
    c.segment_bytes = segment_bytes;
    c
}

/// Appends `recs` as one chunk (one batch of the writer) and waits for it.
fn append_all(log: &CommandLog, recs: &[TxnRecord]) -> (u64, Result<(), LogError>) {
    let mut chunk = Chunk::new();
    for r in recs {
        chunk
            .push_with(|out| permafrost_durability::encode_record(r, out))
            .unwrap();
    }
    append_chunk_wait(log, chunk)
}

fn same(a: &TxnRecord, b: &TxnRecord) -> bool {
    let enc = |r: &TxnRecord| {
        let mut out = Vec::new();
        permafrost_durability::encode_record(r, &mut out);
        out
    };
    enc(a) == enc(b)
}

fn read_all(dir: &Path) -> Vec<(u64, TxnRecord)> {
    let mut r = LogReader::open(dir, 0).expect("open reader");
    r.by_ref().collect::<Result<_, _>>().expect("log reads back")
}

fn segment_version(path: &Path) -> u32 {
    let b = std::fs::read(path).unwrap();
    u32::from_le_bytes(b[8..12].try_into().unwrap())
}

fn last_segment(dir: &Path) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v.pop().expect("a segment")
}

/// A log in 1 MiB segments over a fault-injecting file system, whose last segment is a
/// preallocated one if `preallocated` (written around the page cache if `direct`), and
/// the number of records written to get there.
fn open_log(preallocated: bool, direct: bool) -> (tempfile::TempDir, FaultyFs, CommandLog, u64) {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    if direct {
        fs.take_direct_writes(false);
    }
    let log = CommandLog::open_with(config(dir.path(), 1 << 20), Arc::new(fs.clone())).unwrap();
    let mut n = 0;
    if preallocated {
        while segment_version(&last_segment(dir.path())) != 4 {
            append_all(&log, &[record(n as i64, 100_000)]).1.unwrap();
            n += 1;
            assert!(n < 400, "no preallocated segment after 400 records of 100 KB");
        }
    }
    (dir, fs, log, n)
}

/// Small, large, small, large, small records in one batch round trip; each large one is
/// written in several writes of at most the window and the batch takes three syncs (the
/// records before each large one, each large one, the rest), not one per window.
fn round_trip(preallocated: bool, direct: bool) {
    let (dir, fs, log, n) = open_log(preallocated, direct);
    let recs = vec![
        record(1000, 10),
        record(1001, 3 << 20),
        record(1002, 100),
        record(1003, (1 << 20) + 4321),
        record(1004, 5000),
    ];
    let (writes, syncs) = (fs.writes(), fs.syncs());
    let (last, r) = append_all(&log, &recs);
    r.unwrap();
    assert_eq!(last, n + 5);
    let took = fs.writes() - writes;
    assert!(
        took >= 6 + 2 + 3,
        "{took} writes: the large records went through a window"
    );
    // A sync for the records before each large one, for each large one, and for the
    // rest; the segment is full after them, and the next one's start (after the records
    // were acknowledged) may be counted too.
    let synced = fs.syncs() - syncs;
    assert!((5..=6).contains(&synced), "{synced} syncs");
    // A record after them, in the next batch, continues where they ended.
    append_all(&log, &[record(2000, 70)]).1.unwrap();
    drop(log);
    assert_eq!(fs.misaligned_writes(), 0);
    assert_eq!(fs.direct_writes() > 0, direct);
    let back = read_all(dir.path());
    assert_eq!(back.len() as u64, n + 6);
    for (i, r) in recs.iter().chain([&record(2000, 70)]).enumerate() {
        let (lsn, got) = &back[n as usize + i];
        assert_eq!(*lsn, n + 1 + i as u64);
        assert!(same(got, r), "record {lsn}");
    }
}

#[test]
fn large_records_round_trip_in_an_appended_segment() {
    round_trip(false, false);
}

#[test]
fn large_records_round_trip_in_a_preallocated_segment() {
    round_trip(true, false);
}

#[test]
fn large_records_round_trip_in_a_direct_segment() {
    round_trip(true, true);
}

/// A write torn inside a large record fails it; after a restart the records before it
/// are there, it is not, and the log continues.
#[test]
fn a_write_torn_inside_a_large_record_loses_only_it() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = CommandLog::open_with(config(dir.path(), 64 << 20), Arc::new(fs.clone())).unwrap();
    append_all(&log, &[record(0, 10), record(1, 20)]).1.unwrap();
    // The large record's first write (its header and first window) is torn.
    let writes = fs.writes();
    fs.tear_next_write(1000);
    let e = append_all(&log, &[record(2, 3 << 20)]).1.unwrap_err();
    assert_eq!(e.sqlstate(), "58030", "{e}");
    assert_eq!(fs.writes(), writes, "the torn write was the first of the record");
    drop(log);
    let log = CommandLog::open(config(dir.path(), 64 << 20)).unwrap();
    assert_eq!(log.last_lsn(), 2);
    append_all(&log, &[record(3, 30)]).1.unwrap();
    drop(log);
    let back = read_all(dir.path());
    assert_eq!(back.len(), 3);
    assert!(same(&back[2].1, &record(3, 30)));
}

/// The call the streamed-call test records: an ad hoc INSERT with `params`.
fn streamed(params: &Arc<[Value]>) -> permafrost_durability::StreamedCall {
    permafrost_durability::StreamedCall::new(
        true,
        "INSERT INTO t VALUES ($1, $2, $3, $4)",
        params.clone(),
        &[0, 1, 2],
        (42, 7, Some("Europe/Paris")),
        DRAWS,
    )
}

/// The sequence values the streamed call took (they follow its parameters).
const DRAWS: &[(u32, i64)] = &[(3, 1001), (3, 1002), (4, 7)];

/// A large call pushed as a [`StreamedCall`] (encoded by the writer as it writes it) is
/// the same bytes as the one encoded whole, and ends its chunk: the chunk takes no more.
#[test]
fn a_streamed_call_reads_back_as_the_call_it_records() {
    let params: Vec<Value> = (0..3000)
        .flat_map(|i| {
            [
                Value::Int(i),
                Value::text("x".repeat(700 + i as usize % 50)),
                Value::Null,
                Value::Decimal("12345678901234567890123456789.123456789".parse().unwrap()),
            ]
        })
        .collect();
    let params: Arc<[Value]> = params.into();
    let call = streamed(&params);
    let mut whole = Vec::new();
    permafrost_durability::encode_call(
        true,
        "INSERT INTO t VALUES ($1, $2, $3, $4)",
        &params,
        &[0, 1, 2],
        (42, 7, Some("Europe/Paris")),
        DRAWS,
        &mut whole,
    );
    assert_eq!(call.len(), whole.len());
    let mut pieces = Vec::new();
    call.for_each_piece(4096, |b| {
        assert!(b.len() < 4096 + 800, "a piece of {} bytes", b.len());
        pieces.extend_from_slice(b);
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(pieces, whole);

    for (preallocated, direct) in [(false, false), (true, true)] {
        let (dir, fs, log, n) = open_log(preallocated, direct);
        let mut chunk = log.chunk();
        chunk
            .push_with(|out| permafrost_durability::encode_record(&record(5, 10), out))
            .unwrap();
        chunk.push_call(streamed(&params)).unwrap();
        assert!(chunk.is_sealed());
        assert!(
            chunk.push_with(|out| out.push(1)).is_err(),
            "a sealed chunk takes no more"
        );
        let (last, r) = append_chunk_wait(&log, chunk);
        r.unwrap();
        assert_eq!(last, n + 2);
        append_all(&log, &[record(6, 10)]).1.unwrap();
        drop(log);
        assert_eq!(fs.misaligned_writes(), 0);
        let back = read_all(dir.path());
        assert_eq!(back.len() as u64, n + 3);
        assert!(same(&back[n as usize].1, &record(5, 10)));
        let want = TxnRecord {
            zone: Some("Europe/Paris".into()),
            draws: Some(DRAWS.to_vec()),
            partitions: vec![0, 1, 2],
            now: 42,
            seed: 7,
            request: Request::AdHoc {
                sql: "INSERT INTO t VALUES ($1, $2, $3, $4)".into(),
                params: params.to_vec(),
            },
        };
        assert!(same(&back[n as usize + 1].1, &want), "the streamed call");
        assert!(same(&back[n as usize + 2].1, &record(6, 10)));
    }
}
