//! Operands that are arrays: the right side of `x = ANY(...)` and the arguments of
//! `unnest(...)`. The engine carries an array as its literal's text (crate::array), so an
//! array operand is a text expression with the type its elements are read as: a
//! parameter or a string constant cast to an array type (casts nested as client-side
//! binding writes them, `('{1,2}'::int2[])::integer[]`, are read by their outermost), or
//! `ARRAY[a, b, ...]`, built into a literal when it is evaluated.

use permafrost_types::{DataType, Value};
use sqlparser::ast;

use super::Binder;
use super::literal::map_type;
use crate::error::{Point, Result, SqlError};
use crate::expr::{Expr, Func};

/// `e` without its parentheses and its casts to array types, and the element type the
/// outermost of those casts names (`None` without one, or for `::anyarray`-like `[]`).
fn strip_array_casts(e: &ast::Expr) -> Result<(&ast::Expr, Option<DataType>)> {
    let mut e = e;
    let mut elem = None;
    let mut outermost = true;
    loop {
        match e {
            ast::Expr::Nested(inner) => e = inner,
            ast::Expr::Cast {
                expr,
                data_type: ast::DataType::Array(def),
                format: None,
                ..
            } => {
                if outermost {
                    elem = match def {
                        ast::ArrayElemTypeDef::SquareBracket(t, _)
                        | ast::ArrayElemTypeDef::AngleBracket(t)
                        | ast::ArrayElemTypeDef::Parenthesis(t)
                        | ast::ArrayElemTypeDef::Qualified(t, _) => Some(map_type(t)?),
                        ast::ArrayElemTypeDef::None => None,
                    };
                    outermost = false;
                }
                e = expr;
            }
            other => return Ok((other, elem)),
        }
    }
}

impl<'c> Binder<'c> {
    /// An array operand without its casts ([`strip_array_casts`]).
    pub(super) fn array_without_casts(e: &ast::Expr) -> Result<(&ast::Expr, Option<DataType>)> {
        strip_array_casts(e)
    }

    /// Records that the bound operand `a` (typed `at`) is used as an array whose elements
    /// are read as `elem`: a parameter becomes an array parameter; text is an array
    /// literal; anything else is not an array (42804, `what` naming the use).
    pub(super) fn array_use(
        &mut self,
        a: &Expr,
        at: Option<DataType>,
        elem: Option<DataType>,
        what: &str,
    ) -> Result<()> {
        match a {
            Expr::Param(i) => {
                if self.params[*i].is_some() {
                    return Err(SqlError::Type(format!(
                        "parameter ${} is used both as an array and as a value",
                        i + 1
                    )));
                }
                self.array_params.retain(|(p, _)| p != i);
                self.array_params.push((*i, elem));
                Ok(())
            }
            _ if matches!(at, None | Some(DataType::Varchar(_))) => Ok(()),
            _ => Err(SqlError::Type(what.to_string())),
        }
    }

    /// Binds an array operand of a function (`unnest`): the text of its literal, and the
    /// type of its elements (`None` when nothing names it: they stay text).
    pub(crate) fn array_operand(&mut self, e: &ast::Expr, function: &str) -> Result<(Expr, Option<DataType>)> {
        let (inner, cast_elem) = strip_array_casts(e)?;
        if let ast::Expr::Array(arr) = inner {
            let mut items = Vec::with_capacity(arr.elem.len());
            let mut elem = cast_elem;
            for item in &arr.elem {
                let (x, xt) = self.expr(item)?;
                elem = match (elem, xt) {
                    (None, t) => t,
                    (Some(e), Some(t)) if cast_elem.is_none() => Some(super::literal::common_type(e, t)?),
                    (e, _) => e,
                };
                items.push(x);
            }
            for x in &items {
                self.infer(x, elem);
            }
            return Ok((Expr::Func(Func::ArrayOf, items), elem));
        }
        let (a, at) = self.expr(inner)?;
        if !matches!(a, Expr::Param(_)) && at.is_some_and(|t| !t.is_text()) {
            return Err(SqlError::UnknownFunction(format!(
                "{function}({})",
                super::type_name(at)
            )));
        }
        self.array_use(&a, at, cast_elem, "")?;
        // A constant's elements are read now, as PostgreSQL reads an array literal when the
        // statement is planned: a bad one is an error at its place.
        if let (Expr::Const(Value::Text(text)), Some(elem)) = (&a, cast_elem) {
            let place = crate::error::start_of(inner);
            for item in crate::array::elements(text)
                .map_err(|e| e.at(place, Point::Start))?
                .into_iter()
                .flatten()
            {
                Value::parse(&elem, &item).map_err(|e| SqlError::from(e).at(place, Point::Start))?;
            }
        }
        Ok((a, cast_elem))
    }
}
