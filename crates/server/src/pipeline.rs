//! The outputs of one connection that wait for its statements in flight ([`Pipeline`]):
//! the connection loop (connection.rs) and the extended-query handlers (handler/extended.rs) queue
//! results and messages here, and they leave in the order of the messages that caused them.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::results::Response;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::response::{CommandComplete, ReadyForQuery};

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

    pub(crate) fn len(&self) -> usize {
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
        Response::Execution(tag) | Response::TransactionStart(tag) | Response::TransactionEnd(tag) => {
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
