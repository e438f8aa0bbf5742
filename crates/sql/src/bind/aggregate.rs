//! Aggregate calls met while binding (`count`, `sum`, `avg`, `min`, `max`, `bool_and`,
//! `bool_or`, `array_agg`, `string_agg`, `json[b]_agg`, `json[b]_object_agg`): their
//! argument (and `string_agg`'s delimiter or `json_object_agg`'s value, and the call's own
//! ORDER BY), their result type as PostgreSQL gives it, and their place among the query's
//! aggregates.

use permafrost_types::DataType;
use sqlparser::ast;

use super::{Binder, Typed};
use crate::error::{Result, SqlError};
use crate::expr::{AggCall, AggFunc, AggOrder, Expr};

impl Binder<'_> {
    /// Binds an aggregate call of the select list, HAVING or ORDER BY: its argument and
    /// result type, kept once among the query's aggregates (`Expr::Agg` reads it by number).
    pub(super) fn aggregate(
        &mut self,
        func: AggFunc,
        name: &str,
        args: &[&ast::Expr],
        (distinct, star): (bool, bool),
        order: &[ast::OrderByExpr],
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
            let mut second = None;
            let mut func = func;
            let (arg, at) = match (star, args) {
                (true, []) if func == AggFunc::Count => (None, None),
                (false, [a]) if !matches!(func, AggFunc::StringAgg | AggFunc::JsonObjectAgg { .. }) => {
                    // (`json_agg(t)` of a relation's rows: each row an object.)
                    let row = match func {
                        AggFunc::JsonAgg { .. } => self.whole_row(a)?,
                        _ => None,
                    };
                    let is_row = row.is_some();
                    let (x, t) = match row {
                        Some(r) => (r, Some(DataType::Json)),
                        None => self.expr(a)?,
                    };
                    if let AggFunc::JsonAgg { jsonb, .. } = func {
                        func = AggFunc::JsonAgg {
                            jsonb,
                            from: match is_row {
                                true => crate::expr::json::JsonFrom::Row,
                                false => crate::expr::json::json_from(t),
                            },
                        };
                    }
                    if matches!(func, AggFunc::BoolAnd | AggFunc::BoolOr) {
                        self.infer(&x, Some(DataType::Boolean));
                    }
                    (Some(x), t)
                }
                (false, [k, v]) if matches!(func, AggFunc::JsonObjectAgg { .. }) => {
                    let (x, t) = self.expr(k)?;
                    let (y, yt) = self.expr(v)?;
                    self.infer(&x, Some(DataType::Varchar(None)));
                    if let AggFunc::JsonObjectAgg { jsonb, .. } = func {
                        func = AggFunc::JsonObjectAgg {
                            jsonb,
                            from: crate::expr::json::json_from(yt),
                        };
                    }
                    second = Some(y);
                    (Some(x), t)
                }
                (false, [a, d]) if func == AggFunc::StringAgg => {
                    let (x, t) = self.expr(a)?;
                    let (y, yt) = self.expr(d)?;
                    if t.is_some_and(|t| !t.is_text()) || yt.is_some_and(|t| !t.is_text()) {
                        return Err(SqlError::UnknownFunction(super::call::signature(name, args, &[t, yt])));
                    }
                    self.infer(&x, Some(DataType::Varchar(None)));
                    self.infer(&y, Some(DataType::Varchar(None)));
                    second = Some(y);
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
            let mut keys = Vec::with_capacity(order.len());
            for k in order {
                let desc = match &k.options.sort {
                    None | Some(ast::OrderBySort::Asc) => false,
                    Some(ast::OrderBySort::Desc) => true,
                    Some(ast::OrderBySort::Using(op)) => {
                        return Err(SqlError::Unsupported(format!("ORDER BY ... USING {op}")));
                    }
                };
                keys.push(AggOrder {
                    expr: self.expr(&k.expr)?.0,
                    desc,
                    nulls_first: k.options.nulls_first.unwrap_or(desc),
                });
            }
            if distinct && !keys.is_empty() && keys.iter().any(|k| Some(&k.expr) != arg.as_ref()) {
                return Err(SqlError::Type(
                    "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list".into(),
                ));
            }
            Ok(AggCall {
                filter,
                func,
                arg,
                distinct,
                ty,
                second,
                order: keys,
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
        AggFunc::ArrayAgg => Some(super::array::array_of(
            at.unwrap_or(DataType::Varchar(None)),
            "array_agg of arrays (arrays here have one dimension)",
        )?),
        AggFunc::StringAgg => Some(DataType::Varchar(None)),
        AggFunc::JsonAgg { jsonb, .. } | AggFunc::JsonObjectAgg { jsonb, .. } => {
            Some(if jsonb { DataType::Jsonb } else { DataType::Json })
        }
        AggFunc::BoolAnd | AggFunc::BoolOr => match at {
            None | Some(DataType::Boolean) => Some(DataType::Boolean),
            Some(t) => {
                let name = if func == AggFunc::BoolAnd {
                    "bool_and"
                } else {
                    "bool_or"
                };
                return Err(SqlError::UnknownFunction(format!("{name}({t})")));
            }
        },
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
