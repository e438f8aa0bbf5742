//! A transaction block that changes the schema and also runs statements (`BEGIN; CREATE
//! TABLE t ...; INSERT INTO t ...; COMMIT`, what migration tools send).
//!
//! The block's schema changes are planned as they arrive, each against the schema the
//! block's earlier changes lead to: a [`SchemaDraft`], based on the schema published when
//! the block's first change came. The block's statements after a change are planned
//! against the draft's catalog. Nothing is applied to the partitions until a statement
//! runs:
//!
//! - a statement's probe (interactive.rs) holds every partition, applies the draft's
//!   changes to the stores it holds, runs the block's earlier writes and the statement,
//!   and undoes all of it: rows first, then the changes, newest first ([`SchemaRun`]);
//! - the COMMIT holds every partition, runs the block as it ran, each change before the
//!   statements that followed it, checks every statement's result as any COMMIT does, and
//!   publishes the new schema before the stores go back. One command-log record holds the
//!   changes and the writes (`block_record::SCHEMA_MARK`, docs/format.md): replay applies the changes,
//!   then runs the writes.
//!
//! A draft whose base is no longer the published schema (another connection changed the
//! schema meanwhile) fails with 40001. A dropped table is taken out of each store and put
//! back if the transaction does not commit. A change that cannot be undone cheaply in the
//! middle of a transaction (DROP INDEX or a dropped UNIQUE constraint, a primary key added to an
//! existing table) or an index built over evicted rows is refused in such a block with
//! 0A000: it runs in a block of its own. A block whose only statements are schema changes is applied by
//! `Database::execute_ddl_atomic` as before.

use std::sync::{Arc, Mutex};

use permafrost_sql::{Catalog, DdlChange, Rows, SqlError};
use permafrost_storage::table::Table;
use permafrost_storage::{PartitionStore, StorageError, TableId, TableSchema};
use permafrost_types::Value;

use crate::database::{AdHoc, Database};
use crate::error::{Error, Result};
use crate::interactive::{BlockSchema, Expected, TxnStatement};
use crate::partition::router::Place;
use crate::procedure::{ProcError, SchemaState, SchemaSteps};
use crate::reply::StopFlag;
use crate::shared::Shared;

/// The schema a transaction block's changes lead to, planned as they arrived.
pub struct SchemaDraft {
    /// The published schema the first change was planned against.
    base: Arc<SchemaState>,
    steps: Vec<DraftStep>,
    /// The sequences the block created whose counters its runs have set (below their
    /// START): set once, so that a later probe or the COMMIT, which apply the changes
    /// again, keep what the block's statements drew or set since.
    counters_set: CountersSet,
}

type CountersSet = Arc<Mutex<std::collections::HashSet<TableId>>>;

/// One schema statement of a block.
#[derive(Clone)]
struct DraftStep {
    /// How many of the block's statements ran before it.
    at: usize,
    text: String,
    changes: Vec<DdlChange>,
    /// The catalog after it.
    catalog: Arc<Catalog>,
}

impl SchemaDraft {
    /// The catalog the block's next statements are planned against.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.steps.last().expect("a draft has a step").catalog
    }

    /// The catalog statement `i` of the block was to be planned against.
    fn catalog_at(&self, i: usize) -> &Arc<Catalog> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.at <= i)
            .map_or(&self.base.catalog, |s| &s.catalog)
    }

    /// For each schema statement, `count(at)`: what `count` says of how many of the
    /// block's statements came before it.
    pub(crate) fn positions(&self, count: impl Fn(usize) -> usize) -> Vec<usize> {
        self.steps.iter().map(|s| count(s.at)).collect()
    }

    /// The schema statements' texts, in order.
    pub(crate) fn texts(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.text.clone()).collect()
    }

    /// Refuses a change that a block which also runs statements cannot apply and undo in
    /// one transaction (see the module documentation).
    pub fn check_runnable(&self) -> Result<()> {
        for step in &self.steps {
            for c in &step.changes {
                let what = match c {
                    DdlChange::DropIndex { .. } => "DROP INDEX or a dropped UNIQUE constraint",
                    DdlChange::AddPrimaryKey(_) => "a primary key added to an existing table",
                    _ => continue,
                };
                return Err(Error::Sql(SqlError::FeatureNotSupported(format!(
                    "{what} is not supported in a transaction block that also runs queries or writes; run it in a \
                     transaction block of its own"
                ))));
            }
        }
        Ok(())
    }
}

