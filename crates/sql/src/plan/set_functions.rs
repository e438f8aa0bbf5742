//! The set-returning functions FROM takes (`generate_series`, `unnest`, and the json
//! functions that give rows, `jsonb_array_elements` and its kin), each planned as the rows
//! of a set tree with its columns; `from.rs` makes them relations.

use permafrost_types::DataType;
use sqlparser::ast;

use super::tree::*;
use crate::bind::{Binder, common_type};
use crate::error::{Result, SqlError, unsupported};
use crate::expr::Expr;
use crate::rows::ColumnInfo;

/// The arguments `template` writes of `args` (`{0}`, `{1}`, ... each argument's text):
/// how a set-returning function that is another over a computed argument is planned.
pub(super) fn rewritten_args(template: &str, args: &[&ast::FunctionArg]) -> Result<Vec<ast::FunctionArg>> {
    let mut text = template.to_string();
    for (i, a) in args.iter().enumerate() {
        text = text.replace(&format!("{{{i}}}"), &a.to_string());
    }
    let ast::Statement::Query(q) = crate::parse::parse_statement(&format!("SELECT f({text})"))? else {
        return unsupported("these arguments");
    };
    let ast::SetExpr::Select(s) = *q.body else {
        return unsupported("these arguments");
    };
    match s.projection.into_iter().next() {
        Some(ast::SelectItem::UnnamedExpr(ast::Expr::Function(f))) => match f.args {
            ast::FunctionArguments::List(l) => Ok(l.args),
            _ => unsupported("these arguments"),
        },
        _ => unsupported("these arguments"),
    }
}

/// `regexp_matches(s, p [, flags])` planned by `b`: a row of each match's captures (a
/// text array), every match with the `g` flag, else the first; none without a match.
pub(super) fn regexp_matches(
    b: &mut Binder<'_>,
    name: &ast::ObjectName,
    args: &[ast::FunctionArg],
    ordinality: bool,
) -> Result<(SetTree, Vec<ColumnInfo>)> {
    use crate::expr::{Func, regex::RegexFn};
    // Bound as regexp_match (the same arguments), its matches made rows.
    let mut named = name.clone();
    if let Some(ast::ObjectNamePart::Identifier(last)) = named.0.last_mut() {
        last.value = "regexp_match".into();
    }
    let call = ast::Expr::Function(ast::Function {
        name: named,
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args.to_vec(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    });
    let bound = b.expr(&call).map_err(|e| match e {
        SqlError::UnknownFunction(m) => SqlError::UnknownFunction(m.replacen("regexp_match", "regexp_matches", 1)),
        e => e,
    })?;
    let Expr::Func(Func::Regex(RegexFn::FirstMatch), bound) = bound.0 else {
        return unsupported("regexp_matches with these arguments");
    };
    if !b.init.is_empty() {
        return unsupported("a subquery in regexp_matches");
    }
    let mut columns = vec![ColumnInfo {
        name: "regexp_matches".into(),
        ty: Some(DataType::Array(permafrost_types::ElemType::Text)),
    }];
    with_ordinality(&mut columns, ordinality);
    let tree = SetTree::Unnest {
        arrays: vec![Expr::Func(Func::Regex(RegexFn::AllMatches), bound)],
        ordinality,
        columns: columns.clone().into(),
    };
    Ok((tree, columns))
}

/// `generate_series(start, stop [, step])` planned by `b` (a scope of its own, that may
/// read the FROM items before it): its rows, and its columns (bigint over integers,
/// numeric if an argument is; with `ordinality`, a bigint numbering the rows).
pub(super) fn series(
    b: &mut Binder<'_>,
    args: &[ast::FunctionArg],
    ordinality: bool,
) -> Result<(SetTree, Vec<ColumnInfo>)> {
    let exprs: Vec<&ast::Expr> = args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
            _ => unsupported("this argument form of generate_series"),
        })
        .collect::<Result<_>>()?;
    if !(2..=3).contains(&exprs.len()) {
        return Err(SqlError::UnknownFunction(format!(
            "generate_series with {} arguments",
            exprs.len()
        )));
    }
    let bound = exprs.iter().map(|e| b.expr(e)).collect::<Result<Vec<_>>>()?;
    if !b.init.is_empty() {
        return unsupported("a subquery in generate_series");
    }
    if let Some(tree) = time_series(b, &bound, ordinality)? {
        return Ok(tree);
    }
    let mut ty = DataType::Integer;
    for (e, t) in &bound {
        match t {
            None => b.infer(e, Some(DataType::BigInt)),
            Some(t) if t.is_integer() => ty = common_type(ty, *t)?,
            Some(t @ DataType::Decimal { .. }) => ty = common_type(ty, *t)?,
            Some(t) => {
                return unsupported(format!(
                    "generate_series over {} (integers and numerics are taken)",
                    t.sql_name()
                ));
            }
        }
    }
    let mut it = bound.into_iter().map(|(e, _)| e);
    let (start, stop) = (it.next().expect("two"), it.next().expect("two"));
    let mut columns = vec![ColumnInfo {
        name: "generate_series".into(),
        ty: Some(ty),
    }];
    with_ordinality(&mut columns, ordinality);
    let tree = SetTree::Series {
        start,
        stop,
        step: it.next(),
        ordinality,
        columns: columns.clone().into(),
    };
    Ok((tree, columns))
}

