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

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::results::Response;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::response::{CommandComplete, ReadyForQuery};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::{MaybeTls, PgWireMessageServerCodec, negotiate_tls, process_error, process_message};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

use crate::command::Command;
use crate::handler::Handlers;
use crate::wire_check;

/// Queued outputs beyond which the loop writes them out before reading on.
const MAX_QUEUED: usize = 1024;

/// The result of a submitted statement, as the response to write.
pub(crate) type PendingResult = Pin<Box<dyn Future<Output = PgWireResult<Response>> + Send>>;

enum Item {
    /// A message to write as it is.
    Message(PgWireBackendMessage),
    /// A statement in flight.
    Result(PendingResult),
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    /// Whether the current Sync group has a statement in flight.
    group_busy: bool,
}

/// The outputs of one connection that are waiting for statements in flight.
#[derive(Default)]
pub struct Pipeline {
    queue: Mutex<Queue>,
}

impl Pipeline {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // Only the connection's own task touches its queue; a poisoned lock holds a
        // consistent queue all the same.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pipeline of a connection.
    pub(crate) fn of<C: ClientInfo>(client: &C) -> Arc<Pipeline> {
        client.session_extensions().get_or_insert_with(Pipeline::default)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lock().items.is_empty()
    }

    fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether the current Sync group already has a statement in flight.
    pub(crate) fn group_busy(&self) -> bool {
        self.lock().group_busy
    }

    /// Queues a statement in flight.
    pub(crate) fn push_result(&self, r: PendingResult) {
        let mut q = self.lock();
        q.items.push_back(Item::Result(r));
        q.group_busy = true;
    }

    /// Writes `m` now if nothing is queued, else queues it behind the rest.
    pub(crate) async fn send_or_queue<C>(&self, client: &mut C, m: PgWireBackendMessage) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        PgWireError: From<C::Error>,
    {
        {
            let mut q = self.lock();
            if !q.items.is_empty() {
                q.items.push_back(Item::Message(m));
                return Ok(());
            }
        }
        client.feed(m).await?;
        Ok(())
    }

    /// Ends a Sync group: ReadyForQuery, written now or queued.
    pub(crate) async fn sync<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        PgWireError: From<C::Error>,
    {
        self.lock().group_busy = false;
        let status = client.transaction_status();
        self.send_or_queue(client, PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status)))
            .await
    }

    /// Writes every queued output in order, waiting for the statements in flight. An
    /// error ends its Sync group: the group's remaining outputs are dropped (its later
    /// statements were never submitted), and if the group's Sync has not arrived yet the
    /// connection skips messages until it does. Returns whether that happened.
    pub(crate) async fn drain<C>(&self, client: &mut C) -> PgWireResult<bool>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        PgWireError: From<C::Error>,
    {
        let mut skipping = false;
        loop {
            let item = self.lock().items.pop_front();
            let Some(item) = item else { break };
            match item {
                Item::Message(m @ PgWireBackendMessage::ReadyForQuery(_)) => {
                    skipping = false;
                    client.feed(m).await?;
                }
                Item::Message(_) if skipping => {}
                Item::Message(m) => client.feed(m).await?,
                Item::Result(r) => {
                    let r = r.await;
                    if skipping {
                        continue;
                    }
                    // A statement's error, or a row that its wire type cannot carry,
                    // ends the group; a broken connection ends the loop.
                    let e = match r {
                        Ok(resp) => match write_response(client, resp).await {
                            Ok(()) => continue,
                            Err(e @ PgWireError::IoError(_)) => return Err(e),
                            Err(e) => e,
                        },
                        Err(e) => e,
                    };
                    let info: ErrorInfo = e.into();
                    client.feed(PgWireBackendMessage::ErrorResponse(info.into())).await?;
                    let status = client.transaction_status().to_error_state();
                    client.set_transaction_status(status);
                    skipping = true;
                }
            }
        }
        if skipping {
            // The failed group's Sync is still to come: skip until it.
            self.lock().group_busy = false;
            client.set_state(PgWireConnectionState::AwaitingSync);
        }
        Ok(skipping)
    }
}

