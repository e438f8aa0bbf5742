//! A statement's text into a [`Command`]: what the session answers itself (SET, SHOW,
//! BEGIN ... COMMIT, PREPARE, cursors, maintenance), DDL, procedures, and DML or queries
//! planned against the catalog; pgwire's [`QueryParser`] for Parse.

use super::*;

/// A cursor's name as written: folded to lower case unless quoted.
fn cursor_name(s: &str) -> String {
    match s.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => s.to_ascii_lowercase(),
    }
}

/// `TRUNCATE`: a `DELETE FROM` of each table. There are no foreign keys, so CASCADE and
/// RESTRICT truncate the same tables; RESTART IDENTITY is refused (sequences are not reset).
fn truncate(db: &Database, t: &ast::Truncate) -> PgWireResult<Command> {
    if matches!(t.identity, Some(ast::TruncateIdentityOption::Restart)) {
        return Err(client_error(
            "0A000",
            "TRUNCATE ... RESTART IDENTITY is not supported (sequences continue)",
        ));
    }
    if t.partitions.is_some() || t.on_cluster.is_some() {
        return Err(client_error("0A000", format!("not supported: {t}")));
    }
    let mut deletes = Vec::with_capacity(t.table_names.len());
    for target in &t.table_names {
        match classify_text(db, &format!("DELETE FROM {}", target.name))? {
            Command::Dml(d) => deletes.push(d),
            _ => {
                return Err(client_error(
                    "XX000",
                    "internal error: TRUNCATE of something not a table",
                ));
            }
        }
    }
    Ok(Command::Truncate(deletes))
}

/// `DECLARE name ... CURSOR ... FOR query`.
fn declare(db: &Database, stmts: &[ast::Declare]) -> PgWireResult<Command> {
    let [d] = stmts else {
        return Err(client_error("42601", "DECLARE declares one cursor"));
    };
    let (Some(query), [name]) = (&d.for_query, d.names.as_slice()) else {
        return Err(client_error(
            "0A000",
            "DECLARE is supported for cursors: DECLARE name CURSOR FOR query",
        ));
    };
    if d.scroll == Some(true) {
        return Err(client_error(
            "0A000",
            "SCROLL cursors are not supported (cursors move forward only)",
        ));
    }
    let stmt = Statement::Query(query.clone());
    let text = stmt.to_string();
    let cmd = classify(db, &stmt, &text)?;
    if !matches!(&cmd, Command::Dml(d) if d.read_only) {
        return Err(client_error("0A000", "a cursor reads a query (SELECT)"));
    }
    Ok(Command::Declare {
        name: permafrost_sql::bind::ident(name),
        query: Arc::new(cmd),
        hold: d.hold == Some(true),
    })
}

/// How many rows a FETCH takes (None: all); backward directions are refused.
fn fetch_count(direction: &ast::FetchDirection) -> PgWireResult<Option<u64>> {
    use sqlparser::ast::FetchDirection as D;
    let number = |v: &ast::ValueWithSpan| match &v.value {
        ast::Value::Number(n, _) => n
            .parse::<u64>()
            .map_err(|_| client_error("0A000", format!("FETCH {n}: only forward counts are supported"))),
        other => Err(client_error("42601", format!("FETCH count {other}"))),
    };
    match direction {
        D::Next => Ok(Some(1)),
        D::Count { limit } => number(limit).map(Some),
        D::Forward { limit: Some(l) } => number(l).map(Some),
        D::Forward { limit: None } => Ok(Some(1)),
        D::All | D::ForwardAll => Ok(None),
        other => Err(client_error(
            "0A000",
            format!("FETCH {other}: cursors move forward only (FETCH [FORWARD] n, NEXT, ALL)"),
        )),
    }
}

