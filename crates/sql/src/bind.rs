//! Binding: syntax trees to [`Expr`]s, with names resolved against the catalog and types
//! inferred.
//!
//! Identifiers fold to lower case unless quoted, as in PostgreSQL. A parameter takes the
//! type of what it is compared with or assigned to; parameters whose type cannot be
//! inferred are passed through as given.

use std::sync::Arc;

use permafrost_storage::TableSchema;
use permafrost_types::{DataType, Value};
use sqlparser::ast::{self, BinaryOperator, CastKind, Ident, ObjectName, Spanned, UnaryOperator};

use crate::catalog::Catalog;
use crate::error::{Point, Result, SqlError, unsupported};
use crate::expr::AggCall;
use crate::expr::{ArithOp, CmpOp, Expr, Func};
use crate::limits::{Depth, balanced};
use crate::plan::tree::{DerivedRel, InitPlan, Lateral, SetTree, SubqueryKind};
use crate::rows::ColumnInfo;

mod aggregate;
mod array;
pub mod call;
mod case;
mod inet;
mod json;
mod literal;
mod pattern;
mod row_compare;
mod sequence;
mod subquery;
mod window;
pub use literal::{
    Typed, common_type, ident, map_type, map_type_in, name_in_text, name_parts, object_name, unqualified,
};
use literal::{integer_literal, literal_as, number_literal, typed_string};

/// Most relations one query may join (PostgreSQL has no such limit): the binder refuses
/// more; the planner keeps sets of relations as bits of a `u64` (re-exported as
/// `plan::MAX_RELS`).
pub const MAX_RELS: usize = 64;

/// A query of a WITH list (a common table expression): named in FROM, it is read as a
/// subquery in FROM, its columns named `columns` first.
#[derive(Debug)]
pub struct Cte {
    pub name: String,
    pub query: ast::Query,
    pub columns: Vec<String>,
    /// Of `WITH RECURSIVE`: it may read itself.
    pub recursive: bool,
    /// While its recursive step is planned: the slot and columns of the rows the step
    /// reads as this name (`SetTree::Working`).
    pub working: Option<(usize, Arc<[ColumnInfo]>)>,
}

/// A relation in the FROM list.
#[derive(Debug, Clone)]
pub struct Rel {
    pub alias: String,
    pub schema: Arc<TableSchema>,
    /// For the relation a FULL JOIN of more than two tables is read as (`plan/from.rs`,
    /// `full_join`): by column, the name of the FROM item inside that qualifies it (`None`:
    /// a `USING` column, found by its name alone), so that `a.x` still finds `a`'s column.
    pub members: Option<Arc<[Option<String>]>>,
}

impl Rel {
    /// Whether `name` qualifies columns of this relation: its alias, or a FROM item inside
    /// it ([`Rel::members`]).
    pub fn answers_to(&self, name: &str) -> bool {
        self.alias == name || self.member_columns(name).next().is_some()
    }

    /// The columns of FROM item `name` inside this relation ([`Rel::members`]).
    pub fn member_columns<'a>(&'a self, name: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.members
            .iter()
            .flat_map(|m| m.iter().enumerate())
            .filter(move |(_, m)| m.as_deref() == Some(name))
            .map(|(c, _)| c)
    }
}

pub struct Binder<'c> {
    pub catalog: &'c Catalog,
    pub params: Vec<Option<DataType>>,
    /// The parameters that are arrays (`x = ANY($1)`), with their elements' type. Their
    /// entry in `params` stays empty: the value is the array literal's text, read where it
    /// is compared.
    pub array_params: Vec<(usize, Option<DataType>)>,
    pub rels: Vec<Rel>,
    /// Aggregates found so far; `None` where aggregates are not allowed.
    pub aggs: Option<Vec<AggCall>>,
    /// Window function calls found so far; `None` where they are not allowed.
    pub windows: Option<Vec<crate::expr::window::WindowCall>>,
    /// The windows of the query's WINDOW clause, by name, each merged with the one it
    /// is built on (`bind/window.rs`).
    pub named_windows: Vec<(String, ast::WindowSpec)>,
    /// How deep the expression being bound nests ([`crate::limits::MAX_EXPR_DEPTH`]).
    depth: Depth,
    /// The subqueries met so far in this statement's expressions (at this level; a
    /// subquery's own are its plan's), numbered as `Expr::Subquery` reads them.
    pub init: Vec<Arc<InitPlan>>,
    /// Plans a subquery with a binder of its own (the planner sets it: this file comes
    /// before the planner's); `None` where subqueries are not planned.
    pub plan_subquery: Option<SubqueryPlanner>,
    /// The subqueries in FROM (views and CTEs included) among `rels`.
    pub derived: Vec<DerivedRel>,
    /// The LATERAL subqueries in FROM among `rels` (by relation): computed per entry of
    /// their level from the tuples bound before it.
    pub lateral: Vec<(usize, Arc<Lateral>)>,
    /// The WITH queries this query may name in FROM, innermost last.
    pub ctes: Vec<Arc<Cte>>,
    /// The columns `SELECT *` shows, in order (relation, column): each FROM item's, a
    /// `JOIN ... USING` column once, first (`plan/select.rs`, `from_item`).
    pub star: Vec<(usize, usize)>,
    /// The copies of `JOIN ... USING` columns that an unqualified name does not find (the
    /// null-extended side's, or the right side's of an inner join).
    pub hidden: Vec<(usize, usize)>,
    /// The right side of the query's FULL JOIN, if it has one.
    pub full_join: Option<usize>,
    /// The clause being bound, as PostgreSQL names it where it refuses an aggregate or
    /// window call there ("WHERE", "GROUP BY", ...); `None` in the select list, HAVING and
    /// ORDER BY, and inside an aggregate or window call (whose calls "cannot be nested").
    pub clause: Option<&'static str>,
    /// The relations of the queries around this one, outermost first: a column this
    /// query does not have is looked for there, innermost first (a correlated subquery).
    outer: Vec<Arc<[Rel]>>,
    /// The values of the queries around this one that it reads, as (level in `outer`,
    /// relation, column): `Expr::Outer(i)` reads the `i`-th (`bind/subquery.rs`).
    outer_refs: Vec<(usize, usize, usize)>,
}

