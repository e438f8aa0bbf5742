//! PostgreSQL's SQL, as clients write it against the system catalogs, turned into the SQL
//! of the relational engine that answers it (SQLite, `super`).
//!
//! The statement is parsed as PostgreSQL and rewritten on its syntax tree, then printed:
//! - casts: `x::regclass`, `x::regtype` ... become lookups by name (`pf_regclass(x)`);
//!   `x::regclass::text` the name of the relation; casts to integer, text, real and
//!   boolean types become SQLite's; other casts keep their value;
//! - arrays are JSON arrays here: `x = ANY (ARRAY[...])` is `x IN (...)`, `x = ANY (arr)`
//!   looks in `json_each(arr)`, `arr[i]` is `json_extract`, `array_agg` is
//!   `pf_array_agg` (`super::limits`), and `unnest(arr)` / `generate_subscripts(arr, 1)` in a select
//!   list become a join with `json_each(arr)`;
//! - regular expressions (`~`, `~*`, `!~`, `OPERATOR(pg_catalog.~)`) call `pf_regex`;
//!   `ILIKE` compares lower-cased; `COLLATE` is dropped (everything compares as C);
//! - PostgreSQL's functions (`format_type`, `pg_get_indexdef`, `current_schema` ...) are
//!   `pf_`-prefixed functions the engine defines (`super::functions`), and the
//!   `pg_catalog.` qualifier of a function is dropped.
//!
//! The columns of the result are named as PostgreSQL names them, and given a type where
//! the expression says it (a cast, a function's result, a comparison).

use std::ops::ControlFlow;

use sqlparser::ast::{
    self, BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, ObjectNamePart,
    Query, Select, SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::names::{FUNCTIONS, Unsupported, function, last_name};

/// A translated query: its SQLite text and, per output column, its name and the
/// PostgreSQL type its expression says (None: read from the engine).
pub struct Translated {
    pub sql: String,
    /// The PostgreSQL type each parameter (`$1` ...) is compared with or cast to, where
    /// the text says.
    pub params: Vec<Option<&'static str>>,
    /// None when the select list has a wildcard (the engine names the columns).
    pub columns: Option<Vec<(String, Option<&'static str>)>>,
}

fn fail<T>(what: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(what.into()))
}

fn parse_expr(sql: &str) -> Result<Expr, Unsupported> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Unsupported(format!("internal error translating a catalog query: {e}")))
}

fn parse_query(sql: &str) -> Result<Query, Unsupported> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| Unsupported(format!("internal error translating a catalog query: {e}")))
}

/// The PostgreSQL type name of a SQL type as written (`integer`, `character varying`,
/// `regclass`, `text[]` ...).
fn type_name(t: &ast::DataType) -> String {
    let s = t.to_string().to_ascii_lowercase();
    let s = s.trim_start_matches("pg_catalog.").trim_matches('"').to_string();
    if let Some(elem) = s.strip_suffix("[]") {
        return format!("_{}", canonical(elem));
    }
    canonical(&s).to_string()
}

fn canonical(s: &str) -> &str {
    let base = s.split('(').next().unwrap_or(s).trim();
    match base {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "bool" | "boolean" => "bool",
        "real" | "float4" => "float4",
        "double precision" | "float8" | "float" => "float8",
        "varchar" | "character varying" => "varchar",
        "char" | "character" | "bpchar" => "bpchar",
        "\"char\"" => "char",
        "decimal" | "numeric" => "numeric",
        "timestamp" | "timestamp without time zone" => "timestamp",
        other => other,
    }
}

/// The type an expression's text says, before translation.
/// The subqueries in a select's FROM, by alias: where a column of the select may come from.
type Scope<'a> = Vec<(String, &'a Query)>;

fn scope_of(s: &Select) -> Scope<'_> {
    let mut scope = Vec::new();
    for twj in &s.from {
        for f in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
            if let ast::TableFactor::Derived {
                subquery,
                alias: Some(a),
                ..
            } = f
            {
                scope.push((a.name.value.to_ascii_lowercase(), &**subquery));
            }
        }
    }
    scope
}

/// The type of column `col` of a subquery, as its select list says.
fn derived_hint(q: &Query, col: &str) -> Option<&'static str> {
    let s = outer_select(q)?;
    let scope = scope_of(s);
    s.projection.iter().find_map(|item| match item {
        SelectItem::ExprWithAlias { expr, alias } if alias.value.eq_ignore_ascii_case(col) => hint(expr, &scope),
        SelectItem::UnnamedExpr(e) if column_name(e).eq_ignore_ascii_case(col) => hint(e, &scope),
        _ => None,
    })
}

