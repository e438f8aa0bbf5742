//! Calls of scalar functions (`lower(x)`, `coalesce(a, b)`, `now()`): the function named,
//! its arguments bound and counted, its result type; an aggregate or window call is handed
//! on (bind/aggregate.rs, bind/window.rs). A name no signature matches is 42883, named with
//! its argument types as PostgreSQL names it.

use permafrost_types::{DataType, Value};
use sqlparser::ast::{self, DuplicateTreatment, FunctionArg, FunctionArgExpr, FunctionArguments, Spanned};

use super::{Binder, Typed, object_name};
use crate::error::{Result, SqlError, unsupported};
use crate::expr::{AggFunc, Expr, Func};

impl Binder<'_> {
    pub(super) fn function(&mut self, f: &ast::Function) -> Result<Typed> {
        let name = object_name(&f.name)?;
        if !f.within_group.is_empty() {
            return unsupported(format!("WITHIN GROUP ({name})"));
        }
        let (args, distinct, star) = match &f.args {
            FunctionArguments::None => (vec![], false, false),
            FunctionArguments::Subquery(_) => return unsupported("subqueries"),
            FunctionArguments::List(list) => {
                let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
                let mut args = vec![];
                let mut star = false;
                for a in &list.args {
                    match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => args.push(e),
                        FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => star = true,
                        _ => return unsupported(format!("argument form in {name}")),
                    }
                }
                (args, distinct, star)
            }
        };
        if let Some(over) = &f.over {
            if f.filter.is_some() {
                return unsupported("FILTER in window functions");
            }
            return self.window(&name, over, &args, distinct, star, f.name.span());
        }
        let agg = match name.as_str() {
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "avg" => Some(AggFunc::Avg),
            _ => None,
        };
        if let Some(func) = agg {
            return self.aggregate(func, &name, &args, distinct, star, f.filter.as_deref());
        }
        if f.filter.is_some() {
            return Err(SqlError::WrongObjectType(format!(
                "FILTER specified, but {name} is not an aggregate function"
            )));
        }
        if star || distinct {
            return Err(SqlError::Syntax(format!(
                "{name}(*) / {name}(DISTINCT ...) is only valid for aggregates"
            )));
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for &a in &args {
            let (x, t) = self.expr(a)?;
            bound.push(x);
            types.push(t);
        }
        let n = bound.len();
        let signature = || signature(&name, &args, &types);
        let arity = |lo: usize, hi: usize| -> Result<()> {
            if n < lo || n > hi {
                Err(SqlError::UnknownFunction(signature()))
            } else {
                Ok(())
            }
        };
        let first = types.first().copied().flatten();
        let (func, ty) = match name.as_str() {
            "now" | "current_timestamp" | "localtimestamp" | "transaction_timestamp" => {
                arity(0, 0)?;
                return Ok((Expr::Now, Some(DataType::Timestamp)));
            }
            // No advisory lock is ever held here: releasing them all releases nothing
            // (poolers call it to clean a connection).
            "pg_advisory_unlock_all" => {
                arity(0, 0)?;
                return Ok((Expr::Const(Value::Null), Some(DataType::Varchar(None))));
            }
            // The only schema: what drivers and ORMs ask for when they connect.
            "current_schema" => {
                arity(0, 0)?;
                return Ok((Expr::Const(Value::from("public")), Some(DataType::Varchar(None))));
            }
            "abs" => (Func::Abs, first),
            "lower" => (Func::Lower, Some(DataType::Varchar(None))),
            "upper" => (Func::Upper, Some(DataType::Varchar(None))),
            "btrim" => (Func::Trim, Some(DataType::Varchar(None))),
            "length" | "char_length" | "character_length" => (Func::Length, Some(DataType::Integer)),
            "substr" | "substring" => (Func::Substring, Some(DataType::Varchar(None))),
            "coalesce" => (Func::Coalesce, types.iter().find_map(|t| *t)),
            "nullif" => (Func::NullIf, first),
            "round" => (Func::Round, first),
            "floor" => (Func::Floor, first),
            "ceil" | "ceiling" => (Func::Ceil, first),
            "concat" => (Func::Concat, Some(DataType::Varchar(None))),
            "greatest" => (Func::Greatest, types.iter().find_map(|t| *t)),
            "least" => (Func::Least, types.iter().find_map(|t| *t)),
            n if super::is_set_returning(n) => {
                return Err(SqlError::SetReturningHere(self.clause.unwrap_or("this expression")));
            }
            _ => return Err(SqlError::UnknownFunction(signature())),
        };
        match func {
            Func::Abs | Func::Lower | Func::Upper | Func::Length | Func::Floor | Func::Ceil | Func::Trim => {
                arity(1, 1)?
            }
            Func::Substring => arity(2, 3)?,
            Func::NullIf | Func::AnyEq { .. } => arity(2, 2)?,
            Func::Round => arity(1, 2)?,
            Func::Coalesce | Func::Concat | Func::Greatest | Func::Least => arity(1, usize::MAX)?,
        }
        if matches!(func, Func::Coalesce | Func::Greatest | Func::Least | Func::NullIf) {
            for b in &bound {
                self.infer(b, ty);
            }
        }
        Ok((Expr::Func(func, bound), ty))
    }
}

/// A function no signature matches, as PostgreSQL names it: its argument types, a quoted
/// literal's `unknown`.
pub(super) fn signature(name: &str, args: &[&ast::Expr], types: &[Option<DataType>]) -> String {
    let shown: Vec<Option<DataType>> = args
        .iter()
        .zip(types)
        .map(|(a, t)| if is_quoted_literal(a) { None } else { *t })
        .collect();
    format!("{name}({})", argument_types(&shown))
}

/// Whether `e` is a quoted literal, whose type PostgreSQL leaves unknown until a function
/// or operator takes it.
fn is_quoted_literal(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)))
}

/// Argument types as PostgreSQL lists them where no function matches: each type's name
/// without its modifiers, `unknown` for an untyped literal or parameter.
fn argument_types(types: &[Option<DataType>]) -> String {
    types
        .iter()
        .map(|t| super::type_name(*t))
        .collect::<Vec<_>>()
        .join(", ")
}
