//! The file a partition's blocks live in: the I/O seam's block file (`permafrost_io::fs`:
//! [`BlockFile`], on disk with `O_DIRECT` where the file system allows it, [`DiskFile`], or
//! in memory for tests, [`MemFile`]); faults are injected through the seam's file system
//! (`permafrost_io::FaultyFs`).

pub use permafrost_io::fs::{BlockFile, DiskFile, MemFile};
