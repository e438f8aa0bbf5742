//! Binding `CASE`: its results typed alike.

use sqlparser::ast;

use super::literal::literal_as;
use super::{Binder, Typed};
use crate::error::Result;
use crate::expr::Expr;

impl Binder<'_> {
    /// Binds `CASE [operand] WHEN ... THEN ... [ELSE ...] END`, typed by the first result
    /// whose type is known; with an operand, it and each WHEN value type each other's
    /// parameters.
    pub(super) fn case(
        &mut self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
    ) -> Result<Typed> {
        let op = match operand {
            Some(o) => Some(self.expr(o)?),
            None => None,
        };
        let mut whens = Vec::new();
        let mut ty = None;
        for c in conditions {
            let (w, wt) = self.expr(&c.condition)?;
            if let Some((o, ot)) = &op {
                self.infer(&w, *ot);
                self.infer(o, wt);
            }
            let (r, rt) = self.expr(&c.result)?;
            ty = ty.or(rt);
            whens.push((w, (r, rt)));
        }
        let otherwise = match else_result {
            Some(e) => {
                let (x, t) = self.expr(e)?;
                ty = ty.or(t);
                Some((x, t))
            }
            None => None,
        };
        // A quoted literal among the results is read as the others' type (`ELSE 'sad'`
        // next to an enum or a date).
        let whens = whens
            .into_iter()
            .map(|(w, (r, rt))| Ok((w, literal_as(r, rt, ty)?.0)))
            .collect::<Result<Vec<_>>>()?;
        let otherwise = match otherwise {
            Some((x, t)) => Some(literal_as(x, t, ty)?.0.boxed()),
            None => None,
        };
        Ok((
            Expr::Case {
                operand: op.map(|(o, _)| o.boxed()),
                whens,
                otherwise,
            },
            ty,
        ))
    }
}
