//! Binding comparisons of row constructors: `(a, b) < (x, y)`, as keyset pagination and
//! ORMs write them.
//!
//! PostgreSQL compares two rows of the same length pair by pair from the left: `=` and `<>`
//! over all pairs, and `<`, `<=`, `>`, `>=` decided by the first pair that is not equal (a
//! NULL in a pair that decides makes the result NULL). That is, in three-valued logic,
//! `a < x OR (a = x AND (b < y))` for `(a, b) < (x, y)` (`<=` in the last pair for `<=`),
//! and the row comparison is bound as that expression. An element other than the last is
//! therefore evaluated up to twice per row, where PostgreSQL evaluates it once: the same
//! result for columns, parameters and constants (what keyset pagination compares), two
//! draws for a volatile call such as `random()` (said in the README).

use sqlparser::ast::{self, BinaryOperator as Op, Spanned};

use super::{Binder, Typed};
use crate::error::{Point, Result, SqlError};

/// The elements of a row constructor `(a, b, ...)` or `ROW(a, b, ...)`, if `e` is one.
fn row_elements(e: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match e {
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Nested(inner) => row_elements(inner),
        ast::Expr::Function(f)
            if f.name.0.len() == 1
                && f.name.0[0]
                    .as_ident()
                    .is_some_and(|i| i.quote_style.is_none() && i.value.eq_ignore_ascii_case("row"))
                && f.filter.is_none()
                && f.over.is_none()
                && f.within_group.is_empty() =>
        {
            let ast::FunctionArguments::List(list) = &f.args else {
                return None;
            };
            if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
                return None;
            }
            list.args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some(x),
                    _ => None,
                })
                .collect()
        }
        _ => None,
    }
}

/// The expression a comparison of rows means, pair by pair.
fn expand(l: &[&ast::Expr], op: &Op, r: &[&ast::Expr]) -> ast::Expr {
    let pair = |i: usize, op: Op| ast::Expr::BinaryOp {
        left: Box::new(l[i].clone()),
        op,
        right: Box::new(r[i].clone()),
    };
    let join = |a: ast::Expr, op: Op, b: ast::Expr| ast::Expr::BinaryOp {
        left: Box::new(a),
        op,
        right: Box::new(ast::Expr::Nested(Box::new(b))),
    };
    match op {
        Op::Eq => (1..l.len()).fold(pair(0, Op::Eq), |acc, i| join(acc, Op::And, pair(i, Op::Eq))),
        Op::NotEq => (1..l.len()).fold(pair(0, Op::NotEq), |acc, i| join(acc, Op::Or, pair(i, Op::NotEq))),
        _ => {
            let strict = match op {
                Op::Lt | Op::LtEq => Op::Lt,
                _ => Op::Gt,
            };
            // From the last pair back: last `op`, each earlier `strict OR (= AND rest)`.
            let last = l.len() - 1;
            (0..last).rev().fold(pair(last, op.clone()), |rest, i| {
                join(pair(i, strict.clone()), Op::Or, join(pair(i, Op::Eq), Op::And, rest))
            })
        }
    }
}

impl Binder<'_> {
    /// Binds `l op r` when both sides are row constructors and `op` compares; `None` when
    /// they are not (the caller binds the operator as usual).
    pub(super) fn row_comparison(&mut self, l: &ast::Expr, op: &Op, r: &ast::Expr) -> Option<Result<Typed>> {
        let (Some(ls), Some(rs)) = (row_elements(l), row_elements(r)) else {
            return None;
        };
        if !matches!(op, Op::Eq | Op::NotEq | Op::Lt | Op::LtEq | Op::Gt | Op::GtEq) {
            return None;
        }
        if ls.len() != rs.len() || ls.is_empty() {
            let e = SqlError::Syntax("unequal number of entries in row expressions".into());
            return Some(Err(e.at(l.span(), Point::After)));
        }
        Some(self.expr(&expand(&ls, op, &rs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> ast::Expr {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(s)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    #[test]
    fn rows_expand_pair_by_pair() {
        let cases = [
            (
                "(a, b, c) < (1, 2, 3)",
                "a < 1 OR (a = 1 AND (b < 2 OR (b = 2 AND (c < 3))))",
            ),
            ("(a, b) >= (1, 2)", "a > 1 OR (a = 1 AND (b >= 2))"),
            ("(a, b) = (1, 2)", "a = 1 AND (b = 2)"),
            ("(a, b) <> (1, 2)", "a <> 1 OR (b <> 2)"),
            ("ROW(a, b) > row(1, 2)", "a > 1 OR (a = 1 AND (b > 2))"),
        ];
        for (row, want) in cases {
            let ast::Expr::BinaryOp { left, op, right } = parse(row) else {
                panic!("{row}")
            };
            let got = expand(&row_elements(&left).unwrap(), &op, &row_elements(&right).unwrap());
            assert_eq!(got.to_string(), want, "{row}");
        }
    }
}