fn hint(e: &Expr, scope: &Scope<'_>) -> Option<&'static str> {
    let fixed = |s: &str| -> Option<&'static str> { super::relations::static_type_name(s) };
    match e {
        Expr::Cast { data_type, .. } => fixed(&type_name(data_type)),
        Expr::Nested(e) => hint(e, scope),
        Expr::Function(f) => {
            let name = last_name(&f.name);
            if let Some((_, t)) = FUNCTIONS.iter().find(|(n, _)| *n == name) {
                return fixed(t);
            }
            let first_arg = || match &f.args {
                FunctionArguments::List(l) => l.args.first().and_then(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => hint(e, scope),
                    _ => None,
                }),
                _ => None,
            };
            match name.as_str() {
                "count" | "row_number" | "rank" | "dense_rank" => fixed("int8"),
                "array_agg" => first_arg().and_then(|t| fixed(&format!("_{t}"))).or(fixed("_text")),
                "array" => match &f.args {
                    FunctionArguments::Subquery(q) => first_item(q)
                        .and_then(|e| hint(e, &outer_select(q).map(scope_of).unwrap_or_default()))
                        .and_then(|t| fixed(&format!("_{t}")))
                        .or(fixed("_text")),
                    _ => None,
                },
                "bool_and" | "bool_or" | "every" => fixed("bool"),
                "min" | "max" | "coalesce" | "nullif" | "greatest" | "least" => first_arg(),
                "length" | "char_length" | "strpos" | "array_length" | "cardinality" => fixed("int4"),
                "upper" | "lower" | "trim" | "btrim" | "ltrim" | "rtrim" | "replace" | "substr" | "concat"
                | "string_agg" | "md5" => fixed("text"),
                "json_build_object" | "jsonb_build_object" | "json_build_array" => fixed("text"),
                _ => None,
            }
        }
        Expr::BinaryOp { op, left, .. } => match op {
            BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::And
            | BinaryOperator::Or
            | BinaryOperator::PGRegexMatch
            | BinaryOperator::PGRegexIMatch
            | BinaryOperator::PGRegexNotMatch
            | BinaryOperator::PGRegexNotIMatch => fixed("bool"),
            BinaryOperator::StringConcat => fixed("text"),
            BinaryOperator::Plus | BinaryOperator::Minus | BinaryOperator::Multiply => hint(left, scope),
            _ => None,
        },
        Expr::UnaryOp {
            op: ast::UnaryOperator::Not,
            ..
        }
        | Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::IsTrue(_)
        | Expr::IsFalse(_)
        | Expr::IsDistinctFrom(..)
        | Expr::IsNotDistinctFrom(..)
        | Expr::InList { .. }
        | Expr::InSubquery { .. }
        | Expr::Exists { .. }
        | Expr::Like { .. }
        | Expr::ILike { .. }
        | Expr::AnyOp { .. }
        | Expr::AllOp { .. }
        | Expr::Between { .. } => fixed("bool"),
        Expr::Case {
            conditions,
            else_result,
            ..
        } => conditions
            .iter()
            .find_map(|c| hint(&c.result, scope))
            .or_else(|| else_result.as_deref().and_then(|e| hint(e, scope))),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) if n.contains(['.', 'e', 'E']) => fixed("numeric"),
            Value::Number(n, _) if n.parse::<i32>().is_ok() => fixed("int4"),
            Value::Number(..) => fixed("int8"),
            Value::SingleQuotedString(_) | Value::EscapedStringLiteral(_) => fixed("text"),
            Value::Boolean(_) => fixed("bool"),
            _ => None,
        },
        Expr::Subquery(q) => first_item(q).and_then(|e| hint(e, &outer_select(q).map(scope_of).unwrap_or_default())),
        // A field of information_schema._pg_expandarray's record: the element, its position.
        Expr::CompoundFieldAccess { access_chain, .. } => match access_chain.as_slice() {
            [ast::AccessExpr::Dot(Expr::Identifier(f))] if f.value.eq_ignore_ascii_case("n") => fixed("int4"),
            [ast::AccessExpr::Dot(Expr::Identifier(f))] if f.value.eq_ignore_ascii_case("x") => fixed("int2"),
            _ => None,
        },
        // A column: of a subquery in FROM when one has it, else of the catalog relation
        // with a column of that name.
        Expr::Identifier(i) => scope
            .iter()
            .find_map(|(_, q)| derived_hint(q, &i.value))
            .or_else(|| super::relations::column_type(&i.value)),
        Expr::CompoundIdentifier(parts) => {
            let col = parts.last()?;
            let from = match parts.as_slice() {
                [alias, _] => scope
                    .iter()
                    .filter(|(a, _)| a.eq_ignore_ascii_case(&alias.value))
                    .find_map(|(_, q)| derived_hint(q, &col.value)),
                _ => None,
            };
            from.or_else(|| super::relations::column_type(&col.value))
        }
        _ => None,
    }
}

