//! Aggregate calls met while binding (`count`, `sum`, `avg`, `min`, `max`): their argument,
//! their result type as PostgreSQL gives it, and their place among the query's aggregates.

use permafrost_types::DataType;
use sqlparser::ast;

use super::{Binder, Typed};
use crate::error::{Result, SqlError};
use crate::expr::{AggCall, AggFunc, Expr};

impl Binder<'_> {
    /// Binds an aggregate call of the select list, HAVING or ORDER BY: its argument and
    /// result type, kept once among the query's aggregates (`Expr::Agg` reads it by number).
    pub(super) fn aggregate(
        &mut self,
        func: AggFunc,
        name: &str,
        args: &[&ast::Expr],
        distinct: bool,
        star: bool,
        filter: Option<&ast::Expr>,
    ) -> Result<Typed> {
        let Some(mut aggs) = self.aggs.take() else {
            return Err(SqlError::Grouping(self.not_allowed("aggregate")));
        };
        // Inside the call, another is nested, wherever the call stands.
        let clause = self.clause.take();
        let result = (|| {
            // (Its FILTER, like its argument, may hold no aggregate: `aggs` is taken.)
            let filter = match filter {
                Some(w) => {
                    let (x, t) = self.expr(w)?;
                    if t.is_some_and(|t| t != DataType::Boolean) {
                        return Err(SqlError::Type(format!(
                            "argument of FILTER must be type boolean, not type {}",
                            t.unwrap_or(DataType::Boolean)
                        )));
                    }
                    Some(x)
                }
                None => None,
            };
            let (arg, at) = match (star, args) {
                (true, []) if func == AggFunc::Count => (None, None),
                (false, [a]) => {
                    let (x, t) = self.expr(a)?;
                    (Some(x), t)
                }
                _ => {
                    let mut types = Vec::with_capacity(args.len());
                    for a in args {
                        types.push(self.expr(a)?.1);
                    }
                    return Err(SqlError::UnknownFunction(super::call::signature(name, args, &types)));
                }
            };
            let ty = aggregate_type(func, at)?;
            Ok(AggCall {
                filter,
                func,
                arg,
                distinct,
                ty,
            })
        })();
        self.clause = clause;
        let call = match result {
            Ok(c) => c,
            Err(e) => {
                self.aggs = Some(aggs);
                return Err(e);
            }
        };
        let ty = call.ty;
        let idx = match aggs.iter().position(|a| *a == call) {
            Some(i) => i,
            None => {
                aggs.push(call);
                aggs.len() - 1
            }
        };
        self.aggs = Some(aggs);
        Ok((Expr::Agg(idx), ty))
    }
}

/// The result type of aggregate `func` over values of type `at`, as PostgreSQL gives it:
/// the sum of bigints is a numeric (it does not overflow), of smaller integers a bigint;
/// the average of integers or numerics a numeric.
pub(super) fn aggregate_type(func: AggFunc, at: Option<DataType>) -> Result<Option<DataType>> {
    Ok(match func {
        AggFunc::Count => Some(DataType::BigInt),
        AggFunc::Min | AggFunc::Max => at,
        AggFunc::Sum => match at {
            Some(DataType::BigInt) | Some(DataType::Decimal { .. }) => {
                Some(DataType::Decimal { precision: 0, scale: 0 })
            }
            Some(t) if t.is_integer() => Some(DataType::BigInt),
            Some(DataType::Double) => Some(DataType::Double),
            Some(t) => return Err(SqlError::UnknownFunction(format!("sum({t})"))),
            None => None,
        },
        AggFunc::Avg => match at {
            Some(DataType::Double) => Some(DataType::Double),
            Some(t) if t.is_numeric() => Some(DataType::Decimal { precision: 0, scale: 0 }),
            Some(t) => return Err(SqlError::UnknownFunction(format!("avg({t})"))),
            None => None,
        },
    })
}