/// `MOVE [FORWARD] [n | ALL | NEXT] [FROM | IN] name`.
fn parse_move(sql: &str) -> PgWireResult<Command> {
    let words: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().skip(1).collect();
    let bad = || client_error("42601", format!("syntax error: {}", sql.trim()));
    let (name, rest) = words.split_last().ok_or_else(bad)?;
    let mut rest: Vec<String> = rest.iter().map(|w| w.to_ascii_uppercase()).collect();
    if matches!(rest.last().map(String::as_str), Some("FROM" | "IN")) {
        rest.pop();
    }
    let count = match rest.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["NEXT"] | ["FORWARD"] => Some(1),
        ["ALL"] | ["FORWARD", "ALL"] => None,
        [n] | ["FORWARD", n] => Some(n.parse::<u64>().map_err(|_| {
            client_error(
                "0A000",
                format!("MOVE {n}: cursors move forward only (MOVE [FORWARD] n, NEXT, ALL)"),
            )
        })?),
        _ => return Err(bad()),
    };
    Ok(Command::Fetch {
        name: cursor_name(name),
        count,
        moving: true,
    })
}

/// The command tag of a DDL statement.
fn ddl_tag(stmt: &Statement) -> String {
    match stmt {
        Statement::CreateIndex(_) => "CREATE INDEX".into(),
        Statement::CreateTable(_) => "CREATE TABLE".into(),
        Statement::CreateView(_) => "CREATE VIEW".into(),
        Statement::CreateSequence { .. } => "CREATE SEQUENCE".into(),
        Statement::CreateType { .. } => "CREATE TYPE".into(),
        Statement::CreateSchema { .. } => "CREATE SCHEMA".into(),
        Statement::AlterType(_) => "ALTER TYPE".into(),
        Statement::Drop { object_type, .. } => format!("DROP {object_type}"),
        Statement::AlterTable(_) => "ALTER TABLE".into(),
        Statement::Comment { .. } => "COMMENT".into(),
        _ => "OK".into(),
    }
}

/// Classifies the text of one statement, scanning it first: for texts the server makes
/// (a shape, a TRUNCATE's DELETE); a client's text is scanned once where it arrives and
/// its statements classified with [`classify_statement`].
pub fn classify_text(db: &Database, sql: &str) -> PgWireResult<Command> {
    let scan = permafrost_sql::scan::scan(sql).map_err(sql_error)?;
    match scan.statements.as_slice() {
        [one] => classify_statement(db, one),
        [] => Err(client_error("42601", "syntax error: no statement")),
        _ => Err(client_error(
            "42601",
            "cannot insert multiple commands into a prepared statement",
        )),
    }
}

/// Classifies one statement of a scanned query string.
pub fn classify_statement(db: &Database, st: &StatementText<'_>) -> PgWireResult<Command> {
    classify_statement_in(db, None, st)
}

/// Classifies one statement of a scanned query string, its query or write planned against
/// `draft` when given (the catalog of a transaction block that changed the schema,
/// `permafrost_executor::SchemaDraft`), else against the database's.
pub fn classify_statement_in(
    db: &Database,
    draft: Option<&Arc<permafrost_sql::Catalog>>,
    st: &StatementText<'_>,
) -> PgWireResult<Command> {
    // A long statement may nest deeply: its whole front end runs on a stack sized for it.
    permafrost_sql::limits::with_stack_for(st.text, || classify_on_stack(db, draft, st))
        .map_err(|e| crate::error::at_statement(e, st.chars_before()))
}

