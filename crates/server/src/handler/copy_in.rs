//! COPY FROM STDIN: when it may start, its rows as they arrive (crate::copy), and its end
//! outside a block (one transaction) or inside one (a statement of the block).

use super::block::keep_in_block;
use super::*;

/// Whether COPY FROM STDIN may start: outside a transaction block (its rows are applied as
/// one transaction at CopyDone), or inside an open one that may write and has no schema
/// change waiting (its rows are then a statement of the block, [`Backend::copy_in_block`]).
/// In an aborted block, 25P02; a refusal inside a block aborts it.
pub(super) fn copy_may_start<C: ClientInfo>(client: &C) -> PgWireResult<()> {
    let cell = txn::of(client);
    let mut st = txn::lock(&cell);
    let refused = match &*st {
        txn::State::Idle => return Ok(()),
        txn::State::Failed(_) => return Err(txn::aborted()),
        txn::State::Open(o) if o.read_only => {
            client_error("25006", "cannot execute COPY FROM in a read-only transaction")
        }
        txn::State::Open(o) if !o.ddl.is_empty() => client_error(
            "0A000",
            "COPY FROM STDIN after a schema change in the same transaction block is not supported: COMMIT \
             the schema change first",
        ),
        txn::State::Open(o) if o.statements.len() >= permafrost_executor::MAX_TXN_STATEMENTS => client_error(
            "54000",
            format!(
                "a transaction block may run at most {} statements; commit in smaller transactions",
                permafrost_executor::MAX_TXN_STATEMENTS
            ),
        ),
        txn::State::Open(_) => return Ok(()),
    };
    txn::fail(&mut st);
    Err(refused)
}

impl Backend {
    /// Ends a COPY FROM STDIN inside the connection's open block: its rows become a
    /// statement of the block (a bulk insert), run at once as a probe over the committed
    /// state and the block's earlier writes, and again at COMMIT with the rest, so they
    /// are stored with the block or not at all. Returns the number of rows.
    pub(super) async fn copy_in_block<C: ClientInfo>(
        &self,
        client: &C,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<u64> {
        let cell = txn::of(client);
        let loaded = copy::finish(&self.db, client)?;
        if loaded.rows.is_empty() {
            return Ok(0);
        }
        // The block keeps every statement's parameters until it ends (and each later probe
        // runs them again): with a COPY's rows they may hold at most what one statement may.
        let size = |values: &[Value]| values.iter().map(permafrost_sql::exec::value_size).sum::<usize>();
        let held = match &*txn::lock(&cell) {
            txn::State::Open(o) => o.statements.iter().map(|s| size(&s.params)).sum::<usize>(),
            _ => return Err(txn::aborted()),
        };
        let limit = self.db.statement_memory();
        if held + size(&loaded.rows) > limit {
            return Err(client_error(
                "54000",
                format!(
                    "COPY {}: this transaction block would hold more than the {limit} bytes of rows one statement \
                     may (a quarter of memory_limit, at least 16 MiB); nothing was loaded: commit in smaller \
                     transactions",
                    loaded.table
                ),
            ));
        }
        let stmt = self
            .db
            .bulk_insert(&loaded.table, &loaded.columns)
            .map_err(|e| copy::not_loaded(&loaded.table, db_error(e)))?;
        let rows = self
            .probe_block(&stmt, loaded.rows.clone(), cancel, &cell)
            .await
            .map_err(|e| copy::not_loaded(&loaded.table, e))?;
        keep_in_block(&cell, stmt, loaded.rows, &rows, None);
        Ok(rows.affected)
    }
}

#[async_trait]
impl CopyHandler for Backend {
    async fn on_copy_data<C>(&self, client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        copy::data(&self.db, client, &data.data).await
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let started = Instant::now();
        let cell = txn::of(client);
        let in_block = matches!(*txn::lock(&cell), txn::State::Open(_));
        let r = if in_block {
            let cancel = self.cancel_token(client);
            let r = self.copy_in_block(client, cancel.as_ref()).await;
            if r.is_err() {
                txn::fail(&mut txn::lock(&cell));
            }
            client.set_transaction_status(txn::status(&cell));
            r
        } else {
            copy::done(&self.db, client).await
        };
        let outcome = match &r {
            Ok(_) => Outcome::Ok,
            Err(PgWireError::UserError(e)) => Outcome::error(e.code.clone()),
            Err(_) => Outcome::error("XX000"),
        };
        self.metrics.record(StatementClass::Write, started.elapsed(), outcome);
        let n = r?;
        client
            .send(PgWireBackendMessage::CommandComplete(CommandComplete::from(
                Tag::new("COPY").with_rows(n as usize),
            )))
            .await?;
        Ok(())
    }

    /// As PostgreSQL: the rows read so far are dropped (nothing was applied) and the
    /// error is 57014, "COPY from stdin failed".
    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        copy::abandon(&self.db, client);
        // Inside a block the COPY's failure aborts it, as any statement's.
        let cell = txn::of(client);
        txn::fail(&mut txn::lock(&cell));
        client.set_transaction_status(txn::status(&cell));
        client_error("57014", format!("COPY from stdin failed: {}", fail.message))
    }
}
