//! The names PostgreSQL gives unaliased output columns: a column's own, a function's, a
//! cast's type in its internal spelling (`int4`), `?column?` otherwise.

use permafrost_types::DataType;
use sqlparser::ast::{self, SelectItem, SetExpr};

use crate::bind::ident;

/// The name PostgreSQL gives an unaliased output column.
pub(super) fn column_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => ident(i),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => crate::bind::object_name(&f.name).unwrap_or_else(|_| "?column?".into()),
        // A cast of something unnamed is named by its type, as PostgreSQL spells it.
        // A cast of a cast is named by the outer one (PostgreSQL's names of casts are
        // weaker than a column's or a function's).
        ast::Expr::Cast { expr, data_type, .. } => match column_name(expr) {
            // (`ARRAY[]::int[]` is an array constructor of that type: named "array".)
            array if matches!(**expr, ast::Expr::Array(_)) => array,
            unnamed if unnamed == "?column?" || is_cast(expr) => type_column_name(data_type).unwrap_or(unnamed),
            named => named,
        },
        ast::Expr::TypedString(ts) => type_column_name(&ts.data_type).unwrap_or_else(|| "?column?".into()),
        ast::Expr::Nested(expr) => column_name(expr),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::AtTimeZone { .. } => "timezone".into(),
        ast::Expr::Interval(_) => "interval".into(),
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Trim { .. } => "btrim".into(),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Array(_) => "array".into(),
        // A subscript is named as the array is.
        ast::Expr::CompoundFieldAccess { root, .. } => column_name(root),
        ast::Expr::Exists { negated: false, .. } => "exists".into(),
        // A scalar subquery is named as its one column is.
        ast::Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.as_slice() {
                [SelectItem::ExprWithAlias { alias, .. }] => ident(alias),
                [SelectItem::UnnamedExpr(e)] => column_name(e),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

/// Whether `e` is a cast (inside parentheses too), whose name a cast around it replaces.
fn is_cast(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Cast { .. } | ast::Expr::TypedString(_) => true,
        ast::Expr::Nested(inner) => is_cast(inner),
        _ => false,
    }
}

/// PostgreSQL's internal name of a type as written in a cast (`int4` for `integer`,
/// `timestamptz` for `timestamp with time zone`), which names a cast's column.
fn type_column_name(t: &ast::DataType) -> Option<String> {
    use ast::DataType as A;
    Some(match t {
        A::Varchar(_) | A::CharacterVarying(_) | A::CharVarying(_) => "varchar".into(),
        A::Char(_) | A::Character(_) => "bpchar".into(),
        A::Custom(name, _) => crate::bind::object_name(name).ok()?,
        // An array cast names its column after the element type, as PostgreSQL does.
        A::Array(
            ast::ArrayElemTypeDef::SquareBracket(inner, _)
            | ast::ArrayElemTypeDef::AngleBracket(inner)
            | ast::ArrayElemTypeDef::Parenthesis(inner),
        ) => type_column_name(inner)?,
        _ => match crate::bind::map_type(t).ok()? {
            DataType::SmallInt => "int2",
            DataType::Integer => "int4",
            DataType::BigInt => "int8",
            DataType::Double => "float8",
            DataType::Decimal { .. } => "numeric",
            DataType::Varchar(_) => "text",
            DataType::Timestamp => "timestamp",
            DataType::TimestampTz => "timestamptz",
            DataType::Date => "date",
            DataType::Boolean => "bool",
            DataType::Bytea => "bytea",
            DataType::Uuid => "uuid",
            DataType::Interval => "interval",
            DataType::Time => "time",
            DataType::Json => "json",
            DataType::Jsonb => "jsonb",
            DataType::Array(_) => "array",
            DataType::Inet => "inet",
            DataType::Cidr => "cidr",
            // Named above (`A::Custom`): map_type knows no user-defined types.
            DataType::Enum(_) => return None,
        }
        .into(),
    })
}