fn classify_on_stack(
    db: &Database,
    draft: Option<&Arc<permafrost_sql::Catalog>>,
    st: &StatementText<'_>,
) -> PgWireResult<Command> {
    let sql = st.text;
    if st.is_create_procedure() {
        // Checked now so that a bad definition fails at Parse, not later.
        permafrost_sql::script::parse_create_procedure(sql).map_err(sql_error)?;
        return Ok(Command::CreateProcedure(sql.to_string()));
    }
    if st.is_drop_procedure() {
        permafrost_sql::script::parse_drop_procedure(sql).map_err(sql_error)?;
        return Ok(Command::DropProcedure(sql.to_string()));
    }
    if st.starts_with(&["ALTER"]) {
        let catalog = draft.cloned().unwrap_or_else(|| db.catalog());
        if let Some(owner) = permafrost_sql::privileges::owner_to(&catalog, sql) {
            return owner
                .map(|(tag, notice)| Command::Release(tag, notice))
                .map_err(sql_error);
        }
    }
    if st.starts_with(&["ALTER", "SEQUENCE"]) {
        // (Not read by sqlparser: planned from its text, sequence_alter.rs.)
        permafrost_sql::ddl_text::parse(sql).map_err(sql_error)?;
        return Ok(Command::Ddl {
            sql: sql.to_string(),
            tag: "ALTER SEQUENCE".into(),
        });
    }
    match st.compact().as_deref() {
        Some("selectversion()" | "selectpg_catalog.version()") => return Ok(Command::Version),
        Some("select*frompermafrost_stats") => return Ok(Command::Stats),
        _ => {}
    }
    let words = st.words();
    match words.first().map(String::as_str).unwrap_or("") {
        "SET" | "RESET" => return crate::session_settings::parse(sql).map(Command::Set),
        "CLOSE" if words.len() == 2 && words[1] == "ALL" => return Ok(Command::CloseCursor(None)),
        "CLOSE" if words.len() == 2 => return Ok(Command::CloseCursor(Some(cursor_name(&words[1])))),
        "MOVE" => return parse_move(sql),
        "UNLISTEN" if words.len() == 2 => return Ok(Command::Release("UNLISTEN", None)),
        "LISTEN" | "NOTIFY" => {
            return Err(client_error("0A000", "LISTEN and NOTIFY are not supported"));
        }

        "DISCARD" => {
            return match words.get(1).map(String::as_str) {
                Some("ALL") if words.len() == 2 => Ok(Command::Discard(true)),
                Some("PLANS" | "SEQUENCES" | "TEMP" | "TEMPORARY") if words.len() == 2 => Ok(Command::Discard(false)),
                _ => Err(client_error("42601", format!("syntax error: {}", sql.trim()))),
            };
        }
        "DEALLOCATE" => {
            let rest: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().skip(1).collect();
            let rest = match rest.as_slice() {
                [p, rest @ ..] if p.eq_ignore_ascii_case("prepare") => rest,
                all => all,
            };
            return match rest {
                [a] if a.eq_ignore_ascii_case("all") => Ok(Command::Deallocate(None)),
                [name] => Ok(Command::Deallocate(Some(name.trim_matches('"').to_string()))),
                _ => Err(client_error("42601", format!("syntax error: {}", sql.trim()))),
            };
        }
        "SHOW" => {
            let name = sql.split_whitespace().nth(1).unwrap_or("").trim_end_matches(';');
            if name.eq_ignore_ascii_case("permafrost_stats") {
                return Ok(Command::Stats);
            }
            if name.eq_ignore_ascii_case("all") {
                return Ok(Command::ShowAll);
            }
            // `SHOW TRANSACTION ISOLATION LEVEL` is `SHOW transaction_isolation`.
            if st.starts_with(&["SHOW", "TRANSACTION", "ISOLATION"]) {
                return Ok(Command::Show("transaction_isolation".into()));
            }
            // `SHOW TIME ZONE` is `SHOW TimeZone`.
            if st.starts_with(&["SHOW", "TIME", "ZONE"]) {
                return Ok(Command::Show("TimeZone".into()));
            }
            return Ok(Command::Show(name.to_string()));
        }
        "BEGIN" | "START" => return crate::txn::parse_begin(sql).map(|read_only| Command::Begin { read_only }),
        w if leading_word(w).is_some_and(|k| matches!(k, "VACUUM" | "ANALYZE" | "ANALYSE")) => {
            return maintenance(db, sql);
        }
        "COMMIT" | "END" => return crate::txn::parse_end(sql).map(|sp| sp.map_or(Command::Commit, Command::Savepoint)),
        "CHECKPOINT" if words.len() == 1 => return Ok(Command::Checkpoint),
        "ROLLBACK" | "ABORT" => {
            return crate::txn::parse_end(sql).map(|sp| sp.map_or(Command::Rollback, Command::Savepoint));
        }
        "SAVEPOINT" | "RELEASE" => return crate::txn::parse_savepoint(sql).map(Command::Savepoint),
        "PREPARE" if words.get(1).is_some_and(|w| w == "TRANSACTION") => {
            return Err(client_error(
                "0A000",
                "prepared transactions (two-phase commit) are not supported",
            ));
        }
        _ => {}
    }
    if st.names_stats_view {
        // Not a table: the name is the server's figures, read whole.
        return Err(client_error(
            "0A000",
            "permafrost_stats is the server's figures and can only be read whole: SELECT * FROM \
             permafrost_stats or SHOW permafrost_stats (filter the rows in the client)",
        ));
    }
    // A loader's long INSERT of listed rows: planned a chunk of rows at a time, never
    // parsed whole (permafrost_sql::long_insert).
    if st.starts_with(&["INSERT"]) && sql.len() >= permafrost_sql::long_insert::LONG_INSERT_BYTES {
        let catalog = draft.cloned().unwrap_or_else(|| db.catalog());
        if let Some(p) = permafrost_sql::long_insert::prepare_long_insert(&catalog, sql) {
            return Ok(Command::Dml(Arc::new(dml_command(db.ad_hoc_in(catalog, p)))));
        }
    }
    let stmt = permafrost_sql::parse::parse_statement(sql).map_err(|e| {
        let e = if st.ends_with_semicolon() {
            e.before_semicolon()
        } else {
            e
        };
        sql_error_in(e, sql)
    })?;
    // (A lone set_config() call is SET; one among other expressions is the catalogs'.)
    if let Some(set) = set_config_call(&stmt)? {
        return Ok(Command::SetConfig(set));
    }
    if crate::syscat::answers(&stmt, &db.catalog())? {
        return crate::syscat::prepare(db, &stmt).map(|q| Command::System(Arc::new(q)));
    }
    match &stmt {
        Statement::Truncate(t) => return truncate(db, t),
        Statement::Declare { stmts } => return declare(db, stmts),
        Statement::Fetch {
            name,
            direction,
            into: None,
            ..
        } => {
            return Ok(Command::Fetch {
                name: permafrost_sql::bind::ident(name),
                count: fetch_count(direction)?,
                moving: false,
            });
        }
        Statement::Prepare {
            name,
            data_types,
            statement,
        } => return prepare(db, name, data_types, statement),
        Statement::Execute {
            name: Some(name),
            parameters,
            immediate: false,
            into,
            using,
            ..
        } if into.is_empty() && using.is_empty() => {
            let args = parameters.iter().map(execute_arg).collect::<PgWireResult<Vec<_>>>()?;
            return Ok(Command::Execute {
                name: name.to_string().trim_matches('"').to_string(),
                args,
                explain: None,
            });
        }
        Statement::Explain { statement, .. } => {
            if let Statement::Execute {
                name: Some(name),
                parameters,
                immediate: false,
                into,
                using,
                ..
            } = statement.as_ref()
                && into.is_empty()
                && using.is_empty()
            {
                let args = parameters.iter().map(execute_arg).collect::<PgWireResult<Vec<_>>>()?;
                return Ok(Command::Execute {
                    name: name.to_string().trim_matches('"').to_string(),
                    args,
                    explain: Some(Box::new(stmt.clone())),
                });
            }
        }
        _ => {}
    }
    match draft {
        Some(catalog) => classify_in(db, catalog, &stmt, sql),
        None => classify(db, &stmt, sql),
    }
}

