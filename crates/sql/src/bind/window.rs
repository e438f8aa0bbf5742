//! Window function calls met while binding (`f(args) OVER (PARTITION BY ... ORDER BY ...)`):
//! their function, arguments, partition and order, and result type; kept among the query's
//! window calls (`Expr::Window` reads each by number). Only the default frame is taken.

use permafrost_types::DataType;
use sqlparser::ast;

use super::{Binder, Typed};
use crate::error::{Result, SqlError, unsupported};
use crate::expr::{AggFunc, Expr, WinFunc, WindowCall};

impl Binder<'_> {
    /// Binds `name(args) OVER (...)`.
    pub(super) fn window(
        &mut self,
        name: &str,
        over: &ast::WindowType,
        args: &[&ast::Expr],
        distinct: bool,
        star: bool,
    ) -> Result<Typed> {
        let Some(mut windows) = self.windows.take() else {
            return Err(SqlError::WindowingError(self.not_allowed("window")));
        };
        let r = self.window_call(name, over, args, distinct, star);
        let r = r.map(|call| {
            let ty = call.ty;
            let i = match windows.iter().position(|w| *w == call) {
                Some(i) => i,
                None => {
                    windows.push(call);
                    windows.len() - 1
                }
            };
            (Expr::Window(i), ty)
        });
        self.windows = Some(windows);
        r
    }

    fn window_call(
        &mut self,
        name: &str,
        over: &ast::WindowType,
        args: &[&ast::Expr],
        distinct: bool,
        star: bool,
    ) -> Result<WindowCall> {
        let ast::WindowType::WindowSpec(spec) = over else {
            return unsupported("named windows (WINDOW w AS ...)");
        };
        if spec.window_name.is_some() {
            return unsupported("a window built on a named window");
        }
        if spec.window_frame.is_some() {
            return unsupported("window frames (ROWS / RANGE / GROUPS ...; the default frame is taken)");
        }
        if distinct {
            return unsupported("DISTINCT in window functions");
        }
        let func = match name {
            "row_number" => WinFunc::RowNumber,
            "rank" => WinFunc::Rank,
            "dense_rank" => WinFunc::DenseRank,
            "lag" => WinFunc::Lag,
            "lead" => WinFunc::Lead,
            "first_value" => WinFunc::FirstValue,
            "last_value" => WinFunc::LastValue,
            "nth_value" => WinFunc::NthValue,
            "ntile" => WinFunc::Ntile,
            "percent_rank" => WinFunc::PercentRank,
            "cume_dist" => WinFunc::CumeDist,
            "count" => WinFunc::Agg(AggFunc::Count),
            "sum" => WinFunc::Agg(AggFunc::Sum),
            "avg" => WinFunc::Agg(AggFunc::Avg),
            "min" => WinFunc::Agg(AggFunc::Min),
            "max" => WinFunc::Agg(AggFunc::Max),
            other => {
                return Err(SqlError::UnknownFunction(format!("{other} as a window function")));
            }
        };
        // Nothing inside a window call is itself a window call.
        let saved = self.windows.take();
        let clause = self.clause.take();
        let bound = (|| {
            let mut bound = Vec::with_capacity(args.len());
            for a in args {
                bound.push(self.expr(a)?);
            }
            let partition = spec
                .partition_by
                .iter()
                .map(|e| Ok(self.expr(e)?.0))
                .collect::<Result<Vec<_>>>()?;
            let mut order = Vec::with_capacity(spec.order_by.len());
            for o in &spec.order_by {
                let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                order.push((self.expr(&o.expr)?.0, desc, o.options.nulls_first.unwrap_or(desc)));
            }
            Ok::<_, SqlError>((bound, partition, order))
        })();
        self.windows = saved;
        self.clause = clause;
        let (bound, partition, order) = bound?;
        let arity_ok = match func {
            WinFunc::RowNumber | WinFunc::Rank | WinFunc::DenseRank | WinFunc::PercentRank | WinFunc::CumeDist => {
                bound.is_empty() && !star
            }
            WinFunc::Lag | WinFunc::Lead => (1..=3).contains(&bound.len()),
            WinFunc::FirstValue | WinFunc::LastValue => bound.len() == 1,
            WinFunc::NthValue => bound.len() == 2,
            WinFunc::Ntile => bound.len() == 1,
            WinFunc::Agg(AggFunc::Count) => (star && bound.is_empty()) || bound.len() == 1,
            WinFunc::Agg(_) => bound.len() == 1 && !star,
        };
        if !arity_ok {
            return Err(SqlError::UnknownFunction(format!("{name} with these arguments")));
        }
        let at = bound.first().and_then(|(_, t)| *t);
        let ty = match func {
            WinFunc::RowNumber | WinFunc::Rank | WinFunc::DenseRank => Some(DataType::BigInt),
            WinFunc::Ntile => Some(DataType::Integer),
            WinFunc::PercentRank | WinFunc::CumeDist => Some(DataType::Double),
            WinFunc::Lag | WinFunc::Lead | WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue => at,
            WinFunc::Agg(func) => super::aggregate::aggregate_type(func, at)?,
        };
        Ok(WindowCall {
            func,
            args: bound.into_iter().map(|(e, _)| e).collect(),
            star,
            partition,
            order,
            ty,
        })
    }
}
