//! A connection's message loop, with pipelining.
//!
//! pgwire's own loop handles one message at a time and waits for each statement's result
//! before it reads the next message, so a connection never has more than one transaction
//! in flight however deep the client pipelines. This loop is pgwire's (start-up, TLS,
//! errors, states) with one change: an Execute of a DML statement or a procedure call is
//! *submitted* to its partition at once, and its output is queued ([`Pipeline`]) instead
//! of awaited. While more complete messages wait in the read buffer the loop goes on
//! reading; when the buffer runs dry (or the queue is long), it writes the queued
//! outputs in order and flushes. A client that pipelines N statements thus has N
//! transactions in flight, and the server makes one write for all of them.
//!
//! Order and errors, as PostgreSQL has them:
//! - Outputs leave in the order of the messages that caused them: while the queue is not
//!   empty, BindComplete and ReadyForQuery join it instead of being written, and any other
//!   message (Parse, Describe, Close, Query, Flush, COPY, ...) first drains it.
//! - Statements are submitted in the order they arrive; every partition runs what it is
//!   given in submission order, so a statement sees the effects of every earlier one of its
//!   connection at its partition(s). Statements at different partitions may commit in
//!   either order (each is its own transaction; the client has not yet been told of
//!   either). This is documented in the README ("Pipelining").
//! - At most one Execute per Sync group is in flight: a second Execute before the Sync
//!   waits for the first, so that an error makes the rest of the group be skipped, as
//!   the protocol requires.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures::{SinkExt, StreamExt};
use permafrost_executor::Database;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::{MaybeTls, PgWireMessageServerCodec, negotiate_tls, process_error, process_message};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use crate::command::Command;
use crate::cork::Corked;
use crate::error::ClientTag;
use crate::handler::Handlers;
use crate::message_memory::{self, MessageMemory};
use crate::pipeline::Pipeline;
use crate::wire_check;

/// Queued outputs beyond which the loop writes them out before reading on.
const MAX_QUEUED: usize = 1024;

/// Whether `buf` starts with a whole frontend message (type byte, length, body).
fn whole_message(buf: &[u8]) -> bool {
    wire_check::declared_len(buf).is_some_and(|len| buf.len() > len as u32 as usize)
}

/// Messages whose output may wait in the queue: the parts of a pipelined statement.
fn may_queue(m: &PgWireFrontendMessage) -> bool {
    matches!(
        m,
        PgWireFrontendMessage::Bind(_) | PgWireFrontendMessage::Execute(_) | PgWireFrontendMessage::Sync(_)
    )
}

