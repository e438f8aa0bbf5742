//! The wire floor: a PostgreSQL-protocol server that does no work, to measure the least
//! any server can spend per round trip on a machine.
//!
//! Every query, whatever it says, is answered with the same canned row (one `bpchar`
//! column `c` of 120 characters, what sysbench's `oltp_point_select` reads). Each
//! connection gets an OS thread of its own that blocks in `recv` and answers with one
//! `send` per batch of messages: the shape of PostgreSQL's process per connection, and the
//! cheapest one on a machine where waking a thread is dear. What sysbench reaches against
//! it is the ceiling for a real server there; `scripts/sysbench-cpu.sh` runs it next to
//! Permafrost and PostgreSQL (system `floor`). It authenticates nobody and stores nothing:
//! it listens on loopback addresses only.
//!
//! Messages are read as bytes and checked: a bad length or an unknown message ends the
//! connection, never the process.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use crate::BenchError;

/// The protocol version 3.0 start-up code, and the requests that may come before it.
const PROTOCOL_3: u32 = 196_608;
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;
/// A start-up packet or message longer than this ends the connection.
const MAX_MESSAGE: usize = 1 << 20;
/// The canned column's type (`bpchar`) and width.
const BPCHAR_OID: u32 = 1042;
const WIDTH: usize = 120;

/// Serves connections on `listen` (a loopback address) until the process is stopped.
pub fn serve(listen: SocketAddr) -> Result<(), BenchError> {
    if !listen.ip().is_loopback() {
        return Err(BenchError::Options(format!(
            "the wire floor answers anyone without a password: listen on a loopback address, not {listen}"
        )));
    }
    let listener = TcpListener::bind(listen)?;
    eprintln!("wire floor listening on {}", listener.local_addr()?);
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of descriptors and the like: wait a little rather than spin.
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        };
        std::thread::Builder::new().name("wire-floor".into()).spawn(move || {
            let _ = Connection::new(stream).and_then(Connection::run);
        })?;
    }
    Ok(())
}

struct Connection {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    row_description: Vec<u8>,
    data_row: Vec<u8>,
}

/// Why a connection ends: the client left, or sent what the floor does not take.
type Step<T> = std::io::Result<T>;

