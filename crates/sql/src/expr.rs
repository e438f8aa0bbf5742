//! Bound expressions and their evaluation.
//!
//! The binder turns syntax into [`Expr`]: columns are positions (relation, column), parameters are numbers,
//! functions are resolved. Evaluation returns a [`Datum`], which borrows when it can (a column read from a
//! stored tuple, a parameter, a constant) and owns only computed values, so that predicates over stored
//! tuples do not allocate. NULL follows SQL's three-valued logic: comparisons with NULL are NULL, `AND`/`OR`
//! use the truth tables, and a predicate accepts a row only when it is `true`.

use std::cmp::Ordering;

use permafrost_types::{DataType, Value, ValueRef, total_compare};

use crate::error::{Result, SqlError};

pub mod age;
pub mod array;
mod cx;
mod datefunc;
mod datum;
pub mod format;
mod func;
pub mod inet;
pub(crate) mod json;
pub mod jsonb_edit;
mod math;
mod ops;
pub mod regex;
mod text;
mod to_char;
pub mod window;
pub use cx::{ArrayCache, ColumnSource, Cx, DrawSource, NoColumns, SubRunner, splitmix64};
pub use datum::Datum;
pub use func::Func;
pub use math::MathFunc;
pub use ops::{ArithOp, CmpOp, arith, cast, compare};
use ops::{numeric_err, overflow};
pub use text::like;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    Avg,
    /// `array_agg(x [ORDER BY ...])`: the values, NULLs kept, as an array.
    ArrayAgg,
    /// `string_agg(x, delimiter [ORDER BY ...])`: the non-NULL values, each after the
    /// first preceded by its row's delimiter.
    StringAgg,
    /// `json_agg(x [ORDER BY ...])` (`jsonb`: `jsonb_agg`): the values made JSON as their
    /// type says (`from`), NULLs as null, in a JSON array.
    JsonAgg {
        jsonb: bool,
        from: json::JsonFrom,
    },
    /// `json_object_agg(k, v [ORDER BY ...])` (`jsonb`: `jsonb_object_agg`): an object of
    /// the keys (as text) and the values made JSON as their type says (`from`).
    JsonObjectAgg {
        jsonb: bool,
        from: json::JsonFrom,
    },
    /// `bool_and(x)` (`every(x)`).
    BoolAnd,
    /// `bool_or(x)`.
    BoolOr,
}

impl AggFunc {
    /// Whether it keeps every value it is given (in the order of its ORDER BY).
    pub fn collects(self) -> bool {
        matches!(
            self,
            AggFunc::ArrayAgg | AggFunc::StringAgg | AggFunc::JsonAgg { .. } | AggFunc::JsonObjectAgg { .. }
        )
    }

    /// Whether it keeps NULL values (as elements, as JSON nulls, or as a key's error).
    pub fn keeps_nulls(self) -> bool {
        self.collects() && self != AggFunc::StringAgg
    }
}

/// One key of an aggregate's own ORDER BY.
#[derive(Debug, Clone, PartialEq)]
pub struct AggOrder {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

/// One aggregate call of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct AggCall {
    pub func: AggFunc,
    /// `None` for `COUNT(*)`.
    pub arg: Option<Expr>,
    pub distinct: bool,
    /// `FILTER (WHERE ...)`: only the rows it accepts are aggregated.
    pub filter: Option<Expr>,
    pub ty: Option<DataType>,
    /// Its second argument: `string_agg`'s delimiter, `json_object_agg`'s value.
    pub second: Option<Expr>,
    /// The call's own ORDER BY (`array_agg(x ORDER BY y)`): the order values are collected in.
    pub order: Vec<AggOrder>,
}

impl AggCall {
    /// The values besides its argument a row gives it: the second argument, then the keys of
    /// its ORDER BY.
    pub fn extras(&self) -> usize {
        usize::from(self.second.is_some()) + self.order.len()
    }
}

