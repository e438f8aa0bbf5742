//! Snapshot files: a consistent image of every partition at one point of the transaction
//! order, from which recovery starts before replaying the command log after it.
//!
//! The format is specified in docs/format.md ("Snapshot, version 2"): a header, then
//! sections (kind, length, CRC-32C, body), then an END section that counts the sections
//! and chains their checksums. A snapshot is written to `<name>.tmp`, synced, and renamed;
//! only renamed files with a valid END are used, so a snapshot cut short by a crash is
//! never loaded. Decoding never trusts a length it has not checked against the bytes.
//!
//! Every file operation goes through the file system it is given (`permafrost_io::Fs`), so
//! that tests can tear, corrupt or fail a snapshot's writes and reads.
//!
//! This module knows the bytes; what goes in them (tables, tombstones, index entries of
//! evicted tuples, the block directory) is put there by the executor.

use std::path::{Path, PathBuf};

use permafrost_io::{Fs, SeqReader, SeqWriter};

use permafrost_storage::IndexKey;

use crate::commandlog::LogError;

type Result<T> = std::result::Result<T, LogError>;

pub const MAGIC: [u8; 8] = *b"PFSNAP\r\n";
pub const VERSION: u32 = 2;
/// The oldest version read: version 1 (48-byte header, no base, block directory entries
/// with holes, PARTITION without the live count) is read too, so that a database upgraded
/// from a build that wrote it restarts from its snapshot.
pub const OLDEST_VERSION: u32 = 1;
pub const HEADER_LEN: usize = 56;
const HEADER_LEN_V1: usize = 48;
pub const SECTION_HEADER_LEN: usize = 12;
/// Largest section body (writers cut rows, tombstones and keys into sections below this).
pub const MAX_SECTION: usize = 64 << 20;
/// Sections are cut when their body passes this size.
pub const SECTION_TARGET: usize = 1 << 20;
const SUFFIX: &str = ".pfsnap";
const TMP: &str = ".tmp";

/// Section kinds.
pub mod kind {
    pub const SCHEMA: u32 = 1;
    pub const PARTITION: u32 = 2;
    pub const BLOCKS: u32 = 3;
    pub const PENDING_BLOCK: u32 = 4;
    pub const TABLE: u32 = 5;
    pub const TOMBSTONES: u32 = 6;
    pub const EVICTED_KEYS: u32 = 7;
    pub const ROWS: u32 = 8;
    pub const END: u32 = 9;
    pub const BLOCKS_REMOVED: u32 = 10;
    pub const SEQUENCES: u32 = 11;
}

/// What the header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// Snapshots are numbered from 1, increasing.
    pub epoch: u64,
    /// The snapshot holds every transaction with a command-log LSN up to this one and none
    /// after it.
    pub cut_lsn: u64,
    pub partitions: u32,
    /// Wall-clock time it was taken, microseconds since the Unix epoch.
    pub created_micros: i64,
    /// 0: the file holds every partition's whole block directory. Otherwise the epoch of
    /// the snapshot (itself whole) whose directories this one's are differences from; that
    /// file is needed to load this one.
    pub base_epoch: u64,
}

pub fn file_name(epoch: u64) -> String {
    format!("snapshot-{epoch:020}{SUFFIX}")
}

pub fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("snapshot-")?.strip_suffix(SUFFIX)?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The complete (renamed) snapshot files in `dir`, oldest first. A missing directory has
/// none.
pub fn list(fs: &dyn Fs, dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out: Vec<(u64, PathBuf)> = list_dir(fs, dir)?
        .into_iter()
        .filter_map(|p| Some((p.file_name()?.to_str().and_then(parse_file_name)?, p)))
        .collect();
    out.sort();
    Ok(out)
}

/// The entries of `dir` (none if it is missing).
fn list_dir(fs: &dyn Fs, dir: &Path) -> Result<Vec<PathBuf>> {
    match fs.list_dir(dir) {
        Ok(v) => Ok(v),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(LogError::io(format!("cannot list snapshots in {}", dir.display()), e)),
    }
}

/// The newest snapshot in `dir` that can be loaded, with its header: it reads back whole
/// (every checksum, the END section) and so does its base, if it has one (a snapshot whose
/// block directories are differences needs the whole ones of its base). Unusable ones
/// (torn, corrupt, of another version, missing their base) are passed over, each reported
/// through `warn`.
pub fn newest_valid(
    fs: &dyn Fs,
    dir: &Path,
    warn: &mut dyn FnMut(String),
) -> Result<Option<(SnapshotHeader, PathBuf)>> {
    for (_, path) in list(fs, dir)?.into_iter().rev() {
        match validate(fs, &path).and_then(|h| check_base(fs, dir, &h).map(|()| h)) {
            Ok(h) => return Ok(Some((h, path))),
            Err(e) => warn(format!("skipping snapshot {}: {e}", path.display())),
        }
    }
    Ok(None)
}

