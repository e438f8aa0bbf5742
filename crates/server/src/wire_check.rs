//! Checks of a logged-in connection's messages as bytes, before pgwire decodes them.
//!
//! pgwire reads strings with a lossy UTF-8 conversion (invalid bytes become U+FFFD and are
//! stored as such), accepts strings without their NUL terminator, and panics or waits on
//! some lengths it cannot represent. PostgreSQL refuses all of these, so every message is
//! checked here first, exactly as its format (the protocol's "Message Formats") defines it:
//!
//! - a length below 4 or above pgwire's 1 GiB limit: 08P01, and the connection is closed
//!   (the stream cannot be re-synchronized);
//! - a Query, Parse, Bind, Describe, Close, Execute or CopyFail whose fields do not fill
//!   the message exactly (a string without its NUL, counts that point past the end, a
//!   parameter length below -1): 08P01, connection closed, as PostgreSQL's
//!   "invalid message format";
//! - Bind format codes other than 0 (text) and 1 (binary): 22023; more parameter format
//!   codes than parameters (other than the one code that applies to all): 08P01 — both
//!   errors of the statement, after which the connection waits for Sync as usual;
//! - text that is not UTF-8 or holds a NUL byte (the query string, statement and portal
//!   names, parameters sent in text format): 22021, "invalid byte sequence for encoding
//!   "UTF8"", an error of the statement.
//!
//! The start-up packet is checked the same way before pgwire decodes it
//! ([`check_startup`]): pgwire takes a name without a value, or a packet without its
//! terminator, as a name with an empty value; PostgreSQL refuses both (08P01).
//!
//! Binary-format parameters are checked where their type is known (a text value sent in
//! binary must be UTF-8 without NUL too: `handler::decode_params`).

use pgwire::error::{ErrorInfo, PgWireError};

/// pgwire's largest message (and PostgreSQL's): 1 GiB less one.
pub(crate) const MAX_MESSAGE_LEN: usize = 0x3fff_fffe;

/// Why a message is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub sqlstate: &'static str,
    pub message: String,
    /// The connection is closed after the error (the client broke the framing).
    pub fatal: bool,
}

impl Violation {
    fn format(message: impl Into<String>) -> Violation {
        Violation {
            sqlstate: "08P01",
            message: message.into(),
            fatal: true,
        }
    }

    fn statement(sqlstate: &'static str, message: impl Into<String>) -> Violation {
        Violation {
            sqlstate,
            message: message.into(),
            fatal: false,
        }
    }

    pub(crate) fn into_error(self) -> PgWireError {
        let severity = if self.fatal { "FATAL" } else { "ERROR" };
        PgWireError::UserError(Box::new(ErrorInfo::new(
            severity.into(),
            self.sqlstate.into(),
            self.message,
        )))
    }
}

/// Encodes a FATAL ErrorResponse, for a connection that has not started the protocol
/// (there is no pgwire socket to send it through yet).
pub(crate) fn encode_fatal(out: &mut bytes::BytesMut, sqlstate: &str, message: &str) {
    use bytes::BufMut;
    let mut body = Vec::new();
    for (tag, value) in [(b'S', "FATAL"), (b'V', "FATAL"), (b'C', sqlstate), (b'M', message)] {
        body.push(tag);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    out.put_u8(b'E');
    out.put_i32(body.len() as i32 + 4);
    out.put_slice(&body);
}

/// The length field of the message at the start of `buf` (type byte, then 4 bytes), once
/// those 5 bytes are there.
pub(crate) fn declared_len(buf: &[u8]) -> Option<i32> {
    (buf.len() >= 5).then(|| i32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]))
}

/// Checks the length of the message at the start of `buf` (5 bytes at least): the bytes it
/// spans in all, type byte included.
pub(crate) fn check_len(buf: &[u8]) -> Result<usize, Violation> {
    let len = declared_len(buf).unwrap_or(0);
    if len < 4 || len as usize > MAX_MESSAGE_LEN {
        return Err(Violation::format(format!("invalid message length {len}")));
    }
    Ok(1 + len as usize)
}