/// Serves one client connection until it ends.
pub async fn process_socket(
    tcp: TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: Arc<Handlers>,
    authentication_timeout: Duration,
) -> io::Result<()> {
    let startup_timeout = tokio::time::sleep(authentication_timeout);
    tokio::pin!(startup_timeout);
    // Kept for noticing a client that goes away while its statement runs
    // (`session::CancelToken::client_gone`); valid as long as this task holds the socket.
    let peer = crate::session::PeerFd(std::os::fd::AsRawFd::as_raw_fd(&tcp));
    let socket = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        s = async {
            if !first_packet_ok(&tcp).await? {
                return Ok(None);
            }
            negotiate_tls::<Command>(tcp, tls).await
        } => s?,
    };
    let Some(mut socket) = socket else {
        return Ok(());
    };
    let checked = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        ok = startup_packet_ok(&mut socket) => ok?,
    };
    if !checked {
        return Ok(());
    }
    let mut socket = corked(socket);
    socket.session_extensions().insert(peer);
    let (backend, startup, cancel) = handlers.parts();
    let db = &backend.db().clone();
    let mut memory = MessageMemory::default();
    let pipeline = Pipeline::of(&socket);
    // (Neither is ever replaced in the connection's extensions.)
    let (txn, settings) = (crate::txn::of(&socket), crate::session_settings::of(&socket));
    // Whether the last message was one of an extended-query group (see below).
    let mut in_group = false;
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup | PgWireConnectionState::AuthenticationInProgress
        );
        let msg = if starting {
            // The start-up exchange reads inside the framed reader: what was answered so
            // far goes out first.
            flush_out(&mut socket).await?;
            tokio::select! {
                _ = &mut startup_timeout => None,
                m = socket.next() => m,
            }
        } else {
            let mut input = Input {
                memory: &mut memory,
                db,
                logs_errors: backend.logs_errors(),
                pipeline: &pipeline,
                txn: &txn,
                settings: &settings,
                hold_output: in_group,
            };
            match read_checked(&mut socket, &mut input).await? {
                Next::Decode => {}
                Next::Answered => continue,
                Next::End => break,
            }
            socket.next().await
        };
        let Some(Ok(msg)) = msg else { break };
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        // As PostgreSQL: CopyData, CopyDone and CopyFail outside a COPY are ignored (a
        // client whose COPY was refused before it started may still send them:
        // tokio-postgres sends CopyFail when its sink is dropped).
        if matches!(
            msg,
            PgWireFrontendMessage::CopyData(_)
                | PgWireFrontendMessage::CopyDone(_)
                | PgWireFrontendMessage::CopyFail(_)
        ) && !matches!(socket.state(), PgWireConnectionState::CopyInProgress(_))
        {
            continue;
        }
        let is_extended = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        let is_cancel = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        // Inside an extended-query group (before its Sync or a Flush) the answers stay in
        // the output buffer, as PostgreSQL keeps them: a client that pipelines (psycopg's
        // pipeline mode, libpq's) reads them when it asks, and psycopg, handed a group's
        // answers before it has sent the whole group, paired a SELECT with an INSERT's.
        let is_flush = matches!(msg, PgWireFrontendMessage::Flush(_));
        in_group = matches!(
            msg,
            PgWireFrontendMessage::Parse(_)
                | PgWireFrontendMessage::Bind(_)
                | PgWireFrontendMessage::Describe(_)
                | PgWireFrontendMessage::Execute(_)
                | PgWireFrontendMessage::Close(_)
        );
        // What the message runs, for the log if it fails (only when errors are logged).
        let about = if backend.logs_errors() {
            About::of(&msg)
        } else {
            About::Nothing
        };
        if !may_queue(&msg) && !pipeline.is_empty() {
            io_result(pipeline.drain(&mut socket).await)?;
        }
        // (Marked only when it goes on: for a group of one statement, the common case,
        // nothing is written. The Execute takes the mark.)
        if matches!(msg, PgWireFrontendMessage::Execute(_))
            && crate::txn::another_execute_before_sync(socket.read_buffer())
        {
            crate::txn::group_goes_on(&socket).set(true);
        }
        let r = process_message(
            msg,
            &mut socket,
            startup.clone(),
            backend.clone(),
            backend.clone(),
            backend.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(e) = r {
            // Whatever was queued came first.
            let failed_group = if pipeline.is_empty() {
                false
            } else {
                io_result(pipeline.drain(&mut socket).await)?
            };
            let fatal = e.is_fatal();
            if !failed_group || fatal {
                // (Within a group that already failed, this message would have been
                // skipped: its error is not reported.)
                if backend.logs_errors() && !matches!(about, About::Logged) {
                    let text = about.text(&socket);
                    crate::error::log_client_error(ClientTag::of(&socket), text.as_deref(), &e);
                }
                process_error(&mut socket, e, is_extended).await?;
            }
            if fatal {
                break;
            }
        }
        if is_cancel {
            break;
        }
        if in_group {
            if pipeline.len() >= MAX_QUEUED {
                io_result(pipeline.drain(&mut socket).await)?;
            }
        } else if is_flush || !whole_message(socket.read_buffer()) || pipeline.len() >= MAX_QUEUED {
            if !pipeline.is_empty() {
                io_result(pipeline.drain(&mut socket).await)?;
            }
            flush_out(&mut socket).await?;
        }
    }
    // A last error (a FATAL one, say) is still held.
    let _ = flush_out(&mut socket).await;
    Ok(())
}