/// Checks that the base snapshot a snapshot names is there, whole, and itself has no base.
fn check_base(fs: &dyn Fs, dir: &Path, h: &SnapshotHeader) -> Result<()> {
    if h.base_epoch == 0 {
        return Ok(());
    }
    let path = base_path(dir, h);
    let b = validate(fs, &path).map_err(|e| LogError::Failed(format!("its base snapshot is unusable: {e}")))?;
    if b.epoch != h.base_epoch || b.base_epoch != 0 || b.partitions != h.partitions {
        return Err(LogError::SnapshotCorrupt {
            file: path,
            offset: 0,
            detail: format!(
                "the base of snapshot {} is snapshot {} with whole directories and {} partitions, this file is \
                 snapshot {} (base {}, {} partitions)",
                h.epoch, h.base_epoch, h.partitions, b.epoch, b.base_epoch, b.partitions
            ),
        });
    }
    Ok(())
}

/// The file of the base snapshot `h` names (see [`SnapshotHeader::base_epoch`]).
pub fn base_path(dir: &Path, h: &SnapshotHeader) -> PathBuf {
    dir.join(file_name(h.base_epoch))
}

/// Reads a snapshot through, checking everything; returns its header.
pub fn validate(fs: &dyn Fs, path: &Path) -> Result<SnapshotHeader> {
    let (mut r, h) = SnapshotReader::open(fs, path)?;
    while r.next_section()?.is_some() {}
    Ok(h)
}

/// Removes the snapshots older than `epoch` but `keep` (the base `epoch` needs, if any),
/// and unfinished (`.tmp`) ones older than `epoch`.
pub fn remove_older(fs: &dyn Fs, dir: &Path, epoch: u64, keep: Option<u64>) -> Result<()> {
    for (e, path) in list(fs, dir)? {
        if e < epoch && Some(e) != keep {
            fs.remove(&path)
                .map_err(|err| LogError::io(format!("cannot remove old snapshot {}", path.display()), err))?;
        }
    }
    for path in list_dir(fs, dir).unwrap_or_default() {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(base) = name.strip_suffix(TMP)
            && parse_file_name(base).is_some_and(|e| e < epoch)
        {
            let _ = fs.remove(&path);
        }
    }
    sync_dir(fs, dir)
}

/// Removes what a failed snapshot `epoch` left behind (its unfinished `.tmp` file), so a
/// full disk does not stay fuller for it.
pub fn remove_unfinished(fs: &dyn Fs, dir: &Path, epoch: u64) {
    let _ = fs.remove(&dir.join(format!("{}{TMP}", file_name(epoch))));
}

fn sync_dir(fs: &dyn Fs, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .map_err(|e| LogError::io(format!("cannot sync directory {}", dir.display()), e))
}

fn header_bytes(h: &SnapshotHeader) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&h.partitions.to_le_bytes());
    b[16..24].copy_from_slice(&h.epoch.to_le_bytes());
    b[24..32].copy_from_slice(&h.cut_lsn.to_le_bytes());
    b[32..40].copy_from_slice(&h.created_micros.to_le_bytes());
    b[40..48].copy_from_slice(&h.base_epoch.to_le_bytes());
    // 48..52 reserved (zero).
    let crc = crc32c::crc32c(&b[..52]);
    b[52..56].copy_from_slice(&crc.to_le_bytes());
    b
}

fn section_crc(kind: u32, body: &[u8]) -> u32 {
    let mut h = [0u8; 8];
    h[0..4].copy_from_slice(&kind.to_le_bytes());
    h[4..8].copy_from_slice(&(body.len() as u32).to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(&h), body)
}

/// Writes one snapshot file.
pub struct SnapshotWriter<'f> {
    fs: &'f dyn Fs,
    out: SeqWriter,
    tmp: PathBuf,
    path: PathBuf,
    dir: PathBuf,
    sections: u64,
    chain: u32,
    bytes: u64,
}

