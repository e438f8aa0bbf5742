//! SQL text to syntax trees (sqlparser, PostgreSQL dialect).
//!
//! Parameters may be written `$1, $2, ...` (PostgreSQL) or `?` (JDBC and H-Store style);
//! `?` placeholders are numbered left to right and rewritten to `$n` before parsing, since
//! the PostgreSQL dialect reads `?` as a JSON operator.

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
    Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(MAX_NESTING)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| match e {
            ParserError::RecursionLimitExceeded => SqlError::TooDeep,
            e => SqlError::Syntax(e.to_string()),
        })
}

/// How deeply parentheses, subqueries and prefix operators may nest (sqlparser counts
/// these; left-associative operator chains do not nest in the parser).
const MAX_NESTING: usize = 500;

/// Parses exactly one statement.
pub fn parse_statement(sql: &str) -> Result<Statement> {
    let mut v = parse_statements(sql)?;
    match v.len() {
        1 => Ok(v.pop().expect("one statement")),
        0 => Err(SqlError::Syntax("empty statement".into())),
        n => Err(SqlError::Syntax(format!("expected one statement, found {n}"))),
    }
}

fn rewrite_question_marks(sql: &str) -> Result<std::borrow::Cow<'_, str>> {
    if !sql.contains('?') {
        return Ok(sql.into());
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize()
        .map_err(|e| SqlError::Syntax(e.to_string()))?;
    if !tokens.iter().any(|t| matches!(t, Token::Placeholder(p) if p == "?")) {
        return Ok(sql.into());
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for t in tokens {
        match t {
            Token::Placeholder(p) if p == "?" => {
                n += 1;
                out.push_str(&format!("${n}"));
            }
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

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
