//! Subqueries met while binding: each planned in a scope of its own that shares the
//! statement's parameters (through the planner's function the binder is given), kept as
//! an `InitPlan` of the plan being bound; a correlated one is refused, naming what it reads.

use std::sync::Arc;

use permafrost_types::DataType;
use sqlparser::ast;

use super::{Binder, Typed};
use crate::error::{Result, SqlError, unsupported};
use crate::expr::Expr;
use crate::plan::tree::{InitPlan, SubqueryKind};

impl<'c> Binder<'c> {
    /// Binds a subquery read as `kind`: `test` is `x [NOT] IN`'s left side and negation.
    /// It is planned at once with a binder of its own sharing the parameters; one that
    /// names a column of this query (a correlated subquery) is refused.
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
        let planned = self.in_own_scope(|sub| planner(sub, q));
        let (query, columns) = match planned {
            Err(SqlError::UnknownColumn(name) | SqlError::MissingFromEntry(name)) if self.names_column(&name) => {
                return unsupported(format!(
                    "correlated subqueries (this one reads \"{name}\" of the query around it); \
                     write it as a join or with the outer value as a parameter"
                ));
            }
            r => r?,
        };
        if kind != SubqueryKind::Exists && columns.len() != 1 {
            return Err(SqlError::SubqueryColumns(if kind == SubqueryKind::In {
                "subquery has too many columns"
            } else {
                "subquery must return only one column"
            }));
        }
        let n = self.init.len();
        let ty = columns.first().and_then(|c| c.ty);
        self.init.push(Arc::new(InitPlan { kind, query }));
        Ok(match (kind, tested) {
            (SubqueryKind::Scalar, _) => (Expr::Subquery(n), ty),
            (SubqueryKind::Exists, _) => (Expr::Exists(n), Some(DataType::Boolean)),
            (SubqueryKind::In, Some(((x, _), negated))) => {
                self.infer(&x, ty);
                (
                    Expr::InSubquery {
                        expr: x.boxed(),
                        sub: n,
                        negated,
                    },
                    Some(DataType::Boolean),
                )
            }
            (SubqueryKind::In, None) => return unsupported("IN (subquery) without its left side"),
        })
    }

    /// Runs `f` with a binder of a scope of its own (no relations, aggregates or
    /// subqueries of this one) that shares this statement's parameters: a subquery's, or
    /// a side's of a set operation.
    pub fn in_own_scope<T>(&mut self, f: impl FnOnce(&mut Binder<'c>) -> Result<T>) -> Result<T> {
        let mut sub = Binder::new(self.catalog);
        sub.plan_subquery = self.plan_subquery;
        sub.depth = self.depth.clone();
        sub.params = std::mem::take(&mut self.params);
        sub.array_params = std::mem::take(&mut self.array_params);
        let r = f(&mut sub);
        self.params = std::mem::take(&mut sub.params);
        self.array_params = std::mem::take(&mut sub.array_params);
        r
    }

    /// Whether `name` (as an unknown column or FROM entry was reported) names a relation
    /// of this query or a column of one.
    fn names_column(&self, name: &str) -> bool {
        let col = name.rsplit('.').next().unwrap_or(name);
        self.rels
            .iter()
            .any(|r| r.alias == name || r.schema.columns.iter().any(|c| c.name == col))
    }
}
