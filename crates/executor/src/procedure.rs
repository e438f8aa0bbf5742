//! Stored procedures.
//!
//! A procedure is Rust code registered by name with the SQL statements it may run. The
//! statements are planned once, at registration (and again after DDL); the body runs them
//! with parameters through its [`ProcContext`]:
//!
//! ```
//! # use permafrost_executor::{Config, Database, ProcedureDef};
//! # let db = Database::open(Config::builder().partitions(1).build()?)?;
//! # db.execute_ddl("CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)")?;
//! db.register(
//!     ProcedureDef::new("GetBalance")
//!         .partition_param(0)
//!         .statement("SELECT balance FROM accounts WHERE id = ?")
//!         .body(|ctx, params| {
//!             let rows = ctx.execute(0, &[params[0].clone()])?;
//!             if rows.is_empty() {
//!                 return Err(ctx.abort("no such account"));
//!             }
//!             Ok(rows)
//!         }),
//! )?;
//! # Ok::<(), permafrost_executor::Error>(())
//! ```
//!
//! **Determinism.** A procedure must take time and randomness only from its context
//! ([`ProcContext::now`], [`ProcContext::random_u64`]) and must not read anything outside
//! the database (files, clocks, other threads). Then re-running the same calls in the same
//! order reproduces the same state, which is what command-log recovery relies on.
//!
//! **Evicted data.** A body may run more than once: if it reaches evicted tuples it runs in
//! *pre-pass* mode ([`ProcContext::is_prepass`]), its changes are rolled back, the data is
//! fetched and the body runs again. Side effects outside the database would repeat; a
//! procedure has none.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use permafrost_sql::{Catalog, Env, Prepared, Rows, SqlError};
use permafrost_storage::PartitionStore;
use permafrost_types::{DataType, Value};

use crate::error::{Error, Result};

/// The name ad hoc statements run under.
pub(crate) const AD_HOC: &str = "ad hoc statement";

/// What a procedure body returns on failure.
#[derive(Debug, Clone, PartialEq)]
pub enum ProcError {
    /// The procedure aborted the transaction with this message.
    Abort(String),
    /// A statement failed.
    Sql(SqlError),
}

impl From<SqlError> for ProcError {
    fn from(e: SqlError) -> ProcError {
        ProcError::Sql(e)
    }
}

impl fmt::Display for ProcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcError::Abort(m) => write!(f, "aborted: {m}"),
            ProcError::Sql(e) => e.fmt(f),
        }
    }
}

/// The partition-column values a call reaches, from its arguments
/// ([`ProcedureDef::partition_values`]).
pub type Touches = dyn Fn(&[Value]) -> Vec<Value> + Send + Sync;

/// The body of a procedure.
pub type ProcBody = dyn Fn(&mut ProcContext<'_, '_, '_>, &[Value]) -> Result<Rows, ProcError> + Send + Sync;

/// Where a procedure's transactions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partitioning {
    /// At the partition of parameter `param`'s value (a single-partition transaction).
    Single { param: usize },
    /// At every partition (a multi-partition transaction).
    Multi,
}

/// A procedure as written by its author.
#[derive(Clone)]
pub struct ProcedureDef {
    pub(crate) name: String,
    pub(crate) partitioning: Option<Partitioning>,
    pub(crate) statements: Vec<String>,
    pub(crate) body: Option<Arc<ProcBody>>,
    pub(crate) signature: Option<Arc<[(String, DataType)]>>,
    pub(crate) source: Option<Arc<str>>,
    pub(crate) touches: Option<Arc<Touches>>,
    /// Whether its body runs its statements with the call's arguments as `$1, $2, ...`
    /// (CREATE PROCEDURE ... LANGUAGE SQL), so that no statement may use more of them.
    pub(crate) sql_body: bool,
    /// The columns of the rows its body returns, when declared ([`ProcedureDef::returns`]).
    pub(crate) returns: Option<Arc<[permafrost_sql::ColumnInfo]>>,
}

