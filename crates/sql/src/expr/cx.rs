//! What an evaluation reads besides the expression: where column values come from
//! ([`ColumnSource`]) and its context ([`Cx`]): parameters, the clock, group keys and
//! aggregate results, subqueries' values and the runner of correlated ones, the arrays read
//! so far, the budget for built values.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use permafrost_types::{DataType, Value, ValueRef};

use crate::error::Result;
use crate::value_budget::ValueBudget;

/// Runs the correlated subqueries of the plan whose expressions are evaluated (the
/// executor's; `exec.rs`).
pub trait SubRunner {
    /// The values of subquery `sub` of the plan run with the outer values `args`: its rows'
    /// first column (for an EXISTS, one `true` if it has a row). More than one row of a
    /// scalar subquery is an error.
    fn run(&self, sub: usize, args: Vec<Value>, cx: &Cx<'_>) -> Result<std::rc::Rc<[Value]>>;
}

/// Where column values come from during evaluation.
pub trait ColumnSource {
    fn column(&self, rel: usize, col: usize) -> ValueRef<'_>;
}

/// A source with no relations (VALUES lists, constant folding, post-aggregation).
pub struct NoColumns;

impl ColumnSource for NoColumns {
    fn column(&self, _: usize, _: usize) -> ValueRef<'_> {
        ValueRef::Null
    }
}

/// What an evaluation can see besides columns.
pub struct Cx<'a> {
    pub params: &'a [Value],
    /// Transaction timestamp, microseconds since the epoch.
    pub now: i64,
    pub groups: &'a [Value],
    pub aggs: &'a [Value],
    /// Arrays read by `= ANY` in this execution ([`ArrayCache`]).
    pub arrays: ArrayCache,
    /// What a value built by a function or operator may take ([`crate::value_budget`]).
    pub budget: ValueBudget<'a>,
    /// The values of the statement's subqueries, by number (`Expr::Subquery`): a row's
    /// first column each.
    pub subs: &'a [Vec<Value>],
    /// Runs the plan's correlated subqueries (`Expr::SubPlan`); `None` where none runs.
    pub runner: Option<&'a dyn SubRunner>,
    /// Inside a correlated subquery: the values it runs with (`Expr::Outer`).
    pub outer: &'a [Value],
    /// Inside the step of a recursive WITH query: the rows its last run added, by slot.
    pub working: Option<std::rc::Rc<WorkingRows>>,
    /// The values of the query's window function calls for the row being produced.
    pub windows: &'a [Value],
    /// Where `random()` and `gen_random_uuid()` draw from: the statement's random state
    /// (`Env::random`), shared by every copy of the context; `None` where nothing may
    /// draw (a constant evaluated when a statement is planned).
    pub random: Option<Arc<AtomicU64>>,
    /// Where `nextval()` and `setval()` go: the transaction's sequence draws
    /// (`Env::draws`); `None` where no statement runs.
    pub draws: Option<&'a dyn DrawSource>,
}

/// `nextval()` and `setval()` of a statement's expressions: the sequences of the running
/// transaction (crate::exec::sequences implements it over the transaction's draws).
pub trait DrawSource {
    /// The next value of `table`'s sequence (named `name`, for messages), stepping as
    /// `step` says.
    fn nextval(
        &self,
        table: permafrost_storage::TableId,
        name: &str,
        step: crate::sequence::SeqStep,
    ) -> crate::error::Result<i64>;
    /// `currval(table)` (`name` for messages), or `lastval()` for `None`: the value drawn
    /// last in the transaction, else in the session (55000 if none).
    fn currval(&self, table: Option<permafrost_storage::TableId>, name: &str) -> crate::error::Result<i64>;
    /// Makes `last` the sequence's last value handed out; when `called` (`setval(s, v)`,
    /// `setval(s, v, true)`: `last` is `v`), it becomes the session's `currval(s)` too, as
    /// in PostgreSQL.
    fn setval(&self, table: permafrost_storage::TableId, last: i64, called: bool) -> crate::error::Result<()>;
    /// The wall clock, microseconds since the epoch: `clock_timestamp()` (each call reads
    /// it again) or, with `statement`, `statement_timestamp()` (read once per statement).
    /// Noted among the values taken, so that replay and a block's COMMIT read the same.
    fn clock(&self, statement: bool) -> crate::error::Result<i64>;
}

/// The rows a recursive WITH query's step reads as its own name (`SetTree::Working`): one
/// per recursive query being run, innermost first.
pub struct WorkingRows {
    pub slot: usize,
    pub rows: std::rc::Rc<Vec<Vec<Value>>>,
    pub up: Option<std::rc::Rc<WorkingRows>>,
}

impl WorkingRows {
    /// The rows of slot `slot`, if one of these runs is its.
    pub fn of(&self, slot: usize) -> Option<&std::rc::Rc<Vec<Vec<Value>>>> {
        let mut w = Some(self);
        while let Some(x) = w {
            if x.slot == slot {
                return Some(&x.rows);
            }
            w = x.up.as_deref();
        }
        None
    }
}

impl<'a> Cx<'a> {
    /// A context whose values are held to the least budget a statement has
    /// ([`ValueBudget::default`]); a statement's execution sets its own
    /// ([`Cx::with_budget`]).
    pub fn new(params: &'a [Value], now: i64) -> Cx<'a> {
        Cx {
            params,
            now,
            groups: &[],
            aggs: &[],
            arrays: ArrayCache::default(),
            budget: ValueBudget::default(),
            subs: &[],
            runner: None,
            outer: &[],
            working: None,
            windows: &[],
            random: None,
            draws: None,
        }
    }

    /// A copy of this context (the arrays read so far are not carried over).
    fn copy(&self) -> Cx<'a> {
        Cx {
            params: self.params,
            now: self.now,
            groups: self.groups,
            aggs: self.aggs,
            arrays: ArrayCache::default(),
            budget: self.budget.clone(),
            subs: self.subs,
            runner: self.runner,
            outer: self.outer,
            working: self.working.clone(),
            windows: self.windows,
            random: self.random.clone(),
            draws: self.draws,
        }
    }