/// What a frontend message runs, to name the statement of an error in the log. A Parse's
/// error is logged where it is made (`Backend::on_parse`, with the text at hand).
enum About {
    Logged,
    Statement(String),
    Portal(String),
    Nothing,
}

impl About {
    fn of(msg: &PgWireFrontendMessage) -> About {
        match msg {
            PgWireFrontendMessage::Parse(_) => About::Logged,
            PgWireFrontendMessage::Bind(b) => About::Statement(b.statement_name.clone().unwrap_or_default()),
            PgWireFrontendMessage::Execute(e) => About::Portal(e.name.clone().unwrap_or_default()),
            PgWireFrontendMessage::Describe(d) if d.target_type == b'S' => {
                About::Statement(d.name.clone().unwrap_or_default())
            }
            PgWireFrontendMessage::Describe(d) => About::Portal(d.name.clone().unwrap_or_default()),
            _ => About::Nothing,
        }
    }

    /// The statement's text, when the connection still has it.
    fn text(&self, socket: &Socket) -> Option<String> {
        use pgwire::api::ClientPortalStore;
        use pgwire::api::store::{Entry, PortalStore};
        let store = socket.portal_store();
        let of = |c: &Command| c.sql().map(str::to_string);
        match self {
            About::Statement(n) => match store.get_statement(n) {
                Some(Entry::Value(s)) => of(&s.statement),
                _ => None,
            },
            About::Portal(n) => match store.get_portal(n) {
                Some(Entry::Value(p)) => of(&p.statement.statement),
                _ => None,
            },
            About::Logged | About::Nothing => None,
        }
    }
}

/// How long the connection may wait for its client while a transaction block is open
/// (`idle_in_transaction_session_timeout`), if it is open and the setting is not 0.
fn idle_in_transaction_limit(
    txn: &crate::txn::Cell,
    settings: &crate::session_settings::SessionSettings,
) -> Option<Duration> {
    let limit = settings.idle_in_transaction_timeout()?;
    (!matches!(*crate::txn::lock(txn), crate::txn::State::Idle)).then_some(limit)
}

/// The socket with its output held between round trips ([`Corked`]).
fn corked(socket: Framed<MaybeTls, PgWireMessageServerCodec<Command>>) -> Socket {
    let old = socket.into_parts();
    let mut parts = FramedParts::new(Corked::new(old.io), old.codec);
    parts.read_buf = old.read_buf;
    parts.write_buf = old.write_buf;
    Framed::from_parts(parts)
}

/// Writes out everything the connection has answered: the only place where a connection's
/// output leaves (see [`crate::cork`]), called before any read that may wait.
async fn flush_out(socket: &mut Socket) -> io::Result<()> {
    socket.get_mut().open(true);
    let r = socket.flush().await;
    socket.get_mut().open(false);
    r.map_err(io::Error::other)
}