/// Whether `name` (lowercase) is a set-returning function: called in FROM, or once in a
/// select list (`plan/srf.rs`), never where one value is needed.
pub(crate) fn is_set_returning(name: &str) -> bool {
    matches!(
        name,
        "generate_series"
            | "pg_catalog.generate_series"
            | "unnest"
            | "pg_catalog.unnest"
            | "generate_subscripts"
            | "regexp_split_to_table"
            | "regexp_matches"
            | "jsonb_array_elements"
            | "jsonb_array_elements_text"
            | "json_array_elements"
            | "json_array_elements_text"
            | "jsonb_object_keys"
            | "jsonb_each"
            | "jsonb_each_text"
    )
}

/// Plans a subquery (a SELECT or a set operation of them) with `sub`, a binder whose
/// parameters are its statement's.
pub type SubqueryPlanner = fn(sub: &mut Binder<'_>, q: &ast::Query) -> Result<(SetTree, Vec<ColumnInfo>)>;

impl<'c> Binder<'c> {
    pub fn new(catalog: &'c Catalog) -> Binder<'c> {
        Binder {
            catalog,
            params: Vec::new(),
            array_params: Vec::new(),
            rels: Vec::new(),
            aggs: None,
            windows: None,
            named_windows: Vec::new(),
            depth: Depth::default(),
            init: Vec::new(),
            plan_subquery: None,
            derived: Vec::new(),
            lateral: Vec::new(),
            ctes: Vec::new(),
            star: Vec::new(),
            hidden: Vec::new(),
            full_join: None,
            clause: None,
            outer: Vec::new(),
            outer_refs: Vec::new(),
        }
    }

    /// The table `name` names (a view is no table: it is read in FROM, never written).
    pub fn table(&self, name: &ObjectName) -> Result<Arc<TableSchema>> {
        let n = object_name(name)?;
        if self.catalog.view(&n).is_some() {
            return unsupported(format!("writing to view \"{n}\" (views are read-only here)"));
        }
        self.catalog.table(&n).cloned().ok_or(SqlError::UnknownTable(n))
    }

    /// Binds `e` as part of `clause` ([`Binder::clause`]).
    pub fn expr_in(&mut self, clause: &'static str, e: &ast::Expr) -> Result<Typed> {
        let saved = self.clause.replace(clause);
        let r = self.expr(e);
        self.clause = saved;
        match r {
            Ok((mut x, t)) if clause == "WHERE" => {
                x.walk_mut(&mut fold_strict_null);
                Ok((x, t))
            }
            r => r,
        }
    }

    /// What refusing an aggregate (`kind` "aggregate") or window call where the binder is
    /// says, in PostgreSQL's words.
    pub(crate) fn not_allowed(&self, kind: &str) -> String {
        match self.clause {
            Some(c) => format!("{kind} functions are not allowed in {c}"),
            None => format!("{kind} function calls cannot be nested"),
        }
    }

    /// Refuses `alias` if a relation of the scope already answers to it (42712).
    pub fn alias_unused(&self, alias: &str) -> Result<()> {
        if self.rels.iter().any(|r| r.answers_to(alias)) {
            return Err(SqlError::DuplicateAlias(format!(
                "table name \"{alias}\" specified more than once"
            )));
        }
        Ok(())
    }

    /// Adds a relation to the scope and returns its number.
    pub fn add_rel(&mut self, schema: Arc<TableSchema>, alias: Option<&Ident>) -> Result<usize> {
        // (Named by its bare name, as PostgreSQL names `s.t`: `t`.)
        let alias = alias
            .map(ident)
            .unwrap_or_else(|| crate::namespace::bare(&schema.name).to_string());
        self.alias_unused(&alias)?;
        if self.rels.len() >= MAX_RELS {
            return unsupported(format!("more than {MAX_RELS} tables in one statement"));
        }
        self.rels.push(Rel {
            alias,
            schema,
            members: None,
        });
        Ok(self.rels.len() - 1)
    }

    fn column(&mut self, parts: &[Ident]) -> Result<Typed> {
        // An ambiguous name is placed at this reference (the statement may name the column
        // earlier elsewhere: `SET n = n + 1`).
        self.column_named(parts).map_err(|e| match (e, parts.first()) {
            (e @ SqlError::AmbiguousColumn(_), Some(first)) if first.span.start.line > 0 => SqlError::At {
                error: Box::new(e),
                line: first.span.start.line,
                column: first.span.start.column,
                point: crate::error::Point::Start,
            },
            (e, _) => e,
        })
    }

    fn column_named(&mut self, parts: &[Ident]) -> Result<Typed> {
        let names: Vec<String> = parts.iter().map(ident).collect();
        let unknown = |names: &[String]| match names {
            [one] => SqlError::UnknownColumn(one.clone()),
            _ => SqlError::UnknownQualifiedColumn(names.join(".")),
        };
        let (qual, col) = match names.as_slice() {
            [c] => (None, c),
            [t, c] => (Some(t.as_str()), c),
            [_schema, t, c] => (Some(t.as_str()), c),
            _ => return Err(unknown(&names)),
        };
        let known = |rels: &[Rel], q: &str| rels.iter().any(|r| r.answers_to(q));
        if let Some((rel, col)) = find_column(&self.rels, qual, col, &self.hidden)? {
            return Ok((Expr::Column { rel, col }, Some(self.rels[rel].schema.columns[col].ty)));
        }
        if qual.is_some_and(|q| known(&self.rels, q)) {
            return Err(unknown(&names));
        }
        // A column of a query around this one: read as a value this subquery runs with.
        for level in (0..self.outer.len()).rev() {
            let found = find_column(&self.outer[level], qual, col, &[])?;
            if found.is_none() && qual.is_some_and(|q| known(&self.outer[level], q)) {
                return Err(unknown(&names));
            }
            if let Some((rel, c)) = found {
                let ty = self.outer[level][rel].schema.columns[c].ty;
                return Ok((Expr::Outer(self.outer_ref((level, rel, c))), Some(ty)));
            }
        }
        match qual {
            Some(q) if !known(&self.rels, q) && !self.outer.iter().any(|o| known(o, q)) => {
                Err(SqlError::MissingFromEntry(q.to_string()))
            }
            _ => Err(unknown(&names)),
        }
    }

    fn param(&mut self, name: &str) -> Result<Typed> {
        let n: usize = name
            .strip_prefix('$')
            .and_then(|s| s.parse().ok())
            .filter(|&n: &usize| (1..=65535).contains(&n))
            .ok_or_else(|| SqlError::Syntax(format!("syntax error: bad parameter {name}")))?;
        if self.params.len() < n {
            self.params.resize(n, None);
        }
        Ok((Expr::Param(n - 1), self.params[n - 1]))
    }

    /// Gives an untyped parameter the type `ty`.
    pub fn infer(&mut self, e: &Expr, ty: Option<DataType>) {
        if let (Expr::Param(i), Some(t)) = (e, ty)
            && self.params[*i].is_none()
        {
            self.params[*i] = Some(t);
        }
    }

    fn binary(&mut self, l: &ast::Expr, op: &BinaryOperator, r: &ast::Expr) -> Result<Typed> {
        if matches!(
            op,
            BinaryOperator::And | BinaryOperator::Or | BinaryOperator::StringConcat
        ) {
            return self.chain(l, op, r);
        }
        if Self::is_json_op(op) {
            return self.json_op(l, op, r);
        }
        if let Some(bound) = self.row_comparison(l, op, r) {
            return bound;
        }
        let (a, at) = self.expr(l)?;
        let (b, bt) = self.expr(r)?;
        if let Some((icase, negated)) = regex_op(op) {
            // (A quoted literal is `unknown` in the message, as PostgreSQL names it.)
            let shown = |e: &ast::Expr, t: Option<DataType>| {
                let quoted = matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)));
                if quoted { None } else { t }
            };
            if at.is_some_and(|t| !t.is_text()) || bt.is_some_and(|t| !t.is_text()) {
                let names = format!("{} {op} {}", type_name(shown(l, at)), type_name(shown(r, bt)));
                return Err(SqlError::NoOperator(names).at(l.span(), Point::After));
            }
            self.infer(&a, Some(DataType::Varchar(None)));
            self.infer(&b, Some(DataType::Varchar(None)));
            let f = Func::Regex(crate::expr::regex::RegexFn::Match { icase, negated });
            return Ok((Expr::Func(f, vec![a, b]), Some(DataType::Boolean)));
        }
        if at == Some(DataType::Jsonb) && *op == BinaryOperator::Minus {
            return self.jsonb_minus(a, b, bt);
        }
        let (a, at) = literal_as(a, at, bt).map_err(|e| e.at(crate::error::start_of(l), Point::Start))?;
        let (b, bt) = literal_as(b, bt, at).map_err(|e| e.at(crate::error::start_of(r), Point::Start))?;
        self.infer(&a, bt);
        self.infer(&b, at);
        let (at, bt) = (at.or(self.param_type(&a)), bt.or(self.param_type(&b)));
        if matches!(at, Some(DataType::Array(_))) || matches!(bt, Some(DataType::Array(_))) {
            return self.array_binary(op, (a, at), (b, bt), l);
        }
        if let Some((aop, sym)) = arith_of(op)
            && let (Some(x), Some(y)) = (at, bt)
            && arith_type(aop, at, bt).is_none()
        {
            // As PostgreSQL, when the statement is planned (not when a row meets it), at
            // the operator.
            let names = format!("{} {sym} {}", type_name(Some(x)), type_name(Some(y)));
            return Err(SqlError::NoOperator(names).at(l.span(), Point::After));
        }
        if let Some(f) = self.typed_operator(op, at, bt, l)? {
            return Ok((Expr::Func(Func::Inet(f), vec![a, b]), Some(DataType::Boolean)));
        }
        let (a, b) = (a.boxed(), b.boxed());
        Ok(match op {
            BinaryOperator::Eq => (Expr::Cmp(CmpOp::Eq, a, b), Some(DataType::Boolean)),
            BinaryOperator::NotEq => (Expr::Cmp(CmpOp::NotEq, a, b), Some(DataType::Boolean)),
            BinaryOperator::Lt => (Expr::Cmp(CmpOp::Lt, a, b), Some(DataType::Boolean)),
            BinaryOperator::LtEq => (Expr::Cmp(CmpOp::LtEq, a, b), Some(DataType::Boolean)),
            BinaryOperator::Gt => (Expr::Cmp(CmpOp::Gt, a, b), Some(DataType::Boolean)),
            BinaryOperator::GtEq => (Expr::Cmp(CmpOp::GtEq, a, b), Some(DataType::Boolean)),
            BinaryOperator::Plus => arith(ArithOp::Add, a, b, at, bt),
            BinaryOperator::Minus => arith(ArithOp::Sub, a, b, at, bt),
            BinaryOperator::Multiply => arith(ArithOp::Mul, a, b, at, bt),
            BinaryOperator::Divide => arith(ArithOp::Div, a, b, at, bt),
            BinaryOperator::Modulo => arith(ArithOp::Mod, a, b, at, bt),
            other => return unsupported(format!("operator {other}")),
        })
    }

    /// Binds a chain of one associative operator (`a AND b AND c`, `OR`, `||`) as a
    /// balanced tree: the parser's tree of an n-term chain is n deep, the bound one log2 n
    /// (crate::limits). The chain's left spine is followed without recursion.
    fn chain(&mut self, l: &ast::Expr, op: &BinaryOperator, r: &ast::Expr) -> Result<Typed> {
        let mut rights = vec![r];
        let mut first = l;
        while let ast::Expr::BinaryOp { left, op: o, right } = first
            && o == op
        {
            rights.push(right);
            first = left;
        }
        let term_type = if *op == BinaryOperator::StringConcat {
            DataType::Varchar(None)
        } else {
            DataType::Boolean
        };
        let mut typed = Vec::with_capacity(rights.len() + 1);
        let asts: Vec<&ast::Expr> = std::iter::once(first).chain(rights.into_iter().rev()).collect();
        for t in &asts {
            typed.push(self.expr(t)?);
        }
        if typed.iter().any(|(_, t)| matches!(t, Some(DataType::Array(_)))) {
            return self.array_concat(typed);
        }
        if *op == BinaryOperator::StringConcat && typed.iter().any(|(_, t)| *t == Some(DataType::Jsonb)) {
            return self.jsonb_concat(typed, &asts);
        }
        let mut terms = Vec::with_capacity(typed.len());
        for (x, _) in typed {
            self.infer(&x, Some(term_type));
            terms.push(x);
        }
        Ok(match op {
            BinaryOperator::And => (
                balanced(terms, &|a: Expr, b: Expr| Expr::And(a.boxed(), b.boxed())),
                Some(DataType::Boolean),
            ),
            BinaryOperator::Or => (
                balanced(terms, &|a: Expr, b: Expr| Expr::Or(a.boxed(), b.boxed())),
                Some(DataType::Boolean),
            ),
            _ => (
                balanced(terms, &|a: Expr, b: Expr| Expr::Concat(a.boxed(), b.boxed())),
                Some(DataType::Varchar(None)),
            ),
        })
    }

    fn param_type(&self, e: &Expr) -> Option<DataType> {
        match e {
            Expr::Param(i) => self.params[*i],
            _ => None,
        }
    }

    /// Binds an expression.
    pub fn expr(&mut self, e: &ast::Expr) -> Result<Typed> {
        self.depth.enter()?;
        // An error is placed at the innermost node it arose in (PostgreSQL's error cursor).
        // (A deep tree takes a new stack segment where this one runs short: how much one
        // level takes is the compiler's, not the statement's.)
        let r = crate::limits::deep(|| self.expr_at(e)).map_err(|err| {
            if err.placeable() {
                err.at(crate::error::start_of(e), Point::Start)
            } else {
                err
            }
        });
        self.depth.leave();
        r
    }

    /// Binds one expression node (one nesting level; [`Binder::expr`] counts the depth).
    /// Each kind of node with more than a line of binding has its own function below.
    fn expr_at(&mut self, e: &ast::Expr) -> Result<Typed> {
        use ast::Expr as A;
        Ok(match e {
            A::Identifier(i) => self.column(std::slice::from_ref(i))?,
            A::CompoundIdentifier(parts) => self.column(parts)?,
            A::Value(v) => self.literal(&v.value)?,
            A::Nested(inner) => self.expr(inner)?,
            A::BinaryOp { left, op, right } => self.binary(left, op, right)?,
            A::UnaryOp { op, expr } => self.unary(op, expr)?,
            A::IsNull(x) | A::IsNotNull(x) => self.is_null(x, matches!(e, A::IsNotNull(_)))?,
            A::IsTrue(x) | A::IsNotTrue(x) | A::IsFalse(x) | A::IsNotFalse(x) => self.is_boolean(
                x,
                matches!(e, A::IsTrue(_) | A::IsNotTrue(_)),
                matches!(e, A::IsTrue(_) | A::IsFalse(_)),
            )?,
            A::IsDistinctFrom(a, b) | A::IsNotDistinctFrom(a, b) => {
                self.is_distinct(a, b, matches!(e, A::IsNotDistinctFrom(..)))?
            }
            A::InList { expr, list, negated } => self.in_list(expr, list, *negated)?,
            A::Subquery(q) => self.subquery(q, SubqueryKind::Scalar, None)?,
            A::Exists { subquery, negated } => {
                let (e, t) = self.subquery(subquery, SubqueryKind::Exists, None)?;
                if *negated { (Expr::Not(e.boxed()), t) } else { (e, t) }
            }
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => self.subquery(subquery, SubqueryKind::In, Some((expr, *negated)))?,
            // `x = ANY (SELECT ...)` is `x IN (SELECT ...)`, `x <> ALL (...)` NOT IN.
            A::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            }
            | A::AllOp {
                left,
                compare_op: BinaryOperator::NotEq,
                right,
            } if matches!(**right, A::Subquery(_)) => {
                let A::Subquery(q) = &**right else {
                    unreachable!("matched")
                };
                self.subquery(q, SubqueryKind::In, Some((left, matches!(e, A::AllOp { .. }))))?
            }
            A::AnyOp { right, .. } | A::AllOp { right, .. } if matches!(**right, A::Subquery(_)) => {
                return unsupported("comparisons with ANY or ALL of a subquery other than = ANY and <> ALL");
            }
            A::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            } => self.any_op(left, right, false)?,
            A::AllOp {
                left,
                compare_op: BinaryOperator::NotEq,
                right,
            } => self.any_op(left, right, true)?,
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.cmp_array(left, compare_op, right, false)?,
            A::AllOp {
                left,
                compare_op,
                right,
            } => self.cmp_array(left, compare_op, right, true)?,
            A::Between {
                expr,
                negated,
                low,
                high,
            } => self.between(expr, low, high, *negated)?,
            A::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any,
                ..
            }
            | A::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                any,
                ..
            } => {
                if *any {
                    return unsupported("LIKE ANY");
                }
                let ilike = matches!(e, A::ILike { .. });
                self.like(expr, pattern, escape_char.as_deref(), *negated, ilike)?
            }
            A::SimilarTo {
                negated,
                expr,
                pattern,
                escape_char,
            } => self.similar_to(expr, pattern, escape_char.as_deref(), *negated)?,
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(operand.as_deref(), conditions, else_result.as_deref())?,
            A::Cast {
                kind,
                expr,
                data_type,
                format,
            } => {
                if format.is_some() || matches!(kind, CastKind::TryCast | CastKind::SafeCast) {
                    return unsupported("CAST with FORMAT / TRY_CAST");
                }
                self.cast(expr, data_type)?
            }
            A::TypedString(ts) => typed_string(self.catalog, ts).map_err(|e| e.at(ts.value.span, Point::Start))?,
            A::Interval(iv) => {
                literal::interval_literal(iv).map_err(|e| e.at(crate::error::start_of(&iv.value), Point::Start))?
            }
            A::Extract { field, expr, .. } => self.extract(field, expr)?,
            A::AtTimeZone { timestamp, time_zone } => self.at_time_zone(timestamp, time_zone)?,
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => self.substring(expr, substring_from.as_deref(), substring_for.as_deref())?,
            A::Floor { expr, .. } | A::Ceil { expr, .. } => {
                let (x, t) = self.expr(expr)?;
                let f = if matches!(e, A::Floor { .. }) {
                    Func::Floor
                } else {
                    Func::Ceil
                };
                (Expr::Func(f, vec![x]), t)
            }
            A::Trim {
                expr,
                trim_where: None,
                trim_what: None,
                trim_characters: None,
            } => {
                let (x, _) = self.expr(expr)?;
                (Expr::Func(Func::Trim, vec![x]), Some(DataType::Varchar(None)))
            }
            A::Function(f) => self.function(f)?,
            A::Array(arr) => self.array_value(arr, None)?,
            A::CompoundFieldAccess { root, access_chain } => self.subscript(root, access_chain)?,
            other => return unsupported(format!("expression {other}")),
        })
    }

    /// Binds `NOT x`, `-x` and `+x`. A negated numeric literal becomes one constant.
    fn unary(&mut self, op: &UnaryOperator, expr: &ast::Expr) -> Result<Typed> {
        let (x, t) = self.expr(expr)?;
        Ok(match op {
            UnaryOperator::Not => (Expr::Not(x.boxed()), Some(DataType::Boolean)),
            // A negative literal is one constant, typed by its value as
            // PostgreSQL does: -2147483648 is an integer, -9223372036854775808 a
            // bigint.
            UnaryOperator::Minus => match x {
                Expr::Const(Value::Int(i)) => integer_literal(-i),
                Expr::Const(Value::Decimal(d)) => {
                    let negated = d.as_ref().negate();
                    match negated.as_ref().to_i64_exact() {
                        Some(i) if d.as_ref().scale() == 0 => integer_literal(i),
                        _ => (Expr::Const(Value::Decimal(negated)), t),
                    }
                }
                Expr::Const(Value::Double(d)) => (Expr::Const(Value::Double(-d)), t),
                x => (Expr::Neg(x.boxed()), t),
            },
            UnaryOperator::Plus => (x, t),
            other => return unsupported(format!("operator {other}")),
        })
    }

    /// Binds `x IS NULL` (`negated`: `x IS NOT NULL`).
    fn is_null(&mut self, x: &ast::Expr, negated: bool) -> Result<Typed> {
        let (x, _) = self.expr(x)?;
        Ok((
            Expr::IsNull {
                expr: x.boxed(),
                negated,
            },
            Some(DataType::Boolean),
        ))
    }

    /// Binds `x IS [NOT] TRUE` / `x IS [NOT] FALSE` as `x IS [NOT] DISTINCT FROM want`
    /// (`negated` for the forms without NOT, which hold when `x` is not distinct from `want`).
    fn is_boolean(&mut self, x: &ast::Expr, want: bool, negated: bool) -> Result<Typed> {
        let (x, _) = self.expr(x)?;
        let d = Expr::IsDistinct {
            left: x.boxed(),
            right: Expr::Const(Value::Bool(want)).boxed(),
            negated,
        };
        Ok((d, Some(DataType::Boolean)))
    }

    /// Binds `a IS DISTINCT FROM b` (`negated`: `IS NOT DISTINCT FROM`); each side types a
    /// parameter on the other.
    fn is_distinct(&mut self, a: &ast::Expr, b: &ast::Expr, negated: bool) -> Result<Typed> {
        let (x, xt) = self.expr(a)?;
        let (y, yt) = self.expr(b)?;
        self.infer(&x, yt);
        self.infer(&y, xt);
        Ok((
            Expr::IsDistinct {
                left: x.boxed(),
                right: y.boxed(),
                negated,
            },
            Some(DataType::Boolean),
        ))
    }

    /// Binds `expr [NOT] IN (list)`; the expression and the items type each other's
    /// parameters.
    fn in_list(&mut self, expr: &ast::Expr, list: &[ast::Expr], negated: bool) -> Result<Typed> {
        let (x, xt) = self.expr(expr)?;
        let mut items = Vec::with_capacity(list.len());
        for item in list {
            let (y, yt) = self.expr(item)?;
            self.infer(&y, xt);
            self.infer(&x, yt);
            items.push(y);
        }
        Ok((
            Expr::InList {
                expr: x.boxed(),
                list: items,
                negated,
            },
            Some(DataType::Boolean),
        ))
    }

    /// Binds `expr [NOT] BETWEEN low AND high` as two comparisons joined by AND (by OR
    /// when negated).
    fn between(&mut self, expr: &ast::Expr, low: &ast::Expr, high: &ast::Expr, negated: bool) -> Result<Typed> {
        let (x, xt) = self.expr(expr)?;
        let (lo, lt) = self.expr(low)?;
        let (hi, ht) = self.expr(high)?;
        self.infer(&lo, xt);
        self.infer(&hi, xt);
        self.infer(&x, lt.or(ht));
        let e = if negated {
            Expr::Or(
                Expr::Cmp(CmpOp::Lt, x.clone().boxed(), lo.boxed()).boxed(),
                Expr::Cmp(CmpOp::Gt, x.boxed(), hi.boxed()).boxed(),
            )
        } else {
            Expr::And(
                Expr::Cmp(CmpOp::GtEq, x.clone().boxed(), lo.boxed()).boxed(),
                Expr::Cmp(CmpOp::LtEq, x.boxed(), hi.boxed()).boxed(),
            )
        };
        Ok((e, Some(DataType::Boolean)))
    }

    /// Binds `CAST(expr AS data_type)` (and `expr::data_type`); a parameter takes the type.
    fn cast(&mut self, expr: &ast::Expr, data_type: &ast::DataType) -> Result<Typed> {
        let ty = map_type_in(self.catalog, data_type)?;
        // A quoted literal is read as the type now, as PostgreSQL reads an unknown-type
        // literal: bad text is an error at the literal, whatever rows there are.
        if let ast::Expr::Value(v) = expr
            && let ast::Value::SingleQuotedString(s) = &v.value
            && !ty.is_text()
        {
            let parsed = literal::read_as(&ty, s).map_err(|e| e.at(v.span, Point::Start))?;
            return Ok((parsed, Some(ty)));
        }
        if let (DataType::Array(elem), ast::Expr::Array(arr)) = (ty, expr) {
            return self.array_value(arr, Some(elem.data_type()));
        }
        let (x, _) = self.expr(expr)?;
        self.infer(&x, Some(ty));
        Ok((Expr::Cast(x.boxed(), ty), Some(ty)))
    }

    /// Binds `SUBSTRING(expr [FROM from] [FOR len])` as the function with 2 or 3 arguments
    /// (FROM 1 when absent).
    fn substring(&mut self, expr: &ast::Expr, from: Option<&ast::Expr>, len: Option<&ast::Expr>) -> Result<Typed> {
        let mut args = vec![self.expr(expr)?.0];
        args.push(match from {
            Some(f) => self.expr(f)?.0,
            None => Expr::Const(Value::Int(1)),
        });
        if let Some(f) = len {
            args.push(self.expr(f)?.0);
        }
        Ok((Expr::Func(Func::Substring, args), Some(DataType::Varchar(None))))
    }

    fn literal(&mut self, v: &ast::Value) -> Result<Typed> {
        use ast::Value as V;
        Ok(match v {
            V::Number(s, _) => number_literal(s)?,
            V::SingleQuotedString(s)
            | V::EscapedStringLiteral(s)
            | V::NationalStringLiteral(s)
            | V::UnicodeStringLiteral(s) => {
                // An escape (E'\x00', U&'\0000') can spell a NUL, which text never holds.
                if s.contains('\0') {
                    return Err(SqlError::NulInText);
                }
                (Expr::Const(Value::from(s.as_str())), Some(DataType::Varchar(None)))
            }
            V::DollarQuotedString(d) => (
                Expr::Const(Value::from(d.value.as_str())),
                Some(DataType::Varchar(None)),
            ),
            V::HexStringLiteral(h) => {
                let v = Value::parse(&DataType::Bytea, &format!("\\x{h}"))?;
                (Expr::Const(v), Some(DataType::Bytea))
            }
            V::Boolean(b) => (Expr::Const(Value::Bool(*b)), Some(DataType::Boolean)),
            V::Null => (Expr::Const(Value::Null), None),
            V::Placeholder(p) => self.param(p)?,
            other => return unsupported(format!("literal {other}")),
        })
    }
}

