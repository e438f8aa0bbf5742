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
    parse_statements_in_text(sql).map(|(_, statements)| statements)
}

/// The statements of `sql`, and the text sqlparser read them from: the client's, or as
/// rewritten for it (`?` parameters, COPY's booleans, sequence options), which their spans
/// point into.
pub fn parse_statements_in_text(sql: &str) -> Result<(std::borrow::Cow<'_, str>, Vec<Statement>)> {
    crate::limits::check_length(sql)?;
    let text = rewrite_question_marks(sql)?;
    let text = rewrite_copy_booleans(text)?;
    let text = reorder_sequence_options(text)?;
    let rewritten = text != sql;
    let statements = Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(MAX_NESTING)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| match e {
            ParserError::RecursionLimitExceeded => SqlError::TooDeep,
            _ if starts_with_words(&text, &["alter", "sequence"]) => SqlError::FeatureNotSupported(
                "ALTER SEQUENCE here (it is taken as a statement of its own, not in a procedure's body)".into(),
            ),
            e => syntax_error(e, rewritten),
        })?;
    Ok((text, statements))
}

/// Whether the text's first words are `words` (lowercase), whatever the case and spacing.
fn starts_with_words(text: &str, words: &[&str]) -> bool {
    let mut it = text.split_whitespace();
    words
        .iter()
        .all(|w| it.next().is_some_and(|t| t.eq_ignore_ascii_case(w)))
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

/// PostgreSQL takes CREATE SEQUENCE's options in any order (`START WITH 1 INCREMENT BY 50`,
/// as Hibernate writes them); sqlparser only in the order of PostgreSQL's synopsis, so each
/// such statement's options are put in that order first.
fn reorder_sequence_options(sql: std::borrow::Cow<'_, str>) -> Result<std::borrow::Cow<'_, str>> {
    // (Most texts are not: told apart without copying them.)
    let has = |word: &[u8]| sql.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    if !has(b"sequence") || !has(b"create") {
        return Ok(sql);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, &sql)
        .tokenize()
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?;
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let mut out = String::with_capacity(sql.len());
    let mut changed = false;
    let mut i = 0;
    while i < tokens.len() {
        // One statement: tokens i..end.
        let end = tokens[i..]
            .iter()
            .position(|t| *t == Token::SemiColon)
            .map_or(tokens.len(), |k| i + k);
        let words: Vec<(usize, String)> = (i..end).filter_map(|k| word(&tokens[k]).map(|w| (k, w))).collect();
        let is_sequence = matches!(
            words.iter().map(|(_, w)| w.as_str()).take(3).collect::<Vec<_>>()[..],
            ["CREATE", "SEQUENCE", ..] | ["CREATE", "TEMP" | "TEMPORARY", "SEQUENCE"]
        );
        // Where each option clause starts, and its place in the synopsis.
        let rank = |k: usize| -> Option<u8> {
            let next = || {
                tokens[k + 1..end]
                    .iter()
                    .find(|t| !matches!(t, Token::Whitespace(_)))
                    .and_then(word)
            };
            Some(match word(&tokens[k])?.as_str() {
                "AS" => 0,
                "INCREMENT" => 1,
                "MINVALUE" => 2,
                "MAXVALUE" => 3,
                "START" => 4,
                "CACHE" => 5,
                "CYCLE" => 6,
                "OWNED" => 7,
                "NO" => match next()?.as_str() {
                    "MINVALUE" => 2,
                    "MAXVALUE" => 3,
                    "CYCLE" => 6,
                    _ => return None,
                },
                _ => return None,
            })
        };
        let first = if is_sequence {
            // Past CREATE [TEMP] SEQUENCE [IF NOT EXISTS] name (a part of a qualified
            // name is never an option).
            words.iter().position(|(_, w)| w == "SEQUENCE").and_then(|at| {
                let mut k = words[at].0 + 1;
                while k < end && (rank(k).is_none() || tokens[k - 1] == Token::Period) {
                    k += 1;
                }
                (k < end).then_some(k)
            })
        } else {
            None
        };
        let Some(first) = first else {
            out.extend(tokens[i..end].iter().map(ToString::to_string));
            if end < tokens.len() {
                out.push(';');
            }
            i = end + 1;
            continue;
        };
        out.extend(tokens[i..first].iter().map(ToString::to_string));
        let mut clauses: Vec<(u8, String)> = Vec::new();
        let mut k = first;
        while k < end {
            let r = rank(k).unwrap_or(u8::MAX);
            let mut text = tokens[k].to_string();
            k += 1;
            // NO's keyword belongs to its clause.
            if r != u8::MAX && word(&tokens[k - 1]).as_deref() == Some("NO") {
                while k < end && word(&tokens[k]).is_none() {
                    text.push_str(&tokens[k].to_string());
                    k += 1;
                }
                if k < end {
                    text.push_str(&tokens[k].to_string());
                    k += 1;
                }
            }
            while k < end && rank(k).is_none() {
                text.push_str(&tokens[k].to_string());
                k += 1;
            }
            clauses.push((r, text));
        }
        let before: Vec<u8> = clauses.iter().map(|c| c.0).collect();
        clauses.sort_by_key(|c| c.0);
        changed |= clauses.iter().map(|c| c.0).ne(before);
        for (_, c) in &clauses {
            out.push_str(c.trim_end());
            out.push(' ');
        }
        if end < tokens.len() {
            out.push(';');
        }
        i = end + 1;
    }
    Ok(if changed { out.into() } else { sql })
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
    fn sequence_options_are_taken_in_any_order() {
        let p = |sql: &str| parse_statement(sql).map(|s| s.to_string());
        assert_eq!(
            p("create sequence hibernate_seq start with 1 increment by 50").unwrap(),
            "CREATE SEQUENCE hibernate_seq INCREMENT BY 50 START WITH 1"
        );
        assert_eq!(
            p("CREATE SEQUENCE IF NOT EXISTS s NO CYCLE CACHE 1 NO MAXVALUE START 5 AS integer").unwrap(),
            "CREATE SEQUENCE IF NOT EXISTS s AS INTEGER NO MAXVALUE START 5 CACHE 1 NO CYCLE"
        );
        assert_eq!(
            p("CREATE SEQUENCE \"start\" MINVALUE 3").unwrap(),
            "CREATE SEQUENCE \"start\" MINVALUE 3"
        );
        let two = parse_statements("CREATE SEQUENCE a START 2 INCREMENT 2; SELECT 'start increment'").unwrap();
        assert_eq!(two[0].to_string(), "CREATE SEQUENCE a INCREMENT 2 START 2");
        assert_eq!(two[1].to_string(), "SELECT 'start increment'");
    }

    #[test]
    fn syntax_errors_are_reported() {
        let e = parse_statement("SELEC 1").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
        assert!(parse_statement("").is_err());
    }
}