impl Database {
    /// Plans schema statement `sql` of a transaction block after the block's earlier
    /// changes (`after`; `None`: its first), with `at` of the block's statements run
    /// before it. Nothing is applied.
    pub fn draft_ddl(&self, after: Option<&SchemaDraft>, at: usize, sql: &str) -> Result<SchemaDraft> {
        permafrost_sql::limits::with_stack_for(sql, || {
            let stmts = Self::parse_ddl(&[sql.to_string()])?;
            let (base, mut steps, counters_set) = match after {
                Some(d) => (d.base.clone(), d.steps.clone(), d.counters_set.clone()),
                None => (self.shared().schema.load_full(), Vec::new(), CountersSet::default()),
            };
            let mut catalog = match steps.last() {
                Some(s) => (*s.catalog).clone(),
                None => (*base.catalog).clone(),
            };
            let mut changes = Vec::new();
            for s in &stmts {
                for c in s.plan(&catalog)? {
                    if matches!(c, DdlChange::AlterSequence { restart: Some(_), .. }) {
                        return Err(Error::Sql(SqlError::Unsupported(
                            "ALTER SEQUENCE ... RESTART inside a transaction block (a ROLLBACK would not undo its \
                             counter): run it outside the block"
                                .into(),
                        )));
                    }
                    catalog = catalog.apply(&c)?;
                    changes.push(c);
                }
            }
            steps.push(DraftStep {
                at,
                text: sql.to_string(),
                changes,
                catalog: Arc::new(catalog),
            });
            Ok(SchemaDraft {
                base,
                steps,
                counters_set,
            })
        })
    }

    /// How a probe or the commit of a block with `draft` applies its changes: each before
    /// the statements that followed it in the block (`at`: the block's index of each
    /// statement the transaction runs); the commit publishes the result.
    fn schema_run(&self, draft: &SchemaDraft, commit: bool, at: &[usize]) -> Result<Arc<dyn SchemaSteps>> {
        draft.check_runnable()?;
        let next = if commit {
            Some(self.next_state(&draft.base, draft.catalog().clone()))
        } else {
            None
        };
        Ok(Arc::new(SchemaRun {
            base: draft.base.clone(),
            steps: draft
                .steps
                .iter()
                .map(|s| (at.iter().filter(|&&k| k < s.at).count(), s.changes.clone()))
                .collect(),
            next,
            shared: self.shared_arc(),
            partitions: self.partitions(),
            applied: Mutex::new(Applied::default()),
            counters_set: draft.counters_set.clone(),
        }))
    }

    /// What a probe or commit (`commit`) of a block with `draft` that runs `statements`
    /// (the block's statements `at`) needs of its schema changes, once each statement is
    /// found planned against the catalog of its place in the draft.
    fn block_schema(
        &self,
        draft: &SchemaDraft,
        commit: bool,
        statements: &[(&AdHoc, Vec<Value>, Expected)],
        at: &[usize],
    ) -> Result<BlockSchema> {
        if statements.len() != at.len() {
            return Err(Error::Internal("a block's statements and their places differ".into()));
        }
        for ((s, ..), &i) in statements.iter().zip(at) {
            if !Arc::ptr_eq(&s.catalog, draft.catalog_at(i)) {
                return Err(schema_moved());
            }
        }
        // Each change after how many of the statements the record lists (the writes).
        let logged_at = draft.positions(|i| {
            statements
                .iter()
                .zip(at)
                .filter(|((s, ..), k)| **k < i && !s.prepared().is_read_only())
                .count()
        });
        Ok(BlockSchema {
            steps: self.schema_run(draft, commit, at)?,
            texts: draft.texts(),
            logged_at,
        })
    }
}

/// The error of a block whose schema changes were planned against a schema that another
/// connection changed since.
fn schema_moved() -> Error {
    Error::Sql(SqlError::SerializationFailure(
        "the schema changed during the transaction; retry the transaction".into(),
    ))
}