/// `~`, `~*`, `!~`, `!~*`: whether it ignores case, whether it is negated.
fn regex_op(op: &BinaryOperator) -> Option<(bool, bool)> {
    Some(match op {
        BinaryOperator::PGRegexMatch => (false, false),
        BinaryOperator::PGRegexIMatch => (true, false),
        BinaryOperator::PGRegexNotMatch => (false, true),
        BinaryOperator::PGRegexNotIMatch => (true, true),
        _ => return None,
    })
}

/// The relation and column of `rels` that column `col` (qualified by `qual`) names, if one
/// does (unqualified, none of `hidden`); more than one is an error.
fn find_column(
    rels: &[Rel],
    qual: Option<&str>,
    col: &str,
    hidden: &[(usize, usize)],
) -> Result<Option<(usize, usize)>> {
    let mut found = None;
    for (ri, rel) in rels.iter().enumerate() {
        if let Some(members) = &rel.members {
            // A FULL JOIN's relation: each column of that name its qualifier names.
            for (ci, c) in rel.schema.columns.iter().enumerate() {
                let named = match qual {
                    None => !hidden.contains(&(ri, ci)),
                    // (The relation's own name reaches its USING columns alone.)
                    Some(q) => members[ci].as_deref().map_or(q == rel.alias, |m| m == q),
                };
                if named && c.name == col {
                    if found.is_some() {
                        return Err(SqlError::AmbiguousColumn(col.to_string()));
                    }
                    found = Some((ri, ci));
                }
            }
            continue;
        }
        if qual.is_some_and(|q| q != rel.alias) {
            continue;
        }
        if let Some(ci) = rel.schema.columns.iter().position(|c| c.name == col) {
            if qual.is_none() && hidden.contains(&(ri, ci)) {
                continue;
            }
            if found.is_some() {
                return Err(SqlError::AmbiguousColumn(col.to_string()));
            }
            found = Some((ri, ci));
        }
    }
    Ok(found)
}

