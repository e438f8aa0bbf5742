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

use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::results::Response;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::response::{CommandComplete, ReadyForQuery};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::net::TcpStream;

use crate::handler::{Command, Handlers};

/// Queued outputs beyond which the loop writes them out before reading on.
const MAX_QUEUED: usize = 1024;

/// How long a new connection has to complete its start-up (as pgwire).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

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
    if buf.len() < 5 {
        return false;
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    buf.len() > len
}

/// Messages whose output may wait in the queue: the parts of a pipelined statement.
fn may_queue(m: &PgWireFrontendMessage) -> bool {
    matches!(
        m,
        PgWireFrontendMessage::Bind(_) | PgWireFrontendMessage::Execute(_) | PgWireFrontendMessage::Sync(_)
    )
}

/// Serves one client connection until it ends.
pub async fn process_socket(tcp: TcpStream, tls: Option<TlsAcceptor>, handlers: Arc<Handlers>) -> io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let socket = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        s = negotiate_tls::<Command>(tcp, tls) => s?,
    };
    let Some(mut socket) = socket else {
        return Ok(());
    };
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
