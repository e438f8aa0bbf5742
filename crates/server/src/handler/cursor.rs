//! Cursors: DECLARE's rows, kept per connection until FETCH, CLOSE or the end of their
//! block (WITH HOLD: of the connection).

use super::*;

/// A cursor: its query's rows (as sent, in text), waiting for FETCH.
pub(super) struct Cursor {
    pub(super) schema: Arc<Vec<pgwire::api::results::FieldInfo>>,
    pub(super) rows: std::collections::VecDeque<pgwire::messages::data::DataRow>,
    /// WITH HOLD: it outlives its block.
    pub(super) hold: bool,
    /// The block it was declared in (`txn::Open::id`); 0 outside one.
    pub(super) block: u64,
}

/// A connection's cursors by name.
#[derive(Default)]
pub(super) struct Cursors(std::sync::Mutex<std::collections::HashMap<String, Cursor>>);

impl Cursors {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Cursor>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops the cursors of blocks that have ended (those without HOLD).
    pub(super) fn prune(&self, current: Option<u64>) {
        self.lock().retain(|_, c| c.hold || Some(c.block) == current);
    }
}

pub(super) fn cursors<C: ClientInfo>(client: &C) -> Arc<Cursors> {
    client.session_extensions().get_or_insert_with(Cursors::default)
}

/// The block the connection is in, if any.
pub(super) fn current_block(cell: &txn::Cell) -> Option<u64> {
    match &*txn::lock(cell) {
        txn::State::Open(o) | txn::State::Failed(o) => Some(o.id),
        txn::State::Idle => None,
    }
}

pub(super) fn no_cursor(name: &str) -> PgWireError {
    client_error("34000", format!("cursor \"{name}\" does not exist"))
}

impl Backend {
    /// DECLARE: runs the cursor's query now and keeps its rows for FETCH.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn declare<C>(
        &self,
        client: &mut C,
        name: &str,
        query: &Command,
        hold: bool,
        params: Vec<Value>,
        cancel: Option<&CancelToken>,
        cell: &txn::Cell,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let block = current_block(cell);
        let all = cursors(client);
        all.prune(block);
        if block.is_none() && !hold {
            return Err(client_error(
                "25P01",
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        if all.lock().contains_key(name) {
            return Err(client_error("42P03", format!("cursor \"{name}\" already exists")));
        }
        let resp = self
            .run_in_session(client, query, params, &Format::UnifiedText, cancel)
            .await?;
        let Response::Query(mut q) = resp else {
            return Err(client_error("XX000", "internal error: a cursor's query gave no rows"));
        };
        let mut rows = std::collections::VecDeque::new();
        while let Some(row) = futures::StreamExt::next(&mut q.data_rows).await {
            rows.push_back(row?);
        }
        all.lock().insert(
            name.to_string(),
            Cursor {
                schema: q.row_schema.clone(),
                rows,
                hold,
                block: block.unwrap_or(0),
            },
        );
        Ok(Response::Execution(Tag::new("DECLARE CURSOR")))
    }
}

/// FETCH or MOVE: the next `count` rows of cursor `name` (all when None).
pub(super) fn fetch<C: ClientInfo>(
    client: &C,
    name: &str,
    count: Option<u64>,
    moving: bool,
    cell: &txn::Cell,
) -> PgWireResult<Response> {
    let all = cursors(client);
    all.prune(current_block(cell));
    let (schema, rows) = {
        let mut map = all.lock();
        let c = map.get_mut(name).ok_or_else(|| no_cursor(name))?;
        let n = count.map_or(c.rows.len(), |n| (n as usize).min(c.rows.len()));
        (c.schema.clone(), c.rows.drain(..n).collect::<Vec<_>>())
    };
    if moving {
        return Ok(Response::Execution(Tag::new("MOVE").with_rows(rows.len())));
    }
    // (The library appends the row count: FETCH n.)
    let mut q = pgwire::api::results::QueryResponse::new(schema, futures::stream::iter(rows.into_iter().map(Ok)));
    q.set_command_tag("FETCH");
    Ok(Response::Query(q))
}