/// A block's schema changes as one transaction applies them to the stores it holds.
pub(crate) struct SchemaRun {
    base: Arc<SchemaState>,
    /// Each schema statement's changes, after how many of the transaction's statements.
    steps: Vec<(usize, Vec<DdlChange>)>,
    /// What is published when the transaction commits; `None` for a probe.
    next: Option<Arc<SchemaState>>,
    shared: Arc<Shared>,
    partitions: u32,
    applied: Mutex<Applied>,
    /// [`SchemaDraft::counters_set`].
    counters_set: CountersSet,
}

/// What a run has applied so far, and how to undo it.
#[derive(Default)]
struct Applied {
    steps: usize,
    undo: Vec<Undo>,
}

/// How to undo one applied change, at every store (in store order).
enum Undo {
    Created(TableId),
    Index(Vec<Arc<TableSchema>>, usize),
    Altered(Vec<Arc<TableSchema>>),
    Dropped(Vec<Table>),
    Rewritten(TableId, Vec<Table>),
}

impl SchemaRun {
    fn lock(&self) -> std::sync::MutexGuard<'_, Applied> {
        self.applied.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SchemaSteps for SchemaRun {
    fn commits(&self) -> bool {
        self.next.is_some()
    }

    /// The schema it was planned against is no longer the published one, or its changes
    /// take memory the budget refuses.
    fn refused(&self, parts: &[u32], stores: &[&mut PartitionStore]) -> Option<Error> {
        let shared = &self.shared;
        if !Arc::ptr_eq(&shared.schema.load(), &self.base) {
            return Some(schema_moved());
        }
        let grows = self.steps.iter().flat_map(|(_, c)| c).any(|c| {
            matches!(
                c,
                DdlChange::CreateTable(_)
                    | DdlChange::CreateIndex(_)
                    | DdlChange::AddPrimaryKey(_)
                    | DdlChange::Repartition(_)
            )
        });
        if grows {
            shared.refuse_schema_growth(parts, stores)
        } else {
            None
        }
    }

    fn apply_through(&self, i: usize, stores: &mut [&mut PartitionStore]) -> std::result::Result<(), ProcError> {
        let mut applied = self.lock();
        while let Some((at, changes)) = self.steps.get(applied.steps) {
            if *at > i {
                break;
            }
            for change in changes {
                let wrote = stores.iter().any(|s| s.has_changes());
                match change {
                    DdlChange::CreateIndex(s) if wrote => return Err(after_writes("CREATE INDEX", &s.name)),
                    DdlChange::RewriteTable { schema, .. } | DdlChange::Repartition(schema)
                        if stores.iter().any(|s| s.changed_table(schema.id)) =>
                    {
                        return Err(after_writes("ALTER TABLE", &schema.name));
                    }
                    DdlChange::DropTable(id) if wrote && stores.iter().any(|s| s.changed_table(*id)) => {
                        let name = stores
                            .first()
                            .and_then(|s| s.table(*id))
                            .map(|t| t.schema().name.clone());
                        return Err(after_writes("DROP TABLE", &name.unwrap_or_default()));
                    }
                    _ => {}
                }
                let undo = match change {
                    DdlChange::CreateTable(s) => Undo::Created(s.id),
                    DdlChange::CreateIndex(s) => Undo::Index(schemas(stores, s.id)?, s.indexes.len() - 1),
                    DdlChange::AlterSchema(s) => Undo::Altered(schemas(stores, s.id)?),
                    DdlChange::CreateView { .. }
                    | DdlChange::CreateSchema { .. }
                    | DdlChange::DropSchema(_)
                    | DdlChange::DropView(_)
                    | DdlChange::DropSequence(_)
                    | DdlChange::AlterSequence { .. }
                    | DdlChange::CreateType(_)
                    | DdlChange::AlterType(_)
                    | DdlChange::DropType(_) => {
                        continue;
                    }
                    DdlChange::CreateSequence(seq) => {
                        // Its counter below its START, at the block's first run (nobody
                        // else draws from it before the block publishes it); a counter left
                        // by a block rolled back is set again by the next sequence given
                        // its id.
                        let first = self.counters_set.lock().map(|mut s| s.insert(seq.id)).unwrap_or(true);
                        if first {
                            self.shared.sequences.set(seq.id, seq.before_start());
                        }
                        continue;
                    }
                    DdlChange::RewriteTable { schema, from } => {
                        // Rewritten at each store, the tables as they were kept until the
                        // transaction ends.
                        let mut olds = Vec::with_capacity(stores.len());
                        for s in stores.iter_mut() {
                            match s.rewrite_table(schema.clone(), from, schema.evictable.then(|| self.shared.tracker()))
                            {
                                Ok(old) => olds.push(old),
                                Err(e) => {
                                    for (s, old) in stores.iter_mut().zip(olds) {
                                        let _ = s.take_table(schema.id);
                                        let _ = s.restore_table(old);
                                    }
                                    return Err(ProcError::Sql(SqlError::Storage(e)));
                                }
                            }
                        }
                        // The foreign keys and checks it adds hold over the rewritten rows.
                        let before = olds.first().map(|t| t.schema().clone());
                        let held: &[&mut PartitionStore] = stores;
                        let valid = before.map_or(Ok(()), |before| {
                            permafrost_sql::exec::foreign::validate_added(held, &before, schema)
                                .and_then(|()| permafrost_sql::exec::check::validate_added(held, &before, schema))
                        });
                        for s in stores.iter_mut() {
                            s.forget_writes();
                        }
                        applied.undo.push(Undo::Rewritten(schema.id, olds));
                        valid.map_err(ProcError::Sql)?;
                        continue;
                    }
                    DdlChange::Repartition(schema) => {
                        // Moved at every store, the tables as they were kept until the
                        // transaction ends (over rows in memory only: nothing was read).
                        let olds = crate::partition::repartition::repartition(
                            stores,
                            schema,
                            None,
                            &|| self.shared.tracker(),
                            self.partitions,
                        )
                        .map_err(|e| match e {
                            Error::Sql(e) => ProcError::Sql(e),
                            e => ProcError::Sql(SqlError::Storage(StorageError::Internal(e.to_string()))),
                        })?;
                        for s in stores.iter_mut() {
                            s.forget_writes();
                        }
                        applied.undo.push(Undo::Rewritten(schema.id, olds));
                        continue;
                    }
                    DdlChange::DropTable(id) => {
                        // Taken out at each store, kept until the transaction ends.
                        let mut taken = Vec::with_capacity(stores.len());
                        for s in stores.iter_mut() {
                            match s.take_table(*id) {
                                Ok(t) => taken.push(t),
                                Err(e) => {
                                    for (s, t) in stores.iter_mut().zip(taken) {
                                        let _ = s.restore_table(t);
                                    }
                                    return Err(ProcError::Sql(SqlError::Storage(e)));
                                }
                            }
                        }
                        for s in stores.iter_mut() {
                            s.forget_writes();
                        }
                        applied.undo.push(Undo::Dropped(taken));
                        continue;
                    }
                    DdlChange::DropIndex { .. } | DdlChange::AddPrimaryKey(_) => {
                        return Err(ProcError::Sql(SqlError::Storage(StorageError::Internal(
                            "a change that cannot be undone reached a transaction".into(),
                        ))));
                    }
                };
                let r = crate::partition::apply_ddl(
                    stores,
                    std::slice::from_ref(change),
                    crate::partition::DdlReads::default(),
                    &|| self.shared.tracker(),
                    self.partitions,
                );
                match r {
                    Ok(()) => applied.undo.push(undo),
                    Err(Error::Sql(SqlError::Storage(StorageError::EvictedDuringBuild { table, .. }))) => {
                        return Err(ProcError::Sql(SqlError::FeatureNotSupported(format!(
                            "an index on table \"{table}\", which has evicted rows, is not supported in a transaction block that \
                             also runs queries or writes; create it in a transaction block of its own"
                        ))));
                    }
                    Err(Error::Sql(e)) => return Err(ProcError::Sql(e)),
                    Err(e) => return Err(ProcError::Sql(SqlError::Storage(StorageError::Internal(e.to_string())))),
                }
            }
            applied.steps += 1;
        }
        Ok(())
    }

    /// Leaves the stores as the published schema describes them.
    fn undo(&self, stores: &mut [&mut PartitionStore]) {
        let mut applied = self.lock();
        while let Some(u) = applied.undo.pop() {
            if let Undo::Dropped(tables) = u {
                for (s, t) in stores.iter_mut().zip(tables) {
                    let _ = s.restore_table(t);
                }
                continue;
            }
            if let Undo::Rewritten(id, tables) = u {
                for (s, t) in stores.iter_mut().zip(tables) {
                    let _ = s.take_table(id);
                    let _ = s.restore_table(t);
                }
                continue;
            }
            for (k, s) in stores.iter_mut().enumerate() {
                let _ = match &u {
                    Undo::Created(id) => s.drop_table(*id),
                    Undo::Index(before, i) => s.drop_index(before[k].clone(), *i),
                    Undo::Altered(before) => s.replace_schema(before[k].clone()),
                    Undo::Dropped(_) | Undo::Rewritten(..) => Ok(()),
                };
            }
        }
        applied.steps = 0;
        for s in stores.iter_mut() {
            s.forget_writes();
        }
    }

    fn publish(&self) {
        if let Some(next) = &self.next {
            self.shared.schema.store(next.clone());
        }
        *self.lock() = Applied::default();
    }
}

/// The error of a change the transaction cannot make after its writes.
fn after_writes(what: &str, table: &str) -> ProcError {
    ProcError::Sql(SqlError::FeatureNotSupported(format!(
        "{what} on \"{table}\" after writes in the same transaction block is not supported; commit the writes \
         first, or make the change before them"
    )))
}

/// Each store's schema of table `id`, before a change to it.
fn schemas(stores: &[&mut PartitionStore], id: TableId) -> std::result::Result<Vec<Arc<TableSchema>>, ProcError> {
    stores
        .iter()
        .map(|s| s.table(id).map(|t| t.schema().clone()))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            ProcError::Sql(SqlError::Storage(StorageError::Internal(format!(
                "table id {id} missing at a partition"
            ))))
        })
}