/// A bound expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Column `col` of the `rel`-th relation of the statement.
    Column {
        rel: usize,
        col: usize,
    },
    /// Parameter `$n` (0-based here).
    Param(usize),
    Const(Value),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    Concat(Box<Expr>, Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    IsDistinct {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    Cast(Box<Expr>, DataType),
    Func(Func, Vec<Expr>),
    /// The transaction's timestamp.
    Now,
    /// After aggregation: the `n`-th group key.
    Group(usize),
    /// After aggregation: the `n`-th aggregate result.
    Agg(usize),
    /// The value of the `n`-th subquery of the plan holding this expression (its
    /// `InitPlan`, run before the plan reads a row; NULL when it had no row).
    Subquery(usize),
    /// Whether the `n`-th subquery had a row.
    Exists(usize),
    /// `expr [NOT] IN (subquery n)`.
    InSubquery {
        expr: Box<Expr>,
        sub: usize,
        negated: bool,
    },
    /// A correlated subquery (PostgreSQL's SubPlan): the `sub`-th subquery of the plan
    /// holding this expression, run with the values `args` of the row being looked at
    /// (read inside it as `Expr::Outer`) through [`Cx::runner`], and read as `kind` says;
    /// `test` is `x [NOT] IN`'s left side and negation.
    SubPlan {
        sub: usize,
        kind: SubqueryKind,
        args: Vec<Expr>,
        test: Option<(Box<Expr>, bool)>,
    },
    /// Inside a correlated subquery: the `n`-th value it is run with (its `SubPlan`'s
    /// `args[n]`, a value of the query around it).
    Outer(usize),
    /// The value of the `n`-th window function call of the query for the row being
    /// produced (`Cx::windows`).
    Window(usize),
}

/// How a subquery in an expression is read (`Expr::Subquery`, `Expr::Exists`,
/// `Expr::InSubquery`, `Expr::SubPlan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubqueryKind {
    /// `(SELECT x ...)`: its one value, NULL without a row; more than one row is an error.
    Scalar,
    /// `EXISTS (SELECT ...)`: whether it has a row.
    Exists,
    /// `x IN (SELECT y ...)`: the values of its one column.
    In,
    /// `ARRAY(SELECT x ...)`: the array of its one column's values.
    Array,
}

impl Expr {
    pub fn boxed(self) -> Box<Expr> {
        Box::new(self)
    }