/// The letters a first word starts with (`VACUUM(ANALYZE)` starts with VACUUM).
fn leading_word(w: &str) -> Option<&str> {
    let end = w.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(w.len());
    (end > 0).then(|| &w[..end])
}

/// `VACUUM [(options)] [FULL] [FREEZE] [VERBOSE] [ANALYZE] [table [(columns)] [, ...]]` and
/// `ANALYZE [(options)] [VERBOSE] [table [(columns)] [, ...]]`. The tables and columns named
/// must exist (42P01, 42703); there is nothing else to do: a deleted or updated row's old
/// version is gone when its transaction commits (no dead versions wait to be reclaimed), and
/// plans use the indexes and no statistics. VACUUM inside a transaction block is 25001, as
/// in PostgreSQL ([`Backend::session_statement`](crate::handler)).
fn maintenance(db: &Database, sql: &str) -> PgWireResult<Command> {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;
    use sqlparser::tokenizer::Token;
    let syntax = || client_error("42601", format!("syntax error: {}", sql.trim()));
    let body = sql.trim().trim_end_matches(';').trim_end();
    let word = leading_word(body).ok_or_else(syntax)?;
    let vacuum = word.eq_ignore_ascii_case("vacuum");
    let mut rest = body[word.len()..].trim_start();
    if let Some(inner) = rest.strip_prefix('(') {
        let close = inner.find(')').ok_or_else(syntax)?;
        rest = inner[close + 1..].trim_start();
    }
    loop {
        let w = leading_word(rest).unwrap_or("");
        let flag = w.to_ascii_uppercase();
        let known = if vacuum {
            matches!(flag.as_str(), "FULL" | "FREEZE" | "VERBOSE" | "ANALYZE" | "ANALYSE")
        } else {
            flag == "VERBOSE"
        };
        if !known || rest[w.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.') {
            break;
        }
        rest = rest[w.len()..].trim_start();
    }
    let catalog = db.catalog();
    if !rest.is_empty() {
        let dialect = PostgreSqlDialect {};
        let mut p = Parser::new(&dialect)
            .try_with_sql(rest)
            .map_err(|e| client_error("42601", format!("syntax error: {e}")))?;
        loop {
            let name = p
                .parse_object_name(false)
                .map_err(|e| client_error("42601", format!("syntax error: {e}")))?;
            let name = permafrost_sql::bind::object_name(&name).map_err(sql_error)?;
            let table = catalog
                .table(&name)
                .ok_or_else(|| client_error("42P01", format!("relation \"{name}\" does not exist")))?;
            if p.consume_token(&Token::LParen) {
                let columns = p
                    .parse_comma_separated(Parser::parse_identifier)
                    .and_then(|c| p.expect_token(&Token::RParen).map(|_| c))
                    .map_err(|e| client_error("42601", format!("syntax error: {e}")))?;
                for c in columns {
                    let c = permafrost_sql::bind::ident(&c);
                    if table.column_index(&c).is_none() {
                        return Err(client_error(
                            "42703",
                            format!("column \"{c}\" of relation \"{name}\" does not exist"),
                        ));
                    }
                }
            }
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        if p.peek_token().token != Token::EOF {
            return Err(syntax());
        }
    }
    Ok(Command::Maintenance(vacuum))
}

/// `PREPARE name [(types)] AS statement`: the statement planned (a query, INSERT, UPDATE,
/// DELETE or CALL), with its parameter types.
fn prepare(db: &Database, name: &ast::Ident, declared: &[ast::DataType], stmt: &Statement) -> PgWireResult<Command> {
    let text = stmt.to_string();
    let cmd = classify(db, stmt, &text)?;
    if !matches!(cmd, Command::Dml(_) | Command::Call(_)) {
        return Err(client_error(
            "0A000",
            "PREPARE takes a query, INSERT, UPDATE, DELETE or CALL",
        ));
    }
    let mut types = cmd.param_types();
    for (i, t) in declared.iter().enumerate() {
        let ty = match t {
            // An array parameter (`x = ANY($1)`).
            ast::DataType::Array(
                ast::ArrayElemTypeDef::SquareBracket(e, _)
                | ast::ArrayElemTypeDef::AngleBracket(e)
                | ast::ArrayElemTypeDef::Parenthesis(e)
                | ast::ArrayElemTypeDef::Qualified(e, _),
            ) => crate::pg_types::pg_array_type(Some(&permafrost_sql::bind::map_type(e).map_err(sql_error)?)),
            t => pg_type(Some(&permafrost_sql::bind::map_type(t).map_err(sql_error)?)),
        };
        match types.get_mut(i) {
            Some(slot) => *slot = ty,
            None => types.push(ty),
        }
    }
    Ok(Command::Prepare {
        name: name.value.clone(),
        cmd: Arc::new(cmd),
        types,
    })
}

/// An argument of EXECUTE: a constant (a number, a string, NULL, a negative number).
fn execute_arg(e: &ast::Expr) -> PgWireResult<ExecuteArg> {
    use permafrost_sql::shape::ConstantKind;
    use sqlparser::ast::{Expr, UnaryOperator, Value};
    let (negative, inner) = match e {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => (true, &**expr),
        other => (false, other),
    };
    let Expr::Value(v) = inner else {
        return Err(client_error(
            "0A000",
            format!("EXECUTE takes constants as arguments, not {e}"),
        ));
    };
    let sign = if negative { "-" } else { "" };
    Ok(match &v.value {
        Value::Null if !negative => None,
        Value::Number(n, _) if n.contains(['.', 'e', 'E']) => Some((ConstantKind::Decimal, format!("{sign}{n}"))),
        Value::Number(n, _) => Some((ConstantKind::Integer, format!("{sign}{n}"))),
        Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) if !negative => {
            Some((ConstantKind::String, s.clone()))
        }
        Value::Boolean(b) if !negative => Some((ConstantKind::String, b.to_string())),
        _ => {
            return Err(client_error(
                "0A000",
                format!("EXECUTE takes constants as arguments, not {e}"),
            ));
        }
    })
}

