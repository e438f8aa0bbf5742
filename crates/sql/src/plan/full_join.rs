//! A FULL JOIN that is not the query's only two tables (beside other relations, of a
//! subquery, a view or a join, or with `USING` / `NATURAL`): read as one relation of the
//! query, the subquery
//!
//! ```sql
//! SELECT <L's columns>, <R's columns>, COALESCE(<l.k>, <r.k>)... FROM L LEFT JOIN R ON c
//! UNION ALL
//! SELECT NULL..., <R's columns>, <r.k>... FROM R WHERE NOT EXISTS (SELECT 1 FROM L WHERE c)
//! ```
//!
//! (each row of L with the rows of R it matches or nulls, then each row of R no row of L
//! matches), whose columns are still found by the names of the FROM items they come from
//! (`Rel::members`). `plan/from.rs` binds the two sides once to learn their columns and
//! gives them here; this file writes the subquery. (The query's only FROM item
//! `a FULL JOIN b ON c` of two tables is planned without it: `plan/access.rs`, one pass
//! over `a` and, at its end, the rows of `b` no row of `a` matched.)

use permafrost_storage::TableSchema;
use sqlparser::ast::{self, JoinConstraint, JoinOperator, TableFactor};

use crate::bind::{Binder, ident};

/// A FROM item naming a table, view or WITH query (no function call, hints, time travel
/// or partitions): its name and alias.
pub(super) fn plain_table(f: &TableFactor) -> Option<(&ast::ObjectName, Option<&ast::TableAlias>)> {
    match f {
        TableFactor::Table {
            name,
            alias,
            args: None,
            with_hints,
            version: None,
            partitions,
            ..
        } if with_hints.is_empty() && partitions.is_empty() => Some((name, alias.as_ref())),
        _ => None,
    }
}