/// Checks the length of a new connection's first packet (an SSL request, a startup packet
/// or a cancel request: 8 to 10,000 bytes) before pgwire reads it, since pgwire waits for
/// 8 bytes that a shorter packet never sends. A bad length is answered as PostgreSQL does
/// (08P01, "invalid length of startup packet") and the connection closed: false.
async fn first_packet_ok(tcp: &TcpStream) -> io::Result<bool> {
    let mut head = [0u8; 4];
    loop {
        let n = tcp.peek(&mut head).await?;
        if n == 0 {
            return Ok(false);
        }
        if n == head.len() {
            break;
        }
        // Part of the length has come: wait for the rest (the start-up timeout bounds it).
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // 0x16: a TLS handshake record, a client that starts TLS at once (direct TLS).
    let len = i32::from_be_bytes(head);
    if head[0] == 0x16 || (8..=MAX_STARTUP_PACKET).contains(&len) {
        return Ok(true);
    }
    let mut reply = BytesMut::new();
    wire_check::encode_fatal(&mut reply, "08P01", &format!("invalid length of startup packet: {len}"));
    let _ = tcp.try_write(&reply);
    Ok(false)
}

/// Answers a connection that will not be served with a FATAL error and closes it: the
/// client reads the error when it sends its startup packet, as from PostgreSQL.
pub(crate) async fn refuse(mut tcp: TcpStream, sqlstate: &'static str, message: String) {
    use tokio::io::AsyncWriteExt;
    let mut reply = BytesMut::new();
    wire_check::encode_fatal(&mut reply, sqlstate, &message);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        // Read the first packet; an SSL request is declined ('N') so that the client sends
        // its startup packet and reads the error as an error (libpq reports an error in
        // answer to an SSL request only as a failed SSL exchange).
        for _ in 0..2 {
            let Ok(len) = read_packet(&mut tcp).await else { return };
            if len != Some(SSL_REQUEST) {
                break;
            }
            if tcp.write_all(b"N").await.is_err() {
                return;
            }
        }
        let _ = tcp.write_all(&reply).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

/// Reads the start-up packet (after TLS, if any) into the read buffer and checks its layout
/// as bytes before pgwire decodes it ([`wire_check::check_startup`]); a bad one is answered
/// as PostgreSQL does (08P01, FATAL) and the connection closed: false. Done before the
/// socket is corked: the framed reader rebuilt from its parts then decodes what the buffer
/// holds before it reads again.
async fn startup_packet_ok(socket: &mut Framed<MaybeTls, PgWireMessageServerCodec<Command>>) -> io::Result<bool> {
    use tokio::io::AsyncWriteExt;
    loop {
        let buf = socket.read_buffer();
        if buf.len() >= 4 {
            let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if !(8..=MAX_STARTUP_PACKET).contains(&len) {
                // pgwire refuses it.
                return Ok(true);
            }
            if buf.len() >= len as usize {
                let Err(v) = wire_check::check_startup(&buf[..len as usize]) else {
                    return Ok(true);
                };
                let mut reply = BytesMut::new();
                wire_check::encode_fatal(&mut reply, v.sqlstate, &v.message);
                let io = socket.get_mut();
                let _ = io.write_all(&reply).await;
                let _ = io.flush().await;
                return Ok(false);
            }
        }
        let mut buf = std::mem::take(socket.read_buffer_mut());
        buf.reserve(1 << 10);
        let read = socket.get_mut().read_buf(&mut buf).await;
        *socket.read_buffer_mut() = buf;
        if read? == 0 {
            return Ok(false);
        }
    }
}

/// The request code of an SSL request (the protocol's 1234.5679).
const SSL_REQUEST: i32 = 80_877_103;

/// Reads one start-up-phase packet (length, then body); returns its request code when it
/// has one.
async fn read_packet(tcp: &mut TcpStream) -> io::Result<Option<i32>> {
    let mut head = [0u8; 4];
    tcp.read_exact(&mut head).await?;
    let len = i32::from_be_bytes(head);
    if !(8..=MAX_STARTUP_PACKET).contains(&len) {
        return Ok(None);
    }
    let mut body = vec![0u8; len as usize - 4];
    tcp.read_exact(&mut body).await?;
    Ok(Some(i32::from_be_bytes([body[0], body[1], body[2], body[3]])))
}

/// The longest first packet accepted (PostgreSQL's and pgwire's limit).
const MAX_STARTUP_PACKET: i32 = 10_000;

/// A logged-in connection's socket.
type Socket = Framed<Corked<MaybeTls>, PgWireMessageServerCodec<Command>>;

/// What a logged-in connection's loop needs to read its next message.
struct Input<'a> {
    memory: &'a mut MessageMemory,
    db: &'a Database,
    logs_errors: bool,
    pipeline: &'a Pipeline,
    txn: &'a crate::txn::Cell,
    settings: &'a crate::session_settings::SessionSettings,
    /// Inside an extended-query group: what is answered waits for its Sync or a Flush.
    hold_output: bool,
}

/// What the loop does after [`read_checked`].
enum Next {
    /// A whole message is buffered and passed its checks: decode and run it.
    Decode,
    /// The message was refused and answered: read the next one.
    Answered,
    /// The connection ends.
    End,
}

/// Reads a logged-in connection's next message whole and checks it before pgwire decodes
/// it: the idle-in-transaction timeout while waiting, its memory before it is read
/// ([`message_memory`]), its bytes ([`wire_check`]). A refused message is skipped and
/// answered here, as PostgreSQL would.
async fn read_checked(socket: &mut Socket, input: &mut Input<'_>) -> io::Result<Next> {
    let filled = match idle_in_transaction_limit(input.txn, input.settings) {
        Some(limit) => {
            match tokio::time::timeout(limit, fill_message(socket, input.memory, input.db, input.hold_output)).await {
                Ok(r) => r?,
                Err(_) => {
                    // As PostgreSQL: the session ends, and its open block with it.
                    let info = ErrorInfo::new(
                        "FATAL".to_owned(),
                        "25P03".to_owned(),
                        "terminating connection due to idle-in-transaction timeout".to_owned(),
                    );
                    let _ = socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
                    return Ok(Next::End);
                }
            }
        }
        None => fill_message(socket, input.memory, input.db, input.hold_output).await?,
    };
    match filled {
        Fill::Whole => {}
        Fill::Gone => return Ok(Next::End),
        Fill::Refused { kind, total, error: e } => {
            // Refused before it was read (message_memory): its bytes are skipped.
            if !skip_message(socket, total).await? {
                return Ok(Next::End);
            }
            if !input.pipeline.is_empty() {
                io_result(input.pipeline.drain(socket).await)?;
            }
            let copying = match socket.state() {
                PgWireConnectionState::CopyInProgress(extended) => Some(extended),
                _ => None,
            };
            if copying.is_some() && kind == b'd' {
                // The COPY fails; its error is the answer to CopyDone.
                crate::copy::fail(input.db, socket, e);
                return Ok(Next::Answered);
            }
            if copying.is_some() {
                crate::copy::abandon(input.db, socket);
            }
            crate::txn::fail(&mut crate::txn::lock(input.txn));
            if input.logs_errors {
                crate::error::log_client_error(ClientTag::of(socket), None, &e);
            }
            process_error(socket, e, copying.unwrap_or_else(|| is_extended_type(Some(kind)))).await?;
            return Ok(Next::Answered);
        }
    }
    if let Err(v) = wire_check::check_message(socket.read_buffer()) {
        // Refused as bytes: pgwire never decodes it.
        let fatal = v.fatal;
        let extended = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => is_extended_type(socket.read_buffer().first().copied()),
        };
        if !fatal {
            let total = wire_check::check_len(socket.read_buffer()).unwrap_or(0);
            socket.read_buffer_mut().advance(total);
        }
        if !input.pipeline.is_empty() {
            io_result(input.pipeline.drain(socket).await)?;
        }
        if fatal {
            // As PostgreSQL: the error, then the connection closes (no
            // ReadyForQuery).
            let info: ErrorInfo = v.into_error().into();
            let _ = socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
            return Ok(Next::End);
        }
        process_error(socket, v.into_error(), extended).await?;
        return Ok(Next::Answered);
    }
    Ok(Next::Decode)
}

