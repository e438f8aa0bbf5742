//! SQL text to syntax trees (sqlparser, PostgreSQL dialect).
//!
//! Parameters may be written `$1, $2, ...` (PostgreSQL) or `?` (JDBC and H-Store style);
//! `?` placeholders are numbered left to right and rewritten to `$n` before parsing, since
//! the PostgreSQL dialect reads `?` as a JSON operator; a `?` after an operand, or before
//! `|`, `&`, a string or a `$n` parameter, is that operator and stays
//! ([`is_json_operator`]).

pub use sqlparser::ast::Statement;
use sqlparser::dialect::{GenericDialect, PostgreSqlDialect};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Result, SqlError};

/// Parses one or more `;`-separated statements.
///
/// The tree of a long statement can be deep: parse, use and drop it inside
/// [`crate::limits::with_stack_for`].
pub fn parse_statements(sql: &str) -> Result<Vec<Statement>> {
    crate::limits::check_length(sql)?;
    let text = rewrite_question_marks(sql)?;
    let text = rewrite_copy_booleans(text)?;
    let rewritten = text != sql;
    Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(MAX_NESTING)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| match e {
            ParserError::RecursionLimitExceeded => SqlError::TooDeep,
            e => syntax_error(e, rewritten),
        })
}

/// A parser error as PostgreSQL words it, where sqlparser says what it found and where
/// ("Expected: X, found: Y at Line: L, Column: C"); the place only if `sql` was parsed
/// as the client wrote it (not `rewritten`).
fn syntax_error(e: ParserError, rewritten: bool) -> SqlError {
    let ParserError::ParserError(message) = &e else {
        return SqlError::Syntax(format!("syntax error: {e}"));
    };
    let parts = message.strip_prefix("Expected: ").and_then(|rest| {
        let (_expected, tail) = rest.split_once(", found: ")?;
        // (No place is given at the end of the text.)
        let Some((found, place)) = tail.rsplit_once(" at Line: ") else {
            return Some((tail, 0, 0));
        };
        let (line, column) = place.split_once(", Column: ")?;
        Some((found, line.parse::<u64>().ok()?, column.parse::<u64>().ok()?))
    });
    match parts {
        Some((found, line, column)) => SqlError::SyntaxAt {
            near: (found != "EOF").then(|| found.to_string()),
            line: if rewritten { 0 } else { line },
            column,
        },
        None => SqlError::Syntax(format!("syntax error: {e}")),
    }
}

/// How deeply parentheses, subqueries and prefix operators may nest (sqlparser counts
/// these; left-associative operator chains do not nest in the parser).
const MAX_NESTING: usize = 500;

/// Parses exactly one statement.
pub fn parse_statement(sql: &str) -> Result<Statement> {
    let mut v = parse_statements(sql)?;
    match v.len() {
        1 => Ok(v.pop().expect("one statement")),
        0 => Err(SqlError::Syntax("syntax error: empty statement".into())),
        n => Err(SqlError::Syntax(format!(
            "syntax error: expected one statement, found {n}"
        ))),
    }
}

fn rewrite_question_marks(sql: &str) -> Result<std::borrow::Cow<'_, str>> {
    if !sql.contains('?') {
        return Ok(sql.into());
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize()
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?;
    if !tokens.iter().any(|t| matches!(t, Token::Placeholder(p) if p == "?")) {
        return Ok(sql.into());
    }
    let significant = |i: usize, forward: bool| -> Option<&Token> {
        let mut it: Box<dyn Iterator<Item = &Token>> = if forward {
            Box::new(tokens[i + 1..].iter())
        } else {
            Box::new(tokens[..i].iter().rev())
        };
        it.find(|t| !matches!(t, Token::Whitespace(_)))
    };
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::Placeholder(p) if p == "?" && !is_json_operator(significant(i, false), significant(i, true)) => {
                n += 1;
                out.push_str(&format!("${n}"));
            }
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(out.into())
}