fn first_item(q: &Query) -> Option<&Expr> {
    let mut body = &*q.body;
    loop {
        match body {
            SetExpr::Select(s) => {
                return match s.projection.first()? {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
                    _ => None,
                };
            }
            SetExpr::SetOperation { left, .. } => body = left,
            SetExpr::Query(q) => body = &q.body,
            _ => return None,
        }
    }
}

/// The name PostgreSQL gives an unaliased select-list expression.
fn column_name(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) => permafrost_sql::bind::ident(i),
        Expr::CompoundIdentifier(parts) => parts.last().map_or("?column?".into(), permafrost_sql::bind::ident),
        Expr::Function(f) => last_name(&f.name),
        Expr::Cast { expr, data_type, .. } => match &**expr {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Function(_) | Expr::Cast { .. } => {
                column_name(expr)
            }
            _ => type_name(data_type),
        },
        Expr::Nested(e) => column_name(e),
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        Expr::Subquery(q) => first_item(q).map_or("?column?".into(), column_name),
        _ => "?column?".into(),
    }
}

/// The names and types of a select's columns; None when the engine must name them (a
/// wildcard over anything but one subquery).
fn select_columns(s: &Select) -> Option<Vec<(String, Option<&'static str>)>> {
    let scope = scope_of(s);
    let mut out = Vec::new();
    for item in &s.projection {
        match item {
            SelectItem::UnnamedExpr(e) => out.push((column_name(e), hint(e, &scope))),
            SelectItem::ExprWithAlias { expr, alias } => {
                out.push((permafrost_sql::bind::ident(alias), hint(expr, &scope)))
            }
            SelectItem::Wildcard(_) if s.from.len() == 1 && s.from[0].joins.is_empty() => match &s.from[0].relation {
                ast::TableFactor::Derived { subquery, .. } => out.extend(select_columns(outer_select(subquery)?)?),
                _ => return None,
            },
            _ => return None,
        }
    }
    Some(out)
}

