//! Pulling simple subqueries in FROM up into their query, as PostgreSQL does: `SELECT
//! count(*) FROM (SELECT a, b FROM t WHERE p) s WHERE q` is planned as `SELECT count(*)
//! FROM t WHERE p AND q`, so that the subquery's rows are never gathered in memory (past
//! the working memory they could not be), its tables are joined with the query's and
//! reached through the best index both queries' predicates allow, and a scan of one may
//! leave its evicted tuples to be read afterwards as any query's scan does. ORMs write
//! such queries (SQLAlchemy's `Query.count()`), and views and WITH queries are read as
//! subqueries in FROM.
//!
//! Taken only where the answer cannot change: the query has no FULL JOIN, window calls,
//! row locks or LATERAL items (whose reads of the query would need renumbering); a subquery an outer join null-extends gives its tables' columns as they are
//! (its tables then join the null-extended group, its predicates the group's conditions);
//! and the subquery is a SELECT of tables joined by inner joins, with no
//! aggregation, DISTINCT, LIMIT, OFFSET, window calls, subqueries of its own, or subquery
//! in FROM — and no ORDER BY unless the query aggregates (its rows' order then does not
//! count).

use sqlparser::ast;

use super::access::{OuterJoin, implied_by};
use super::tree::*;
use crate::bind::{Binder, MAX_RELS, Rel};
use crate::expr::Expr;

/// The expressions of a query bound over its relations that reading a subquery's tables
/// instead of it changes.
pub(super) struct Reads<'a> {
    pub(super) conjuncts: &'a mut Vec<Expr>,
    /// The outer joins, with their ON conditions.
    pub(super) outer: &'a mut Vec<OuterJoin>,
    pub(super) output: &'a mut Vec<Expr>,
    pub(super) order: &'a mut Vec<SortKey>,
    pub(super) agg: &'a mut Option<AggPlan>,
}

impl Reads<'_> {
    /// Calls `f` on every expression of the query.
    fn each(&mut self, f: &mut impl FnMut(&mut Expr)) {
        self.conjuncts.iter_mut().for_each(&mut *f);
        self.outer.iter_mut().for_each(|o| o.on.iter_mut().for_each(&mut *f));
        self.output.iter_mut().for_each(&mut *f);
        self.order.iter_mut().for_each(|k| f(&mut k.expr));
        if let Some(a) = self.agg.as_mut() {
            a.groups.iter_mut().for_each(&mut *f);
            for c in &mut a.aggs {
                c.arg.iter_mut().for_each(&mut *f);
                c.filter.iter_mut().for_each(&mut *f);
                c.second.iter_mut().for_each(&mut *f);
                c.order.iter_mut().for_each(|k| f(&mut k.expr));
            }
            a.having.iter_mut().for_each(&mut *f);
        }
    }
}

/// Pulls each subquery in FROM that is taken (see the module's text) up into the query:
/// its relations become the query's, its predicates join the query's conjuncts, and each
/// read of its columns reads the expression the subquery gives there. Returns how many it
/// pulled up; the query is then planned over their tables.
pub(super) fn pull_up(b: &mut Binder<'_>, q: &ast::Query, windows: bool, mut r: Reads<'_>) -> usize {
    if b.full_join.is_some() || windows || !q.locks.is_empty() || !b.lateral.is_empty() {
        return 0;
    }
    let mut pulled = 0;
    // A subquery an outer join null-extends is taken only when it gives its tables'
    // columns as they are: its tables join the null-extended group, its predicates the
    // group's conditions, and null-extending them null-extends the subquery's rows (an
    // expression could be non-NULL over a null-extended row).
    while let Some(i) = b.derived.iter().position(|d| {
        simple(d, r.agg.is_some()) && (!r.outer.iter().any(|o| o.rels & (1 << d.rel) != 0) || bare_columns(d))
    }) {
        let inner_rels = match &b.derived[i].query {
            SetTree::Select { plan, .. } => plan.rels.len(),
            _ => 0,
        };
        if b.rels.len() - 1 + inner_rels > MAX_RELS {
            break;
        }
        let DerivedRel { rel: d, query } = b.derived.remove(i);
        let SetTree::Select { plan: inner, .. } = query else {
            unreachable!("only a SELECT is taken")
        };
        pull(b, d, *inner, &mut r);
        pulled += 1;
    }
    pulled
}

