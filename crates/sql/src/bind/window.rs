//! Window function calls met while binding (`f(args) OVER (PARTITION BY ... ORDER BY ...)`):
//! their function, arguments, partition and order, and result type; kept among the query's
//! window calls (`Expr::Window` reads each by number). A window may be named in the
//! query's WINDOW clause and built on (`OVER w`, `OVER (w ORDER BY ...)`), as PostgreSQL
//! allows; frames are ROWS, RANGE or GROUPS between any two bounds (EXCLUDE, which the
//! parser does not read, is refused as a syntax error).

use permafrost_types::DataType;
use sqlparser::ast::{self, Spanned};
use sqlparser::tokenizer::Span;

use super::{Binder, Typed};
use crate::error::{Point, Result, SqlError, unsupported};
use crate::expr::window::{Frame, FrameBound, FrameUnits, WinFunc, WindowCall};
use crate::expr::{AggFunc, Expr};

impl Binder<'_> {
    /// Binds `name(args) OVER (...)`.
    pub(super) fn window(
        &mut self,
        name: &str,
        over: &ast::WindowType,
        args: &[&ast::Expr],
        distinct: bool,
        star: bool,
        at: Span,
    ) -> Result<Typed> {
        let Some(mut windows) = self.windows.take() else {
            return Err(SqlError::WindowingError(self.not_allowed("window")));
        };
        let r = self.window_call(name, over, args, distinct, star, at);
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
        at: Span,
    ) -> Result<WindowCall> {
        let spec = match over {
            ast::WindowType::WindowSpec(spec) => self.window_spec(spec, true),
            ast::WindowType::NamedWindow(name) => self.named_window(name).cloned(),
        };
        let spec = spec.map_err(|e| e.at(at, Point::Over))?;
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
            "bool_and" | "every" => WinFunc::Agg(AggFunc::BoolAnd),
            "bool_or" => WinFunc::Agg(AggFunc::BoolOr),
            "array_agg" | "string_agg" | "json_agg" | "jsonb_agg" | "json_object_agg" | "jsonb_object_agg" => {
                return Err(SqlError::Unsupported(format!(
                    "{name} as a window function (use it with GROUP BY, or ARRAY(SELECT ...) per row)"
                )));
            }
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
            let mut key_type = None;
            for o in &spec.order_by {
                let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                let (key, ty) = self.expr(&o.expr)?;
                key_type = ty;
                order.push((key, desc, o.options.nulls_first.unwrap_or(desc)));
            }
            let frame = match &spec.window_frame {
                None => Frame::default(),
                Some(f) => self.frame(f, &order, key_type, at)?,
            };
            Ok::<_, SqlError>((bound, partition, order, frame))
        })();
        self.windows = saved;
        self.clause = clause;
        let (bound, partition, order, frame) = bound?;
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
            frame,
            ty,
        })
    }

    /// The window of the query's WINDOW clause named `name`.
    fn named_window(&self, name: &ast::Ident) -> Result<&ast::WindowSpec> {
        let name = super::ident(name);
        match self.named_windows.iter().find(|(n, _)| *n == name) {
            Some((_, spec)) => Ok(spec),
            None => Err(SqlError::UnknownWindow(name)),
        }
    }

    /// `spec` with the named window it is built on (`(w ORDER BY x)`) merged in, under
    /// PostgreSQL's rules: the new window adds ORDER BY only where the named one has none,
    /// never PARTITION BY, and the named one has no frame. `in_over`: written in an OVER
    /// clause (where the hint to drop the parentheses applies).
    pub(crate) fn window_spec(&self, spec: &ast::WindowSpec, in_over: bool) -> Result<ast::WindowSpec> {
        let Some(base) = &spec.window_name else {
            return Ok(spec.clone());
        };
        let name = super::ident(base);
        let of = self.named_window(base)?;
        let refuse = |what: String| Err(SqlError::WindowingError(what));
        if !spec.partition_by.is_empty() {
            return refuse(format!("cannot override PARTITION BY clause of window \"{name}\""));
        }
        if !spec.order_by.is_empty() && !of.order_by.is_empty() {
            return refuse(format!("cannot override ORDER BY clause of window \"{name}\""));
        }
        if of.window_frame.is_some() {
            return Err(SqlError::CopyFramedWindow { name, in_over });
        }
        Ok(ast::WindowSpec {
            window_name: None,
            partition_by: of.partition_by.clone(),
            order_by: if spec.order_by.is_empty() {
                of.order_by.clone()
            } else {
                spec.order_by.clone()
            },
            window_frame: spec.window_frame.clone(),
        })
    }

    /// Binds a frame clause over a window ordered by `order`, refusing what PostgreSQL
    /// refuses (42P20) before any row is read.
    fn frame(
        &mut self,
        f: &ast::WindowFrame,
        order: &[(Expr, bool, bool)],
        last_key: Option<DataType>,
        at: Span,
    ) -> Result<Frame> {
        use ast::WindowFrameBound as B;
        let refuse = |what: &str, point| Err(SqlError::WindowingError(what.to_string()).at(at, point));
        let end = f.end_bound.clone().unwrap_or(B::CurrentRow);
        match (&f.start_bound, &end) {
            (B::Following(None), _) => return refuse("frame start cannot be UNBOUNDED FOLLOWING", Point::FrameStart),
            (_, B::Preceding(None)) => return refuse("frame end cannot be UNBOUNDED PRECEDING", Point::FrameEnd),
            (B::CurrentRow, B::Preceding(_)) => {
                return refuse(
                    "frame starting from current row cannot have preceding rows",
                    Point::FrameEnd,
                );
            }
            (B::Following(_), B::Preceding(_) | B::CurrentRow) => {
                return refuse(
                    "frame starting from following row cannot have preceding rows",
                    Point::FrameEnd,
                );
            }
            _ => {}
        }
        let (units, name) = match f.units {
            ast::WindowFrameUnits::Rows => (FrameUnits::Rows, "ROWS"),
            ast::WindowFrameUnits::Range => (FrameUnits::Range, "RANGE"),
            ast::WindowFrameUnits::Groups => (FrameUnits::Groups, "GROUPS"),
        };
        let offsets = [&f.start_bound, &end]
            .iter()
            .any(|b| matches!(b, B::Preceding(Some(_)) | B::Following(Some(_))));
        if units == FrameUnits::Range && offsets && order.len() != 1 {
            return refuse(
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
                Point::Over,
            );
        }
        if units == FrameUnits::Groups && order.is_empty() {
            return refuse("GROUPS mode requires an ORDER BY clause", Point::Over);
        }
        let key_type = match units {
            FrameUnits::Range if offsets => Some(range_key_type(last_key).map_err(|e| {
                let first = [&f.start_bound, &end].into_iter().find_map(|b| match b {
                    B::Preceding(Some(e)) | B::Following(Some(e)) => Some(e.span()),
                    _ => None,
                });
                e.at(first.unwrap_or(at), Point::Start)
            })?),
            _ => None,
        };
        let mut bound = |b: &B| -> Result<FrameBound> {
            Ok(match b {
                B::Preceding(None) => FrameBound::UnboundedPreceding,
                B::Following(None) => FrameBound::UnboundedFollowing,
                B::CurrentRow => FrameBound::CurrentRow,
                B::Preceding(Some(e)) => FrameBound::Preceding(self.frame_offset(e, name, key_type.as_ref())?),
                B::Following(Some(e)) => FrameBound::Following(self.frame_offset(e, name, key_type.as_ref())?),
            })
        };
        Ok(Frame {
            units,
            start: bound(&f.start_bound)?,
            end: bound(&end)?,
        })
    }

    /// Binds a frame offset: an expression without columns, an integer for ROWS and
    /// GROUPS, a number for RANGE (the key's type `key_type`).
    fn frame_offset(&mut self, e: &ast::Expr, units: &str, key_type: Option<&DataType>) -> Result<Expr> {
        let node = match e {
            ast::Expr::Interval(iv) => iv.value.as_ref(),
            e => e,
        };
        self.frame_offset_at(e, units, key_type)
            .map_err(|err| err.at(crate::error::start_of(node), Point::Start))
    }

    fn frame_offset_at(&mut self, e: &ast::Expr, units: &str, key_type: Option<&DataType>) -> Result<Expr> {
        // sqlparser reads a quoted offset (`'2' PRECEDING`) as an interval; PostgreSQL
        // reads it as a literal of the offset's type.
        if let ast::Expr::Interval(iv) = e
            && iv.leading_field.is_none()
            && let ast::Expr::Value(v) = iv.value.as_ref()
            && let ast::Value::SingleQuotedString(text) = &v.value
        {
            let ty = key_type.cloned().unwrap_or(DataType::BigInt);
            return Ok(Expr::Const(permafrost_types::Value::parse(&ty, text)?));
        }
        let (x, ty) = self.expr(e)?;
        let mut columns = false;
        x.walk(&mut |y| columns |= matches!(y, Expr::Column { .. } | Expr::Outer(_)));
        if columns {
            return Err(SqlError::InvalidColumnReference(format!(
                "argument of {units} must not contain variables"
            )));
        }
        let fits = match (key_type, ty) {
            (_, None) => true,
            (None, Some(t)) => t.is_integer(),
            (Some(k), Some(t)) => match k {
                DataType::Double => t.is_numeric(),
                DataType::Decimal { .. } => t.is_numeric() && t != DataType::Double,
                _ => t.is_integer(),
            },
        };
        if !fits {
            return Err(match key_type {
                None => SqlError::Type(format!(
                    "argument of {units} must be type bigint, not type {}",
                    super::type_name(ty)
                )),
                Some(k) => SqlError::RangeOffset {
                    column: super::type_name(Some(*k)),
                    offset: Some(super::type_name(ty)),
                },
            });
        }
        Ok(x)
    }
}

/// The type of a RANGE frame's ORDER BY key, which its offsets are added to: a number.
fn range_key_type(ty: Option<DataType>) -> Result<DataType> {
    match ty {
        Some(t) if t.is_numeric() => Ok(t),
        other => Err(SqlError::RangeOffset {
            column: super::type_name(other),
            offset: None,
        }),
    }
}
