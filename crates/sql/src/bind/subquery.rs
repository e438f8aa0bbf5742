//! Subqueries met while binding: each planned in a scope of its own that shares the
//! statement's parameters (through the planner's function the binder is given), kept as
//! an `InitPlan` of the plan being bound; a correlated one (it reads values of the queries
//! around it) becomes an `Expr::SubPlan` given those values.

use std::sync::Arc;

use permafrost_types::DataType;
use sqlparser::ast::{self, Spanned};

use super::{Binder, Rel, Typed};
use crate::error::{Point, Result, SqlError, unsupported};
use crate::expr::Expr;
use crate::plan::tree::{InitPlan, SubqueryKind};

impl<'c> Binder<'c> {
    /// Binds a subquery read as `kind`: `test` is `x [NOT] IN`'s left side and negation.
    /// It is planned at once with a binder of its own sharing the parameters, whose
    /// queries around it are this one's and this one. One that reads none of their values
    /// is an `InitPlan`, run once; one that does (correlated) is an `Expr::SubPlan` whose
    /// arguments are the values it reads, in this query's terms.
    pub(super) fn subquery(
        &mut self,
        q: &ast::Query,
        kind: SubqueryKind,
        test: Option<(&ast::Expr, bool)>,
    ) -> Result<Typed> {
        let Some(planner) = self.plan_subquery else {
            return unsupported("a subquery here");
        };
        let tested = match test {
            Some((x, negated)) => Some((self.expr(x)?, negated)),
            None => None,
        };
        let mut outer = self.outer.clone();
        outer.push(Arc::from(self.rels.as_slice()));
        let mut refs = Vec::new();
        let (query, columns) = self.in_scope(outer, &mut refs, |sub| planner(sub, q))?;
        if kind != SubqueryKind::Exists && columns.len() != 1 {
            return Err(SqlError::SubqueryColumns(if kind == SubqueryKind::In {
                "subquery has too many columns"
            } else {
                "subquery must return only one column"
            })
            // PostgreSQL points at the IN, or at the parenthesis opening the subquery.
            .at(
                test.map_or(crate::error::query_start(q), |(x, _)| x.span()),
                if test.is_some() { Point::After } else { Point::Before },
            ));
        }
        let args = self.read_around(refs);
        let n = self.init.len();
        let ty = columns.first().and_then(|c| c.ty);
        let correlated = !args.is_empty();
        self.init.push(Arc::new(InitPlan {
            kind,
            query,
            correlated,
        }));
        if let Some(((x, _), _)) = &tested {
            self.infer(x, ty);
        }
        let ty = match kind {
            SubqueryKind::Scalar => ty,
            SubqueryKind::Array => Some(super::array::array_of(
                ty.unwrap_or(DataType::Varchar(None)),
                "ARRAY(subquery) of arrays (arrays here have one dimension)",
            )?),
            SubqueryKind::Exists | SubqueryKind::In => Some(DataType::Boolean),
        };
        if correlated {
            let test = tested.map(|((x, _), negated)| (x.boxed(), negated));
            if kind == SubqueryKind::In && test.is_none() {
                return unsupported("IN (subquery) without its left side");
            }
            return Ok((
                Expr::SubPlan {
                    sub: n,
                    kind,
                    args,
                    test,
                },
                ty,
            ));
        }
        Ok(match (kind, tested) {
            (SubqueryKind::Scalar | SubqueryKind::Array, _) => (Expr::Subquery(n), ty),
            (SubqueryKind::Exists, _) => (Expr::Exists(n), ty),
            (SubqueryKind::In, Some(((x, _), negated))) => (
                Expr::InSubquery {
                    expr: x.boxed(),
                    sub: n,
                    negated,
                },
                ty,
            ),
            (SubqueryKind::In, None) => return unsupported("IN (subquery) without its left side"),
        })
    }

    /// What a scope inside this query reads around it (`refs`: level, relation, column),
    /// as this query reads it: its own columns, or values of the queries around this one
    /// (which make this one correlated too).
    fn read_around(&mut self, refs: Vec<(usize, usize, usize)>) -> Vec<Expr> {
        let here = self.outer.len();
        refs.into_iter()
            .map(|(level, rel, col)| {
                if level == here {
                    Expr::Column { rel, col }
                } else {
                    Expr::Outer(self.outer_ref((level, rel, col)))
                }
            })
            .collect()
    }

    /// Runs `f` with a binder of a scope of its own that sees this query's relations so
    /// far as a query around it (a LATERAL item of FROM, which reads the items before
    /// it): with what `f` gives, the values it reads around it in this query's terms
    /// (`Expr::Outer(i)` inside reads the `i`-th); none when it reads nothing around it.
    pub fn in_lateral_scope<T>(&mut self, f: impl FnOnce(&mut Binder<'c>) -> Result<T>) -> Result<(T, Vec<Expr>)> {
        let mut outer = self.outer.clone();
        outer.push(Arc::from(self.rels.as_slice()));
        let mut refs = Vec::new();
        let r = self.in_scope(outer, &mut refs, f)?;
        Ok((r, self.read_around(refs)))
    }

    /// The number `Expr::Outer` reads value `r` (level, relation, column) of a query
    /// around this one by.
    pub(super) fn outer_ref(&mut self, r: (usize, usize, usize)) -> usize {
        match self.outer_refs.iter().position(|x| *x == r) {
            Some(i) => i,
            None => {
                self.outer_refs.push(r);
                self.outer_refs.len() - 1
            }
        }
    }

    /// Runs `f` with a binder of a scope of its own (no relations, aggregates or
    /// subqueries of this one) that shares this statement's parameters and this query's
    /// surroundings: a side's of a set operation, a subquery's in FROM (which reads no
    /// column of its siblings, but may read the queries around its query).
    pub fn in_own_scope<T>(&mut self, f: impl FnOnce(&mut Binder<'c>) -> Result<T>) -> Result<T> {
        let outer = self.outer.clone();
        let mut refs = std::mem::take(&mut self.outer_refs);
        let r = self.in_scope(outer, &mut refs, f);
        self.outer_refs = refs;
        r
    }

    /// Runs `f` with a binder of a scope of its own whose queries around it are `outer`
    /// and whose reads of them are numbered in `refs`.
    fn in_scope<T>(
        &mut self,
        outer: Vec<Arc<[Rel]>>,
        refs: &mut Vec<(usize, usize, usize)>,
        f: impl FnOnce(&mut Binder<'c>) -> Result<T>,
    ) -> Result<T> {
        let mut sub = Binder::new(self.catalog);
        sub.plan_subquery = self.plan_subquery;
        sub.depth = self.depth.clone();
        sub.params = std::mem::take(&mut self.params);
        sub.array_params = std::mem::take(&mut self.array_params);
        sub.outer = outer;
        sub.ctes = self.ctes.clone();
        sub.outer_refs = std::mem::take(refs);
        let r = f(&mut sub);
        self.params = std::mem::take(&mut sub.params);
        self.array_params = std::mem::take(&mut sub.array_params);
        *refs = std::mem::take(&mut sub.outer_refs);
        r
    }
}