/// What [`fill_message`] found.
enum Fill {
    /// The read buffer starts with a whole message, or with a header whose length no
    /// message can have (left to [`wire_check`]).
    Whole,
    /// The client has gone.
    Gone,
    /// The message cannot be given its memory ([`message_memory`]): nothing of it beyond
    /// its header was read.
    Refused { kind: u8, total: usize, error: PgWireError },
}

/// Reads until the read buffer starts with a whole message, so that the message is checked
/// as bytes before pgwire decodes it. A message longer than a few hundred KiB takes its
/// memory from the statement pool before it is read ([`message_memory`]); what the
/// previous message took is given back first.
///
/// The framed reader decodes what its buffer holds before reading again as long as its
/// last poll returned a message, which every poll after the start-up does: the loop polls
/// it only when a whole message is buffered (tokio-util's `FramedImpl::poll_next`).
async fn fill_message(socket: &mut Socket, memory: &mut MessageMemory, db: &Database, hold: bool) -> io::Result<Fill> {
    memory.release();
    message_memory::shrink(socket.read_buffer_mut());
    let mut admitted = false;
    loop {
        let buf = socket.read_buffer();
        let need = match wire_check::declared_len(buf) {
            Some(len) if len < 4 || len as usize > wire_check::MAX_MESSAGE_LEN => return Ok(Fill::Whole),
            Some(len) => 1 + len as usize,
            None => 5,
        };
        if buf.len() >= need {
            return Ok(Fill::Whole);
        }
        if need > 5 && !admitted {
            admitted = true;
            let kind = buf[0];
            if let Err(error) = memory.admit(db, kind, need).await {
                return Ok(Fill::Refused {
                    kind,
                    total: need,
                    error,
                });
            }
        }
        // Nothing answered may wait while the connection waits for the client, except
        // inside an extended-query group, where the client asks for it with Sync or
        // Flush (PostgreSQL flushes at those too).
        if !hold {
            flush_out(socket).await?;
        }
        // The buffer is taken out while the stream reads into it (both belong to the
        // framed reader) and always put back.
        let mut buf = std::mem::take(socket.read_buffer_mut());
        buf.reserve((need - buf.len()).max(8 << 10));
        let read = socket.get_mut().read_buf(&mut buf).await;
        *socket.read_buffer_mut() = buf;
        if read? == 0 {
            return Ok(Fill::Gone);
        }
    }
}

