//! Calls of the sequence functions: `nextval('items_id_seq')` and `setval(...)` on a
//! sequence of its own (`CREATE SEQUENCE`, crate::sequence) or of a SERIAL, BIGSERIAL or
//! identity column (crate::exec::sequences), named in a string literal as PostgreSQL names
//! it (`{table}_{column}_seq` for a column's, optionally `::regclass`); `currval(...)` and
//! `lastval()` read what the transaction or its session drew last.

use permafrost_storage::ColumnDefault;
use permafrost_types::{DataType, Value};
use sqlparser::ast;

use super::{Binder, Typed};
use crate::error::{Point, Result, SqlError, unsupported};
use crate::exec::sequences::sequence_name;
use crate::expr::{Expr, Func};
use crate::sequence::SeqStep;

/// The names of the functions [`Binder::sequence_function`] binds.
pub(super) const SEQUENCE_FUNCTIONS: &[&str] = &["nextval", "setval", "currval", "lastval"];

impl Binder<'_> {
    /// `nextval(name)`, `setval(name, value [, is_called])`; `args` unbound.
    pub(super) fn sequence_function(&mut self, name: &str, args: &[&ast::Expr]) -> Result<Typed> {
        let wrong = |n: usize| {
            Err(SqlError::UnknownFunction(format!(
                "{name}({})",
                vec!["unknown"; n].join(", ")
            )))
        };
        match name {
            "lastval" => {
                if !args.is_empty() {
                    return wrong(args.len());
                }
                Ok((
                    Expr::Func(Func::CurrVal { table: None }, vec![]),
                    Some(DataType::BigInt),
                ))
            }
            "currval" => {
                if args.len() != 1 {
                    return wrong(args.len());
                }
                let (table, seq, _) = self.sequence_named(args[0])?;
                let call = Expr::Func(
                    Func::CurrVal { table: Some(table) },
                    vec![Expr::Const(Value::from(seq))],
                );
                Ok((call, Some(DataType::BigInt)))
            }
            "nextval" => {
                if args.len() != 1 {
                    return wrong(args.len());
                }
                let (table, seq, step) = self.sequence_named(args[0])?;
                let call = Expr::Func(Func::NextVal { table, step }, vec![Expr::Const(Value::from(seq))]);
                Ok((call, Some(DataType::BigInt)))
            }
            _ => {
                if !(2..=3).contains(&args.len()) {
                    return wrong(args.len());
                }
                let (table, seq, step) = self.sequence_named(args[0])?;
                let (value, ty) = self.expr(args[1])?;
                let value = self.coerce_arg(value, ty, DataType::BigInt, "setval")?;
                let mut call = vec![Expr::Const(Value::from(seq)), value];
                if let Some(&is_called) = args.get(2) {
                    let (b, ty) = self.expr(is_called)?;
                    call.push(self.coerce_arg(b, ty, DataType::Boolean, "setval")?);
                }
                Ok((Expr::Func(Func::SetVal { table, step }, call), Some(DataType::BigInt)))
            }
        }
    }

    /// `e` as an argument of type `want`: unknown literals and parameters take it; other
    /// types must be it (integers of any width for a bigint).
    fn coerce_arg(&self, e: Expr, ty: Option<DataType>, want: DataType, f: &str) -> Result<Expr> {
        match ty {
            None => Ok(Expr::Cast(e.boxed(), want)),
            Some(t) if t == want => Ok(e),
            Some(DataType::SmallInt | DataType::Integer) if want == DataType::BigInt => Ok(Expr::Cast(e.boxed(), want)),
            Some(t) => Err(SqlError::UnknownFunction(format!(
                "{f}(regclass, {}{})",
                t.sql_name(),
                if want == DataType::Boolean { ", boolean" } else { "" }
            ))),
        }
    }

    /// The id of the sequence `e` names (a sequence's own, or its table's), its name, and
    /// how it steps.
    fn sequence_named(&self, e: &ast::Expr) -> Result<(permafrost_storage::TableId, String, SeqStep)> {
        let literal = match e {
            ast::Expr::Cast {
                expr,
                data_type: ast::DataType::Regclass | ast::DataType::Text,
                ..
            } => &**expr,
            e => e,
        };
        if let Some(named) = serial_sequence_call(literal) {
            let (table, column) = named?;
            let t = self
                .catalog
                .table(&table)
                .ok_or_else(|| SqlError::UnknownTable(table.clone()))?;
            let c = t
                .columns
                .iter()
                .position(|c| c.name == column)
                .ok_or_else(|| SqlError::UnknownColumn(column.clone()))?;
            if t.columns[c].default != Some(ColumnDefault::Sequence) {
                return Err(SqlError::InvalidArgument(format!(
                    "column \"{column}\" of relation \"{table}\" has no sequence"
                )));
            }
            return Ok((t.id, sequence_name(t, c), SeqStep::SERIAL));
        }
        let ast::Expr::Value(v) = literal else {
            return unsupported(
                "a sequence named by an expression or a parameter (name it in a string literal: \
                 nextval('items_id_seq'))",
            );
        };
        let ast::Value::SingleQuotedString(text) = &v.value else {
            return unsupported("a sequence named by something other than a string literal");
        };
        let name = super::name_in_text(text);
        if let Some(s) = self.catalog.sequence(&name) {
            return Ok((s.id, name, s.step));
        }
        for t in self.catalog.tables() {
            for (c, col) in t.columns.iter().enumerate() {
                if col.default == Some(ColumnDefault::Sequence) && sequence_name(t, c) == name {
                    return Ok((t.id, name, SeqStep::SERIAL));
                }
            }
        }
        // Placed at the literal, as PostgreSQL places it.
        let place = v.span.start;
        Err(SqlError::At {
            error: Box::new(SqlError::UnknownTable(name)),
            line: place.line,
            column: place.column,
            point: Point::Start,
        })
    }
}

/// `pg_get_serial_sequence('table', 'column')` (as Django's sequence reset names a
/// sequence): the table and column it names, if `e` is that call.
fn serial_sequence_call(e: &ast::Expr) -> Option<Result<(String, String)>> {
    let ast::Expr::Function(f) = e else { return None };
    let last = f.name.0.last()?.as_ident()?;
    if !last.value.eq_ignore_ascii_case("pg_get_serial_sequence") {
        return None;
    }
    let ast::FunctionArguments::List(l) = &f.args else {
        return None;
    };
    let texts: Vec<Option<&str>> = l
        .args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v))) => match &v.value {
                ast::Value::SingleQuotedString(s) => Some(s.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    Some(match texts[..] {
        [Some(t), Some(c)] => Ok((super::name_in_text(t), c.to_string())),
        _ => unsupported("pg_get_serial_sequence() of other than two string literals, inside nextval() or setval()"),
    })
}