impl<'f> SnapshotWriter<'f> {
    /// Starts `dir/<name>.tmp` for snapshot `header.epoch` (replacing such a file a crash
    /// left behind).
    pub fn create(fs: &'f dyn Fs, dir: &Path, header: &SnapshotHeader) -> Result<SnapshotWriter<'f>> {
        fs.create_dir_all(dir)
            .map_err(|e| LogError::io(format!("cannot create snapshot directory {}", dir.display()), e))?;
        let path = dir.join(file_name(header.epoch));
        let tmp = dir.join(format!("{}{TMP}", file_name(header.epoch)));
        match fs.remove(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(LogError::io(format!("cannot remove {}", tmp.display()), e));
            }
            _ => {}
        }
        let file = fs
            .create(&tmp)
            .map_err(|e| LogError::io(format!("cannot create {}", tmp.display()), e))?;
        let mut w = SnapshotWriter {
            fs,
            out: SeqWriter::new(file, 1 << 20),
            tmp,
            path,
            dir: dir.to_path_buf(),
            sections: 0,
            chain: 0,
            bytes: 0,
        };
        w.write(&header_bytes(header))?;
        Ok(w)
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        self.bytes += b.len() as u64;
        self.out
            .write_all(b)
            .map_err(|e| LogError::io(format!("cannot write {}", self.tmp.display()), e))
    }

    /// Appends a section.
    pub fn section(&mut self, kind: u32, body: &[u8]) -> Result<()> {
        if body.len() > MAX_SECTION {
            return Err(LogError::Failed(format!(
                "snapshot section of {} bytes is larger than the {MAX_SECTION} a section may hold",
                body.len()
            )));
        }
        let crc = section_crc(kind, body);
        let mut h = [0u8; SECTION_HEADER_LEN];
        h[0..4].copy_from_slice(&kind.to_le_bytes());
        h[4..8].copy_from_slice(&(body.len() as u32).to_le_bytes());
        h[8..12].copy_from_slice(&crc.to_le_bytes());
        self.write(&h)?;
        self.write(body)?;
        self.sections += 1;
        self.chain = crc32c::crc32c_append(self.chain, &crc.to_le_bytes());
        Ok(())
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Writes the END section, syncs the file, renames it to its final name and syncs the
    /// directory. Returns the final path and the file's size.
    pub fn finish(mut self) -> Result<(PathBuf, u64)> {
        let mut end = Enc::default();
        end.u64(self.sections);
        end.u32(self.chain);
        self.section(kind::END, &end.0)?;
        let mut file = self
            .out
            .into_inner()
            .map_err(|e| LogError::io(format!("cannot write {}", self.tmp.display()), e))?;
        file.sync_data()
            .map_err(|e| LogError::io(format!("cannot sync {}", self.tmp.display()), e))?;
        drop(file);
        self.fs
            .rename(&self.tmp, &self.path)
            .map_err(|e| LogError::io(format!("cannot rename {}", self.tmp.display()), e))?;
        sync_dir(self.fs, &self.dir)?;
        Ok((self.path, self.bytes))
    }
}

/// Reads one snapshot file section by section, checking each.
pub struct SnapshotReader {
    r: SeqReader,
    path: PathBuf,
    version: u32,
    offset: u64,
    sections: u64,
    chain: u32,
    done: bool,
}

impl SnapshotReader {
    pub fn open(fs: &dyn Fs, path: &Path) -> Result<(SnapshotReader, SnapshotHeader)> {
        let file = fs
            .open_read(path)
            .and_then(|f| SeqReader::new(f, 1 << 20))
            .map_err(|e| LogError::io(format!("cannot open {}", path.display()), e))?;
        let mut r = SnapshotReader {
            r: file,
            path: path.to_path_buf(),
            version: VERSION,
            offset: 0,
            sections: 0,
            chain: 0,
            done: false,
        };
        let mut h = [0u8; HEADER_LEN];
        // Magic and version first: a header of another version may have another length.
        r.read_exact(&mut h[..12], "header")?;
        if h[0..8] != MAGIC {
            return Err(r.corrupt(0, "not a snapshot file (bad magic)"));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(r.corrupt(
                8,
                format!("version {version}, this build reads versions {OLDEST_VERSION} to {VERSION}"),
            ));
        }
        r.version = version;
        let len = if version == 1 { HEADER_LEN_V1 } else { HEADER_LEN };
        r.read_exact(&mut h[12..len], "header")?;
        let crc = u32::from_le_bytes(h[len - 4..len].try_into().expect("4 bytes"));
        if crc32c::crc32c(&h[..len - 4]) != crc {
            return Err(r.corrupt(0, "header checksum mismatch"));
        }
        let header = SnapshotHeader {
            partitions: u32::from_le_bytes(h[12..16].try_into().expect("4 bytes")),
            epoch: u64::from_le_bytes(h[16..24].try_into().expect("8 bytes")),
            cut_lsn: u64::from_le_bytes(h[24..32].try_into().expect("8 bytes")),
            created_micros: i64::from_le_bytes(h[32..40].try_into().expect("8 bytes")),
            base_epoch: if version == 1 {
                0
            } else {
                u64::from_le_bytes(h[40..48].try_into().expect("8 bytes"))
            },
        };
        Ok((r, header))
    }