/// Drops the `total` bytes of the message at the start of the read buffer, reading what
/// has not arrived in pieces (never past the message). False when the client has gone.
async fn skip_message(socket: &mut Socket, total: usize) -> io::Result<bool> {
    let buf = socket.read_buffer_mut();
    let buffered = buf.len().min(total);
    buf.advance(buffered);
    let mut left = total - buffered;
    let mut scratch = vec![0u8; left.min(64 << 10)];
    while left > 0 {
        flush_out(socket).await?;
        let n = left.min(scratch.len());
        let read = socket.get_mut().read(&mut scratch[..n]).await?;
        if read == 0 {
            return Ok(false);
        }
        left -= read;
    }
    Ok(true)
}

/// Whether a message of this type belongs to the extended query protocol (after an error
/// in one, the connection skips messages until Sync).
fn is_extended_type(kind: Option<u8>) -> bool {
    matches!(kind, Some(b'P' | b'B' | b'D' | b'E' | b'C' | b'H' | b'S'))
}

/// The connection's end when writing queued outputs failed.
fn io_result(r: PgWireResult<bool>) -> io::Result<bool> {
    match r {
        Ok(f) => Ok(f),
        Err(PgWireError::IoError(e)) => Err(e),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_messages_are_recognized() {
        assert!(!whole_message(&[]));
        assert!(!whole_message(b"S\0\0\0"));
        // Sync: type, length 4, no body.
        assert!(whole_message(b"S\0\0\0\x04"));
        // Execute with a 9-byte body, of which 8 have arrived.
        let mut m = vec![b'E', 0, 0, 0, 13];
        m.extend_from_slice(&[0; 8]);
        assert!(!whole_message(&m));
        m.push(0);
        assert!(whole_message(&m));
    }
}