    /// Calls `f` on this expression and every sub-expression.
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Not(e) | Expr::Neg(e) | Expr::Cast(e, _) => e.walk(f),
            Expr::IsNull { expr, .. } => expr.walk(f),
            Expr::And(a, b) | Expr::Or(a, b) | Expr::Cmp(_, a, b) | Expr::Arith(_, a, b) | Expr::Concat(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::IsDistinct { left, right, .. } => {
                left.walk(f);
                right.walk(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.walk(f);
                list.iter().for_each(|e| e.walk(f));
            }
            Expr::Like { expr, pattern, .. } => {
                expr.walk(f);
                pattern.walk(f);
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => {
                if let Some(o) = operand {
                    o.walk(f);
                }
                for (w, t) in whens {
                    w.walk(f);
                    t.walk(f);
                }
                if let Some(o) = otherwise {
                    o.walk(f);
                }
            }
            Expr::Func(_, args) => args.iter().for_each(|e| e.walk(f)),
            Expr::InSubquery { expr, .. } => expr.walk(f),
            Expr::SubPlan { args, test, .. } => {
                args.iter().for_each(|e| e.walk(f));
                if let Some((x, _)) = test {
                    x.walk(f);
                }
            }
            Expr::Column { .. }
            | Expr::Window(_)
            | Expr::Outer(_)
            | Expr::Param(_)
            | Expr::Const(_)
            | Expr::Now
            | Expr::Group(_)
            | Expr::Agg(_)
            | Expr::Subquery(_)
            | Expr::Exists(_) => {}
        }
    }

    /// Calls `f` on every sub-expression, then on this one (after its children: what `f`
    /// puts in place of a node is not walked again).
    pub fn walk_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        match self {
            Expr::Not(e) | Expr::Neg(e) | Expr::Cast(e, _) => e.walk_mut(f),
            Expr::IsNull { expr, .. } | Expr::InSubquery { expr, .. } => expr.walk_mut(f),
            Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Cmp(_, a, b)
            | Expr::Arith(_, a, b)
            | Expr::Concat(a, b)
            | Expr::IsDistinct { left: a, right: b, .. }
            | Expr::Like {
                expr: a, pattern: b, ..
            } => {
                a.walk_mut(f);
                b.walk_mut(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.walk_mut(f);
                list.iter_mut().for_each(|e| e.walk_mut(f));
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => {
                operand.iter_mut().for_each(|o| o.walk_mut(f));
                for (w, t) in whens {
                    w.walk_mut(f);
                    t.walk_mut(f);
                }
                otherwise.iter_mut().for_each(|o| o.walk_mut(f));
            }
            Expr::Func(_, args) => args.iter_mut().for_each(|e| e.walk_mut(f)),
            Expr::SubPlan { args, test, .. } => {
                args.iter_mut().for_each(|e| e.walk_mut(f));
                if let Some((x, _)) = test {
                    x.walk_mut(f);
                }
            }
            Expr::Column { .. }
            | Expr::Window(_)
            | Expr::Outer(_)
            | Expr::Param(_)
            | Expr::Const(_)
            | Expr::Now
            | Expr::Group(_)
            | Expr::Agg(_)
            | Expr::Subquery(_)
            | Expr::Exists(_) => {}
        }
        f(self);
    }

    /// The relations this expression reads, as a bit set.
    pub fn rels(&self) -> u64 {
        let mut m = 0u64;
        self.walk(&mut |e| {
            if let Expr::Column { rel, .. } = e {
                m |= 1 << rel;
            }
        });
        m
    }

    /// Whether the value is the same for every row (parameters and constants only).
    pub fn is_row_independent(&self) -> bool {
        let mut ok = true;
        self.walk(&mut |e| {
            // (A subquery's value is known once its statement runs, not before.)
            if matches!(
                e,
                Expr::Column { .. }
                    | Expr::Group(_)
                    | Expr::Agg(_)
                    | Expr::Subquery(_)
                    | Expr::Exists(_)
                    | Expr::InSubquery { .. }
                    | Expr::SubPlan { .. }
                    | Expr::Outer(_)
                    | Expr::Window(_)
            ) {
                ok = false;
            }
        });
        ok
    }

    /// Splits a conjunction into its terms.
    pub fn conjuncts(self, out: &mut Vec<Expr>) {
        match self {
            Expr::And(a, b) => {
                a.conjuncts(out);
                b.conjuncts(out);
            }
            e => out.push(e),
        }
    }
}

/// A correlated subquery's value for the row being looked at: run through the context's
/// runner with the row's values `args`, read as `kind` says.
fn eval_subplan<'a>(
    sub: usize,
    kind: SubqueryKind,
    args: &'a [Expr],
    test: Option<&'a (Box<Expr>, bool)>,
    src: &'a dyn ColumnSource,
    cx: &'a Cx<'a>,
) -> Result<Datum<'a>> {
    let Some(runner) = cx.runner else {
        return Err(SqlError::Unsupported("a correlated subquery here".into()));
    };
    let args = args
        .iter()
        .map(|a| Ok(a.eval(src, cx)?.into_value()))
        .collect::<Result<Vec<Value>>>()?;
    let values = runner.run(sub, args, cx)?;
    Ok(match (kind, test) {
        (SubqueryKind::Scalar | SubqueryKind::Array, _) => Datum::Owned(values.first().cloned().unwrap_or(Value::Null)),
        (SubqueryKind::Exists, _) => bool_datum(Some(!values.is_empty())),
        (SubqueryKind::In, None) => bool_datum(None),
        (SubqueryKind::In, Some((x, negated))) => {
            // Nothing is IN an empty set, NULL included.
            if values.is_empty() {
                return Ok(bool_datum(Some(*negated)));
            }
            let x = x.eval(src, cx)?;
            if x.is_null() {
                return Ok(bool_datum(None));
            }
            bool_datum(among(
                x.as_ref(),
                values.iter().map(|v| Ok(Datum::Ref(v.as_ref()))),
                *negated,
            )?)
        }
    })
}

fn truth(v: ValueRef<'_>) -> Result<Option<bool>> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Bool(b) => Ok(Some(b)),
        other => Err(SqlError::Type(format!(
            "argument of boolean context must be boolean, not {}",
            other.kind_name()
        ))),
    }
}

fn bool_datum<'a>(b: Option<bool>) -> Datum<'a> {
    Datum::Ref(b.map_or(ValueRef::Null, ValueRef::Bool))
}