/// The value of an EXECUTE argument for a parameter of type `ty` (a string is read as a
/// literal of that type, as PostgreSQL reads it).
pub(crate) fn execute_value(arg: &ExecuteArg, ty: &Type, i: usize) -> PgWireResult<Value> {
    use permafrost_sql::shape::ConstantKind;
    let Some((kind, text)) = arg else {
        return Ok(Value::Null);
    };
    let bad = || {
        client_error(
            "22P02",
            format!(
                "invalid input syntax for type {} in EXECUTE argument {}: \"{text}\"",
                ty.name(),
                i + 1
            ),
        )
    };
    let v = match (kind, ty) {
        (ConstantKind::String, &Type::INT2 | &Type::INT4 | &Type::INT8) => {
            convert(ConstantKind::Integer, text.trim(), ty)
        }
        (ConstantKind::String, &Type::FLOAT4 | &Type::FLOAT8 | &Type::NUMERIC) => {
            convert(ConstantKind::Decimal, text.trim(), ty)
        }
        (ConstantKind::Integer, &Type::FLOAT4 | &Type::FLOAT8 | &Type::NUMERIC) => {
            convert(ConstantKind::Decimal, text, ty)
        }
        (ConstantKind::String, &Type::BOOL) => match text.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => Some(Value::Bool(true)),
            "f" | "false" | "n" | "no" | "off" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        (ConstantKind::String, &Type::TIMESTAMP) => permafrost_types::parse_timestamp(text).ok().map(Value::Timestamp),
        (ConstantKind::String, &Type::TIMESTAMPTZ) => {
            permafrost_types::parse_timestamptz(text).ok().map(Value::TimestampTz)
        }
        (ConstantKind::String, &Type::DATE) => permafrost_types::parse_date(text).ok().map(Value::Date),
        (k, t) => convert(*k, text, t),
    };
    v.ok_or_else(bad)
}