    fn corrupt(&self, offset: u64, detail: impl Into<String>) -> LogError {
        LogError::SnapshotCorrupt {
            file: self.path.clone(),
            offset,
            detail: detail.into(),
        }
    }

    fn read_exact(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        match self.r.read_exact(buf) {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.corrupt(
                self.offset,
                format!("the file ends inside the {what} (a torn or partial snapshot)"),
            )),
            Err(e) => Err(LogError::io(format!("cannot read {}", self.path.display()), e)),
        }
    }

    /// The next section as (kind, body), or `None` after the END section (which is checked
    /// here: the section count and the chain of checksums).
    pub fn next_section(&mut self) -> Result<Option<(u32, Vec<u8>)>> {
        if self.done {
            return Ok(None);
        }
        let at = self.offset;
        let mut h = [0u8; SECTION_HEADER_LEN];
        self.read_exact(&mut h, "section header")?;
        let kind = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        if len > MAX_SECTION {
            return Err(self.corrupt(at, format!("section length {len} is over the limit")));
        }
        let mut body = vec![0u8; len];
        self.read_exact(&mut body, "section body")?;
        if section_crc(kind, &body) != crc {
            return Err(self.corrupt(at, "section checksum mismatch"));
        }
        if kind == kind::END {
            let mut d = Dec::new(&body);
            let (count, chain) = (
                d.u64("section count").map_err(|e| self.corrupt(at, e.to_string()))?,
                d.u32("section chain").map_err(|e| self.corrupt(at, e.to_string()))?,
            );
            if count != self.sections || chain != self.chain {
                return Err(self.corrupt(at, "the END section does not match the sections before it"));
            }
            if self.r.remaining() > 0 {
                return Err(self.corrupt(self.offset, "bytes after the END section"));
            }
            self.done = true;
            return Ok(None);
        }
        self.sections += 1;
        self.chain = crc32c::crc32c_append(self.chain, &crc.to_le_bytes());
        Ok(Some((kind, body)))
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The file's format version (sections differ between versions: docs/format.md).
    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Little-endian encoder of section bodies.
#[derive(Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    pub fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A length (u32) and the bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    /// An index key: tag 0 and an i64, or tag 1 and length-prefixed bytes.
    pub fn key(&mut self, k: &IndexKey) {
        match k {
            IndexKey::Int(v) => {
                self.0.push(0);
                self.i64(*v);
            }
            IndexKey::Bytes(b) => {
                self.0.push(1);
                self.bytes(b);
            }
        }
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The decoder of section bodies ([`crate::codec::Decoder`]).
pub use crate::codec::Decoder as Dec;

/// One entry of a block directory: a block id and what the directory keeps of it (the
/// anti-cache's `BlockMeta` without the holes, which are recounted at load).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEntry {
    pub id: u32,
    pub table: u16,
    pub tuples: u16,
    pub span: u16,
}

/// One section of a snapshot file, decoded from its body ([`decode_section`]). The order
/// of sections and what they refer to (a partition, a table of its schema) are checked by
/// the loader; this is the bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// The schema statements, in order (the first section).
    Schema(Vec<String>),
    /// A partition's block directory starts: its geometry and (version 2) live blocks.
    Partition {
        p: u32,
        slot_size: u32,
        file_slots: u32,
        /// Blocks in the whole directory; version 1 files do not say.
        live: Option<u32>,
    },
    /// Entries of the partition's block directory (or, in a snapshot with a base, the
    /// blocks added since the base).
    Blocks { p: u32, entries: Vec<BlockEntry> },
    /// Blocks removed since the base (snapshots with a base only).
    BlocksRemoved { p: u32, ids: Vec<u32> },
    /// A block whose write was still in flight, with its bytes.
    PendingBlock { p: u32, id: u32, bytes: Vec<u8> },
    /// A table of a partition starts.
    Table {
        p: u32,
        t: u32,
        name: String,
        sequence: i64,
        /// Tombstone slots the table had (a capacity hint).
        bound: u32,
        indexes: u32,
    },
    /// Tombstones `from..` of a table; `None` is a free slot.
    Tombstones {
        p: u32,
        t: u32,
        from: u32,
        entries: Vec<Option<(u32, u32)>>,
    },
    /// Index entries of evicted tuples: (block id, key) for index `index`.
    EvictedKeys {
        p: u32,
        t: u32,
        index: u32,
        keys: Vec<(u32, IndexKey)>,
    },
    /// Rows of a table, each in the tuple layout, coldest first.
    Rows { p: u32, t: u32, rows: Vec<Vec<u8>> },
    /// The sequences of their own (`CREATE SEQUENCE`): each one's id and the last value
    /// it handed out.
    Sequences(Vec<(u32, i64)>),
}

/// Decodes the body of a section of kind `k` (`version`: the file's, 1 or 2). Never
/// panics: bad bytes are a [`DecodeError`](crate::codec::DecodeError).
pub fn decode_section(k: u32, body: &[u8], version: u32) -> std::result::Result<Section, crate::codec::DecodeError> {
    let v1 = version == 1;
    let mut d = Dec::new(body);
    let s = match k {
        kind::SCHEMA => {
            let count = d.count(4, "count")?;
            let mut stmts = Vec::with_capacity(count);
            for _ in 0..count {
                stmts.push(d.string("schema statement")?);
            }
            Section::Schema(stmts)
        }
        kind::PARTITION => Section::Partition {
            p: d.u32("partition")?,
            slot_size: d.u32("slot size")?,
            file_slots: d.u32("file slots")?,
            live: if v1 { None } else { Some(d.u32("live blocks")?) },
        },
        kind::BLOCKS => {
            let p = d.u32("partition")?;
            let count = d.count(if v1 { 12 } else { 10 }, "block count")?;
            let mut entries = Vec::with_capacity(count);
            for _ in 0..count {
                let id = d.u32("block id")?;
                let (table, tuples) = (d.u16("block table")?, d.u16("block tuples")?);
                if v1 {
                    d.u16("block holes")?;
                }
                let span = d.u16("block span")?;
                entries.push(BlockEntry {
                    id,
                    table,
                    tuples,
                    span,
                });
            }
            Section::Blocks { p, entries }
        }
        kind::BLOCKS_REMOVED => {
            if v1 {
                return Err(crate::codec::DecodeError::UnknownTag {
                    what: "version 1 section kind",
                    value: k as u64,
                    at: 0,
                });
            }
            let p = d.u32("partition")?;
            let count = d.count(4, "count")?;
            let mut ids = Vec::with_capacity(count);
            for _ in 0..count {
                ids.push(d.u32("removed block")?);
            }
            Section::BlocksRemoved { p, ids }
        }
        kind::PENDING_BLOCK => Section::PendingBlock {
            p: d.u32("partition")?,
            id: d.u32("block id")?,
            bytes: d.bytes("block bytes")?.to_vec(),
        },
        kind::TABLE => Section::Table {
            p: d.u32("partition")?,
            t: d.u32("table")?,
            name: d.string("table name")?,
            sequence: d.i64("sequence")?,
            bound: d.u32("sequence bound")?,
            indexes: d.u32("index count")?,
        },
        kind::TOMBSTONES => {
            let (p, t, from) = (d.u32("partition")?, d.u32("table")?, d.u32("first item")?);
            let count = d.count(8, "count")?;
            let mut entries = Vec::with_capacity(count);
            for _ in 0..count {
                let block = d.u32("block")?;
                let offset = d.u32("offset")?;
                entries.push((block != u32::MAX).then_some((block, offset)));
            }
            Section::Tombstones { p, t, from, entries }
        }
        kind::EVICTED_KEYS => {
            let (p, t, index) = (d.u32("partition")?, d.u32("table")?, d.u32("index")?);
            let count = d.count(9, "count")?;
            let mut keys = Vec::with_capacity(count);
            for _ in 0..count {
                let id = d.u32("block id")?;
                keys.push((id, d.key("key")?));
            }
            Section::EvictedKeys { p, t, index, keys }
        }
        kind::ROWS => {
            let (p, t) = (d.u32("partition")?, d.u32("table")?);
            let count = d.count(4, "count")?;
            let mut rows = Vec::with_capacity(count);
            for _ in 0..count {
                rows.push(d.bytes("row")?.to_vec());
            }
            Section::Rows { p, t, rows }
        }
        kind::SEQUENCES if !v1 => {
            let count = d.count(12, "count")?;
            let mut seqs = Vec::with_capacity(count);
            for _ in 0..count {
                seqs.push((d.u32("sequence")?, d.i64("last value")?));
            }
            Section::Sequences(seqs)
        }
        other => {
            return Err(crate::codec::DecodeError::UnknownTag {
                what: "section kind",
                value: other as u64,
                at: 0,
            });
        }
    };
    d.finish()?;
    Ok(s)
}
