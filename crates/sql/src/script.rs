//! The statements sqlparser does not read: `CREATE PROCEDURE ... AS $$ ... $$` and `DROP
//! PROCEDURE`. (A query string is cut into statements by scan.rs.)
//!
//! A SQL-defined procedure:
//!
//! ```text
//! CREATE [OR REPLACE] PROCEDURE name ( [ [IN] argname type [, ...] ] )
//!     [ LANGUAGE SQL ]
//!     [ PARTITION ON argname ]
//!     AS $$ statement; statement; ... $$
//! ```
//!
//! The statements refer to the arguments as `$1`, `$2`, ... (in declaration order) and run
//! in order as one transaction; the call returns the rows of the last statement. With
//! `PARTITION ON argname` the transaction runs at the partition of that argument's value
//! (single-partition); without it, at every partition.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::bind::map_type;
use crate::error::{Result, SqlError};
use permafrost_types::DataType;

fn tokens(sql: &str) -> Result<Vec<Token>> {
    Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize()
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))
}

fn is_blank(t: &Token) -> bool {
    matches!(t, Token::Whitespace(_))
}

/// A procedure as `CREATE PROCEDURE` defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcedureSource {
    pub name: String,
    pub or_replace: bool,
    /// Argument names and types, in order.
    pub args: Vec<(String, DataType)>,
    /// The argument whose value picks the partition, if any.
    pub partition_arg: Option<usize>,
    /// The statements of the body, in order (none for an internal procedure).
    pub body: Vec<String>,
    /// `LANGUAGE internal AS 'symbol'`: the built-in procedure it names.
    pub internal: Option<String>,
}

/// A cursor over the non-blank tokens of one statement (also sequence_alter.rs's).
pub(crate) struct Cursor {
    toks: Vec<Token>,
    pub(crate) pos: usize,
}

impl Cursor {
    pub(crate) fn new(sql: &str) -> Result<Cursor> {
        let toks = tokens(sql)?
            .into_iter()
            .filter(|t| !is_blank(t) && *t != Token::EOF)
            .collect();
        Ok(Cursor { toks, pos: 0 })
    }

    pub(crate) fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    pub(crate) fn next(&mut self) -> Option<Token> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    /// Consumes the keyword `kw` if it comes next.
    pub(crate) fn keyword(&mut self, kw: &str) -> bool {
        match self.peek() {
            Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    pub(crate) fn expect_keyword(&mut self, kw: &str) -> Result<()> {
        if self.keyword(kw) {
            Ok(())
        } else {
            Err(self.unexpected(kw))
        }
    }

    /// Reads `IF EXISTS`, if it comes next.
    pub(crate) fn if_exists(&mut self) -> Result<bool> {
        let given = self.keyword("IF");
        if given {
            self.expect_keyword("EXISTS")?;
        }
        Ok(given)
    }

    pub(crate) fn unexpected(&self, wanted: &str) -> SqlError {
        match self.peek() {
            Some(t) => SqlError::Syntax(format!("syntax error: expected {wanted}, found \"{t}\"")),
            None => SqlError::Syntax(format!(
                "syntax error: expected {wanted}, found the end of the statement"
            )),
        }
    }

    /// An identifier (folded to lower case unless quoted), or `schema.name` joined by a dot
    /// (a procedure's name).
    pub(crate) fn name(&mut self) -> Result<String> {
        Ok(self.parts()?.join("."))
    }

    /// A relation's or type's name: an identifier, which a `public.` or `pg_catalog.`
    /// schema may qualify ([`crate::bind::unqualified`]).
    pub(crate) fn relation(&mut self) -> Result<String> {
        let parts = self.parts()?;
        let shown = parts.join(".");
        crate::bind::unqualified(parts, &shown)
    }

    /// The parts of a dotted name (`table.column`), each folded.
    pub(crate) fn parts(&mut self) -> Result<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.peek() == Some(&Token::Period) {
            self.pos += 1;
            parts.push(self.ident()?);
        }
        Ok(parts)
    }

    pub(crate) fn ident(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) if w.quote_style.is_some() => Ok(w.value),
            Some(Token::Word(w)) => Ok(w.value.to_lowercase()),
            _ => {
                self.pos -= 1;
                Err(self.unexpected("a name"))
            }
        }
    }
}

