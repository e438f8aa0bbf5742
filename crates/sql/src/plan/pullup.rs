//! Pulling a simple subquery in FROM up into its query, as PostgreSQL does: `SELECT
//! count(*) FROM (SELECT a, b FROM t WHERE p) s WHERE q` is planned as `SELECT count(*)
//! FROM t WHERE p AND q`, so that the subquery's rows are never gathered in memory (past
//! the working memory they could not be), its table is reached through the best index
//! both queries' predicates allow, and a scan of it may leave its evicted tuples to be read
//! afterwards as any query's scan does. ORMs write such queries (SQLAlchemy's
//! `Query.count()`, Django's `aggregate` over an annotated query).
//!
//! Taken only where the answer cannot change: the query reads that one subquery and
//! nothing else, with no window calls and no row locks; the subquery is a SELECT of
//! tables joined by inner joins, with no aggregation, DISTINCT, LIMIT, OFFSET, window
//! calls, subqueries of its own, or subquery in FROM — and no ORDER BY unless the query
//! aggregates (its rows' order then does not count).

use sqlparser::ast;

use super::access::{OuterJoin, implied_by};
use super::tree::*;
use crate::bind::{Binder, Rel};
use crate::expr::Expr;

/// The expressions of a query bound over its one relation, a subquery in FROM, that
/// reading the subquery's tables instead changes.
pub(super) struct Reads<'a> {
    pub(super) conjuncts: &'a mut Vec<Expr>,
    pub(super) output: &'a mut Vec<Expr>,
    pub(super) order: &'a mut Vec<SortKey>,
    pub(super) agg: &'a mut Option<AggPlan>,
}

/// Pulls the query's subquery in FROM up into it when that is taken (see the module's
/// text): its relations become the query's, its predicates join the query's conjuncts,
/// and each read of its columns reads the expression the subquery gives there. Returns
/// whether it did; the query is then planned over the subquery's tables.
pub(super) fn pull_up(b: &mut Binder<'_>, q: &ast::Query, outer: &[OuterJoin], windows: bool, r: Reads<'_>) -> bool {
    if b.rels.len() != 1 || b.derived.len() != 1 || !outer.is_empty() || windows || !q.locks.is_empty() {
        return false;
    }
    let d = &b.derived[0];
    let SetTree::Select { plan: inner, .. } = &d.query else {
        return false;
    };
    let simple = inner.agg.is_none()
        && inner.windows.is_empty()
        && !inner.distinct
        && inner.distinct_on == 0
        && inner.limit.is_none()
        && inner.offset.is_none()
        && (inner.order.is_empty() || r.agg.is_some())
        && inner.init.is_empty()
        && inner.derived.is_empty()
        && inner
            .rels
            .iter()
            .all(|rp| !rp.outer && !rp.full && rp.schema.id != DERIVED_TABLE)
        && {
            // Each of its relations planned, numbered from 0.
            let mut ix: Vec<usize> = inner.rels.iter().map(|rp| rp.rel).collect();
            ix.sort_unstable();
            !ix.is_empty() && ix.iter().enumerate().all(|(i, &r)| i == r)
        };
    if !simple {
        return false;
    }
    let SetTree::Select { plan: inner, .. } = b.derived.pop().expect("one subquery in FROM").query else {
        unreachable!("checked above")
    };
    let inner = *inner;
    let from = b.rels[0].alias.clone();
    let output = inner.output;
    let substitute = |e: &mut Expr| {
        e.walk_mut(&mut |x| {
            if let Expr::Column { rel: 0, col } = x {
                *x = output[*col].clone();
            }
        })
    };
    r.conjuncts.iter_mut().for_each(substitute);
    r.output.iter_mut().for_each(substitute);
    r.order.iter_mut().for_each(|k| substitute(&mut k.expr));
    if let Some(a) = r.agg.as_mut() {
        a.groups.iter_mut().for_each(substitute);
        for c in &mut a.aggs {
            c.arg.iter_mut().for_each(substitute);
            c.filter.iter_mut().for_each(substitute);
        }
        a.having.iter_mut().for_each(substitute);
    }
    // The subquery's relations, numbered as it numbered them, and its predicates.
    let mut rels = inner.rels;
    rels.sort_by_key(|rp| rp.rel);
    b.rels = rels
        .into_iter()
        .map(|rp| {
            // What its access path took from its predicates (an index key) is one too.
            r.conjuncts
                .extend(implied_by(&rp.access, &rp.schema, rp.rel).into_iter().step_by(2));
            r.conjuncts.extend(rp.filters);
            Rel {
                alias: format!("{from}.{}", rp.schema.name),
                schema: rp.schema,
            }
        })
        .collect();
    r.conjuncts.extend(inner.pre_filters);
    true
}