/// Whether subquery `d` may be pulled up; `order_free`: its query aggregates its rows, so
/// its ORDER BY does not count.
fn simple(d: &DerivedRel, order_free: bool) -> bool {
    let SetTree::Select { plan: inner, .. } = &d.query else {
        return false;
    };
    let mut ix: Vec<usize> = inner.rels.iter().map(|rp| rp.rel).collect();
    ix.sort_unstable();
    inner.agg.is_none()
        && inner.windows.is_empty()
        && !inner.distinct
        && inner.distinct_on == 0
        && inner.limit.is_none()
        && inner.offset.is_none()
        && (inner.order.is_empty() || order_free)
        && inner.init.is_empty()
        && inner.derived.is_empty()
        && inner
            .rels
            .iter()
            .all(|rp| rp.starts.is_empty() && !rp.full && rp.schema.id != DERIVED_TABLE)
        // Each of its relations planned, numbered from 0.
        && !ix.is_empty()
        && ix.iter().enumerate().all(|(i, &r)| i == r)
}

/// Whether subquery `d` gives its tables' columns as they are, no other expression.
fn bare_columns(d: &DerivedRel) -> bool {
    let SetTree::Select { plan: inner, .. } = &d.query else {
        return false;
    };
    inner.output.iter().all(|e| matches!(e, Expr::Column { .. }))
}

/// Puts subquery `inner`, relation `d` of the query, in its place: its relations after the
/// query's (whose later ones then move down one, `d` gone).
fn pull(b: &mut Binder<'_>, d: usize, inner: SelectPlan, r: &mut Reads<'_>) {
    let base = b.rels.len();
    let from = b.rels[d].alias.clone();
    // The innermost null-extended group it is in takes its predicates; every group it is
    // in, its tables.
    let home = (0..r.outer.len())
        .filter(|&g| r.outer[g].rels & (1 << d) != 0)
        .min_by_key(|&g| r.outer[g].rels.count_ones());
    let tables = (base..base + inner.rels.len()).fold(0u64, |m, t| m | 1 << t);
    for o in r.outer.iter_mut().filter(|o| o.rels & (1 << d) != 0) {
        o.rels = o.rels & !(1 << d) | tables;
    }
    let mut predicates = Vec::new();
    // The subquery's expressions, in the query's numbering.
    let shift = |e: &mut Expr, by: usize| {
        e.walk_mut(&mut |x| {
            if let Expr::Column { rel, .. } = x {
                *rel += by;
            }
        })
    };
    let mut output = inner.output;
    output.iter_mut().for_each(|e| shift(e, base));
    r.each(&mut |e| {
        e.walk_mut(&mut |x| {
            if let Expr::Column { rel, col } = x
                && *rel == d
            {
                *x = output[*col].clone();
            }
        })
    });
    let mut rels = inner.rels;
    rels.sort_by_key(|rp| rp.rel);
    for rp in rels {
        // What its access path took from its predicates (an index key) is one too.
        let implied = implied_by(&rp.access, &rp.schema, rp.rel).into_iter().step_by(2);
        for mut c in implied.chain(rp.filters) {
            shift(&mut c, base);
            predicates.push(c);
        }
        b.rels.push(Rel {
            alias: format!("{from}.{}", rp.schema.name),
            schema: rp.schema,
            members: None,
        });
    }
    for mut c in inner.pre_filters {
        shift(&mut c, base);
        predicates.push(c);
    }
    match home {
        Some(g) => r.outer[g].on.extend(predicates),
        None => r.conjuncts.extend(predicates),
    }
    // Relation `d` leaves; the ones after it move down.
    b.rels.remove(d);
    r.each(&mut |e| {
        e.walk_mut(&mut |x| {
            if let Expr::Column { rel, .. } = x
                && *rel > d
            {
                *rel -= 1;
            }
        })
    });
    for other in b.derived.iter_mut().map(|x| &mut x.rel) {
        if *other > d {
            *other -= 1;
        }
    }
    // (Bit `d` is clear: the relations above it move down one.)
    for o in r.outer.iter_mut() {
        let above = o.rels.checked_shr(d as u32 + 1).unwrap_or(0);
        o.rels = o.rels & ((1 << d) - 1) | above << d;
    }
}