impl ProcedureDef {
    pub fn new(name: impl Into<String>) -> ProcedureDef {
        ProcedureDef {
            name: name.into(),
            partitioning: None,
            statements: Vec::new(),
            body: None,
            signature: None,
            source: None,
            touches: None,
            sql_body: false,
            returns: None,
        }
    }

    /// Declares the arguments (name and type, in order): calls must pass exactly these,
    /// and each value is converted to its type before the body runs. Without a signature a
    /// procedure takes whatever its body accepts.
    pub fn signature(mut self, args: Vec<(String, DataType)>) -> Self {
        self.signature = Some(args.into());
        self
    }

    /// A procedure defined in SQL: runs its statements in order with the call's arguments
    /// as `$1, $2, ...` and returns the rows of the last one. `partition_arg` picks the
    /// partition (single-partition); without it the procedure runs at every partition.
    pub fn from_sql(src: permafrost_sql::script::ProcedureSource, text: &str) -> ProcedureDef {
        let n = src.body.len();
        let mut def = ProcedureDef::new(src.name).signature(src.args);
        def.source = Some(text.into());
        def.sql_body = true;
        def = match src.partition_arg {
            Some(i) => def.partition_param(i),
            None => def.multi_partition(),
        };
        for stmt in src.body {
            def = def.statement(stmt);
        }
        def.body(move |ctx, params| {
            let mut last = Rows::default();
            for i in 0..n {
                // Each statement takes the arguments up to the highest `$n` it uses.
                let used = ctx.statements.get(i).map_or(0, |p| p.param_types().len());
                last = ctx.execute(i, &params[..used.min(params.len())])?;
            }
            Ok(last)
        })
    }

    /// Declares the columns of the rows the body returns (what a client is told a CALL
    /// returns before it runs). Without it, they are the last statement's: declare them
    /// for a body that returns rows of its own making or of another statement.
    pub fn returns(mut self, columns: Vec<permafrost_sql::ColumnInfo>) -> Self {
        self.returns = Some(columns.into());
        self
    }

    /// Runs each call at the partition of parameter `param` (0-based).
    pub fn partition_param(mut self, param: usize) -> Self {
        self.partitioning = Some(Partitioning::Single { param });
        self
    }

    /// For a procedure partitioned on a parameter ([`ProcedureDef::partition_param`]) whose
    /// calls may also reach rows of other partitions (TPC-C's New-Order with a remote
    /// supplying warehouse): `values` gives, from a call's arguments, the values of the
    /// partition column that the call reaches besides its partition parameter's. A call
    /// whose values all lie at its parameter's partition runs there alone; any other runs
    /// as a multi-partition transaction at the partitions they lie at. (A value whose
    /// partition it cannot compute makes the call run at every partition.)
    pub fn partition_values<F>(mut self, values: F) -> Self
    where
        F: Fn(&[Value]) -> Vec<Value> + Send + Sync + 'static,
    {
        self.touches = Some(Arc::new(values));
        self
    }

    /// Runs each call as a multi-partition transaction over all partitions.
    pub fn multi_partition(mut self) -> Self {
        self.partitioning = Some(Partitioning::Multi);
        self
    }

    /// Adds a statement; statements are numbered from 0 in the order added.
    pub fn statement(mut self, sql: impl Into<String>) -> Self {
        self.statements.push(sql.into());
        self
    }

    pub fn body<F>(mut self, f: F) -> Self
    where
        F: Fn(&mut ProcContext<'_, '_, '_>, &[Value]) -> Result<Rows, ProcError> + Send + Sync + 'static,
    {
        self.body = Some(Arc::new(f));
        self
    }
}

/// Rust procedures built into the program (PostgreSQL's `LANGUAGE internal`: functions
/// linked into the server). None is callable until `CREATE PROCEDURE name(args) LANGUAGE
/// internal AS 'symbol'` names it: the statement gives it its SQL name and declares its
/// arguments, which must be the library procedure's; its statements, body and routing
/// are the library's. The command log and snapshots hold the CREATE statement, so a
/// database whose log names one opens only in a program that has it.
#[derive(Clone, Default)]
pub struct Library(Arc<Vec<ProcedureDef>>);

impl Library {
    pub fn new(defs: Vec<ProcedureDef>) -> Library {
        Library(Arc::new(defs))
    }