impl Database {
    /// Runs `stmt` (planned against `draft`'s catalog) inside a block that changed the
    /// schema and ran `block`: at every partition, the block's writes (each checked
    /// against what it showed) with the draft's changes among them where they came, then
    /// `stmt`; and undoes everything.
    pub fn probe_draft(
        &self,
        draft: &SchemaDraft,
        block: &[TxnStatement],
        next: crate::interactive::NewStatement<'_>,
        now: i64,
        stop: StopFlag,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        let mut at = Vec::with_capacity(block.len() + 1);
        let mut all: Vec<(&AdHoc, Vec<Value>, Expected)> = Vec::with_capacity(block.len() + 1);
        for (i, s) in block.iter().enumerate().filter(|(_, s)| s.writes()) {
            let expect = Expected {
                digest: Some(s.digest),
                seen: None,
                done: None,
                seed: s.seed,
                draws: s.draws.clone(),
            };
            all.push((&s.stmt, s.params.clone(), expect));
            at.push(i);
        }
        all.push(next.into_run());
        at.push(block.len());
        stop.mark_in_block();
        let submitted = self
            .block_schema(draft, false, &all, &at)
            .and_then(|b| self.submit_interactive(all, now, true, stop, Place::Partition, None, Some(b)));
        async move {
            match submitted {
                Ok(rx) => rx.await.unwrap_or(Err(Error::Shutdown)),
                Err(e) => Err(e),
            }
        }
    }

    /// Commits a block that changed the schema (`draft`) and ran `statements`: one
    /// transaction at every partition applies the changes and runs the statements again,
    /// each checked against what its client was shown (else 40001, and nothing changes),
    /// and publishes the new schema; one command-log record holds it all. Blocks the
    /// calling thread until it is done.
    pub fn commit_draft(
        &self,
        draft: &SchemaDraft,
        statements: &[TxnStatement],
        now: i64,
        stop: StopFlag,
    ) -> Result<()> {
        if statements.is_empty() {
            return self.execute_ddl_atomic(&draft.texts());
        }
        // Under the schema lock from the change to the schema log, as any schema change
        // (a snapshot holds the change exactly when its record is before the cut).
        let _guard = self.lock_ddl()?;
        let all: Vec<(&AdHoc, Vec<Value>, Expected)> = statements.iter().map(TxnStatement::to_commit).collect();
        let at: Vec<usize> = (0..statements.len()).collect();
        let schema = self.block_schema(draft, true, &all, &at)?;
        let rx = self.submit_interactive(all, now, false, stop, Place::Partition, None, Some(schema))?;
        rx.blocking_recv().unwrap_or(Err(Error::Shutdown))?;
        self.push_history(&draft.texts().join(";\n"))
    }
}