/// Integer arithmetic keeps the width of its operands (`integer + integer` is an integer):
/// the engine computes in 64 bits, so a narrower result is checked against its type's
/// range (22003 when it does not fit, as PostgreSQL's "integer out of range").
fn arith(op: ArithOp, a: Box<Expr>, b: Box<Expr>, at: Option<DataType>, bt: Option<DataType>) -> Typed {
    let ty = arith_type(op, at, bt);
    let e = Expr::Arith(op, a, b);
    match ty {
        Some(t @ (DataType::Integer | DataType::SmallInt)) => (Expr::Cast(e.boxed(), t), ty),
        _ => (e, ty),
    }
}

/// A type as PostgreSQL names it where no function or operator matches: without its
/// modifiers, `unknown` for an untyped literal or parameter.
fn type_name(t: Option<DataType>) -> String {
    match t {
        None => "unknown".to_string(),
        Some(DataType::Decimal { .. }) => "numeric".to_string(),
        Some(DataType::Varchar(Some(_))) => "character varying".to_string(),
        Some(t) => t.sql_name(),
    }
}

/// The arithmetic operator `op` is, and its symbol.
fn arith_of(op: &BinaryOperator) -> Option<(ArithOp, &'static str)> {
    Some(match op {
        BinaryOperator::Plus => (ArithOp::Add, "+"),
        BinaryOperator::Minus => (ArithOp::Sub, "-"),
        BinaryOperator::Multiply => (ArithOp::Mul, "*"),
        BinaryOperator::Divide => (ArithOp::Div, "/"),
        BinaryOperator::Modulo => (ArithOp::Mod, "%"),
        _ => return None,
    })
}