    /// The library's procedure named `symbol`.
    pub fn get(&self, symbol: &str) -> Option<&ProcedureDef> {
        self.0.iter().find(|d| d.name == symbol)
    }

    /// This library with `more`'s procedures added (replacing those of the same names).
    pub fn with(&self, more: &Library) -> Library {
        let mut all: Vec<ProcedureDef> = self.0.iter().filter(|d| more.get(&d.name).is_none()).cloned().collect();
        all.extend(more.0.iter().cloned());
        Library::new(all)
    }

    /// The names of its procedures.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|d| d.name.as_str()).collect()
    }

    /// The definition `CREATE PROCEDURE ... LANGUAGE internal` (`src`, whose text is
    /// `text`) makes: the library's procedure `symbol` under the statement's name.
    pub(crate) fn define(
        &self,
        src: &permafrost_sql::script::ProcedureSource,
        symbol: &str,
        text: &str,
    ) -> std::result::Result<ProcedureDef, SqlError> {
        let Some(def) = self.get(symbol) else {
            let names = self.names();
            let has = if names.is_empty() {
                "this server has none".to_string()
            } else {
                format!("this server has {}", names.join(", "))
            };
            return Err(SqlError::UndefinedFunction(format!(
                "there is no built-in procedure named \"{symbol}\" ({has})"
            )));
        };
        let theirs: Vec<&DataType> = def.signature.iter().flat_map(|s| s.iter().map(|(_, t)| t)).collect();
        let ours: Vec<&DataType> = src.args.iter().map(|(_, t)| t).collect();
        if theirs != ours {
            let list = |ts: &[&DataType]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
            return Err(SqlError::FunctionDefinition(format!(
                "built-in procedure \"{symbol}\" takes ({}), not ({})",
                list(&theirs),
                list(&ours)
            )));
        }
        let mut def = def.clone();
        def.name = src.name.clone();
        def.signature = Some(src.args.clone().into());
        def.source = Some(text.into());
        Ok(def)
    }
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl PartialEq for Library {
    fn eq(&self, other: &Library) -> bool {
        self.names() == other.names()
    }
}

/// How an interactive procedure's statements are checked and ended.
pub(crate) struct Interactive {
    /// Roll back whatever happens (a probe): nothing is committed or logged.
    pub probe: bool,
    /// `now()` of every statement.
    pub now: i64,
    /// What the command log records (a commit's).
    pub log_text: Arc<str>,
    /// The parameters of the statements `log_text` lists, when it lists fewer than the
    /// procedure runs (a commit logs its writes only: its queries change nothing, so
    /// replay need not run them).
    pub log_params: Option<Vec<Value>>,
    /// For a replayed record of an earlier build: the partition whose sequences gave the
    /// transaction's new keys, whichever partitions it held.
    pub sequence_home: Option<u32>,
    /// Whether each statement takes the sequence values it took when it first ran
    /// (`Expected::draws`: a live probe's or commit's, so that the keys its client was
    /// shown are the keys it inserts); a replayed one takes its record's.
    pub own_draws: bool,
    /// The schema changes of its block, applied among its statements (crate::schema_block).
    pub schema: Option<Arc<dyn SchemaSteps>>,
}

/// A transaction block's schema changes as the transaction that runs its statements
/// applies them to the stores it holds (crate::schema_block implements it).
pub(crate) trait SchemaSteps: Send + Sync {
    /// Whether it publishes a schema when it commits (else it is a probe's).
    fn commits(&self) -> bool;
    /// Why the transaction must not run now, if it must not.
    fn refused(&self, parts: &[u32], stores: &[&mut PartitionStore]) -> Option<Error>;
    /// Applies the changes that come before statement `i` (all for `usize::MAX`) not
    /// applied yet.
    fn apply_through(&self, i: usize, stores: &mut [&mut PartitionStore]) -> std::result::Result<(), ProcError>;
    /// Undoes every change applied, newest first (the rows are rolled back already).
    fn undo(&self, stores: &mut [&mut PartitionStore]);
    /// Publishes the schema the committed transaction reached (every partition held).
    fn publish(&self);
}

/// The transaction context a replayed record first ran with.
#[derive(Debug, Clone)]
pub(crate) struct Replayed {
    pub now: i64,
    pub seed: u64,
    /// The session TimeZone it ran in (its record's); `None`: UTC.
    pub zone: Option<permafrost_types::zone::Zone>,
    /// The sequence values it took (permafrost_sql::exec::sequences).
    pub draws: Given,
}

/// The sequence values a transaction takes before it draws any (`permafrost_sql`'s
/// sequences.rs).
#[derive(Debug, Clone, Default)]
pub(crate) enum Given {
    /// None: it draws.
    #[default]
    Nothing,
    /// These, by table in order (a replayed record's).
    Values(Arc<[(u32, i64)]>),
    /// A replayed record of an earlier build, which kept no values: it draws as it did.
    Legacy,
}

/// A registered procedure with its statements planned.
pub struct Procedure {
    /// An ad hoc statement run as a one-statement procedure (not in the registry).
    pub(crate) adhoc: bool,
    pub(crate) name: String,
    pub(crate) partitioning: Partitioning,
    pub(crate) statements: Vec<Arc<Prepared>>,
    pub(crate) def: ProcedureDef,
    /// Whether a call is short enough to run on its caller's thread (partition/cell.rs):
    /// every statement is a point access ([`Prepared::is_point`]). Decided when planned.
    pub(crate) short: bool,
    /// An interactive transaction's probe or commit (interactive.rs).
    pub(crate) interactive: Option<Arc<Interactive>>,
    /// A plain ad hoc statement (one statement, run as it is): one that may move off its
    /// partitions when it runs past its read slice (forked.rs).
    pub(crate) movable: bool,
    /// The timestamp and seed it runs with, when they are fixed: a statement moved off
    /// its partitions applies (or runs again) with those it first ran with (forked.rs).
    pub(crate) fixed: Option<Replayed>,
}

impl fmt::Debug for Procedure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Procedure")
            .field("name", &self.name)
            .field("partitioning", &self.partitioning)
            .finish()
    }
}