/// The first statement of `sql`, scanned.
fn first_statement(sql: &str) -> Option<crate::scan::StatementText<'_>> {
    crate::scan::scan(sql).ok()?.statements.into_iter().next()
}

/// Whether `sql` is a `CREATE [OR REPLACE] PROCEDURE` statement.
pub fn is_create_procedure(sql: &str) -> bool {
    first_statement(sql).is_some_and(|s| s.is_create_procedure())
}

/// Whether `sql` is a `DROP PROCEDURE` statement.
pub fn is_drop_procedure(sql: &str) -> bool {
    first_statement(sql).is_some_and(|s| s.is_drop_procedure())
}

/// Parses a `CREATE PROCEDURE` statement (see the module documentation).
pub fn parse_create_procedure(sql: &str) -> Result<ProcedureSource> {
    let mut c = Cursor::new(sql)?;
    c.expect_keyword("CREATE")?;
    let or_replace = c.keyword("OR");
    if or_replace {
        c.expect_keyword("REPLACE")?;
    }
    c.expect_keyword("PROCEDURE")?;
    let name = c.name()?;
    if c.next() != Some(Token::LParen) {
        c.pos -= 1;
        return Err(c.unexpected("\"(\" and the argument list"));
    }
    let mut args: Vec<(String, DataType)> = Vec::new();
    if c.peek() == Some(&Token::RParen) {
        c.pos += 1;
    } else {
        loop {
            if c.keyword("OUT") || c.keyword("INOUT") || c.keyword("VARIADIC") {
                return Err(SqlError::Unsupported(
                    "OUT, INOUT and VARIADIC arguments (a procedure returns the rows of its last statement)".into(),
                ));
            }
            c.keyword("IN");
            // `[name] type`, the type running to the next `,` or `)` outside parentheses
            // (NUMERIC(10, 2)); a name-less argument is only `$n` in the body.
            let start = c.pos;
            let mut depth = 0usize;
            let mut pieces: Vec<String> = Vec::new();
            loop {
                match c.next() {
                    None => return Err(c.unexpected("\")\" closing the argument list")),
                    Some(Token::LParen) => {
                        depth += 1;
                        pieces.push("(".into());
                    }
                    Some(Token::RParen) if depth > 0 => {
                        depth -= 1;
                        pieces.push(")".into());
                    }
                    Some(Token::Comma | Token::RParen) if depth == 0 => {
                        c.pos -= 1;
                        break;
                    }
                    Some(t) => pieces.push(format!(" {t}")),
                }
            }
            let (arg, ty) = match parse_type(&pieces.concat()) {
                Ok(ty) => (String::new(), ty),
                Err(_) => {
                    let end = c.pos;
                    c.pos = start;
                    let arg = c.ident()?;
                    c.pos = end;
                    let ty = parse_type(&pieces[1..].concat()).map_err(|e| match e {
                        SqlError::Syntax(m) => SqlError::Syntax(format!(
                            "syntax error: type of argument \"{arg}\": {}",
                            m.trim_start_matches("syntax error: ")
                        )),
                        other => other,
                    })?;
                    (arg, ty)
                }
            };
            if !arg.is_empty() && args.iter().any(|(a, _)| *a == arg) {
                return Err(SqlError::FunctionDefinition(format!(
                    "argument name \"{arg}\" used more than once"
                )));
            }
            args.push((arg, ty));
            match c.next() {
                Some(Token::Comma) => continue,
                Some(Token::RParen) => break,
                _ => return Err(c.unexpected("\",\" or \")\"")),
            }
        }
    }
    let mut partition_arg = None;
    let mut body = None;
    let mut language = false;
    let mut internal = false;
    // The clauses in any order, each once (PostgreSQL's `AS $$ ... $$ LANGUAGE sql` too).
    while c.peek().is_some() {
        if !language && c.keyword("LANGUAGE") {
            language = true;
            if c.keyword("INTERNAL") {
                internal = true;
            } else if !c.keyword("SQL") {
                return Err(SqlError::Unsupported(
                    "procedures in languages other than SQL and internal (register Rust procedures through the \
                     embedded API, or build them into the server and name them with LANGUAGE internal)"
                        .into(),
                ));
            }
        } else if partition_arg.is_none() && c.keyword("PARTITION") {
            c.expect_keyword("ON")?;
            let arg = c.ident()?;
            let i = args
                .iter()
                .position(|(a, _)| !a.is_empty() && *a == arg)
                .ok_or_else(|| {
                    SqlError::FunctionDefinition(format!(
                        "PARTITION ON names \"{arg}\", which is not an argument of {name}"
                    ))
                })?;
            partition_arg = Some(i);
        } else if body.is_none() && c.keyword("AS") {
            body = Some(match c.next() {
                Some(Token::DollarQuotedString(s)) => s.value,
                Some(Token::SingleQuotedString(s)) => s,
                _ => {
                    c.pos -= 1;
                    return Err(c.unexpected("the body as a $$-quoted string"));
                }
            });
        } else {
            return Err(c.unexpected("LANGUAGE SQL, PARTITION ON argname or AS $$ ... $$"));
        }
    }
    let Some(body) = body else {
        return Err(SqlError::FunctionDefinition("no function body specified".into()));
    };
    if internal {
        if partition_arg.is_some() {
            return Err(SqlError::FunctionDefinition(
                "an internal procedure runs where its built-in definition says: PARTITION ON does not apply".into(),
            ));
        }
        let symbol = body.trim().to_string();
        return Ok(ProcedureSource {
            name,
            or_replace,
            args,
            partition_arg,
            body: Vec::new(),
            internal: Some(symbol),
        });
    }
    let body = crate::scan::scan(&body)?.texts();
    if body.is_empty() {
        return Err(SqlError::FunctionDefinition(format!(
            "procedure {name} has no statements"
        )));
    }
    Ok(ProcedureSource {
        name,
        or_replace,
        args,
        partition_arg,
        body,
        internal: None,
    })
}