/// Checks the layout of a start-up packet (length, protocol version, then name and value
/// strings and a terminating NUL), as PostgreSQL's `ProcessStartupPacket` does for
/// protocol 3: the pairs are read up to the terminator, a name whose value is missing
/// ends them, and unless that leaves exactly the last byte, the packet is refused (08P01,
/// fatal). Other packets of the start-up phase (a cancel, SSL or GSS request: another
/// major version) and lengths pgwire refuses itself pass.
pub(crate) fn check_startup(packet: &[u8]) -> Result<(), Violation> {
    if packet.len() < 8 || u16::from_be_bytes([packet[4], packet[5]]) != 3 {
        return Ok(());
    }
    let len = i32::from_be_bytes([packet[0], packet[1], packet[2], packet[3]]);
    let Some(body) = usize::try_from(len).ok().and_then(|l| packet.get(8..l)) else {
        return Ok(());
    };
    // A string's end: its NUL, or the end of the body (PostgreSQL reads the packet into
    // a buffer with a NUL after it).
    let end = |from: usize| {
        body[from..]
            .iter()
            .position(|&b| b == 0)
            .map_or(body.len(), |p| from + p)
    };
    let mut offset = 0;
    while offset < body.len() {
        if body[offset] == 0 {
            break;
        }
        let value = end(offset) + 1;
        if value >= body.len() {
            break;
        }
        offset = end(value) + 1;
    }
    if offset + 1 != body.len() {
        return Err(Violation::format(
            "invalid startup packet layout: expected terminator as last byte",
        ));
    }
    Ok(())
}

/// Checks one whole message (type byte, length, body) of a logged-in connection.
pub(crate) fn check_message(msg: &[u8]) -> Result<(), Violation> {
    let total = check_len(msg)?;
    let mut r = Reader {
        buf: &msg[5..total],
        kind: msg[0],
    };
    match msg[0] {
        b'Q' => {
            let q = r.cstring()?;
            r.end()?;
            text(q)
        }
        b'P' => {
            let name = r.cstring()?;
            let query = r.cstring()?;
            let n = r.count()?;
            for _ in 0..n {
                r.bytes(4)?;
            }
            r.end()?;
            text(name)?;
            text(query)
        }
        b'B' => bind(&mut r),
        b'D' | b'C' => {
            r.bytes(1)?;
            let name = r.cstring()?;
            r.end()?;
            text(name)
        }
        b'E' => {
            let name = r.cstring()?;
            r.bytes(4)?;
            r.end()?;
            text(name)
        }
        b'f' => {
            let m = r.cstring()?;
            r.end()?;
            text(m)
        }
        b'S' | b'H' | b'X' | b'c' => r.end(),
        // CopyData is the COPY parser's to check; the authentication messages and any
        // other type are pgwire's.
        _ => Ok(()),
    }
}

/// A Bind, in two passes without allocating (it is on every pipelined statement's path):
/// the framing of the whole message first (violations there close the connection), then
/// the format codes, their count, and the text of the text-format parameters.
fn bind(r: &mut Reader<'_>) -> Result<(), Violation> {
    let portal = r.cstring()?;
    let stmt = r.cstring()?;
    let nformats = r.count()?;
    let formats = r.bytes(2 * nformats)?;
    let nparams = r.count()?;
    let params = r.buf;
    for _ in 0..nparams {
        match r.i32()? {
            -1 => {}
            l if l < -1 => {
                return Err(Violation::format(format!(
                    "invalid parameter length {l} in Bind message"
                )));
            }
            l => {
                r.bytes(l as usize)?;
            }
        }
    }
    let nresults = r.count()?;
    let results = r.bytes(2 * nresults)?;
    r.end()?;
    text(portal)?;
    text(stmt)?;
    let code = |codes: &[u8], i: usize| i16::from_be_bytes([codes[2 * i], codes[2 * i + 1]]);
    let codes = (0..nformats)
        .map(|i| code(formats, i))
        .chain((0..nresults).map(|i| code(results, i)));
    if let Some(bad) = codes.into_iter().find(|f| !matches!(f, 0 | 1)) {
        return Err(Violation::statement("22023", format!("unsupported format code: {bad}")));
    }
    if nformats > 1 && nformats != nparams {
        return Err(Violation::statement(
            "08P01",
            format!("bind message has {nformats} parameter formats but {nparams} parameters"),
        ));
    }
    // The parameters again, framing already checked.
    let mut p = Reader {
        buf: params,
        kind: b'B',
    };
    for i in 0..nparams {
        let len = p.i32()?;
        if len < 0 {
            continue;
        }
        let bytes = p.bytes(len as usize)?;
        let binary = match nformats {
            0 => false,
            1 => code(formats, 0) == 1,
            _ => code(formats, i) == 1,
        };
        if !binary {
            text(bytes)?;
        }
    }
    Ok(())
}