/// The types of a query's parameters, from what they are compared with (`oid = $1`,
/// `relname IN ($1, $2)`, `x = ANY ($1)`: an array of x's type) or cast to (`$1::oid`).
fn param_types(q: &Query) -> Vec<Option<&'static str>> {
    struct Params(Vec<Option<&'static str>>);
    impl Params {
        fn set(&mut self, e: &Expr, ty: Option<&'static str>) {
            let Expr::Value(v) = e else { return };
            let Value::Placeholder(p) = &v.value else { return };
            let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) else {
                return;
            };
            if n == 0 || n > 65_535 {
                return;
            }
            if self.0.len() < n {
                self.0.resize(n, None);
            }
            if self.0[n - 1].is_none() {
                self.0[n - 1] = ty;
            }
        }
    }
    impl sqlparser::ast::Visitor for Params {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            let none = Vec::new();
            match e {
                Expr::Cast { expr, data_type, .. } => {
                    self.set(expr, super::relations::static_type_name(&type_name(data_type)));
                }
                Expr::BinaryOp {
                    left,
                    op:
                        BinaryOperator::Eq
                        | BinaryOperator::NotEq
                        | BinaryOperator::Lt
                        | BinaryOperator::LtEq
                        | BinaryOperator::Gt
                        | BinaryOperator::GtEq,
                    right,
                } => {
                    self.set(right, hint(left, &none));
                    self.set(left, hint(right, &none));
                }
                Expr::InList { expr, list, .. } => {
                    let t = hint(expr, &none);
                    for x in list {
                        self.set(x, t);
                    }
                }
                Expr::AnyOp { left, right, .. } | Expr::AllOp { left, right, .. } => {
                    let t = hint(left, &none).and_then(|t| super::relations::static_type_name(&format!("_{t}")));
                    self.set(right, t);
                }
                Expr::Like { expr, pattern, .. } | Expr::ILike { expr, pattern, .. } => {
                    self.set(pattern, hint(expr, &none).or(Some("text")));
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut p = Params(Vec::new());
    let _ = sqlparser::ast::Visit::visit(q, &mut p);
    p.0
}

/// Translates one query on the system catalogs.
pub fn translate(stmt: &Statement) -> Result<Translated, Unsupported> {
    let Statement::Query(q) = stmt else {
        return fail("only queries can read the system catalogs");
    };
    let mut q = (**q).clone();
    let columns = outer_select(&q).and_then(select_columns);
    let params = param_types(&q);
    // Reg-type casts in the outer select list show names, as PostgreSQL prints them.
    if let Some(s) = outer_select_mut(&mut q) {
        for item in &mut s.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                && let Expr::Cast { expr, data_type, .. } = e
            {
                let f = match type_name(data_type).as_str() {
                    "regclass" => "pf_regclass_name",
                    "regtype" => "pf_regtype_name",
                    "regproc" | "regprocedure" => "pf_regproc_name",
                    _ => continue,
                };
                *e = parse_expr(&format!("{f}({expr})"))?;
            }
        }
    }
    let mut t = Rewriter { error: None, srf: 0 };
    let _ = q.visit(&mut t);
    if let Some(e) = t.error {
        return Err(e);
    }
    Ok(Translated {
        sql: q.to_string(),
        columns,
        params,
    })
}

fn outer_select(q: &Query) -> Option<&Select> {
    let mut body = &*q.body;
    loop {
        match body {
            SetExpr::Select(s) => return Some(s),
            SetExpr::SetOperation { left, .. } => body = left,
            SetExpr::Query(q) => body = &q.body,
            _ => return None,
        }
    }
}

fn outer_select_mut(q: &mut Query) -> Option<&mut Select> {
    match &mut *q.body {
        SetExpr::Select(s) => Some(s),
        _ => None,
    }
}

struct Rewriter {
    error: Option<Unsupported>,
    /// Set-returning functions turned into joins so far (their aliases are numbered).
    srf: usize,
}

impl Rewriter {
    fn expr(&mut self, e: &mut Expr) -> Result<(), Unsupported> {
        let new = match e {
            Expr::Cast { expr, data_type, .. } => Some(cast(expr, &type_name(data_type))?),
            Expr::TypedString(ts) => {
                let v = Expr::Value(ts.value.clone());
                Some(cast(&v, &type_name(&ts.data_type))?)
            }
            Expr::Collate { expr, .. } => Some((**expr).clone()),
            Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => Some(any(left, compare_op, right, false)?),
            Expr::AllOp {
                left,
                compare_op,
                right,
                ..
            } => Some(any(left, compare_op, right, true)?),
            // PostgreSQL's LIKE escapes with a backslash unless told otherwise.
            Expr::Like { escape_char, .. } => {
                if escape_char.is_none() {
                    *escape_char = Some(Box::new(parse_expr("'\\'")?));
                }
                None
            }
            Expr::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                ..
            } => {
                let not = if *negated { "NOT " } else { "" };
                let esc = escape_char
                    .as_ref()
                    .map_or(" ESCAPE '\\'".to_string(), |c| format!(" ESCAPE {c}"));
                Some(parse_expr(&format!("lower({expr}) {not}LIKE lower({pattern}){esc}"))?)
            }
            // An array || ARRAY(SELECT ...) (psql's `\d+`: a table's options and its TOAST
            // table's): the two JSON arrays' elements in order.
            Expr::BinaryOp {
                left,
                op: BinaryOperator::StringConcat,
                right,
            } if is_array_subquery(right) => Some(parse_expr(&format!(
                "(SELECT json_group_array(v) FROM (SELECT 0 AS s, key AS k, value AS v FROM json_each({left}) \
                 UNION ALL SELECT 1, key, value FROM json_each({right}) ORDER BY s, k))"
            ))?),
            Expr::BinaryOp { left, op, right } => {
                let regex = match op {
                    BinaryOperator::PGRegexMatch => Some(("", false)),
                    BinaryOperator::PGRegexIMatch => Some(("", true)),
                    BinaryOperator::PGRegexNotMatch => Some(("NOT ", false)),
                    BinaryOperator::PGRegexNotIMatch => Some(("NOT ", true)),
                    BinaryOperator::PGCustomBinaryOperator(parts) => match parts.last().map(String::as_str) {
                        Some("~") => Some(("", false)),
                        Some("~*") => Some(("", true)),
                        Some("!~") => Some(("NOT ", false)),
                        Some("!~*") => Some(("NOT ", true)),
                        Some("=") => {
                            *op = BinaryOperator::Eq;
                            None
                        }
                        Some("<>") => {
                            *op = BinaryOperator::NotEq;
                            None
                        }
                        _ => return fail(format!("operator {op} is not supported on the system catalogs")),
                    },
                    _ => None,
                };
                match regex {
                    Some((not, icase)) => Some(parse_expr(&format!(
                        "{not}pf_regex({left}, {right}, {})",
                        if icase { 1 } else { 0 }
                    ))?),
                    None => None,
                }
            }
            // TRIM([BOTH | LEADING | TRAILING] [chars] FROM x): SQLite's trim, ltrim, rtrim.
            Expr::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => {
                let f = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                    _ => "trim",
                };
                Some(parse_expr(&match trim_what {
                    Some(what) => format!("{f}({expr}, {what})"),
                    None => format!("{f}({expr})"),
                })?)
            }
            Expr::IsDistinctFrom(a, b) => Some(parse_expr(&format!("({a}) IS NOT ({b})"))?),
            Expr::IsNotDistinctFrom(a, b) => Some(parse_expr(&format!("({a}) IS ({b})"))?),
            Expr::Array(a) => {
                let items: Vec<String> = a.elem.iter().map(|x| x.to_string()).collect();
                Some(parse_expr(&format!("json_array({})", items.join(", ")))?)
            }
            Expr::CompoundFieldAccess { root, access_chain } => match access_chain.as_slice() {
                // `arr[i]` and `rel.arr[i]` (the column named by the dots): arrays are JSON
                // here, counted from 1 (an index below 1 is NULL, as past either end).
                [dots @ .., ast::AccessExpr::Subscript(ast::Subscript::Index { index })]
                    if dots
                        .iter()
                        .all(|d| matches!(d, ast::AccessExpr::Dot(Expr::Identifier(_)))) =>
                {
                    let mut array = root.to_string();
                    for d in dots {
                        if let ast::AccessExpr::Dot(Expr::Identifier(i)) = d {
                            array.push_str(&format!(".{i}"));
                        }
                    }
                    Some(parse_expr(&format!(
                        "CASE WHEN ({index}) >= 1 THEN json_extract({array}, '$[' || (({index}) - 1) || ']') END"
                    ))?)
                }
                // A record's field: records are JSON objects here.
                [ast::AccessExpr::Dot(Expr::Identifier(field))] => Some(parse_expr(&format!(
                    "json_extract({root}, '$.{}')",
                    field.value.to_ascii_lowercase()
                ))?),
                _ => None,
            },
            Expr::Value(v) => {
                if let Value::EscapedStringLiteral(s) = &v.value {
                    v.value = Value::SingleQuotedString(s.clone());
                }
                None
            }
            // ARRAY(SELECT x ...): the JSON array of the subquery's first column.
            Expr::Function(f) if last_name(&f.name) == "array" && matches!(f.args, FunctionArguments::Subquery(_)) => {
                let FunctionArguments::Subquery(q) = &f.args else {
                    unreachable!()
                };
                let mut q = (**q).clone();
                if let SetExpr::Select(sel) = &mut *q.body
                    && let Some(first) = sel.projection.first_mut()
                {
                    let expr = match first {
                        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
                        _ => return fail("ARRAY(SELECT *) is not supported on the system catalogs"),
                    };
                    *first = SelectItem::ExprWithAlias {
                        expr,
                        alias: Ident::new("_elem"),
                    };
                }
                Some(parse_expr(&format!("(SELECT pf_array_agg(_elem) FROM ({q}))"))?)
            }
            Expr::Function(f) => {
                function(f)?;
                None
            }
            Expr::Position { expr, r#in } => Some(parse_expr(&format!("instr({in}, {expr})", r#in = r#in))?),
            _ => None,
        };
        if let Some(n) = new {
            *e = n;
        }
        Ok(())
    }

    /// Functions in FROM: `unnest(a) AS x` reads `json_each(a)`, `generate_series(a, b)
    /// AS x` SQLite's series; as in PostgreSQL, the alias alone names the value, and so
    /// does its one column (`AS s(r)`: `r` and `s.r`, as pgjdbc's type lookup writes).
    fn from_functions(s: &mut Select) {
        let mut aliases = Vec::new();
        for twj in &mut s.from {
            let factors = std::iter::once(&mut twj.relation).chain(twj.joins.iter_mut().map(|j| &mut j.relation));
            for f in factors {
                if let Some(row) = ancestors_row(f) {
                    *f = row;
                    continue;
                }
                let ast::TableFactor::Table {
                    name,
                    args: Some(_),
                    alias,
                    ..
                } = f
                else {
                    continue;
                };
                let fname = last_name(name);
                if fname != "unnest" && fname != "generate_series" {
                    continue;
                }
                let to = if fname == "unnest" {
                    "json_each"
                } else {
                    "generate_series"
                };
                *name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(to))]);
                if let Some(a) = alias {
                    match a.columns.as_slice() {
                        [] => aliases.push((a.name.value.clone(), None)),
                        [c] => {
                            aliases.push((a.name.value.clone(), Some(c.name.value.clone())));
                            a.columns.clear();
                        }
                        _ => {}
                    }
                }
            }
        }
        if aliases.is_empty() {
            return;
        }
        /// Each alias, and the name its column was given.
        struct Values(Vec<(String, Option<String>)>);
        impl VisitorMut for Values {
            type Break = ();
            fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                let value = |alias: &str| Expr::CompoundIdentifier(vec![Ident::new(alias), Ident::new("value")]);
                let named = |n: &str, a: &(String, Option<String>)| {
                    a.0.eq_ignore_ascii_case(n) || a.1.as_ref().is_some_and(|c| c.eq_ignore_ascii_case(n))
                };
                match e {
                    Expr::Identifier(i) => {
                        if let Some(a) = self.0.iter().find(|a| named(&i.value, a)) {
                            *e = value(&a.0);
                        }
                    }
                    Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                        let column = |a: &(String, Option<String>)| {
                            a.0.eq_ignore_ascii_case(&parts[0].value)
                                && a.1.as_ref().is_some_and(|c| c.eq_ignore_ascii_case(&parts[1].value))
                        };
                        if let Some(a) = self.0.iter().find(|a| column(a)) {
                            *e = value(&a.0);
                        }
                    }
                    _ => {}
                }
                ControlFlow::Continue(())
            }
        }
        let mut v = Values(aliases);
        for item in &mut s.projection {
            // A column named in the alias keeps its name in the result (`s.r` is `r`).
            if let ast::SelectItem::UnnamedExpr(e) = item {
                let last = match e {
                    Expr::Identifier(i) => Some(i.clone()),
                    Expr::CompoundIdentifier(parts) if parts.len() == 2 => parts.last().cloned(),
                    _ => None,
                };
                if let Some(name) = last.filter(|n| {
                    v.0.iter()
                        .any(|a| a.1.as_ref().is_some_and(|c| c.eq_ignore_ascii_case(&n.value)))
                }) {
                    *item = ast::SelectItem::ExprWithAlias {
                        expr: e.clone(),
                        alias: name,
                    };
                }
            }
            let _ = item.visit(&mut v);
        }
        if let Some(w) = &mut s.selection {
            let _ = w.visit(&mut v);
        }
    }

    /// `unnest(a)` and `generate_subscripts(a, 1)` in a select list: one row per element
    /// of the first array (a join with `json_each`), the others read at its position.
    fn select(&mut self, s: &mut Select) -> Result<(), Unsupported> {
        Self::from_functions(s);
        let mut srf = Srf {
            next: self.srf,
            each: None,
            error: None,
        };
        for item in &mut s.projection {
            let _ = item.visit(&mut srf);
        }
        self.srf = srf.next;
        if let Some(e) = srf.error {
            return Err(e);
        }
        if let Some((alias, arr)) = srf.each {
            let q = parse_query(&format!("SELECT 1 FROM json_each({arr}) AS {alias}"))?;
            if let SetExpr::Select(sel) = *q.body {
                s.from.extend(sel.from);
            }
        }
        Ok(())
    }
}