impl Expr {
    /// Evaluates the expression. This is the executor's hot path: the cheap and common node
    /// kinds are evaluated here, in the match; IN lists, LIKE, CASE and negation, which
    /// loop or are rare, have their own functions (`eval_in_list`, `eval_like`, `eval_case`,
    /// `negate`).
    pub fn eval<'a>(&'a self, src: &'a dyn ColumnSource, cx: &'a Cx<'a>) -> Result<Datum<'a>> {
        Ok(match self {
            Expr::Column { rel, col } => Datum::Ref(src.column(*rel, *col)),
            Expr::Param(i) => Datum::Ref(cx.params.get(*i).map_or(ValueRef::Null, Value::as_ref)),
            Expr::Const(v) => Datum::Ref(v.as_ref()),
            Expr::Group(i) => Datum::Ref(cx.groups.get(*i).map_or(ValueRef::Null, Value::as_ref)),
            Expr::Agg(i) => Datum::Ref(cx.aggs.get(*i).map_or(ValueRef::Null, Value::as_ref)),
            Expr::Now => Datum::Ref(ValueRef::TimestampTz(cx.now)),
            Expr::Not(e) => bool_datum(truth(e.eval(src, cx)?.as_ref())?.map(|b| !b)),
            Expr::And(a, b) => {
                let x = truth(a.eval(src, cx)?.as_ref())?;
                if x == Some(false) {
                    return Ok(bool_datum(Some(false)));
                }
                let y = truth(b.eval(src, cx)?.as_ref())?;
                bool_datum(match (x, y) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Expr::Or(a, b) => {
                let x = truth(a.eval(src, cx)?.as_ref())?;
                if x == Some(true) {
                    return Ok(bool_datum(Some(true)));
                }
                let y = truth(b.eval(src, cx)?.as_ref())?;
                bool_datum(match (x, y) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
            Expr::Cmp(op, a, b) => {
                let (x, y) = (a.eval(src, cx)?, b.eval(src, cx)?);
                bool_datum(compare(x.as_ref(), y.as_ref())?.map(|o| op.test(o)))
            }
            Expr::IsNull { expr, negated } => {
                let n = expr.eval(src, cx)?.is_null();
                bool_datum(Some(n != *negated))
            }
            Expr::IsDistinct { left, right, negated } => {
                let (x, y) = (left.eval(src, cx)?, right.eval(src, cx)?);
                let distinct = total_compare(x.as_ref(), y.as_ref()) != Ordering::Equal;
                bool_datum(Some(distinct != *negated))
            }
            Expr::InList { expr, list, negated } => eval_in_list(expr, list, *negated, src, cx)?,
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => eval_like(expr, pattern, *negated, *case_insensitive, src, cx)?,
            Expr::Neg(e) => Datum::Owned(negate(e.eval(src, cx)?.as_ref())?),
            Expr::Arith(op, a, b) => {
                let (x, y) = (a.eval(src, cx)?, b.eval(src, cx)?);
                Datum::Owned(arith(*op, x.as_ref(), y.as_ref())?)
            }
            Expr::Concat(a, b) => {
                let (x, y) = (a.eval(src, cx)?, b.eval(src, cx)?);
                Datum::Owned(text::concat_pair(x.as_ref(), y.as_ref(), &cx.budget)?)
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => eval_case(operand.as_deref(), whens, otherwise.as_deref(), src, cx)?,
            Expr::Cast(e, ty) => {
                let v = e.eval(src, cx)?.into_value();
                Datum::Owned(cast(v, ty)?)
            }
            Expr::Func(f, args) => Datum::Owned(call(*f, args, src, cx)?),
            Expr::Subquery(n) => Datum::Ref(
                cx.subs
                    .get(*n)
                    .and_then(|v| v.first())
                    .map_or(ValueRef::Null, Value::as_ref),
            ),
            Expr::Exists(n) => bool_datum(Some(cx.subs.get(*n).is_some_and(|v| !v.is_empty()))),
            Expr::InSubquery { expr, sub, negated } => {
                let set = cx.subs.get(*sub).map_or(&[][..], Vec::as_slice);
                // Nothing is IN an empty set, NULL included.
                if set.is_empty() {
                    return Ok(bool_datum(Some(*negated)));
                }
                let x = expr.eval(src, cx)?;
                if x.is_null() {
                    return Ok(bool_datum(None));
                }
                bool_datum(among(
                    x.as_ref(),
                    set.iter().map(|v| Ok(Datum::Ref(v.as_ref()))),
                    *negated,
                )?)
            }
            Expr::SubPlan { sub, kind, args, test } => eval_subplan(*sub, *kind, args, test.as_ref(), src, cx)?,
            Expr::Outer(i) => Datum::Ref(cx.outer.get(*i).map_or(ValueRef::Null, Value::as_ref)),
            Expr::Window(i) => Datum::Ref(cx.windows.get(*i).map_or(ValueRef::Null, Value::as_ref)),
        })
    }

    /// Evaluates a predicate: true only when the value is `true`.
    #[inline]
    pub fn test(&self, src: &dyn ColumnSource, cx: &Cx<'_>) -> Result<bool> {
        Ok(truth(self.eval(src, cx)?.as_ref())? == Some(true))
    }

    /// Evaluates an expression that reads no columns.
    pub fn eval_const(&self, cx: &Cx<'_>) -> Result<Value> {
        Ok(self.eval(&NoColumns, cx)?.into_value())
    }
}

/// The call a column default that draws random values stands for (`Random`,
/// `RandomUuid`; `random()` for any other).
pub fn volatile_default(d: &permafrost_storage::ColumnDefault) -> Expr {
    match d {
        permafrost_storage::ColumnDefault::RandomUuid => Expr::Func(Func::GenRandomUuid, vec![]),
        _ => Expr::Func(Func::Random, vec![]),
    }
}

/// Evaluates `expr [NOT] IN (list)`: NULL when `expr` is NULL, or when no item equals it
/// and some item compares as NULL (as PostgreSQL does).
fn eval_in_list<'a>(
    expr: &'a Expr,
    list: &'a [Expr],
    negated: bool,
    src: &'a dyn ColumnSource,
    cx: &'a Cx<'a>,
) -> Result<Datum<'a>> {
    let x = expr.eval(src, cx)?;
    if x.is_null() {
        return Ok(bool_datum(None));
    }
    Ok(bool_datum(among(
        x.as_ref(),
        list.iter().map(|e| e.eval(src, cx)),
        negated,
    )?))
}

/// Whether `x` (not NULL) equals one of `items` (`negated`: none of them), as SQL answers
/// `IN` and `= ANY`: unknown (`None`) when none equals it and some item compares as NULL.
fn among<'a>(x: ValueRef<'_>, items: impl Iterator<Item = Result<Datum<'a>>>, negated: bool) -> Result<Option<bool>> {
    let mut saw_null = false;
    for y in items {
        match compare(x, y?.as_ref())? {
            Some(Ordering::Equal) => return Ok(Some(!negated)),
            None => saw_null = true,
            _ => {}
        }
    }
    Ok(if saw_null { None } else { Some(negated) })
}

/// Evaluates `expr [NOT] LIKE pattern` (`case_insensitive`: ILIKE) over text; NULL when
/// either side is.
fn eval_like<'a>(
    expr: &'a Expr,
    pattern: &'a Expr,
    negated: bool,
    case_insensitive: bool,
    src: &'a dyn ColumnSource,
    cx: &'a Cx<'a>,
) -> Result<Datum<'a>> {
    let (x, p) = (expr.eval(src, cx)?, pattern.eval(src, cx)?);
    Ok(match (x.as_ref(), p.as_ref()) {
        (ValueRef::Null, _) | (_, ValueRef::Null) => bool_datum(None),
        (ValueRef::Text(s), ValueRef::Text(p)) => {
            let m = if case_insensitive {
                like(&s.to_lowercase(), &p.to_lowercase())?
            } else {
                like(s, p)?
            };
            bool_datum(Some(m != negated))
        }
        (a, b) => {
            return Err(SqlError::NoOperator(format!(
                "{} LIKE {}",
                a.kind_name(),
                b.kind_name()
            )));
        }
    })
}