/// Whether a `?` between tokens `before` and `after` is jsonb's operator (`doc ? 'k'`,
/// `doc ?| keys`, `doc ?& keys`, `"doc" ? $1`) rather than a placeholder: it follows an
/// operand (a column name, a closing parenthesis or bracket), or is followed by what no
/// placeholder is followed by (`|`, `&`, a string, a `$n` parameter).
fn is_json_operator(before: Option<&Token>, after: Option<&Token>) -> bool {
    use sqlparser::keywords::Keyword;
    let after_operand = match before {
        Some(Token::Word(w)) => w.quote_style.is_some() || w.keyword == Keyword::NoKeyword,
        Some(Token::RParen | Token::RBracket) => true,
        _ => false,
    };
    let before_operand = match after {
        Some(Token::Pipe | Token::Ampersand | Token::SingleQuotedString(_)) => true,
        Some(Token::Placeholder(p)) => p.starts_with('$'),
        _ => false,
    };
    after_operand || before_operand
}

/// PostgreSQL writes a COPY option's boolean as TRUE or FALSE, ON or OFF, 1 or 0
/// (`COPY t FROM STDIN WITH (FREEZE ON)`, what pgbench -i sends); sqlparser reads only
/// TRUE and FALSE after FREEZE and HEADER, so the others are spelled that way first.
fn rewrite_copy_booleans(sql: std::borrow::Cow<'_, str>) -> Result<std::borrow::Cow<'_, str>> {
    let is_copy = sql
        .trim_start()
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("copy"));
    if !is_copy {
        return Ok(sql);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, &sql)
        .tokenize()
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?;
    let option = |t: &Token| {
        matches!(t, Token::Word(w) if w.quote_style.is_none()
            && (w.value.eq_ignore_ascii_case("freeze") || w.value.eq_ignore_ascii_case("header")))
    };
    let mut out = String::with_capacity(sql.len() + 8);
    let mut after_option = false;
    for t in &tokens {
        let spelled = match t {
            Token::Word(w) if after_option && w.quote_style.is_none() && w.value.eq_ignore_ascii_case("on") => {
                Some("TRUE")
            }
            Token::Word(w) if after_option && w.quote_style.is_none() && w.value.eq_ignore_ascii_case("off") => {
                Some("FALSE")
            }
            Token::Number(n, _) if after_option && n == "1" => Some("TRUE"),
            Token::Number(n, _) if after_option && n == "0" => Some("FALSE"),
            _ => None,
        };
        match spelled {
            Some(s) => out.push_str(s),
            None => out.push_str(&t.to_string()),
        }
        if !matches!(t, Token::Whitespace(_)) {
            after_option = option(t);
        }
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_booleans_are_read_in_every_spelling() {
        use sqlparser::ast::CopyOption;
        let options = |sql: &str| match parse_statement(sql).unwrap() {
            Statement::Copy { options, .. } => options,
            other => panic!("not a COPY: {other}"),
        };
        assert_eq!(
            options("copy pgbench_accounts from stdin with (freeze on)"),
            vec![CopyOption::Freeze(true)]
        );
        assert_eq!(
            options("COPY t FROM STDIN (FREEZE OFF)"),
            vec![CopyOption::Freeze(false)]
        );
        assert_eq!(
            options("COPY t FROM STDIN (FORMAT csv, HEADER 1, FREEZE 0)"),
            vec![
                CopyOption::Format("csv".into()),
                CopyOption::Header(true),
                CopyOption::Freeze(false)
            ]
        );
        assert_eq!(
            options("COPY t FROM STDIN (HEADER false)"),
            vec![CopyOption::Header(false)]
        );
        assert_eq!(options("COPY t FROM STDIN (FREEZE)"), vec![CopyOption::Freeze(true)]);
        // Only an option's value is respelled: columns named "header" and "on" stay.
        match parse_statement("COPY t (header, \"on\") FROM STDIN (HEADER on)").unwrap() {
            Statement::Copy {
                source: sqlparser::ast::CopySource::Table { columns, .. },
                options,
                ..
            } => {
                let names: Vec<&str> = columns.iter().map(|c| c.value.as_str()).collect();
                assert_eq!(names, ["header", "on"]);
                assert_eq!(options, vec![CopyOption::Header(true)]);
            }
            other => panic!("not a COPY of a table: {other}"),
        }
    }

    #[test]
    fn question_marks_become_numbered_parameters() {
        let s = parse_statement("SELECT a FROM t WHERE a = ? AND b = '?' AND c < ?").unwrap();
        let text = s.to_string();
        assert!(text.contains("a = $1"), "{text}");
        assert!(text.contains("b = '?'"), "{text}");
        assert!(text.contains("c < $2"), "{text}");
    }

    #[test]
    fn syntax_errors_are_reported() {
        let e = parse_statement("SELEC 1").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
        assert!(parse_statement("").is_err());
    }
}