    /// This context with `windows` as the values of the query's window calls.
    pub fn with_windows<'s>(&'s self, windows: &'s [Value]) -> Cx<'s> {
        Cx { windows, ..self.copy() }
    }

    /// This context with the values `subs` of its plan's subqueries (and none of the
    /// groups, aggregates or correlated subqueries of another plan).
    pub fn with_subs<'s>(&'s self, subs: &'s [Vec<Value>]) -> Cx<'s> {
        Cx {
            groups: &[],
            aggs: &[],
            subs,
            runner: None,
            ..self.copy()
        }
    }

    /// This context with `runner` running its plan's correlated subqueries.
    pub fn with_runner<'s>(&'s self, runner: &'s dyn SubRunner) -> Cx<'s> {
        Cx {
            runner: Some(runner),
            ..self.copy()
        }
    }

    /// The context a correlated subquery runs in: this statement's parameters, clock and
    /// budget, and the outer values `outer`.
    pub fn for_subquery<'s>(&'s self, outer: &'s [Value]) -> Cx<'s> {
        Cx {
            groups: &[],
            aggs: &[],
            subs: &[],
            runner: None,
            outer,
            ..self.copy()
        }
    }

    /// This context with `outer` as the values `Expr::Outer` reads (an upsert's proposed
    /// row, its `EXCLUDED`).
    pub fn with_outer<'s>(&'s self, outer: &'s [Value]) -> Cx<'s> {
        Cx { outer, ..self.copy() }
    }

    /// This context with `rows` as the rows the recursive step of slot `slot` reads.
    pub fn with_working(&self, slot: usize, rows: Vec<Vec<Value>>) -> Cx<'a> {
        Cx {
            working: Some(std::rc::Rc::new(WorkingRows {
                slot,
                rows: std::rc::Rc::new(rows),
                up: self.working.clone(),
            })),
            ..self.copy()
        }
    }

    /// This context after aggregation, reading the group keys `groups` and aggregate
    /// results `aggs`.
    pub fn with_groups<'s>(&'s self, groups: &'s [Value], aggs: &'s [Value]) -> Cx<'s> {
        Cx {
            groups,
            aggs,
            ..self.copy()
        }
    }

    /// This context with the statement's budget for the values it builds.
    pub fn with_budget(self, budget: ValueBudget<'a>) -> Cx<'a> {
        Cx { budget, ..self }
    }

    /// This context drawing random values from `random` ([`Cx::random`]).
    pub fn with_random(self, random: Arc<AtomicU64>) -> Cx<'a> {
        Cx {
            random: Some(random),
            ..self
        }
    }

    /// This context taking `nextval()` and `setval()` to `draws` ([`Cx::draws`]).
    pub fn with_draws(self, draws: &'a dyn DrawSource) -> Cx<'a> {
        Cx {
            draws: Some(draws),
            ..self
        }
    }

    /// The next random 64 bits of the statement's random state (SplitMix64 over it): the
    /// same sequence whenever the statement runs again with the same state (its replay,
    /// an interactive transaction's commit).
    pub fn draw(&self) -> Result<u64> {
        let state = self.random.as_ref().ok_or_else(|| {
            crate::error::SqlError::Unsupported(
                "random() or gen_random_uuid() in a value computed once when the statement is planned".into(),
            )
        })?;
        Ok(splitmix64(
            state
                .fetch_add(GOLDEN_GAMMA, Ordering::Relaxed)
                .wrapping_add(GOLDEN_GAMMA),
        ))
    }
}

/// SplitMix64's increment.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function of a state.
pub fn splitmix64(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The arrays `= ANY(array)` read during one execution, with their elements converted to
/// the compared type: an array is the same for every row it is compared with (a parameter
/// or a constant, mostly), and reading its text once per row made a scan quadratic in
/// practice. Keyed by the text itself; a few entries (a statement compares few arrays).
#[derive(Default)]
pub struct ArrayCache(std::cell::RefCell<Vec<CachedArray>>);

struct CachedArray {
    text: Box<str>,
    elem: Option<DataType>,
    values: std::rc::Rc<[Value]>,
}

/// Most arrays an [`ArrayCache`] keeps.
const CACHED_ARRAYS: usize = 4;

impl ArrayCache {
    /// The elements of array literal `text` as values of `elem` (NULL elements as NULL).
    pub(super) fn values(&self, text: &str, elem: Option<DataType>) -> Result<std::rc::Rc<[Value]>> {
        if let Some(c) = self.0.borrow().iter().find(|c| c.elem == elem && *c.text == *text) {
            return Ok(c.values.clone());
        }
        let values: std::rc::Rc<[Value]> = crate::array::elements(text)?
            .into_iter()
            .map(|item| match (item, elem) {
                (None, _) => Ok(Value::Null),
                (Some(t), Some(ty)) => Ok(Value::text(t).coerce_to(&ty)?),
                (Some(t), None) => Ok(Value::text(t)),
            })
            .collect::<Result<_>>()?;
        let mut cache = self.0.borrow_mut();
        if cache.len() == CACHED_ARRAYS {
            cache.remove(0);
        }
        cache.push(CachedArray {
            text: text.into(),
            elem,
            values: values.clone(),
        });
        Ok(values)
    }
}