fn refused(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

fn message(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    // Bodies here are canned and short.
    out.extend_from_slice(&u32::try_from(body.len() + 4).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(body);
}

impl Connection {
    fn new(stream: TcpStream) -> Step<Connection> {
        stream.set_nodelay(true)?;
        let mut row_description = Vec::new();
        row_description.extend_from_slice(&1u16.to_be_bytes());
        row_description.extend_from_slice(b"c\0");
        row_description.extend_from_slice(&0u32.to_be_bytes()); // table oid
        row_description.extend_from_slice(&0u16.to_be_bytes()); // column number
        row_description.extend_from_slice(&BPCHAR_OID.to_be_bytes());
        row_description.extend_from_slice(&(-1i16).to_be_bytes()); // variable length
        row_description.extend_from_slice(&(WIDTH as i32 + 4).to_be_bytes()); // typmod
        row_description.extend_from_slice(&0u16.to_be_bytes()); // text
        let mut data_row = Vec::new();
        data_row.extend_from_slice(&1u16.to_be_bytes());
        data_row.extend_from_slice(&(WIDTH as i32).to_be_bytes());
        data_row.extend(std::iter::repeat_n(b'x', WIDTH));
        Ok(Connection {
            stream,
            input: Vec::with_capacity(8192),
            output: Vec::with_capacity(8192),
            row_description,
            data_row,
        })
    }

    /// Reads more bytes; false when the client has gone.
    fn fill(&mut self) -> Step<bool> {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk)?;
        self.input.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    fn run(mut self) -> Step<()> {
        if !self.start_up()? {
            return Ok(());
        }
        loop {
            let mut at = 0;
            while let Some((tag, body)) = frame(&self.input[at..])? {
                let len = 5 + body.len();
                let describe_statement = tag == b'D' && body.first() == Some(&b'S');
                let stop = self.answer(tag, describe_statement)?;
                at += len;
                if stop {
                    return Ok(());
                }
            }
            self.input.drain(..at);
            if !self.output.is_empty() {
                self.stream.write_all(&self.output)?;
                self.output.clear();
            }
            if !self.fill()? {
                return Ok(());
            }
        }
    }

    /// The start-up packet (after any SSL or GSS request, refused with 'N'); false when
    /// the client left or only asked to cancel.
    fn start_up(&mut self) -> Step<bool> {
        loop {
            while self.input.len() < 8 {
                if !self.fill()? {
                    return Ok(false);
                }
            }
            let len = be_u32(&self.input[0..4]) as usize;
            if !(8..=MAX_MESSAGE).contains(&len) {
                return Err(refused("bad start-up length"));
            }
            while self.input.len() < len {
                if !self.fill()? {
                    return Ok(false);
                }
            }
            let code = be_u32(&self.input[4..8]);
            self.input.drain(..len);
            match code {
                SSL_REQUEST | GSSENC_REQUEST => self.stream.write_all(b"N")?,
                PROTOCOL_3 => break,
                _ => return Ok(false),
            }
        }
        let mut out = Vec::new();
        message(&mut out, b'R', &0u32.to_be_bytes());
        for (k, v) in [
            ("server_version", "15.0 (Permafrost wire floor)"),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("TimeZone", "UTC"),
        ] {
            let mut b = Vec::with_capacity(k.len() + v.len() + 2);
            b.extend_from_slice(k.as_bytes());
            b.push(0);
            b.extend_from_slice(v.as_bytes());
            b.push(0);
            message(&mut out, b'S', &b);
        }
        message(&mut out, b'K', &[0, 0, 0, 1, 0, 0, 0, 1]);
        message(&mut out, b'Z', b"I");
        self.stream.write_all(&out)?;
        Ok(true)
    }

    /// Queues the answer to one message; true when the client said goodbye.
    fn answer(&mut self, tag: u8, describe_statement: bool) -> Step<bool> {
        let out = &mut self.output;
        match tag {
            b'Q' => {
                message(out, b'T', &self.row_description);
                message(out, b'D', &self.data_row);
                message(out, b'C', b"SELECT 1\0");
                message(out, b'Z', b"I");
            }
            b'P' => message(out, b'1', b""),
            b'B' => message(out, b'2', b""),
            b'D' => {
                if describe_statement {
                    message(out, b't', &0u16.to_be_bytes());
                }
                message(out, b'T', &self.row_description);
            }
            b'E' => {
                message(out, b'D', &self.data_row);
                message(out, b'C', b"SELECT 1\0");
            }
            b'C' => message(out, b'3', b""),
            b'S' => message(out, b'Z', b"I"),
            b'H' => {}
            b'X' => return Ok(true),
            _ => return Err(refused("a message the wire floor does not answer")),
        }
        Ok(false)
    }
}

/// One whole message at the start of `buf` (its tag and body), or None when more bytes are
/// needed.
fn frame(buf: &[u8]) -> Step<Option<(u8, &[u8])>> {
    if buf.len() < 5 {
        return Ok(None);
    }
    let len = be_u32(&buf[1..5]) as usize;
    if !(4..=MAX_MESSAGE).contains(&len) {
        return Err(refused("bad message length"));
    }
    Ok(buf.get(5..1 + len).map(|body| (buf[0], body)))
}

fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_need_whole_messages_and_sane_lengths() {
        assert!(frame(b"Q\0\0").unwrap().is_none());
        assert!(frame(b"Q\0\0\0\x09abc").unwrap().is_none());
        let (tag, body) = frame(b"Q\0\0\0\x08abcdXYZ").unwrap().unwrap();
        assert_eq!((tag, body), (b'Q', &b"abcd"[..]));
        assert!(frame(b"Q\0\0\0\x03").is_err());
        assert!(frame(b"Q\xff\xff\xff\xff").is_err());
    }

    #[test]
    fn refuses_addresses_other_than_loopback() {
        let e = serve("0.0.0.0:0".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
    }

    #[test]
    fn answers_a_prepared_point_select_with_the_canned_row() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let _ = Connection::new(s).and_then(Connection::run);
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(
                &format!("host=127.0.0.1 port={} user=postgres", addr.port()),
                tokio_postgres::NoTls,
            )
            .await
            .unwrap();
            tokio::spawn(conn);
            for _ in 0..3 {
                let rows = client.query("SELECT c FROM sbtest1 WHERE id = 1", &[]).await.unwrap();
                assert_eq!(rows.len(), 1);
                let c: String = rows[0].get(0);
                assert_eq!(c, "x".repeat(WIDTH));
            }
            let rows = client.simple_query("SELECT 1").await.unwrap();
            assert!(rows.len() >= 2, "a row and the command tag");
        });
    }
}