/// `generate_series(start, stop, step)` over timestamps (`timestamp` or `timestamptz`,
/// the type of the first known one; dates are read as `timestamp`, as PostgreSQL reads
/// them here) stepping by an interval; `None` when no argument is a timestamp or date.
fn time_series(
    b: &mut Binder<'_>,
    bound: &[(Expr, Option<DataType>)],
    ordinality: bool,
) -> Result<Option<(SetTree, Vec<ColumnInfo>)>> {
    let stamp = |t: &Option<DataType>| matches!(t, Some(DataType::Timestamp | DataType::TimestampTz | DataType::Date));
    if !bound.iter().take(2).any(|(_, t)| stamp(t)) {
        return Ok(None);
    }
    let ty = match bound
        .iter()
        .take(2)
        .find_map(|(_, t)| t.filter(|t| *t != DataType::Date))
    {
        Some(DataType::TimestampTz) => DataType::TimestampTz,
        _ => DataType::Timestamp,
    };
    let signature = || {
        let names: Vec<String> = bound
            .iter()
            .map(|(_, t)| t.map_or("unknown".into(), |t| t.sql_name()))
            .collect();
        SqlError::UnknownFunction(format!("generate_series({})", names.join(", ")))
    };
    if bound.len() != 3 {
        return Err(signature());
    }
    let mut args = Vec::with_capacity(3);
    for (i, (e, t)) in bound.iter().enumerate() {
        let want = if i == 2 { DataType::Interval } else { ty };
        args.push(match t {
            Some(t) if *t == want => e.clone(),
            None => {
                b.infer(e, Some(want));
                Expr::Cast(e.clone().boxed(), want)
            }
            Some(DataType::Timestamp | DataType::TimestampTz | DataType::Date) if i < 2 => {
                Expr::Cast(e.clone().boxed(), want)
            }
            Some(_) => return Err(signature()),
        });
    }
    let mut it = args.into_iter();
    let (start, stop, step) = (it.next(), it.next(), it.next());
    let mut columns = vec![ColumnInfo {
        name: "generate_series".into(),
        ty: Some(ty),
    }];
    with_ordinality(&mut columns, ordinality);
    let tree = SetTree::Series {
        start: start.expect("three"),
        stop: stop.expect("three"),
        step,
        ordinality,
        columns: columns.clone().into(),
    };
    Ok(Some((tree, columns)))
}