/// The type of `a op b`, `None` where a type is not known (an untyped literal or
/// parameter) or no operator takes the two: numbers of any kind together (the wider kind;
/// integers keep the wider width), a timestamp with an integer (microseconds) or
/// another timestamp (their difference a `bigint`), a date with an integer (days) or
/// another date (their difference an `integer`).
fn arith_type(op: ArithOp, a: Option<DataType>, b: Option<DataType>) -> Option<DataType> {
    use DataType as T;
    let add_sub = matches!(op, ArithOp::Add | ArithOp::Sub);
    let stamp = |t: T| matches!(t, T::Timestamp | T::TimestampTz);
    let number = |t: T| t.is_numeric();
    match (a?, b?) {
        (x, y) if stamp(x) && stamp(y) && op == ArithOp::Sub => Some(T::Interval),
        (x, T::Interval) if stamp(x) && add_sub => Some(x),
        (T::Interval, y) if stamp(y) && op == ArithOp::Add => Some(y),
        (T::Date, T::Interval) if add_sub => Some(T::Timestamp),
        (T::Interval, T::Date) if op == ArithOp::Add => Some(T::Timestamp),
        (T::Interval, T::Interval) if add_sub => Some(T::Interval),
        (T::Time, T::Interval) if add_sub => Some(T::Time),
        (T::Interval, T::Time) if op == ArithOp::Add => Some(T::Time),
        (T::Time, T::Time) if op == ArithOp::Sub => Some(T::Interval),
        (T::Date, T::Time) | (T::Time, T::Date) if op == ArithOp::Add => Some(T::Timestamp),
        (T::Interval, y) if number(y) && matches!(op, ArithOp::Mul | ArithOp::Div) => Some(T::Interval),
        (x, T::Interval) if number(x) && op == ArithOp::Mul => Some(T::Interval),
        (x, y) if stamp(x) && y.is_integer() && add_sub => Some(x),
        (T::Date, T::Date) if op == ArithOp::Sub => Some(T::Integer),
        (T::Date, y) if y.is_integer() && add_sub => Some(T::Date),
        (x, T::Date) if x.is_integer() && op == ArithOp::Add => Some(T::Date),
        (x, y) if !(x.is_numeric() && y.is_numeric()) => None,
        (T::Double, _) | (_, T::Double) => Some(T::Double),
        (T::Decimal { .. }, _) | (_, T::Decimal { .. }) => Some(T::Decimal { precision: 0, scale: 0 }),
        (x, y) => Some(if x == T::BigInt || y == T::BigInt {
            T::BigInt
        } else if x == T::Integer || y == T::Integer {
            T::Integer
        } else {
            T::SmallInt
        }),
    }
}