/// Whether statements make a call short enough to run on its caller's thread: each is a
/// point access ([`Prepared::is_point`]).
fn is_short(statements: &[Arc<Prepared>]) -> bool {
    !statements.is_empty() && statements.iter().all(|p| p.is_point())
}

impl Procedure {
    /// The parameters its command-log record holds, when they are not the call's own (an
    /// interactive commit logs its writes only: `Interactive::log_params`).
    pub(crate) fn log_params(&self) -> Option<&[Value]> {
        self.interactive.as_ref().and_then(|i| i.log_params.as_deref())
    }

    /// What the command log names this by: (whether it is an ad hoc statement, its SQL
    /// text or the procedure's name).
    pub(crate) fn log_text(&self) -> (bool, &str) {
        if let Some(i) = &self.interactive {
            return (true, &i.log_text);
        }
        match self.statements.first() {
            Some(s) if self.adhoc => (true, &s.sql),
            _ => (false, &self.name),
        }
    }

    /// Plans the statements of `def` against `catalog`.
    pub(crate) fn prepare(def: ProcedureDef, catalog: &Catalog) -> Result<Procedure> {
        let name = def.name.clone();
        if name.is_empty() {
            return Err(Error::BadCall {
                name,
                message: "a procedure needs a name".into(),
            });
        }
        let partitioning = def.partitioning.ok_or_else(|| Error::BadCall {
            name: name.clone(),
            message: "say where it runs: .partition_param(i) or .multi_partition()".into(),
        })?;
        if def.body.is_none() {
            return Err(Error::BadCall {
                name,
                message: "a procedure needs a body".into(),
            });
        }
        let mut statements = Vec::with_capacity(def.statements.len());
        for (i, sql) in def.statements.iter().enumerate() {
            let p = permafrost_sql::prepare(catalog, sql).map_err(|e| Error::BadCall {
                name: name.clone(),
                message: format!("statement {i} ({sql}): {e}"),
            })?;
            if let Some(sig) = &def.signature
                && def.sql_body
                && p.param_types().len() > sig.len()
            {
                return Err(Error::BadCall {
                    name: name.clone(),
                    message: format!(
                        "statement {} ({sql}) uses ${} but the procedure has {} argument(s)",
                        i + 1,
                        p.param_types().len(),
                        sig.len()
                    ),
                });
            }
            statements.push(Arc::new(p));
        }
        if let (Some(sig), Partitioning::Single { param }) = (&def.signature, partitioning)
            && param >= sig.len()
        {
            return Err(Error::BadCall {
                name,
                message: format!("partition parameter {param} is not an argument"),
            });
        }
        Ok(Procedure {
            adhoc: false,
            name,
            partitioning,
            short: is_short(&statements),
            statements,
            def,
            interactive: None,
            movable: false,
            fixed: None,
        })
    }

