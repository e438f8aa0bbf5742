//! Planning: bound statements to executable plans.
//!
//! OLTP statements touch few rows, so plans are nested loops over the FROM relations where
//! each relation is reached through the best access path its predicates allow:
//!
//! 1. an equality lookup on every column of an index (a unique one is best);
//! 2. an ordered index with equalities on a prefix of its columns and optionally a range
//!    on the next column;
//! 3. a scan of the relation.
//!
//! Columns of relations earlier in the join order count as known, so a join predicate like
//! `s_i_id = ol_i_id` becomes an index lookup on the inner relation. All join orders of up
//! to five relations are costed with a simple model (lookups cost little and return few
//! rows, ranges return more, scans the most) and the cheapest is kept.

use permafrost_types::Value;
use sqlparser::ast::{self};

pub use crate::bind::MAX_RELS;
use crate::bind::{Binder, Typed};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError};
use crate::expr::Expr;

mod access;
mod column_names;
mod from;
mod full_join;
mod joined_write;
mod pullup;
mod select;
mod set_functions;
mod srf;
pub(crate) mod tree;
mod write;

pub use select::plan_query;
pub use tree::*;
pub use write::{plan_delete, plan_insert, plan_update};

/// Evaluates a constant expression written in DDL (a DEFAULT).
pub fn bind_constant(catalog: &Catalog, e: &ast::Expr) -> Result<Typed> {
    let mut b = Binder::new(catalog);
    let t = b.expr(e)?;
    if !b.params.is_empty() || !t.0.is_row_independent() {
        return Err(SqlError::Definition("DEFAULT must be a constant".into()));
    }
    Ok(t)
}

/// Values of no relation: for evaluating constants at plan time.
pub fn eval_constant(e: &Expr) -> Result<Value> {
    e.eval_const(&crate::expr::Cx::new(&[], 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let mut c = Catalog::new();
        for sql in [
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, grp INT)",
            "CREATE INDEX t_grp ON t (grp)",
        ] {
            let stmt = crate::parse::parse_statement(sql).unwrap();
            for change in crate::ddl::plan_ddl(&c, &stmt).unwrap() {
                c = c.apply(&change).unwrap();
            }
        }
        c
    }

    fn access(sql: &str) -> Access {
        rel(sql).access
    }

    fn rel(sql: &str) -> RelPlan {
        let c = catalog();
        let ast::Statement::Query(q) = crate::parse::parse_statement(sql).unwrap() else {
            panic!("not a query")
        };
        let Plan::Select(s) = plan_query(&c, &q).unwrap().plan else {
            panic!("not a select")
        };
        s.rels[0].clone()
    }

    #[test]
    fn a_range_access_puts_the_predicates_of_its_bounds_first() {
        let r = rel("SELECT * FROM t WHERE name = 'x' AND id <= $2 AND grp > 1 AND $1 < id");
        assert!(
            matches!(r.access, Access::IndexRange { index: 0, .. }),
            "{:?}",
            r.access
        );
        assert_eq!(r.bounds, 2, "{:?}", r.filters);
        assert_eq!(r.filters.len(), 4);
        for f in &r.filters[..2] {
            assert!(
                matches!(f, Expr::Cmp(_, a, b) if matches!(**a, Expr::Column { col: 0, .. }) || matches!(**b, Expr::Column { col: 0, .. })),
                "{f:?}"
            );
        }
        let r = rel("SELECT * FROM t WHERE id BETWEEN 1 AND 5");
        assert_eq!((r.bounds, r.filters.len()), (2, 2));
        // A second predicate on the column that gave no bound is checked as any filter.
        let r = rel("SELECT * FROM t WHERE id > 1 AND id > 0 AND id < 9");
        assert_eq!((r.bounds, r.filters.len()), (2, 3));
        // Other accesses have none.
        assert_eq!(rel("SELECT * FROM t WHERE id = 3 AND name = 'x'").bounds, 0);
        assert_eq!(rel("SELECT * FROM t WHERE name = 'x'").bounds, 0);
    }

    #[test]
    fn any_of_an_array_probes_a_one_column_index() {
        for sql in [
            "SELECT * FROM t WHERE id = ANY($1)",
            "SELECT * FROM t WHERE id = ANY('{1,2}') AND name = 'x'",
        ] {
            assert!(matches!(access(sql), Access::IndexAny { index: 0, .. }), "{sql}");
        }
        assert!(matches!(
            access("SELECT * FROM t WHERE grp = ANY($1)"),
            Access::IndexAny { index: 1, .. }
        ));
        // The lookups guarantee the ANY: it is not tested again on each row they find.
        assert!(rel("SELECT * FROM t WHERE id = ANY($1)").filters.is_empty());
        assert_eq!(
            rel("SELECT * FROM t WHERE id = ANY($1) AND name = 'x'").filters.len(),
            1
        );
        // An equality is better; no index on the column, or <> ALL: a scan.
        assert!(matches!(
            access("SELECT * FROM t WHERE id = 3 AND grp = ANY($1)"),
            Access::IndexEq { index: 0, .. }
        ));
        assert!(matches!(access("SELECT * FROM t WHERE name = ANY($1)"), Access::Scan));
        assert!(matches!(access("SELECT * FROM t WHERE id <> ALL($1)"), Access::Scan));
    }
}