/// `SELECT [pg_catalog.]set_config('name', 'value', is_local)` alone, with constant
/// arguments: the assignment it makes (`is_local`: as `SET LOCAL`).
fn set_config_call(stmt: &Statement) -> PgWireResult<Option<crate::session_settings::SetStatement>> {
    use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, SelectItem, SetExpr, Value};
    let Statement::Query(q) = stmt else { return Ok(None) };
    let SetExpr::Select(s) = q.body.as_ref() else {
        return Ok(None);
    };
    let [item] = s.projection.as_slice() else {
        return Ok(None);
    };
    let (SelectItem::UnnamedExpr(Expr::Function(f))
    | SelectItem::ExprWithAlias {
        expr: Expr::Function(f),
        ..
    }) = item
    else {
        return Ok(None);
    };
    let name_is = |n: &str| f.name.0.last().is_some_and(|p| p.to_string().eq_ignore_ascii_case(n));
    if !s.from.is_empty() || !name_is("set_config") {
        return Ok(None);
    }
    let FunctionArguments::List(l) = &f.args else {
        return Ok(None);
    };
    let args: Vec<Option<&Value>> = l
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) => Some(&v.value),
            _ => None,
        })
        .collect();
    let text = |v: Option<&Value>| match v {
        Some(Value::SingleQuotedString(s)) => Some(s.clone()),
        _ => None,
    };
    match args.as_slice() {
        [n, v, Some(Value::Boolean(local))] => {
            let (Some(name), Some(value)) = (text(*n), text(*v)) else {
                return Err(client_error("0A000", "set_config() takes constant arguments here"));
            };
            crate::session_settings::assign(&name, Some(value), *local).map(Some)
        }
        _ => Err(client_error(
            "0A000",
            "set_config() takes three constant arguments here: name, value, is_local",
        )),
    }
}