    /// A one-statement procedure running an ad hoc statement, already planned.
    pub(crate) fn ad_hoc(prepared: Prepared) -> Procedure {
        let mut p = Procedure::ad_hoc_with(prepared, |ctx, p| ctx.execute(0, p));
        p.movable = true;
        p
    }

    /// This ad hoc statement as a procedure with another body, that does not move off its
    /// partitions and runs with `fixed`'s timestamp and seed (forked.rs: what applies a
    /// moved statement's changes, or runs it again in place). Logged as the statement.
    pub(crate) fn pinned<F>(&self, fixed: Replayed, body: F) -> Procedure
    where
        F: Fn(&mut ProcContext<'_, '_, '_>, &[Value]) -> Result<Rows, ProcError> + Send + Sync + 'static,
    {
        let def = self.def.clone().body(body);
        let mut p = Procedure::ad_hoc_over(self.statements.clone(), def, None);
        p.partitioning = self.partitioning;
        p.short = false;
        p.fixed = Some(fixed);
        p
    }

    /// Whether its scans may leave evicted tuples to be read afterwards (scan.rs): an ad
    /// hoc query, which is one read-only statement whose rows go straight to the caller.
    pub(crate) fn defers_scans(&self) -> bool {
        self.movable && self.statements[0].kind() == permafrost_sql::StatementKind::Select
    }

    /// Inserts many rows as one transaction: `prepared` is a one-row INSERT whose text
    /// starts with [`BULK_MARK`], and the call's parameters are the rows one after the
    /// other. It runs over all partitions (a multi-partition transaction), so the rows are
    /// stored all or none (COPY FROM). The command log records the marked statement with
    /// every row, and replay rebuilds this procedure from the mark.
    pub(crate) fn bulk_insert(prepared: Prepared) -> Procedure {
        let width = prepared.param_types().len().max(1);
        let mut p = Procedure::ad_hoc_with(prepared, move |ctx, p| run_bulk(ctx, 0, width, p));
        // Its one-row statement runs once per row given: never short.
        p.short = false;
        p
    }

    /// An ad hoc procedure over one planned statement, multi-partition unless its
    /// parameters route it, with `body`.
    fn ad_hoc_with<F>(prepared: Prepared, body: F) -> Procedure
    where
        F: Fn(&mut ProcContext<'_, '_, '_>, &[Value]) -> Result<Rows, ProcError> + Send + Sync + 'static,
    {
        let def = ProcedureDef::new(AD_HOC)
            .multi_partition()
            .statement(prepared.sql.clone())
            .body(body);
        Procedure::ad_hoc_over(vec![Arc::new(prepared)], def, None)
    }

    /// An ad hoc procedure over planned statements (routed by the caller; `def` holds the
    /// body): an interactive transaction's probe or commit when `spec` says so.
    pub(crate) fn ad_hoc_over(
        statements: Vec<Arc<Prepared>>,
        def: ProcedureDef,
        spec: Option<Interactive>,
    ) -> Procedure {
        Procedure {
            adhoc: true,
            name: AD_HOC.into(),
            partitioning: Partitioning::Multi,
            short: is_short(&statements),
            statements,
            def,
            interactive: spec.map(Arc::new),
            movable: false,
            fixed: None,
        }
    }

    /// Whether a successful run is undone rather than committed (an interactive probe).
    pub(crate) fn is_probe(&self) -> bool {
        self.interactive.as_ref().is_some_and(|i| i.probe)
    }

    /// `now()` for its statements, when fixed (an interactive transaction's start).
    pub(crate) fn fixed_now(&self) -> Option<i64> {
        self.interactive
            .as_ref()
            .map(|i| i.now)
            .or(self.fixed.as_ref().map(|f| f.now))
    }

    /// Plans this procedure again against `catalog` (after a schema change).
    pub(crate) fn replan(&self, catalog: &Catalog) -> Result<Procedure> {
        if self.interactive.is_some() {
            // Its client was shown results of the old plans.
            return Err(Error::Sql(SqlError::SerializationFailure(
                "the schema changed during the transaction; retry the transaction".into(),
            )));
        }
        let mut p = Procedure::prepare(self.def.clone(), catalog)?;
        p.adhoc = self.adhoc;
        p.short &= self.short;
        p.movable = self.movable;
        p.fixed = self.fixed.clone();
        Ok(p)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Converts a call's arguments to the declared types (when there is a signature).
    pub(crate) fn coerce(&self, params: Vec<Value>) -> Result<Vec<Value>> {
        let Some(sig) = &self.def.signature else {
            return Ok(params);
        };
        if params.len() != sig.len() {
            return Err(Error::BadCall {
                name: self.name.clone(),
                message: format!("takes {} argument(s), got {}", sig.len(), params.len()),
            });
        }
        params
            .into_iter()
            .zip(sig.iter())
            .map(|(v, (arg, ty))| {
                v.coerce_to(ty).map_err(|source| Error::BadArgument {
                    name: self.name.clone(),
                    arg: arg.clone(),
                    source,
                })
            })
            .collect()
    }

    pub fn partitioning(&self) -> Partitioning {
        self.partitioning
    }

    pub(crate) fn body(&self) -> &ProcBody {
        self.def.body.as_deref().expect("checked at registration")
    }
}

/// What a running procedure sees of its transaction.
pub struct ProcContext<'e, 'a, 'b> {
    pub(crate) env: &'e mut Env<'a, 'b>,
    pub(crate) statements: &'e [Arc<Prepared>],
    pub(crate) txn_id: u64,
    pub(crate) rng: u64,
    /// What the random state of each statement it runs derives from: the transaction's
    /// (from its log record's seed and timestamp), or the one
    /// [`ProcContext::seed_statement`] set; with how many it ran since.
    pub(crate) random_seed: u64,
    pub(crate) executed: u64,
    /// The transaction's own ([`ProcContext::random_seed`] before any was set).
    pub(crate) base_seed: u64,
    /// How its commit is noted among recent ones: an interactive transaction describes
    /// what it read, and may take an earlier place (interactive.rs).
    pub(crate) placement: permafrost_storage::Placement,
}

impl ProcContext<'_, '_, '_> {
    /// Runs statement `stmt` (its number in the definition) with `params`.
    pub fn execute(&mut self, stmt: usize, params: &[Value]) -> Result<Rows, ProcError> {
        let p = self.statements.get(stmt).ok_or_else(|| {
            ProcError::Sql(SqlError::Unsupported(format!(
                "statement {stmt} does not exist (the procedure has {})",
                self.statements.len()
            )))
        })?;
        self.executed += 1;
        let state = permafrost_sql::splitmix64(self.random_seed ^ self.executed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        self.env.random.store(state, std::sync::atomic::Ordering::Relaxed);
        let mut rows = p.execute(self.env, params)?;
        // (Each draw moves the state on.)
        rows.drew_random = self.env.random.load(std::sync::atomic::Ordering::Relaxed) != state;
        Ok(rows)
    }

    /// The transaction's own random seed, whatever statement seeds were set since.
    pub(crate) fn base_seed(&self) -> u64 {
        self.base_seed
    }

    /// Makes the statements run next draw their random values from `seed` (an interactive
    /// transaction's statement keeps its own, so that its probe and its commit draw the
    /// same values whatever else they run).
    pub(crate) fn seed_statement(&mut self, seed: u64) {
        self.random_seed = seed;
        self.executed = 0;
    }

    /// Whether no transaction that committed after the write clock said `seen` changed,
    /// at any partition held, the rows of `range` ([`Prepared::read_range`] of a query,
    /// [`permafrost_storage::Recent`]): the query would give what it gave then. `false`
    /// when that cannot be told.
    pub(crate) fn unchanged_since(&mut self, range: &permafrost_sql::ReadRange, seen: u64) -> bool {
        let id = range.schema.id;
        self.env.stores.iter_mut().all(|s| {
            s.table(id).is_some_and(|t| Arc::ptr_eq(t.schema(), &range.schema))
                && s.unchanged_since(seen, id, range.lo.as_ref(), range.hi.as_ref())
        })
    }

    /// Runs the query `stmt` over the partitions held, adding what it finds to `part`
    /// ([`Prepared::execute_part`]).
    pub(crate) fn execute_part(
        &mut self,
        stmt: usize,
        part: &mut permafrost_sql::PartialSelect,
    ) -> Result<(), ProcError> {
        let p = self
            .statements
            .get(stmt)
            .ok_or_else(|| ProcError::Sql(SqlError::Unsupported(format!("statement {stmt} does not exist"))))?;
        Ok(p.execute_part(part, self.env)?)
    }

    /// An error that aborts the transaction with `message`.
    pub fn abort(&self, message: impl Into<String>) -> ProcError {
        ProcError::Abort(message.into())
    }

    /// The transaction's timestamp in microseconds since the Unix epoch. Use this instead
    /// of the system clock so that replay is deterministic.
    pub fn now(&self) -> i64 {
        self.env.now
    }

    /// The transaction's id, unique in this database.
    pub fn txn_id(&self) -> u64 {
        self.txn_id
    }

    /// A pseudo-random number derived from the transaction id (deterministic on replay).
    pub fn random_u64(&mut self) -> u64 {
        // SplitMix64.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Whether this run is a pre-pass over evicted data: its results will be discarded and
    /// it will run again once the data is back in memory.
    pub fn is_prepass(&self) -> bool {
        !self.env.evicted.is_empty()
    }

    /// The partitions this transaction runs at.
    pub fn partitions(&self) -> Vec<u32> {
        self.env.stores.iter().map(|s| s.partition()).collect()
    }
}

/// The start of a bulk insert's statement text ([`Procedure::bulk_insert`]).
pub(crate) use permafrost_sql::BULK_MARK;

/// The number of parameters of one row, when `p` is a bulk insert (its text starts with
/// [`BULK_MARK`]): its parameters are then rows of that many values, one after the other.
pub(crate) fn bulk_width(p: &Prepared) -> Option<usize> {
    p.sql.starts_with(BULK_MARK).then(|| p.param_types().len().max(1))
}

/// Runs the bulk insert `stmt` (of row width `width`) once per row of `params`: the rows
/// it inserted.
pub(crate) fn run_bulk(
    ctx: &mut ProcContext<'_, '_, '_>,
    stmt: usize,
    width: usize,
    params: &[Value],
) -> Result<Rows, ProcError> {
    let mut n = 0;
    for row in params.chunks(width) {
        n += ctx.execute(stmt, row)?.affected;
    }
    Ok(Rows::affected(n))
}

/// Catalog and procedures, published together so that they always agree.
pub(crate) struct SchemaState {
    pub catalog: Arc<Catalog>,
    pub procs: HashMap<String, Arc<Procedure>>,
}
