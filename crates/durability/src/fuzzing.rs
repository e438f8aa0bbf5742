//! Entry points for fuzzing the decoders of bytes this crate reads back from disk (the
//! `disk_decoders` target in `fuzz/`, and the proptests below, which run them in the test
//! suite): any input is an error or a value, never a panic; a record that decodes encodes
//! back to the same bytes. Snapshot files are read whole (header, framed sections, each
//! section's body).

use crate::commandlog::format::check_segment_header;
use crate::commandlog::{decode_record, encode_record};

/// A command-log record body.
pub fn record(data: &[u8]) {
    if let Ok(rec) = decode_record(data) {
        let mut again = Vec::new();
        encode_record(&rec, &mut again);
        assert_eq!(decode_record(&again).as_ref(), Ok(&rec), "a decoded record re-encodes");
    }
}

/// A command-log segment: its header, then (the bytes written as a segment file) its
/// records read back by the reader, with its search for valid records after damage and
/// its rules for torn tails of every version (1 to 4).
pub fn segment_header(data: &[u8]) {
    let Ok(h) = check_segment_header(data) else { return };
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "permafrost-fuzz-log-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::create_dir(&dir).is_ok()
        && std::fs::write(
            dir.join(crate::commandlog::format::segment_file_name(h.first_lsn)),
            data,
        )
        .is_ok()
        && let Ok(reader) = crate::LogReader::open(&dir, h.first_lsn - 1)
    {
        for _ in reader {}
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot section body: the first byte picks the kind, the second the file version.
pub fn snapshot_section(data: &[u8]) {
    let [k, v, body @ ..] = data else { return };
    let version = 1 + (*v as u32 % 2);
    let _ = crate::snapshot::decode_section(*k as u32 % 12, body, version);
}

/// A snapshot file: its header, its sections' framing and checksums, and each body.
pub fn snapshot_file(data: &[u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "permafrost-fuzz-{}-{}.pfsnap",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok((mut rd, _)) = crate::snapshot::SnapshotReader::open(&permafrost_io::RealFs, &path) {
        while let Ok(Some((k, body))) = rd.next_section() {
            let _ = crate::snapshot::decode_section(k, &body, rd.version());
        }
    }
    let _ = std::fs::remove_file(&path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commandlog::{Request, TxnRecord};
    use permafrost_types::{Numeric, Value};
    use proptest::prelude::*;

    fn valid_record() -> Vec<u8> {
        let rec = TxnRecord {
            zone: None,
            draws: None,
            partitions: vec![0, 3],
            now: 1_700_000_000_000_000,
            seed: 42,
            request: Request::Call {
                procedure: "transfer".into(),
                params: vec![
                    Value::Int(7),
                    Value::Text("é".into()),
                    Value::Decimal(Numeric::new(150, 2)),
                    Value::Null,
                    Value::Bool(true),
                ],
            },
        };
        let mut out = Vec::new();
        encode_record(&rec, &mut out);
        out
    }

    /// A segment of `version` holding a few records (then zeros, if preallocated).
    fn valid_segment(version: u32) -> Vec<u8> {
        use crate::commandlog::format as f;
        let mut b = match version {
            1 | 2 => f::legacy_segment_header(5, version).to_vec(),
            3 => f::segment_header(5).to_vec(),
            _ => f::preallocated_segment_header(5, 1500).to_vec(),
        };
        for lsn in 5..10 {
            if version <= 2 {
                f::frame_legacy_record(lsn, &valid_record(), &mut b);
            } else {
                f::frame_record(lsn, lsn - 1 - lsn % 2, &valid_record(), &mut b);
            }
        }
        if version.is_multiple_of(2) {
            b.resize(1500.max(b.len()), 0);
        }
        b
    }

    #[test]
    fn valid_segments_read_back() {
        for version in 1..=4 {
            let b = valid_segment(version);
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(crate::commandlog::format::segment_file_name(5)), &b).unwrap();
            let got: Vec<u64> = crate::LogReader::open(dir.path(), 4)
                .unwrap()
                .map(|r| r.unwrap().0)
                .collect();
            assert_eq!(got, vec![5, 6, 7, 8, 9], "version {version}");
        }
    }

    /// Bodies of a few section kinds, as the executor writes them.
    fn valid_sections() -> Vec<(u32, Vec<u8>)> {
        use crate::snapshot::{Enc, kind};
        let mut schema = Enc::default();
        schema.u32(1);
        schema.bytes(b"CREATE TABLE t (id BIGINT PRIMARY KEY)");
        let mut blocks = Enc::default();
        blocks.u32(0);
        blocks.u32(1);
        // One entry: block 7 of table 1, 10 tuples, one slot.
        blocks.u32(7);
        blocks.u16(1);
        blocks.u16(10);
        blocks.u16(1);
        let mut tombs = Enc::default();
        for v in [0u32, 1, 0, 2, 7, 0, u32::MAX, 0] {
            tombs.u32(v);
        }
        let mut keys = Enc::default();
        for v in [0u32, 1, 0, 1, 7] {
            keys.u32(v);
        }
        keys.key(&permafrost_storage::IndexKey::Int(42));
        vec![
            (kind::SCHEMA, schema.0),
            (kind::BLOCKS, blocks.0),
            (kind::TOMBSTONES, tombs.0),
            (kind::EVICTED_KEYS, keys.0),
        ]
    }

    /// A whole snapshot file with those sections.
    fn valid_snapshot() -> Vec<u8> {
        use crate::snapshot::{SnapshotHeader, SnapshotWriter};
        let dir = tempfile::tempdir().unwrap();
        let h = SnapshotHeader {
            epoch: 1,
            cut_lsn: 5,
            partitions: 1,
            created_micros: 0,
            base_epoch: 0,
        };
        let mut w = SnapshotWriter::create(&permafrost_io::RealFs, dir.path(), &h).unwrap();
        for (k, body) in valid_sections() {
            w.section(k, &body).unwrap();
        }
        let (path, _) = w.finish().unwrap();
        std::fs::read(path).unwrap()
    }

    #[test]
    fn valid_sections_decode() {
        for (k, body) in valid_sections() {
            crate::snapshot::decode_section(k, &body, 2).unwrap();
        }
        let b = valid_snapshot();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.pfsnap");
        std::fs::write(&p, &b).unwrap();
        let (mut rd, _) = crate::snapshot::SnapshotReader::open(&permafrost_io::RealFs, &p).unwrap();
        let mut n = 0;
        while let Some((k, body)) = rd.next_section().unwrap() {
            crate::snapshot::decode_section(k, &body, rd.version()).unwrap();
            n += 1;
        }
        assert_eq!(n, 4);
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..256)) {
            record(&data);
            segment_header(&data);
            snapshot_section(&data);
        }

        #[test]
        fn corrupted_snapshot_files_never_panic(at in 0usize..400, byte in any::<u8>(), cut in 0usize..400) {
            let mut b = valid_snapshot();
            let i = at % b.len();
            b[i] = byte;
            b.truncate(cut.max(1).min(b.len()));
            snapshot_file(&b);
        }

        #[test]
        fn corrupted_sections_never_panic(which in 0usize..4, at in 0usize..64, byte in any::<u8>(), cut in 0usize..80) {
            let (k, mut body) = valid_sections().swap_remove(which);
            if !body.is_empty() {
                let i = at % body.len();
                body[i] = byte;
            }
            body.truncate(cut.min(body.len()));
            let mut data = vec![k as u8, 1];
            data.extend(body);
            snapshot_section(&data);
        }

        #[test]
        fn corrupted_segments_never_panic(
            version in 1u32..=4,
            at in 0usize..2000,
            byte in any::<u8>(),
            cut in 0usize..2000,
        ) {
            let mut b = valid_segment(version);
            let i = at % b.len();
            b[i] = byte;
            b.truncate(cut.max(1).min(b.len()));
            segment_header(&b);
        }

        #[test]
        fn corrupted_records_never_panic(at in 0usize..64, byte in any::<u8>(), cut in 0usize..80) {
            let mut b = valid_record();
            let i = at % b.len();
            b[i] = byte;
            b.truncate(cut.max(1).min(b.len()));
            record(&b);
        }
    }
}