/// `unnest(array [, array ...])` planned by `b` (a scope of its own, that may read the
/// FROM items before it): its rows, and its columns, each of its array's element type
/// (text when nothing names it); with `ordinality`, a bigint numbering the rows.
pub(super) fn unnest(
    b: &mut Binder<'_>,
    args: &[ast::FunctionArg],
    ordinality: bool,
) -> Result<(SetTree, Vec<ColumnInfo>)> {
    if args.is_empty() {
        return Err(SqlError::UnknownFunction("unnest()".into()));
    }
    let mut arrays = Vec::with_capacity(args.len());
    let mut columns = Vec::with_capacity(args.len() + 1);
    for a in args {
        let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
            return unsupported("this argument form of unnest");
        };
        let (array, elem) = b.array_operand(e, "unnest")?;
        arrays.push(array);
        columns.push(ColumnInfo {
            name: "unnest".into(),
            ty: Some(elem.unwrap_or(DataType::Varchar(None))),
        });
    }
    if !b.init.is_empty() {
        return unsupported("a subquery in unnest");
    }
    with_ordinality(&mut columns, ordinality);
    let tree = SetTree::Unnest {
        arrays,
        ordinality,
        columns: columns.clone().into(),
    };
    Ok((tree, columns))
}

/// The json functions that give rows (`jsonb_array_elements(doc)`, `jsonb_each(doc)`, ...)
/// planned by `b`: `unnest` of the lists the document gives (expr/jsonb_edit.rs), a
/// quoted literal read as the function's document type.
pub(super) fn json_rows(
    b: &mut Binder<'_>,
    name: &str,
    args: &[ast::FunctionArg],
    ordinality: bool,
) -> Result<(SetTree, Vec<ColumnInfo>)> {
    use crate::expr::jsonb_edit::{JsonEdit, JsonList};
    let jsonb = name.starts_with("jsonb");
    let doc_type = if jsonb { DataType::Jsonb } else { DataType::Json };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))] = args else {
        return Err(SqlError::UnknownFunction(format!("{name} with these arguments")));
    };
    let (x, t) = b.expr(e)?;
    let x = match (&x, t) {
        (_, Some(t)) if t == doc_type => x,
        (Expr::Const(permafrost_types::Value::Text(s)), Some(DataType::Varchar(_)) | None) => Expr::Const(
            permafrost_types::Value::parse(&doc_type, s)
                .map_err(|err| SqlError::from(err).at(crate::error::start_of(e), crate::error::Point::Start))?,
        ),
        (Expr::Param(_), None) => {
            b.infer(&x, Some(doc_type));
            x
        }
        _ => {
            return Err(SqlError::UnknownFunction(format!(
                "{name}({})",
                t.map_or("unknown".to_string(), |t| t.sql_name())
            )));
        }
    };
    let text = name.ends_with("_text");
    let list = |what: JsonList| Expr::Func(crate::expr::Func::JsonEdit(JsonEdit::List(what)), vec![x.clone()]);
    let value_type = if text { DataType::Varchar(None) } else { doc_type };
    let column = |name: &str, ty: DataType| ColumnInfo {
        name: name.into(),
        ty: Some(ty),
    };
    let (arrays, mut columns) = match name {
        "jsonb_object_keys" => (vec![list(JsonList::Keys)], vec![column(name, DataType::Varchar(None))]),
        "jsonb_each" | "jsonb_each_text" => (
            vec![list(JsonList::Keys), list(JsonList::Values { text })],
            vec![column("key", DataType::Varchar(None)), column("value", value_type)],
        ),
        _ => (
            vec![list(JsonList::Elements { text, jsonb })],
            vec![column("value", value_type)],
        ),
    };
    if !b.init.is_empty() {
        return unsupported(format!("a subquery in {name}"));
    }
    if ordinality {
        columns.push(column("ordinality", DataType::BigInt));
    }
    let tree = SetTree::Unnest {
        arrays,
        ordinality,
        columns: columns.clone().into(),
    };
    Ok((tree, columns))
}

/// `WITH ORDINALITY`'s column after a set function's own.
fn with_ordinality(columns: &mut Vec<ColumnInfo>, ordinality: bool) {
    if ordinality {
        columns.push(ColumnInfo {
            name: "ordinality".into(),
            ty: Some(DataType::BigInt),
        });
    }
}