/// Unary minus of a number (NULL stays NULL); the one bigint without a negation overflows.
fn negate(x: ValueRef<'_>) -> Result<Value> {
    Ok(match x {
        ValueRef::Null => Value::Null,
        ValueRef::Int(i) => Value::Int(i.checked_neg().ok_or_else(|| overflow("bigint"))?),
        ValueRef::Double(d) => Value::Double(-d),
        ValueRef::Decimal(d) => Value::Decimal(d.negate()),
        ValueRef::Interval(x) => Value::Interval(x.negate().ok_or(SqlError::Math {
            sqlstate: "22008",
            message: "interval out of range",
        })?),
        other => {
            return Err(SqlError::NoOperator(format!("- {}", other.kind_name())));
        }
    })
}

/// Evaluates `CASE [operand] WHEN ... THEN ... [ELSE ...] END`: the result of the first
/// WHEN that equals the operand (without an operand: that is true), else the ELSE result
/// (or NULL).
fn eval_case<'a>(
    operand: Option<&'a Expr>,
    whens: &'a [(Expr, Expr)],
    otherwise: Option<&'a Expr>,
    src: &'a dyn ColumnSource,
    cx: &'a Cx<'a>,
) -> Result<Datum<'a>> {
    let op = match operand {
        Some(o) => Some(o.eval(src, cx)?),
        None => None,
    };
    for (w, then) in whens {
        let hit = match &op {
            Some(o) => compare(o.as_ref(), w.eval(src, cx)?.as_ref())? == Some(Ordering::Equal),
            None => truth(w.eval(src, cx)?.as_ref())? == Some(true),
        };
        if hit {
            return then.eval(src, cx);
        }
    }
    Ok(match otherwise {
        Some(e) => e.eval(src, cx)?,
        None => Datum::Ref(ValueRef::Null),
    })
}