/// Writes a statement's response: its rows, then CommandComplete.
pub(crate) async fn write_response<C>(client: &mut C, resp: Response) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<C::Error>,
{
    match resp {
        Response::Query(mut q) => {
            let tag = q.command_tag().to_owned();
            let mut rows = 0usize;
            while let Some(row) = q.data_rows().next().await {
                client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                rows += 1;
            }
            let tag = pgwire::api::results::Tag::new(&tag).with_rows(rows);
            client
                .feed(PgWireBackendMessage::CommandComplete(CommandComplete::from(tag)))
                .await?;
        }
        Response::Execution(tag) => {
            client
                .feed(PgWireBackendMessage::CommandComplete(CommandComplete::from(tag)))
                .await?;
        }
        Response::Error(e) => return Err(PgWireError::UserError(e)),
        _ => {
            return Err(crate::error::client_error(
                "XX000",
                "internal error: unexpected response to Execute",
            ));
        }
    }
    Ok(())
}

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
    socket.session_extensions().insert(peer);
    let (backend, startup, cancel) = handlers.parts();
    let pipeline = Pipeline::of(&socket);
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup | PgWireConnectionState::AuthenticationInProgress
        );
        let msg = if starting {
            tokio::select! {
                _ = &mut startup_timeout => None,
                m = socket.next() => m,
            }
        } else {
            if !fill_message(&mut socket).await? {
                break;
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
                if !pipeline.is_empty() {
                    io_result(pipeline.drain(&mut socket).await)?;
                }
                if fatal {
                    // As PostgreSQL: the error, then the connection closes (no
                    // ReadyForQuery).
                    let info: ErrorInfo = v.into_error().into();
                    let _ = socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
                    break;
                }
                process_error(&mut socket, v.into_error(), extended).await?;
                continue;
            }
            socket.next().await
        };
        let Some(Ok(msg)) = msg else { break };
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let is_extended = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        let is_cancel = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        if !may_queue(&msg) && !pipeline.is_empty() {
            io_result(pipeline.drain(&mut socket).await)?;
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
                process_error(&mut socket, e, is_extended).await?;
            }
            if fatal {
                break;
            }
        }
        if is_cancel {
            break;
        }
        if !whole_message(socket.read_buffer()) || pipeline.len() >= MAX_QUEUED {
            if !pipeline.is_empty() {
                io_result(pipeline.drain(&mut socket).await)?;
            }
            socket.flush().await.map_err(io::Error::other)?;
        }
    }
    Ok(())
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
type Socket = Framed<MaybeTls, PgWireMessageServerCodec<Command>>;

/// Reads until the read buffer starts with a whole message, or with a header whose length
/// no message can have (left to [`wire_check`]), so that the message is checked as bytes
/// before pgwire decodes it. False when the client has gone.
///
/// The framed reader decodes what its buffer holds before reading again as long as its
/// last poll returned a message, which every poll after the start-up does: the loop polls
/// it only when a whole message is buffered (tokio-util's `FramedImpl::poll_next`).
async fn fill_message(socket: &mut Socket) -> io::Result<bool> {
    loop {
        let buf = socket.read_buffer();
        let need = match wire_check::declared_len(buf) {
            Some(len) if len < 4 || len as usize > wire_check::MAX_MESSAGE_LEN => return Ok(true),
            Some(len) => 1 + len as usize,
            None => 5,
        };
        if buf.len() >= need {
            return Ok(true);
        }
        // The buffer is taken out while the stream reads into it (both belong to the
        // framed reader) and always put back.
        let mut buf = std::mem::take(socket.read_buffer_mut());
        buf.reserve((need - buf.len()).max(8 << 10));
        let read = socket.get_mut().read_buf(&mut buf).await;
        *socket.read_buffer_mut() = buf;
        if read? == 0 {
            return Ok(false);
        }
    }
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