/// Text from a client: UTF-8 without NUL bytes (22021 as PostgreSQL).
pub(crate) fn text(bytes: &[u8]) -> Result<(), Violation> {
    if bytes.contains(&0) {
        return Err(invalid_bytes(&[0]));
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => Ok(()),
        Err(e) => {
            // As PostgreSQL, the offending byte and the one after it.
            let at = e.valid_up_to();
            Err(invalid_bytes(&bytes[at..(at + 2).min(bytes.len())]))
        }
    }
}

fn invalid_bytes(bytes: &[u8]) -> Violation {
    let hex: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
    Violation::statement(
        "22021",
        format!("invalid byte sequence for encoding \"UTF8\": {}", hex.join(" ")),
    )
}

/// Reads a message body field by field; running past its end is a format violation.
struct Reader<'a> {
    buf: &'a [u8],
    kind: u8,
}

impl<'a> Reader<'a> {
    fn short(&self) -> Violation {
        Violation::format(format!(
            "invalid message format: message '{}' ends before its fields do",
            self.kind as char
        ))
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Violation> {
        if self.buf.len() < n {
            return Err(self.short());
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn cstring(&mut self) -> Result<&'a [u8], Violation> {
        let Some(nul) = self.buf.iter().position(|b| *b == 0) else {
            return Err(Violation::format(format!(
                "invalid string in message '{}': no NUL terminator",
                self.kind as char
            )));
        };
        let s = &self.buf[..nul];
        self.buf = &self.buf[nul + 1..];
        Ok(s)
    }

    fn i16(&mut self) -> Result<i16, Violation> {
        let b = self.bytes(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, Violation> {
        let b = self.bytes(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count (Int16): negative is a format violation.
    fn count(&mut self) -> Result<usize, Violation> {
        let n = self.i16()?;
        usize::try_from(n).map_err(|_| Violation::format(format!("invalid count {n} in message")))
    }

    fn end(&self) -> Result<(), Violation> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(Violation::format(format!(
                "invalid message format: {} bytes after the fields of message '{}'",
                self.buf.len(),
                self.kind as char
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn bind_body(formats: &[i16], params: &[Option<&[u8]>], results: &[i16]) -> Vec<u8> {
        let mut b = b"\0\0".to_vec();
        b.extend_from_slice(&(formats.len() as i16).to_be_bytes());
        for f in formats {
            b.extend_from_slice(&f.to_be_bytes());
        }
        b.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for p in params {
            match p {
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v);
                }
            }
        }
        b.extend_from_slice(&(results.len() as i16).to_be_bytes());
        for f in results {
            b.extend_from_slice(&f.to_be_bytes());
        }
        b
    }

    fn state(r: Result<(), Violation>) -> Option<(&'static str, bool)> {
        r.err().map(|v| (v.sqlstate, v.fatal))
    }

    fn startup(pairs: &[u8]) -> Vec<u8> {
        let mut p = ((pairs.len() + 8) as i32).to_be_bytes().to_vec();
        p.extend_from_slice(&196_608_i32.to_be_bytes());
        p.extend_from_slice(pairs);
        p
    }

    #[test]
    fn startup_packets_must_end_with_their_terminator() {
        let bad = Some(("08P01", true));
        assert_eq!(state(check_startup(&startup(b"user\0bob\0\0"))), None);
        assert_eq!(state(check_startup(&startup(b"user\0bob\0database\0db\0\0"))), None);
        assert_eq!(
            state(check_startup(&startup(b"user\0\0\0"))),
            None,
            "an empty value is a value"
        );
        // A name and no value: its NUL is taken as the value's, and no terminator is left.
        assert_eq!(state(check_startup(&startup(b"user\0bob\0key\0\0"))), bad);
        assert_eq!(state(check_startup(&startup(b"user\0bob\0key\0"))), bad);
        assert_eq!(state(check_startup(&startup(b"user\0bob\0"))), bad, "no terminator");
        assert_eq!(state(check_startup(&startup(b"user\0bob\0\0junk"))), bad);
        assert_eq!(state(check_startup(&startup(b""))), bad);
        let e = check_startup(&startup(b"user\0bob\0key\0\0")).unwrap_err();
        assert_eq!(
            e.message,
            "invalid startup packet layout: expected terminator as last byte"
        );
        // A cancel request is another packet.
        let mut cancel = 16_i32.to_be_bytes().to_vec();
        cancel.extend_from_slice(&80_877_102_i32.to_be_bytes());
        cancel.extend_from_slice(&[0; 8]);
        assert_eq!(state(check_startup(&cancel)), None);
    }

    #[test]
    fn well_formed_messages_pass() {
        assert_eq!(state(check_message(&msg(b'Q', b"select 'caf\xc3\xa9'\0"))), None);
        assert_eq!(
            state(check_message(&msg(b'P', b"s1\0select $1\0\0\x01\0\0\0\x17"))),
            None
        );
        let b = bind_body(&[0, 1], &[Some(b"12"), Some(b"\0\xff")], &[1]);
        assert_eq!(state(check_message(&msg(b'B', &b))), None);
        assert_eq!(state(check_message(&msg(b'B', &bind_body(&[], &[None], &[])))), None);
        assert_eq!(state(check_message(&msg(b'E', b"\0\0\0\0\0"))), None);
        assert_eq!(state(check_message(&msg(b'S', b""))), None);
    }

    #[test]
    fn lengths_below_four_close_the_connection() {
        for len in [0i32, 3, -5] {
            let mut m = vec![b'Q'];
            m.extend_from_slice(&len.to_be_bytes());
            assert_eq!(state(check_len(&m).map(|_| ())), Some(("08P01", true)));
        }
    }

    #[test]
    fn strings_without_their_terminator_close_the_connection() {
        assert_eq!(state(check_message(&msg(b'Q', b"select 1"))), Some(("08P01", true)));
        assert_eq!(
            state(check_message(&msg(b'Q', b"select 1\0junk"))),
            Some(("08P01", true))
        );
        assert_eq!(state(check_message(&msg(b'P', b"s1\0select 1"))), Some(("08P01", true)));
        assert_eq!(state(check_message(&msg(b'S', b"x"))), Some(("08P01", true)));
    }

    #[test]
    fn invalid_utf8_and_nul_in_text_are_22021() {
        assert_eq!(
            state(check_message(&msg(b'Q', b"select 'caf\xe9'\0"))),
            Some(("22021", false))
        );
        assert_eq!(
            state(check_message(&msg(b'P', b"\0select '\xff'\0\0\0"))),
            Some(("22021", false))
        );
        let b = bind_body(&[], &[Some(b"a\0b")], &[]);
        assert_eq!(state(check_message(&msg(b'B', &b))), Some(("22021", false)));
        let b = bind_body(&[0], &[Some(b"caf\xe9")], &[]);
        assert_eq!(state(check_message(&msg(b'B', &b))), Some(("22021", false)));
        let v = check_message(&msg(b'Q', b"select 'caf\xe9'\0")).unwrap_err();
        assert!(v.message.contains("0xe9"), "{}", v.message);
    }

    #[test]
    fn malformed_binds_are_refused() {
        let mut b = bind_body(&[], &[Some(b"1")], &[]);
        // The parameter's length, -2.
        b[6..10].copy_from_slice(&(-2i32).to_be_bytes());
        assert_eq!(state(check_message(&msg(b'B', &b))), Some(("08P01", true)));
        let b = bind_body(&[7], &[Some(b"1")], &[]);
        assert_eq!(state(check_message(&msg(b'B', &b))), Some(("22023", false)));
        let b = bind_body(&[], &[Some(b"1")], &[2]);
        assert_eq!(state(check_message(&msg(b'B', &b))), Some(("22023", false)));
        let b = bind_body(&[0, 0, 0], &[Some(b"1"), Some(b"2")], &[]);
        assert_eq!(state(check_message(&msg(b'B', &b))), Some(("08P01", false)));
        let mut b = bind_body(&[], &[Some(b"123")], &[]);
        b.truncate(b.len() - 3);
        assert_eq!(state(check_message(&msg(b'B', &b))), Some(("08P01", true)));
    }
}