/// PostgreSQL's planner folds a strict operator one of whose arguments is the NULL
/// constant to NULL, so the other argument is never evaluated: `WHERE NULL <> x / 0` holds
/// for no row rather than failing with 22012. Done here for a WHERE clause's comparisons,
/// arithmetic and concatenations whose other side reads the row (a constant other side is
/// evaluated as PostgreSQL's folding evaluates it, errors included); not where the other
/// side holds a parameter, a subquery or an aggregate, which keep their own meaning.
fn fold_strict_null(e: &mut Expr) {
    let null = |x: &Expr| match x {
        Expr::Const(Value::Null) => true,
        Expr::Cast(inner, _) => matches!(**inner, Expr::Const(Value::Null)),
        _ => false,
    };
    let reads_row_only = |x: &Expr| {
        let (mut column, mut other) = (false, false);
        x.walk(&mut |y| match y {
            Expr::Column { .. } => column = true,
            Expr::Param(_)
            | Expr::Subquery(_)
            | Expr::Exists(_)
            | Expr::InSubquery { .. }
            | Expr::SubPlan { .. }
            | Expr::Outer(_)
            | Expr::Agg(_)
            | Expr::Group(_)
            | Expr::Window(_) => other = true,
            _ => {}
        });
        column && !other
    };
    if let Expr::Arith(_, a, b) | Expr::Cmp(_, a, b) | Expr::Concat(a, b) = e
        && ((null(a) && reads_row_only(b)) || (null(b) && reads_row_only(a)))
    {
        *e = Expr::Const(Value::Null);
    }
}