fn parse_type(text: &str) -> Result<DataType> {
    let mut p = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?;
    let t = p
        .parse_data_type()
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?;
    if p.peek_token().token != Token::EOF {
        return Err(SqlError::Syntax(format!(
            "syntax error: unexpected text in type \"{}\"",
            text.trim()
        )));
    }
    // (Read without the catalog: a name of its own may be an enum type, not taken here.)
    map_type(&t).map_err(|e| match e {
        SqlError::UnknownType(name) => SqlError::Unsupported(format!(
            "argument type {name}: procedure arguments take built-in types (an enum argument: declare it text and \
             cast it in the body, $1::{name})"
        )),
        other => other,
    })
}

/// Parses `DROP PROCEDURE [IF EXISTS] name [ (types) ]`: the name and whether IF EXISTS
/// was given.
pub fn parse_drop_procedure(sql: &str) -> Result<(String, bool)> {
    let mut c = Cursor::new(sql)?;
    c.expect_keyword("DROP")?;
    c.expect_keyword("PROCEDURE")?;
    let if_exists = c.if_exists()?;
    let name = c.name()?;
    // An argument list identifies an overload in PostgreSQL; names are unique here.
    if c.peek() == Some(&Token::LParen) {
        let mut depth = 0;
        while let Some(t) = c.next() {
            match t {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(t) = c.peek() {
        return Err(SqlError::Syntax(format!(
            "syntax error: unexpected \"{t}\" in DROP PROCEDURE"
        )));
    }
    Ok((name, if_exists))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(sql: &str) -> Result<Vec<String>> {
        crate::scan::scan(sql).map(crate::scan::Scan::texts)
    }

    #[test]
    fn split_respects_quotes_comments_and_bodies() {
        let s =
            split("SELECT 1; SELECT ';' ; -- a; comment\n CREATE PROCEDURE p() AS $$ SELECT 1; SELECT 2 $$;;").unwrap();
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(s[0], "SELECT 1");
        assert_eq!(s[1], "SELECT ';'");
        assert!(s[2].contains("$$ SELECT 1; SELECT 2 $$"), "{}", s[2]);
        assert!(split("  -- nothing\n").unwrap().is_empty());
        assert!(split(";;").unwrap().is_empty());
    }

    #[test]
    fn split_statements_keep_their_exact_text() {
        let s = split("CREATE TABLE t (b TEXT DEFAULT 'x''y');\nINSERT INTO t VALUES (E'a\\nb'), ('é;ü'); SELECT 'ß'")
            .unwrap();
        assert_eq!(
            s,
            vec![
                "CREATE TABLE t (b TEXT DEFAULT 'x''y')",
                "INSERT INTO t VALUES (E'a\\nb'), ('é;ü')",
                "SELECT 'ß'",
            ]
        );
    }

    #[test]
    fn create_procedure_is_parsed() {
        let p = parse_create_procedure(
            "CREATE OR REPLACE PROCEDURE Transfer(IN src BIGINT, dst bigint, amount NUMERIC(12, 2)) \
             LANGUAGE SQL PARTITION ON src AS $$ UPDATE a SET b = b - $3 WHERE id = $1; \
             SELECT b FROM a WHERE id = $1 $$",
        )
        .unwrap();
        assert_eq!(p.name, "transfer");
        assert!(p.or_replace);
        assert_eq!(p.args.len(), 3);
        assert_eq!(p.args[0], ("src".to_string(), DataType::BigInt));
        assert_eq!(
            p.args[2].1,
            DataType::Decimal {
                precision: 12,
                scale: 2
            }
        );
        assert_eq!(p.partition_arg, Some(0));
        assert_eq!(p.body.len(), 2);
        let q = parse_create_procedure("create procedure \"Q\"() as 'select 1'").unwrap();
        assert_eq!(q.name, "Q");
        assert_eq!(q.partition_arg, None);
        // Arguments without names, and LANGUAGE after the body, as PostgreSQL takes them.
        let u = parse_create_procedure(
            "create procedure u(int, x double precision, numeric(10, 2)) as $$ select $1 $$ language sql",
        )
        .unwrap();
        assert_eq!(
            u.args,
            vec![
                (String::new(), DataType::Integer),
                ("x".to_string(), DataType::Double),
                (
                    String::new(),
                    DataType::Decimal {
                        precision: 10,
                        scale: 2
                    }
                )
            ]
        );
        assert_eq!(u.body, vec!["select $1"]);
    }

    #[test]
    fn bad_procedures_are_errors() {
        for (sql, what) in [
            (
                "CREATE PROCEDURE p(a INT) PARTITION ON b AS $$ SELECT 1 $$",
                "not an argument",
            ),
            ("CREATE PROCEDURE p(a INT, a INT) AS $$ SELECT 1 $$", "more than once"),
            ("CREATE PROCEDURE p(a NOTATYPE) AS $$ SELECT 1 $$", ""),
            (
                "CREATE PROCEDURE p(a INT) LANGUAGE plpgsql AS $$ BEGIN END $$",
                "languages",
            ),
            ("CREATE PROCEDURE p(a INT) AS $$ $$", "no statements"),
            ("CREATE PROCEDURE p(OUT a INT) AS $$ SELECT 1 $$", "OUT"),
            ("CREATE PROCEDURE p(a INT AS $$ SELECT 1 $$", ""),
            (
                "CREATE PROCEDURE p(a INT) AS $$ SELECT 1 $$ garbage",
                "found \"garbage\"",
            ),
            (
                "CREATE PROCEDURE p(a INT) AS $$ SELECT 1 $$ AS $$ SELECT 2 $$",
                "found \"AS\"",
            ),
            ("CREATE PROCEDURE p(a INT) LANGUAGE SQL", "no function body"),
            (
                "CREATE PROCEDURE p(INT) PARTITION ON a AS $$ SELECT 1 $$",
                "not an argument",
            ),
            ("CREATE PROCEDURE p", "argument list"),
        ] {
            let e = parse_create_procedure(sql).expect_err(sql);
            assert!(e.to_string().contains(what), "{sql}: {e}");
        }
    }

    #[test]
    fn drop_procedure_is_parsed() {
        assert_eq!(parse_drop_procedure("DROP PROCEDURE p").unwrap(), ("p".into(), false));
        assert_eq!(
            parse_drop_procedure("drop procedure if exists s.P(int, text)").unwrap(),
            ("s.p".into(), true)
        );
        assert!(parse_drop_procedure("DROP PROCEDURE p q").is_err());
        assert!(is_drop_procedure("drop  procedure x"));
        assert!(is_create_procedure("CREATE OR REPLACE PROCEDURE x()"));
        assert!(!is_create_procedure("CREATE TABLE procedure (a int)"));
    }
}