/// Classifies one parsed statement (`sql` is its text).
pub(crate) fn classify(db: &Database, stmt: &Statement, sql: &str) -> PgWireResult<Command> {
    classify_in(db, &db.catalog(), stmt, sql)
}

/// Classifies one parsed statement (`sql` is its text), a query or write planned against
/// `catalog`.
pub(crate) fn classify_in(
    db: &Database,
    catalog: &Arc<permafrost_sql::Catalog>,
    stmt: &Statement,
    sql: &str,
) -> PgWireResult<Command> {
    if permafrost_sql::ddl::is_ddl(stmt) {
        return Ok(Command::Ddl {
            sql: sql.to_string(),
            tag: ddl_tag(stmt),
        });
    }
    match stmt {
        Statement::Call(f) => return call(db, f).map(|c| Command::Call(Arc::new(c))),
        Statement::Grant(g) => {
            permafrost_sql::privileges::grant(catalog, g).map_err(sql_error)?;
            return Ok(Command::Release("GRANT", None));
        }
        Statement::Revoke(_) => return Err(sql_error(permafrost_sql::privileges::revoke())),
        Statement::Copy { .. } => {
            return copy::plan(db, catalog, stmt).map(|c| match c {
                copy::CopyPlan::In(c) => Command::Copy(Arc::new(c)),
                copy::CopyPlan::Out(c) => Command::CopyOut(Arc::new(c)),
            });
        }
        _ => {}
    }
    let prepared = permafrost_sql::prepare_statement(catalog, stmt, sql).map_err(|e| sql_error_in(e, sql))?;
    Ok(Command::Dml(Arc::new(dml_command(
        db.ad_hoc_in(catalog.clone(), prepared),
    ))))
}

/// A planned query or write as the connection runs it.
pub(crate) fn dml_command(stmt: AdHoc) -> DmlCommand {
    let prepared = stmt.prepared();
    DmlCommand {
        params: param_types(prepared),
        columns: columns_of(prepared.columns()),
        kind: prepared.result_kind(),
        read_only: prepared.is_read_only(),
        reads_clock: mentions_clock(&prepared.sql),
        stmt,
    }
}