/// The set-returning functions of one select list: `unnest(a)`, `generate_subscripts(a,
/// 1)` and `information_schema._pg_expandarray(a)` (a record of the element `x` and its
/// position `n`, a JSON object here). The first array's elements are a join with
/// `json_each`; the others are read at its position.
struct Srf {
    next: usize,
    /// The alias of the join and the text of its array.
    each: Option<(String, String)>,
    error: Option<Unsupported>,
}

impl Srf {
    fn rewrite(&mut self, e: &mut Expr) -> Result<(), Unsupported> {
        let Expr::Function(f) = e else { return Ok(()) };
        let name = last_name(&f.name);
        if !matches!(name.as_str(), "unnest" | "generate_subscripts" | "_pg_expandarray") {
            return Ok(());
        }
        let FunctionArguments::List(l) = &f.args else {
            return Ok(());
        };
        let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(arr))) = l.args.first() else {
            return Ok(());
        };
        let arr = arr.to_string();
        let alias = match &self.each {
            Some((a, _)) => a.clone(),
            None => {
                let a = format!("_srf{}", self.next);
                self.next += 1;
                self.each = Some((a.clone(), arr.clone()));
                a
            }
        };
        let same = self.each.as_ref().is_some_and(|(_, first)| *first == arr);
        let value = if same {
            format!("{alias}.value")
        } else {
            format!("json_extract({arr}, '$[' || {alias}.key || ']')")
        };
        *e = match name.as_str() {
            "unnest" => parse_expr(&value)?,
            "_pg_expandarray" => parse_expr(&format!("json_object('x', {value}, 'n', {alias}.key + 1)"))?,
            _ => parse_expr(&format!("({alias}.key + 1)"))?,
        };
        Ok(())
    }
}