/// A json operator or function of arguments `v`, none NULL.
fn json_strict(f: Func, v: &[Datum<'_>]) -> Result<Value> {
    let doc = |i: usize| -> Result<String> {
        match v[i].as_ref() {
            ValueRef::Text(t) => Ok(t.to_string()),
            other => Err(SqlError::Type(format!("{} is not json", other.kind_name()))),
        }
    };
    let keys =
        |i: usize| -> Result<Vec<Option<String>>> { Ok(crate::array::elements_of(v[i].as_ref())?.unwrap_or_default()) };
    Ok(match f {
        Func::JsonGet { text } => json::get(&doc(0)?, v[1].as_ref(), text)?,
        Func::JsonPath { text } => json::path(&doc(0)?, &keys(1)?, text)?,
        Func::JsonContains => Value::Bool(json::contains(&doc(0)?, &doc(1)?)?),
        Func::JsonExists(json::Exists::One) => {
            Value::Bool(json::exists(&doc(0)?, &[Some(doc(1)?)], json::Exists::One)?)
        }
        Func::JsonExists(mode) => Value::Bool(json::exists(&doc(0)?, &keys(1)?, mode)?),
        Func::JsonTypeof => json::type_of(&doc(0)?)?,
        Func::JsonArrayLength => json::array_length(&doc(0)?)?,
        _ => unreachable!("json_strict is called for json functions only"),
    })
}

fn call(f: Func, args: &[Expr], src: &dyn ColumnSource, cx: &Cx<'_>) -> Result<Value> {
    let arg = |i: usize| -> Result<Value> { Ok(args[i].eval(src, cx)?.into_value()) };
    let all = || -> Result<Vec<Value>> { args.iter().map(|a| Ok(a.eval(src, cx)?.into_value())).collect() };
    Ok(match f {
        Func::AnyEq { elem, negated } => {
            let x = args[0].eval(src, cx)?;
            let values = match args[1].eval(src, cx)?.as_ref() {
                ValueRef::Null => return Ok(Value::Null),
                ValueRef::Text(t) => cx.arrays.values(t, elem)?,
                other => return Err(crate::array::not_an_array(other)),
            };
            if x.is_null() {
                return Ok(if values.is_empty() {
                    Value::Bool(negated)
                } else {
                    Value::Null
                });
            }
            let items = values.iter().map(|v| Ok(Datum::Ref(v.as_ref())));
            among(x.as_ref(), items, negated)?.map_or(Value::Null, Value::Bool)
        }
        Func::AnyCmp { elem, op, all } => {
            let x = args[0].eval(src, cx)?;
            let values = match args[1].eval(src, cx)?.as_ref() {
                ValueRef::Null => return Ok(Value::Null),
                ValueRef::Text(t) => cx.arrays.values(t, elem)?,
                other => return Err(crate::array::not_an_array(other)),
            };
            array::compare_all(x.as_ref(), &values, op, all)?
        }
        Func::JsonGet { .. }
        | Func::JsonPath { .. }
        | Func::JsonContains
        | Func::JsonExists(_)
        | Func::JsonTypeof
        | Func::JsonArrayLength => {
            let values = args.iter().map(|a| a.eval(src, cx)).collect::<Result<Vec<_>>>()?;
            if values.iter().any(|v| v.is_null()) {
                return Ok(Value::Null);
            }
            json_strict(f, &values)?
        }
        Func::ToJson { from, jsonb } => {
            let v = arg(0)?;
            let text = json::to_json(v.as_ref(), from);
            Value::text(if jsonb { json::normalized(&text)? } else { text })
        }
        Func::JsonBuildObject { jsonb, compact } => {
            let mut pairs = Vec::with_capacity(args.len() / 2);
            for (i, kv) in args.chunks(2).enumerate() {
                let key = match kv[0].eval(src, cx)?.into_value() {
                    Value::Null => {
                        return Err(SqlError::NullArgument(format!("argument {} cannot be null", 2 * i + 1)));
                    }
                    k => cast(k, &DataType::Varchar(None))?.to_string(),
                };
                pairs.push((key, kv[1].eval(src, cx)?.into_value().to_string()));
            }
            json::build_object(&pairs, jsonb, compact)?
        }
        // 53 random bits as a double in [0, 1), as PostgreSQL's random() has them.
        Func::Random => Value::Double((cx.draw()? >> 11) as f64 * (1.0 / (1u64 << 53) as f64)),
        Func::CurrVal { table } => {
            let name = match args.first() {
                Some(a) => a.eval(src, cx)?.into_value().to_string(),
                None => String::new(),
            };
            let draws = cx.draws.ok_or_else(|| {
                SqlError::Unsupported(format!(
                    "{name}: a sequence function in a value computed once when the statement is planned"
                ))
            })?;
            Value::Int(draws.currval(table, &name)?)
        }
        Func::NextVal { table, step } | Func::SetVal { table, step } => {
            let name = arg(0)?.to_string();
            let draws = cx.draws.ok_or_else(|| {
                SqlError::Unsupported(format!(
                    "{name}: a sequence function in a value computed once when the statement is planned"
                ))
            })?;
            if matches!(f, Func::NextVal { .. }) {
                return Ok(Value::Int(draws.nextval(table, &name, step)?));
            }
            let v = match arg(1)? {
                Value::Int(v) => v,
                _ => return Ok(Value::Null),
            };
            let called = match args.get(2) {
                Some(b) => match b.eval(src, cx)?.into_value() {
                    Value::Bool(b) => b,
                    _ => return Ok(Value::Null),
                },
                None => true,
            };
            if v < step.min || v > step.max {
                return Err(SqlError::SequenceBounds {
                    value: v,
                    name,
                    min: step.min,
                    max: step.max,
                });
            }
            let last = if called { v } else { v.saturating_sub(step.increment) };
            draws.setval(table, last, called)?;
            Value::Int(v)
        }
        Func::GenRandomUuid => {
            let bits = (u128::from(cx.draw()?) << 64) | u128::from(cx.draw()?);
            Value::Uuid(permafrost_types::uuid_v4(bits).to_be_bytes())
        }
        Func::ArrayOf { elem } => {
            let ty = elem.map_or(DataType::Varchar(None), |e| e.data_type());
            let values = args
                .iter()
                .map(|a| cast(a.eval(src, cx)?.into_value(), &ty))
                .collect::<Result<Vec<_>>>()?;
            array::literal_checked(&values, &cx.budget)?
        }
        Func::JsonEdit(op) => {
            let values = all()?;
            jsonb_edit::eval(op, &values, &cx.budget)?
        }
        Func::Format => {
            let values = all()?;
            match &values[0] {
                Value::Null => Value::Null,
                f => format::format(&f.to_string(), &values[1..], &cx.budget)?,
            }
        }
        Func::QuoteIdent | Func::QuoteLiteral { .. } => {
            let v = arg(0)?;
            let quoted = match (f, &v) {
                (Func::QuoteLiteral { nullable: true }, Value::Null) => "NULL".to_string(),
                (_, Value::Null) => return Ok(Value::Null),
                (Func::QuoteIdent, v) => format::quote_ident(&v.to_string()),
                (_, v) => format::quote_literal(&v.to_string()),
            };
            cx.budget.check(quoted.len())?;
            Value::text(quoted)
        }
        Func::Regex(f) => {
            let values = all()?;
            regex::eval(f, &values, &cx.budget)?
        }
        Func::Array { f, elem } => {
            let values = all()?;
            array::eval(f, elem, &values, &cx.budget)?
        }
        Func::Coalesce => {
            for a in args {
                let v = a.eval(src, cx)?;
                if !v.is_null() {
                    return Ok(v.into_value());
                }
            }
            Value::Null
        }
        Func::NullIf => {
            let (a, b) = (arg(0)?, arg(1)?);
            if compare(a.as_ref(), b.as_ref())? == Some(Ordering::Equal) {
                Value::Null
            } else {
                a
            }
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for a in args {
                let v = a.eval(src, cx)?.into_value();
                if v.is_null() {
                    continue;
                }
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = compare(v.as_ref(), b.as_ref())?.unwrap_or(Ordering::Equal);
                        let take = if f == Func::Greatest {
                            o == Ordering::Greater
                        } else {
                            o == Ordering::Less
                        };
                        if take { v } else { b }
                    }
                });
            }
            best.unwrap_or(Value::Null)
        }
        Func::Concat => {
            let values = args.iter().map(|a| a.eval(src, cx)).collect::<Result<Vec<_>>>()?;
            text::concat_all(&values, &cx.budget)?
        }
        Func::ConcatWs => {
            let sep = args[0].eval(src, cx)?;
            if sep.is_null() {
                return Ok(Value::Null);
            }
            let values = args[1..].iter().map(|a| a.eval(src, cx)).collect::<Result<Vec<_>>>()?;
            text::concat_ws(&sep.as_ref().to_string(), &values, &cx.budget)?
        }
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Mod => {
            let (a, b) = (arg(0)?, arg(1)?);
            if a.is_null() || b.is_null() {
                return Ok(Value::Null);
            }
            arith(ArithOp::Mod, a.as_ref(), b.as_ref())?
        }
        Func::Trim
        | Func::Ltrim
        | Func::Rtrim
        | Func::Left
        | Func::Right
        | Func::Lpad
        | Func::Rpad
        | Func::Repeat
        | Func::Replace
        | Func::Reverse
        | Func::Initcap
        | Func::Translate
        | Func::SplitPart
        | Func::Strpos
        | Func::StartsWith
        | Func::Chr
        | Func::Ascii
        | Func::ToHex { .. }
        | Func::Md5
        | Func::Inet(_)
        | Func::OctetLength
        | Func::Math(_)
        | Func::Sign
        | Func::Trunc
        | Func::DatePart { .. }
        | Func::DateTrunc
        | Func::ToChar
        | Func::Age
        | Func::Justify(_)
        | Func::MakeInterval
        | Func::MakeDatetime(_)
        | Func::Clock { .. }
        | Func::AtTimeZone { .. } => {
            let values = args.iter().map(|a| a.eval(src, cx)).collect::<Result<Vec<_>>>()?;
            if values.iter().any(|v| v.is_null()) {
                return Ok(Value::Null);
            }
            func::strict(f, &values, cx)?
        }
        _ => {
            let v = arg(0)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            match (f, v) {
                (Func::Abs, Value::Int(i)) => Value::Int(i.checked_abs().ok_or_else(|| overflow("bigint"))?),
                (Func::Abs, Value::Double(d)) => Value::Double(d.abs()),
                (Func::Abs, Value::Decimal(d)) => Value::Decimal(d.as_ref().abs()),
                (Func::Lower, Value::Text(s)) => text::change_case(&s, false, &cx.budget)?,
                (Func::Upper, Value::Text(s)) => text::change_case(&s, true, &cx.budget)?,
                (Func::Length, Value::Text(s)) => Value::Int(s.chars().count() as i64),
                (Func::Length, Value::Bytes(b)) => Value::Int(b.len() as i64),
                (Func::Substring, Value::Text(s)) => {
                    let start = arg(1)?.as_i64().unwrap_or(1);
                    let len = if args.len() > 2 { arg(2)?.as_i64() } else { None };
                    text::substring(&s, start, len, &cx.budget)?
                }
                (Func::Round, v) => {
                    let digits = if args.len() > 1 {
                        arg(1)?.as_i64().unwrap_or(0)
                    } else {
                        0
                    };
                    match v {
                        Value::Int(i) => Value::Int(i),
                        Value::Double(d) => {
                            let m = 10f64.powi(digits as i32);
                            Value::Double((d * m).round() / m)
                        }
                        Value::Decimal(d) => Value::Decimal(
                            d.as_ref()
                                .round(digits.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
                                .map_err(numeric_err)?,
                        ),
                        other => {
                            return Err(SqlError::Type(format!(
                                "function round({}) does not exist",
                                other.as_ref().kind_name()
                            )));
                        }
                    }
                }
                (Func::Floor, Value::Double(d)) => Value::Double(d.floor()),
                (Func::Floor, Value::Decimal(d)) => Value::Decimal(d.as_ref().floor().map_err(numeric_err)?),
                (Func::Floor, v @ Value::Int(_)) => v,
                (Func::Ceil, Value::Double(d)) => Value::Double(d.ceil()),
                (Func::Ceil, Value::Decimal(d)) => Value::Decimal(d.as_ref().ceil().map_err(numeric_err)?),
                (Func::Ceil, v @ Value::Int(_)) => v,
                (f, v) => {
                    return Err(SqlError::Type(format!(
                        "function {f:?}({}) does not exist",
                        v.as_ref().kind_name()
                    )));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests;
