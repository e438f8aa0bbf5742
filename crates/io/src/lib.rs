//! The one I/O seam for files: every data file Permafrost writes or reads (command-log
//! segments, snapshots, the schema log, block files, the data directory's entries) goes
//! through this crate.
//!
//! - [`aligned`]: buffers aligned for direct I/O ([`AlignedBuf`]) and the alignment every
//!   direct write respects ([`ALIGN`]);
//! - [`direct`]: opening files around the page cache, the device's alignment, vectored
//!   positioned writes, page-cache advice;
//! - [`fs`]: the file system ([`Fs`]), files written ([`FsFile`]) and read back
//!   ([`FsRead`]), and the anti-cache's block files ([`BlockFile`]), real ([`RealFs`]) and
//!   in memory ([`MemFile`]);
//! - [`buffered`]: files written and read front to back through those traits
//!   ([`SeqWriter`], [`SeqReader`]);
//! - [`fault`]: a file system that injects faults into all of them ([`FaultyFs`]), for tests;
//! - [`lock`]: the lock that gives a directory to one process ([`DirLock`]);
//! - [`temp`]: nameless temporary files, where statements spill what passes their
//!   working memory ([`TempFile`]).
//!
//! Every `unsafe` block of these is listed in UNSAFE.md.

pub mod aligned;
pub mod buffered;
pub mod direct;
pub mod fault;
pub mod fs;
pub mod lock;
pub mod temp;

pub use aligned::{ALIGN, AlignedBuf, align_gap};
pub use buffered::{SeqReader, SeqWriter};
pub use fault::FaultyFs;
pub use fs::{BlockFile, DiskFile, Fs, FsFile, FsRead, MemFile, RealFs, copy_file, open_real_read};
pub use lock::{DirLock, LockError};
pub use temp::{TempFile, temp_bytes_written};