impl VisitorMut for Srf {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        match self.rewrite(e) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                self.error = Some(err);
                ControlFlow::Break(())
            }
        }
    }
}

/// Whether `e` is an `ARRAY(SELECT ...)` as [`Rewriter::expr`] rewrote it.
fn is_array_subquery(e: &Expr) -> bool {
    let Expr::Subquery(q) = e else { return false };
    matches!(&*q.body, SetExpr::Select(sel) if matches!(
        sel.projection.first(),
        Some(SelectItem::UnnamedExpr(Expr::Function(f))) if last_name(&f.name) == "pf_array_agg"
    ))
}

impl VisitorMut for Rewriter {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        match self.expr(e) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                self.error = Some(err);
                ControlFlow::Break(())
            }
        }
    }

    fn post_visit_select(&mut self, s: &mut Select) -> ControlFlow<()> {
        match self.select(s) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                self.error = Some(err);
                ControlFlow::Break(())
            }
        }
    }
}

/// A cast to `ty` (a PostgreSQL type name as [`type_name`] gives it).
fn cast(e: &Expr, ty: &str) -> Result<Expr, Unsupported> {
    // A reg-type value cast on to text is the object's name.
    if let Expr::Function(f) = e {
        let name = last_name(&f.name);
        let args = match &f.args {
            FunctionArguments::List(l) => l.args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "),
            _ => String::new(),
        };
        if matches!(ty, "text" | "varchar" | "name" | "bpchar") {
            match name.as_str() {
                "pf_regclass" => return parse_expr(&format!("pf_regclass_name({args})")),
                "pf_regtype" => return parse_expr(&format!("pf_regtype_name({args})")),
                "pf_regproc" => return parse_expr(&format!("pf_regproc_name({args})")),
                "pf_regnamespace" => return parse_expr(&format!("pf_regnamespace_name({args})")),
                "pf_regrole" => return parse_expr(&format!("pf_pg_get_userbyid({args})")),
                _ => {}
            }
        }
    }
    let sql = match ty {
        "regclass" => format!("pf_regclass({e})"),
        "regtype" => format!("pf_regtype({e})"),
        "regproc" | "regprocedure" => format!("pf_regproc({e})"),
        "regnamespace" => format!("pf_regnamespace({e})"),
        "regrole" => format!("pf_regrole({e})"),
        "int2" | "int4" | "int8" | "oid" | "xid" => format!("CAST({e} AS INTEGER)"),
        "text" | "varchar" | "name" | "bpchar" | "char" => format!("CAST({e} AS TEXT)"),
        "float4" | "float8" | "numeric" => format!("CAST({e} AS REAL)"),
        "bool" => format!("pf_bool({e})"),
        _ => return Ok(e.clone()),
    };
    parse_expr(&sql)
}

