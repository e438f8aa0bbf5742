//! Binding of the pattern matches that are not operators: `[NOT] LIKE` / `ILIKE` with an
//! optional ESCAPE, and `[NOT] SIMILAR TO` (a regular expression match of the pattern as
//! PostgreSQL rewrites it, `expr/regex.rs`).

use permafrost_types::DataType;
use sqlparser::ast;

use super::{Binder, Typed};
use crate::error::Result;
use crate::expr::regex::RegexFn;
use crate::expr::{Expr, Func};

impl Binder<'_> {
    /// Binds `expr [NOT] LIKE pattern [ESCAPE e]` (`case_insensitive`: ILIKE); all are
    /// text. An ESCAPE other than the backslash rewrites the pattern (`like_escape`).
    pub(super) fn like(
        &mut self,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        escape: Option<&ast::Expr>,
        negated: bool,
        case_insensitive: bool,
    ) -> Result<Typed> {
        let (x, _) = self.expr(expr)?;
        let (p, _) = self.expr(pattern)?;
        self.infer(&x, Some(DataType::Varchar(None)));
        self.infer(&p, Some(DataType::Varchar(None)));
        let p = match escape {
            Some(e) => once(Expr::Func(
                Func::Regex(RegexFn::LikeEscape),
                vec![p, self.text_operand(e)?],
            )),
            None => p,
        };
        Ok((
            Expr::Like {
                expr: x.boxed(),
                pattern: p.boxed(),
                negated,
                case_insensitive,
            },
            Some(DataType::Boolean),
        ))
    }

    /// Binds `expr [NOT] SIMILAR TO pattern [ESCAPE e]`: `expr ~ similar_to_escape(pattern,
    /// e)`, as PostgreSQL plans it.
    pub(super) fn similar_to(
        &mut self,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        escape: Option<&ast::Expr>,
        negated: bool,
    ) -> Result<Typed> {
        let x = self.text_operand(expr)?;
        let mut args = vec![self.text_operand(pattern)?];
        if let Some(e) = escape {
            args.push(self.text_operand(e)?);
        }
        let regex = once(Expr::Func(Func::Regex(RegexFn::SimilarEscape), args));
        let f = Func::Regex(RegexFn::Match { icase: false, negated });
        Ok((Expr::Func(f, vec![x, regex]), Some(DataType::Boolean)))
    }

    /// `e` bound as text (a parameter typed so).
    fn text_operand(&mut self, e: &ast::Expr) -> Result<Expr> {
        let (x, _) = self.expr(e)?;
        self.infer(&x, Some(DataType::Varchar(None)));
        Ok(x)
    }
}

/// A pattern rewritten from constants, rewritten once now rather than for every row (an
/// error, a bad ESCAPE, is left to the statement's run, where PostgreSQL gives it).
fn once(rewrite: Expr) -> Expr {
    let constant = matches!(&rewrite, Expr::Func(_, args) if args.iter().all(|a| matches!(a, Expr::Const(_))));
    match constant.then(|| rewrite.eval_const(&crate::expr::Cx::new(&[], 0))) {
        Some(Ok(v)) => Expr::Const(v),
        _ => rewrite,
    }
}