/// Whether FROM item `twj` is `a FULL JOIN b ON ...` of two tables (no view, WITH query
/// or column aliases) whose ON condition equates the first column of an index of `b` with
/// a value or a column of `a`: the planner joins those directly (`plan/access.rs`), one
/// pass over `a` with a lookup in `b` each, and then the rows of `b` no row matched, which
/// is faster than the relation `plan/full_join.rs` writes (where `b` is hashed) only with
/// that index.
pub(super) fn two_tables(b: &Binder<'_>, twj: &ast::TableWithJoins) -> bool {
    let table = |f: &TableFactor| match plain_table(f) {
        Some((name, alias)) => {
            let Ok(n) = crate::bind::object_name(name) else {
                return false;
            };
            alias.is_none_or(|a| a.columns.is_empty())
                && !b.ctes.iter().any(|c| c.name == n)
                && b.catalog.view(&n).is_none()
        }
        None => false,
    };
    let [j] = twj.joins.as_slice() else {
        return false;
    };
    let JoinOperator::FullOuter(JoinConstraint::On(on)) = &j.join_operator else {
        return false;
    };
    if !(table(&twj.relation) && table(&j.relation)) {
        return false;
    }
    let named = |f: &TableFactor| match f {
        TableFactor::Table { name, alias, .. } => {
            let n = crate::bind::object_name(name).ok()?;
            let schema = b.catalog.table(&n)?.clone();
            Some((alias.as_ref().map_or(n, |a| ident(&a.name)), schema))
        }
        _ => None,
    };
    let (Some((left, left_schema)), Some((right, schema))) = (named(&twj.relation), named(&j.relation)) else {
        return false;
    };
    // A column of `b` (qualified, or found in `b` alone), or of `a`.
    let column_of = |e: &ast::Expr, alias: &str, schema: &TableSchema, other: &TableSchema| -> Option<usize> {
        let (qual, name) = match e {
            ast::Expr::Identifier(c) => (None, ident(c)),
            ast::Expr::CompoundIdentifier(p) if p.len() == 2 => (Some(ident(&p[0])), ident(&p[1])),
            _ => return None,
        };
        let found = schema.columns.iter().position(|c| c.name == name)?;
        match qual {
            Some(q) => (q == alias).then_some(found),
            None => (!other.columns.iter().any(|c| c.name == name)).then_some(found),
        }
    };
    let leads = |c: usize| schema.indexes.iter().any(|i| i.columns.first() == Some(&c));
    let mut conjuncts = vec![on];
    while let Some(c) = conjuncts.pop() {
        match c {
            ast::Expr::BinaryOp {
                left: x,
                op: ast::BinaryOperator::And,
                right: y,
            } => conjuncts.extend([x.as_ref(), y.as_ref()]),
            ast::Expr::Nested(x) => conjuncts.push(x),
            ast::Expr::BinaryOp {
                left: x,
                op: ast::BinaryOperator::Eq,
                right: y,
            } => {
                for (key, value) in [(x, y), (y, x)] {
                    let value_ok = matches!(value.as_ref(), ast::Expr::Value(_))
                        || column_of(value, &left, &left_schema, &schema).is_some();
                    if value_ok && column_of(key, &right, &schema, &left_schema).is_some_and(leads) {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// A column of one side of the FULL JOIN.
pub(super) struct SideColumn {
    /// The FROM item it is read through in SQL (a table's alias, a subquery's).
    pub rel: String,
    pub name: String,
    /// The name that qualifies it for the query around: its FROM item's, or the one
    /// inside a FULL JOIN's relation (`None`: a `USING` column).
    pub member: Option<String>,
    /// Found by a qualified name only (a `USING` column's copy).
    pub hidden: bool,
}

/// The two sides' columns and how they join.
pub(super) struct FullJoin {
    /// Every column of the left side's relations, then the right side's.
    pub columns: Vec<SideColumn>,
    /// How many of `columns` are the left side's.
    pub left: usize,
    /// The columns `SELECT *` shows of each side (indexes into `columns`), in order.
    pub left_star: Vec<usize>,
    pub right_star: Vec<usize>,
    /// The `USING` columns' pairs (left, right), or none for `ON`.
    pub merged: Vec<(usize, usize)>,
    /// The ON condition, as SQL (for `USING`, the pairs' equalities).
    pub on: String,
    /// The sides as SQL.
    pub left_sql: String,
    pub right_sql: String,
}

/// The relation: its query as SQL, its columns' names, each one's qualifier, those found
/// by a qualified name only (by index), and the columns `SELECT *` shows (by index).
pub(super) struct Relation {
    pub sql: String,
    pub names: Vec<String>,
    pub members: Vec<Option<String>>,
    pub hidden: Vec<usize>,
    pub star: Vec<usize>,
}

/// `"name"`, with any quote in it doubled.
pub(super) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl FullJoin {
    fn reference(&self, i: usize) -> String {
        let c = &self.columns[i];
        format!("{}.{}", quoted(&c.rel), quoted(&c.name))
    }

    /// The subquery and the relation's columns: every side column (`c<i>`), then each
    /// `USING` column merged (`m<i>`), which `SELECT *` shows first, as PostgreSQL does.
    pub(super) fn relation(&self) -> Relation {
        let n = self.columns.len();
        let mut joined = Vec::with_capacity(n + self.merged.len());
        let mut unmatched = Vec::with_capacity(n + self.merged.len());
        for i in 0..n {
            let r = self.reference(i);
            joined.push(format!("{r} AS \"c{i}\""));
            unmatched.push(if i < self.left { "NULL".to_string() } else { r });
        }
        for (j, &(l, r)) in self.merged.iter().enumerate() {
            joined.push(format!(
                "COALESCE({}, {}) AS \"m{j}\"",
                self.reference(l),
                self.reference(r)
            ));
            unmatched.push(self.reference(r));
        }
        let sql = format!(
            "SELECT {} FROM {} LEFT JOIN {} ON {} UNION ALL SELECT {} FROM {} WHERE NOT EXISTS (SELECT 1 FROM {} WHERE {})",
            joined.join(", "),
            self.left_sql,
            self.right_sql,
            self.on,
            unmatched.join(", "),
            self.right_sql,
            self.left_sql,
            self.on,
        );
        let mut names: Vec<String> = self.columns.iter().map(|c| c.name.clone()).collect();
        let mut members: Vec<Option<String>> = self.columns.iter().map(|c| c.member.clone()).collect();
        let mut hidden: Vec<usize> = (0..n).filter(|&i| self.columns[i].hidden).collect();
        let mut star: Vec<usize> = (n..n + self.merged.len()).collect();
        for &(l, r) in &self.merged {
            names.push(self.columns[l].name.clone());
            members.push(None);
            hidden.extend([l, r]);
        }
        let copy = |i: &usize| !self.merged.iter().any(|&(l, r)| l == *i || r == *i);
        star.extend(self.left_star.iter().chain(&self.right_star).filter(|i| copy(i)));
        Relation {
            sql,
            names,
            members,
            hidden,
            star,
        }
    }
}
