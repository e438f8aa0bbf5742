//! Files written and read front to back through the seam's positioned files: a snapshot is
//! written as one stream of sections and read back the same way. [`SeqWriter`] gathers
//! small writes into one buffer and writes it at the file's end when it is full (a write as
//! large as the buffer goes straight to the file, as `std::io::BufWriter` does), so the
//! number of write calls is the same as through a `BufWriter`; [`SeqReader`] fills its
//! buffer with one positioned read at a time and reads a request as large as the buffer
//! straight into the caller's memory.

use std::io;

use crate::fs::{FsFile, FsRead};

/// Writes a file front to back from offset 0, buffered.
pub struct SeqWriter {
    file: Box<dyn FsFile>,
    buf: Vec<u8>,
    /// Where `buf` goes in the file.
    at: u64,
}

impl SeqWriter {
    /// Writes `file` from its start, `capacity` bytes per write.
    pub fn new(file: Box<dyn FsFile>, capacity: usize) -> SeqWriter {
        SeqWriter {
            file,
            buf: Vec::with_capacity(capacity.max(1)),
            at: 0,
        }
    }

    /// Appends `b` (written when the buffer is full, or at once if `b` alone fills it).
    pub fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        let cap = self.buf.capacity();
        if self.buf.len() + b.len() > cap {
            self.flush()?;
        }
        if b.len() >= cap {
            self.file.write_all_at(b, self.at)?;
            self.at += b.len() as u64;
        } else {
            self.buf.extend_from_slice(b);
        }
        Ok(())
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.file.write_all_at(&self.buf, self.at)?;
            self.at += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes what is buffered and returns the file (to be synced).
    pub fn into_inner(mut self) -> io::Result<Box<dyn FsFile>> {
        self.flush()?;
        Ok(self.file)
    }
}

/// Reads a file front to back, buffered. The file's length is taken when it is opened: the
/// files read this way do not change while they are read.
pub struct SeqReader {
    file: Box<dyn FsRead>,
    len: u64,
    buf: Vec<u8>,
    /// The unread bytes of the buffer are `buf[start..end]`.
    start: usize,
    end: usize,
    /// The file offset of `buf[end]`: where the next read of the file starts.
    next: u64,
}

impl SeqReader {
    /// Reads `file` from its start, up to `capacity` bytes per read.
    pub fn new(file: Box<dyn FsRead>, capacity: usize) -> io::Result<SeqReader> {
        let len = file.len()?;
        Ok(SeqReader {
            file,
            len,
            buf: vec![0u8; capacity.max(1)],
            start: 0,
            end: 0,
            next: 0,
        })
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        (self.len - self.next) + (self.end - self.start) as u64
    }

    /// Fills `out` with the next bytes; fewer left than that is `UnexpectedEof` (and reads
    /// nothing).
    pub fn read_exact(&mut self, out: &mut [u8]) -> io::Result<()> {
        if (out.len() as u64) > self.remaining() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends first"));
        }
        let n = (self.end - self.start).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        let rest = &mut out[n..];
        if rest.is_empty() {
            return Ok(());
        }
        if rest.len() >= self.buf.len() {
            self.file.read_exact_at(rest, self.next)?;
            self.next += rest.len() as u64;
            return Ok(());
        }
        let fill = (self.len - self.next).min(self.buf.len() as u64) as usize;
        self.file.read_exact_at(&mut self.buf[..fill], self.next)?;
        self.next += fill as u64;
        rest.copy_from_slice(&self.buf[..rest.len()]);
        self.start = rest.len();
        self.end = fill;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{Fs, RealFs};

    #[test]
    fn what_is_written_in_pieces_reads_back_in_other_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut w = SeqWriter::new(RealFs.create(&path).unwrap(), 64);
        for piece in [&data[..10], &data[10..200], &data[200..263], &data[263..]] {
            w.write_all(piece).unwrap();
        }
        w.into_inner().unwrap().sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let mut r = SeqReader::new(RealFs.open_read(&path).unwrap(), 64).unwrap();
        let mut got = Vec::new();
        for n in [1usize, 63, 64, 500, 7, 9000] {
            let mut b = vec![0u8; n];
            r.read_exact(&mut b).unwrap();
            got.extend(b);
        }
        assert_eq!(r.remaining(), (data.len() - got.len()) as u64);
        let mut rest = vec![0u8; r.remaining() as usize];
        r.read_exact(&mut rest).unwrap();
        got.extend(rest);
        assert_eq!(got, data);
        assert_eq!(r.remaining(), 0);
        let err = r.read_exact(&mut [0u8; 1]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
