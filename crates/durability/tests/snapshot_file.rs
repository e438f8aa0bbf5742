//! The snapshot file's framing: what is written reads back, and a file cut short or with
//! any byte changed is refused with an error (never a panic, never a wrong section).

use permafrost_durability::snapshot::{self, Dec, Enc, SnapshotHeader, SnapshotReader, SnapshotWriter, kind};
use permafrost_io::RealFs;
use proptest::prelude::*;

/// Sections as (kind, body).
type Sections = Vec<(u32, Vec<u8>)>;

fn header() -> SnapshotHeader {
    SnapshotHeader {
        epoch: 7,
        cut_lsn: 12_345,
        partitions: 2,
        created_micros: 1_700_000_000_000_000,
        base_epoch: 0,
    }
}

/// Writes a small snapshot and returns its bytes and sections.
fn sample(dir: &std::path::Path) -> (Vec<u8>, Sections) {
    sample_with(dir, &header())
}

fn sample_with(dir: &std::path::Path, h: &SnapshotHeader) -> (Vec<u8>, Sections) {
    let mut sections = Vec::new();
    let mut e = Enc::default();
    e.u32(1);
    e.bytes(b"CREATE TABLE t (id BIGINT PRIMARY KEY)");
    sections.push((kind::SCHEMA, e.0));
    for p in 0..2u32 {
        let mut e = Enc::default();
        e.u32(p);
        e.u32(4096);
        e.u32(10);
        sections.push((kind::PARTITION, e.0));
        let mut e = Enc::default();
        e.u32(p);
        e.u32(1);
        e.key(&permafrost_storage::IndexKey::Int(-5));
        sections.push((kind::EVICTED_KEYS, e.0));
    }
    let mut w = SnapshotWriter::create(&RealFs, dir, h).unwrap();
    for (k, b) in &sections {
        w.section(*k, b).unwrap();
    }
    let (path, size) = w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, size);
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        snapshot::file_name(h.epoch)
    );
    (bytes, sections)
}

fn read_all(path: &std::path::Path) -> Result<(SnapshotHeader, Sections), String> {
    let (mut r, h) = SnapshotReader::open(&RealFs, path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(s) = r.next_section().map_err(|e| e.to_string())? {
        out.push(s);
    }
    Ok((h, out))
}

#[test]
fn a_snapshot_reads_back_and_its_sections_decode() {
    let dir = tempfile::tempdir().unwrap();
    let (_, sections) = sample(dir.path());
    let path = dir.path().join(snapshot::file_name(7));
    let (h, got) = read_all(&path).unwrap();
    assert_eq!(h, header());
    assert_eq!(got, sections);
    let mut d = Dec::new(&got[2].1);
    assert_eq!(d.u32("u32").unwrap(), 0);
    assert_eq!(d.u32("u32").unwrap(), 1);
    assert_eq!(d.key("key").unwrap(), permafrost_storage::IndexKey::Int(-5));
    d.finish().unwrap();
    assert!(d.u8("u8").is_err(), "reading past the end is an error");
    // Listed, newest valid found, older removed.
    assert_eq!(snapshot::list(&RealFs, dir.path()).unwrap().len(), 1);
    let found = snapshot::newest_valid(&RealFs, dir.path(), &mut |w| panic!("{w}")).unwrap();
    assert_eq!(found.unwrap().0.epoch, 7);
    snapshot::remove_older(&RealFs, dir.path(), 8, None).unwrap();
    assert!(snapshot::list(&RealFs, dir.path()).unwrap().is_empty());
}

#[test]
fn a_snapshot_with_a_base_is_used_only_with_its_base() {
    let dir = tempfile::tempdir().unwrap();
    let with_base = |epoch, base_epoch| SnapshotHeader {
        epoch,
        base_epoch,
        ..header()
    };
    sample_with(dir.path(), &with_base(3, 0));
    sample_with(dir.path(), &with_base(5, 3));
    let newest = |dir: &std::path::Path| {
        let mut warnings = Vec::new();
        let found = snapshot::newest_valid(&RealFs, dir, &mut |w| warnings.push(w)).unwrap();
        (found.map(|(h, _)| (h.epoch, h.base_epoch)), warnings)
    };
    assert_eq!(newest(dir.path()), (Some((5, 3)), vec![]));
    // Removing what 5 makes unnecessary keeps its base.
    snapshot::remove_older(&RealFs, dir.path(), 5, Some(3)).unwrap();
    let epochs: Vec<u64> = snapshot::list(&RealFs, dir.path())
        .unwrap()
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(epochs, [3, 5]);
    // A base that is damaged, or itself has a base, makes the snapshot unusable.
    let base = dir.path().join(snapshot::file_name(3));
    let good = std::fs::read(&base).unwrap();
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    std::fs::write(&base, &bad).unwrap();
    let (found, warnings) = newest(dir.path());
    assert_eq!(found, None);
    assert!(warnings[0].contains("base snapshot is unusable"), "{warnings:?}");
    std::fs::remove_file(&base).unwrap();
    sample_with(dir.path(), &with_base(3, 2));
    let (found, warnings) = newest(dir.path());
    assert_eq!(found, None);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("whole directories"), "{warnings:?}");
    // Once its base is whole again, snapshot 5 is the one to load.
    std::fs::write(&base, &good).unwrap();
    assert_eq!(newest(dir.path()), (Some((5, 3)), vec![]));
}

#[test]
fn a_file_cut_anywhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample(dir.path());
    let path = dir.path().join("cut.pfsnap");
    for n in 0..bytes.len() {
        std::fs::write(&path, &bytes[..n]).unwrap();
        assert!(read_all(&path).is_err(), "cut at {n} of {}", bytes.len());
        assert!(snapshot::validate(&RealFs, &path).is_err());
    }
    let mut longer = bytes.clone();
    longer.push(0);
    std::fs::write(&path, &longer).unwrap();
    assert!(read_all(&path).unwrap_err().contains("after the END"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn any_changed_byte_is_refused(pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let dir = tempfile::tempdir().unwrap();
        let (mut bytes, _) = sample(dir.path());
        let i = pos.index(bytes.len());
        bytes[i] ^= flip;
        let path = dir.path().join("bad.pfsnap");
        std::fs::write(&path, &bytes).unwrap();
        prop_assert!(read_all(&path).is_err(), "byte {} changed", i);
    }
}