/// Whether a statement's text may read the clock (`now()` and its kin), whose value inside
/// a transaction block is the block's start.
fn mentions_clock(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    [
        "now",
        "current_",
        "localtime",
        "transaction_timestamp",
        "statement_timestamp",
        "clock_timestamp",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The PostgreSQL types of a statement's parameters: an array's for those compared with
/// `= ANY(...)`.
fn param_types(prepared: &permafrost_sql::Prepared) -> Vec<Type> {
    prepared
        .param_types()
        .iter()
        .enumerate()
        .map(|(i, t)| match prepared.array_param(i) {
            Some(elem) => crate::pg_types::pg_array_type(elem.as_ref()),
            None => pg_type(t.as_ref()),
        })
        .collect()
}

pub(crate) fn call(db: &Database, f: &ast::Function) -> PgWireResult<CallCommand> {
    let name = f
        .name
        .0
        .iter()
        .map(|p| p.to_string().trim_matches('"').to_string())
        .map(|p| {
            if p.chars().any(|c| c.is_uppercase()) {
                p.to_lowercase()
            } else {
                p
            }
        })
        .collect::<Vec<_>>()
        .join(".");
    let exprs: Vec<&ast::Expr> = match &f.args {
        ast::FunctionArguments::None => Vec::new(),
        ast::FunctionArguments::List(l) => l
            .args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                other => Err(client_error(
                    "0A000",
                    format!("CALL arguments must be values or parameters, not {other}"),
                )),
            })
            .collect::<PgWireResult<_>>()?,
        ast::FunctionArguments::Subquery(_) => {
            return Err(client_error("0A000", "CALL arguments must be values or parameters"));
        }
    };
    let (target, sig, columns) = match Builtin::lookup(&name) {
        Some(b) => (CallTarget::Builtin(b), b.signature(), b.columns()),
        None => {
            let h = db.procedure(&name).map_err(db_error)?;
            let sig = match h.signature() {
                Some(s) => s.iter().map(|(_, t)| pg_type(Some(t))).collect(),
                None => vec![Type::UNKNOWN; exprs.len()],
            };
            let columns = h.columns().map(|c| columns_of(c)).unwrap_or_default();
            (CallTarget::Procedure(h), sig, columns)
        }
    };
    if exprs.len() != sig.len() && !sig.iter().all(|t| *t == Type::UNKNOWN) {
        return Err(client_error(
            "42883",
            format!(
                "procedure {name} takes {} argument(s), {} given",
                sig.len(),
                exprs.len()
            ),
        ));
    }
    let catalog = db.catalog();
    let mut args = Vec::with_capacity(exprs.len());
    let mut params: Vec<Type> = Vec::new();
    for (i, e) in exprs.iter().enumerate() {
        match e {
            ast::Expr::Value(v) if matches!(&v.value, ast::Value::Placeholder(_)) => {
                let ast::Value::Placeholder(p) = &v.value else {
                    unreachable!()
                };
                let n: usize = p
                    .trim_start_matches('$')
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| client_error("42601", format!("bad parameter {p}")))?;
                if params.len() < n {
                    params.resize(n, Type::UNKNOWN);
                }
                params[n - 1] = sig.get(i).cloned().unwrap_or(Type::UNKNOWN);
                args.push(CallArg::Param(n - 1));
            }
            e => {
                let (x, _) = permafrost_sql::plan::bind_constant(&catalog, e).map_err(sql_error)?;
                let v = permafrost_sql::plan::eval_constant(&x).map_err(sql_error)?;
                args.push(CallArg::Value(v));
            }
        }
    }
    Ok(CallCommand {
        target,
        args,
        params,
        columns,
    })
}

/// Parses statements of the extended protocol into [`Command`]s.
pub struct Parser {
    pub(crate) db: Arc<Database>,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Command;

    async fn parse_sql<C>(&self, client: &C, sql: &str, _types: &[Option<Type>]) -> PgWireResult<Option<Command>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let sql = crate::temp_tables::qualify(&self.db, client, sql)?;
        let scan = permafrost_sql::scan::scan(&sql).map_err(sql_error)?;
        match scan.statements.as_slice() {
            [] => Ok(None),
            [one] => {
                let draft = crate::txn::draft_catalog(&crate::txn::of(client));
                classify_statement_in(&self.db, draft.as_ref(), one).map(Some)
            }
            _ => Err(client_error(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            )),
        }
    }

    fn get_parameter_types(&self, stmt: &Command) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types())
    }

    fn get_result_schema(&self, stmt: &Command, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        Ok(fields(&stmt.columns(), format.unwrap_or(&Format::UnifiedText)))
    }
}

/// A constant as a parameter of type `t`; `None` when it does not convert.
pub(crate) fn convert(k: ConstantKind, text: &str, t: &Type) -> Option<Value> {
    match k {
        ConstantKind::Integer => {
            let n = text.parse::<i64>().ok()?;
            let fits = match *t {
                Type::INT2 => i16::try_from(n).is_ok(),
                Type::INT4 => i32::try_from(n).is_ok(),
                _ => true,
            };
            fits.then_some(Value::Int(n))
        }
        ConstantKind::Decimal => match *t {
            Type::NUMERIC => Some(Value::Decimal(Numeric::parse(text).ok()?)),
            _ => text.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::Double),
        },
        ConstantKind::String => Some(Value::text(text)),
    }
}