/// `left op ANY (right)` (`all`: `ALL`).
fn any(left: &Expr, op: &BinaryOperator, right: &Expr, all: bool) -> Result<Expr, Unsupported> {
    let set = match right {
        Expr::Function(f) if last_name(&f.name) == "json_array" => match &f.args {
            FunctionArguments::List(l) if !l.args.is_empty() => {
                let items: Vec<String> = l.args.iter().map(|a| a.to_string()).collect();
                format!("({})", items.join(", "))
            }
            _ => "(SELECT 1 WHERE 0)".to_string(),
        },
        Expr::Subquery(q) => format!("({q})"),
        other => format!("(SELECT value FROM json_each({other}))"),
    };
    let sql = match (op, all) {
        (BinaryOperator::Eq, false) => format!("{left} IN {set}"),
        (BinaryOperator::NotEq, true) => format!("{left} NOT IN {set}"),
        _ => {
            return fail(format!(
                "{op} {} is not supported on the system catalogs",
                if all { "ALL" } else { "ANY" }
            ));
        }
    };
    parse_expr(&sql)
}

/// `pg_partition_ancestors(rel) [WITH ORDINALITY] [AS a (relid [, depth])]` in FROM, as the
/// one row it gives here (no table is a partition: its only ancestor is itself, at depth
/// 1); `None` for another factor.
fn ancestors_row(f: &ast::TableFactor) -> Option<ast::TableFactor> {
    let ast::TableFactor::Table {
        name,
        args: Some(args),
        alias,
        with_ordinality,
        ..
    } = f
    else {
        return None;
    };
    if last_name(name) != "pg_partition_ancestors" {
        return None;
    }
    let args: Vec<String> = args.args.iter().map(|a| a.to_string()).collect();
    let named = |k: usize, default: &str| {
        alias
            .as_ref()
            .and_then(|a| a.columns.get(k))
            .map_or(default.to_string(), |c| c.name.value.clone())
    };
    let mut select = format!(
        "pf_pg_partition_ancestors({}) AS \"{}\"",
        args.join(", "),
        named(0, "relid")
    );
    if *with_ordinality {
        select.push_str(&format!(", 1 AS \"{}\"", named(1, "ordinality")));
    }
    let table = alias
        .as_ref()
        .map_or("pg_partition_ancestors".to_string(), |a| a.name.value.clone());
    let sql = format!("SELECT 1 FROM (SELECT {select}) AS \"{table}\"");
    let mut parsed = Parser::parse_sql(&PostgreSqlDialect {}, &sql).ok()?;
    let ast::Statement::Query(q) = parsed.pop()? else {
        return None;
    };
    let ast::SetExpr::Select(sel) = *q.body else {
        return None;
    };
    sel.from.into_iter().next().map(|t| t.relation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tr(sql: &str) -> String {
        let stmt = permafrost_sql::parse::parse_statement(sql).unwrap();
        translate(&stmt).unwrap().sql
    }

    #[test]
    fn casts_arrays_and_regexes_become_sqlite() {
        assert_eq!(
            tr("SELECT t.oid FROM pg_type t WHERE t.oid = $1::regtype"),
            "SELECT t.oid FROM pg_type t WHERE t.oid = pf_regtype($1)"
        );
        assert_eq!(
            tr("SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relkind = ANY (ARRAY['r', 'p'])"),
            "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'p')"
        );
        assert_eq!(
            tr("SELECT 1 FROM pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default"),
            "SELECT 1 FROM pg_class c WHERE pf_regex(c.relname, '^(t)$', 0)"
        );
        assert_eq!(
            tr("SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"),
            "SELECT pf_format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
        );
        assert_eq!(tr("SELECT current_user"), "SELECT pf_current_user()");
        assert_eq!(tr("SELECT 'x'::regclass"), "SELECT pf_regclass_name('x')");
    }

    #[test]
    fn set_returning_functions_join_json_each() {
        let sql = tr(
            "SELECT i.indexrelid, unnest(i.indkey) AS attnum, generate_subscripts(i.indkey, 1) AS ord FROM pg_index i",
        );
        assert_eq!(
            sql,
            "SELECT i.indexrelid, _srf0.value AS attnum, (_srf0.key + 1) AS ord FROM pg_index i, json_each(i.indkey) AS _srf0"
        );
    }

    #[test]
    fn columns_are_named_and_typed_as_postgresql_does() {
        let stmt = permafrost_sql::parse::parse_statement(
            "SELECT c.relname, format_type(1, 2), count(*), a.x::text AS y, 1 = 1 FROM pg_class c",
        )
        .unwrap();
        let cols = translate(&stmt).unwrap().columns.unwrap();
        let names: Vec<&str> = cols.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["relname", "format_type", "count", "y", "?column?"]);
        let types: Vec<Option<&str>> = cols.iter().map(|c| c.1).collect();
        assert_eq!(
            types,
            [Some("name"), Some("text"), Some("int8"), Some("text"), Some("bool")]
        );
    }
}
