//! A query string read once, into everything the stages before the parser need.
//!
//! [`scan`] goes over the text one time, lexing it as PostgreSQL does (quoted strings with
//! `''`, `E'...'` with backslash escapes, `B'...'`, `X'...'`, `N'...'` and `U&'...'`
//! strings, quoted identifiers, dollar quotes `$tag$...$tag$`, parameters `$n`, nesting
//! block comments and line comments), and writes down on the way:
//!
//! * the statements: the text between the `;` tokens, trimmed, comments standing alone
//!   dropped, each with its first words upper-cased (what the server classifies by:
//!   `SET`, `BEGIN`, `CREATE OR REPLACE PROCEDURE`...), its tokens run together in lower
//!   case when it is short (`selectversion()`), and whether it names the server's
//!   `permafrost_stats` view or a system catalog (`pg_…`, `information_schema`);
//! * the text's *shape* (shape.rs), when it is one statement: its text with the constants
//!   taken out, by which the server's plan cache finds a plan without parsing.
//!
//! The parser (sqlparser) then reads each statement's text: the one other pass, and only
//! for statements whose plan is not cached. A quote, dollar quote or block comment left
//! open is a syntax error (42601) here, as it is in PostgreSQL.

use crate::error::{Result, SqlError};
use crate::shape::{Shape, ShapeWriter, number};

/// How many first words a statement keeps ([`StatementText::words`]).
pub const FIRST_WORDS: usize = 4;
/// The most tokens a statement may have for [`StatementText::compact`].
pub const COMPACT_TOKENS: usize = 6;

/// A query string, scanned: it borrows the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan<'a> {
    /// The statements, in order (none for a text of blanks, comments and `;`).
    pub statements: Vec<StatementText<'a>>,
    /// The shape of a text that is one statement, when it is shaped (shape.rs).
    pub shape: Option<Shape>,
}

impl Scan<'_> {
    /// Whether any statement names a system catalog.
    pub fn names_system_catalogs(&self) -> bool {
        self.statements.iter().any(|s| s.names_system_catalogs)
    }

    /// The statements' texts.
    pub fn texts(self) -> Vec<String> {
        self.statements.into_iter().map(|s| s.text.to_string()).collect()
    }
}

/// One statement of a query string: where its first tokens are, not copies of them (a
/// statement whose plan is cached by shape needs none of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementText<'a> {
    /// Its text, without the `;` and trimmed.
    pub text: &'a str,
    /// Its first [`COMPACT_TOKENS`] tokens (blanks and comments skipped), in the whole
    /// query string.
    first: [Token; COMPACT_TOKENS],
    /// How many tokens it has (counted up to one past [`COMPACT_TOKENS`]).
    tokens: usize,
    /// The whole query string.
    sql: &'a str,
    /// It names `permafrost_stats` (a word or a quoted name, in any case).
    pub names_stats_view: bool,
    /// It names something whose name holds `pg_` or `information_schema` (in any case).
    pub names_system_catalogs: bool,
}

/// A token's place in the query string, and whether it is a word.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Token {
    start: usize,
    end: usize,
    word: bool,
}

impl StatementText<'_> {
    /// How many characters of the whole query string precede its text (what turns a place
    /// in it into one in the query string: PostgreSQL's error cursor).
    pub fn chars_before(&self) -> usize {
        let start = (self.text.as_ptr() as usize).saturating_sub(self.sql.as_ptr() as usize);
        self.sql.get(..start).map_or(0, |b| b.chars().count())
    }

    /// Whether the client ended it with `;` (blanks between).
    pub fn ends_with_semicolon(&self) -> bool {
        let end = (self.text.as_ptr() as usize + self.text.len()).saturating_sub(self.sql.as_ptr() as usize);
        self.sql
            .get(end..)
            .is_some_and(|rest| rest.trim_start().starts_with(';'))
    }

    fn token(&self, i: usize) -> Option<&str> {
        let t = self.first[..self.tokens.min(COMPACT_TOKENS)].get(i)?;
        Some(&self.sql[t.start..t.end])
    }

    /// Its first [`FIRST_WORDS`] tokens: a word upper-cased, anything else (a quoted
    /// name, a string, a number, a sign) as written.
    pub fn words(&self) -> Vec<String> {
        (0..FIRST_WORDS.min(self.tokens))
            .filter_map(|i| {
                let t = self.token(i)?;
                Some(if self.first[i].word {
                    t.to_ascii_uppercase()
                } else {
                    t.to_string()
                })
            })
            .collect()
    }

    /// Whether its first words are `words` (upper case).
    pub fn starts_with(&self, words: &[&str]) -> bool {
        words.len() <= FIRST_WORDS
            && words
                .iter()
                .enumerate()
                .all(|(i, w)| self.first[i].word && self.token(i).is_some_and(|t| t.eq_ignore_ascii_case(w)))
    }

    /// Its tokens run together in lower case, when it has at most [`COMPACT_TOKENS`]:
    /// `SELECT version()` is `selectversion()`.
    pub fn compact(&self) -> Option<String> {
        (self.tokens <= COMPACT_TOKENS).then(|| {
            (0..self.tokens)
                .filter_map(|i| self.token(i))
                .flat_map(|t| t.chars().map(|c| c.to_ascii_lowercase()))
                .collect()
        })
    }

    /// Whether it is a `CREATE [OR REPLACE] PROCEDURE` statement (script.rs).
    pub fn is_create_procedure(&self) -> bool {
        self.starts_with(&["CREATE", "PROCEDURE"]) || self.starts_with(&["CREATE", "OR", "REPLACE", "PROCEDURE"])
    }

    /// Whether it is a `DROP PROCEDURE` statement (script.rs).
    pub fn is_drop_procedure(&self) -> bool {
        self.starts_with(&["DROP", "PROCEDURE"])
    }
}

/// The statement being read.
struct Open {
    start: usize,
    tokens: usize,
    first: [Token; COMPACT_TOKENS],
    stats: bool,
    catalogs: bool,
}

/// What a token is, for the statement's words and names.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Word,
    /// A quoted identifier; its name is what the quotes hold.
    Quoted,
    Other,
}

impl Open {
    fn new(start: usize) -> Open {
        Open {
            start,
            tokens: 0,
            first: [Token::default(); COMPACT_TOKENS],
            stats: false,
            catalogs: false,
        }
    }

    /// A token `raw` starting at byte `at`.
    fn token(&mut self, at: usize, raw: &str, kind: Kind) {
        if self.tokens < COMPACT_TOKENS {
            self.first[self.tokens] = Token {
                start: at,
                end: at + raw.len(),
                word: kind == Kind::Word,
            };
        }
        self.tokens = (self.tokens + 1).min(COMPACT_TOKENS + 1);
        if kind != Kind::Other {
            let name = match kind {
                // `"name"` or `U&"name"`.
                Kind::Quoted => raw.find('"').map_or(raw, |q| &raw[q + 1..raw.len() - 1]),
                _ => raw,
            };
            self.stats |= name.eq_ignore_ascii_case("permafrost_stats");
            self.catalogs |= contains_ignore_case(name, "pg_") || contains_ignore_case(name, "information_schema");
        }
    }

    /// Ends the statement at byte `end` (its `;`, or the end of the text).
    fn close<'a>(self, sql: &'a str, end: usize, out: &mut Vec<StatementText<'a>>) {
        if self.tokens == 0 {
            return;
        }
        out.push(StatementText {
            // (PostgreSQL's blanks only: other characters past ASCII are parts of words.)
            text: sql[self.start..end].trim_matches(|c: char| c.is_ascii_whitespace()),
            first: self.first,
            tokens: self.tokens,
            sql,
            names_stats_view: self.stats,
            names_system_catalogs: self.catalogs,
        });
    }
}

fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

fn unterminated(what: &str, sql: &str, at: usize) -> SqlError {
    let near: String = sql[at..].chars().take(20).collect();
    SqlError::Unterminated(format!("unterminated {what} at or near \"{near}\""))
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

/// Scans `sql` (see the module).
pub fn scan(sql: &str) -> Result<Scan<'_>> {
    let b = sql.as_bytes();
    let mut shape = ShapeWriter::new(sql.len());
    let mut statements = Vec::new();
    let mut open = Open::new(0);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                let end = string_end(b, i + 1, false).ok_or_else(|| unterminated("quoted string", sql, i))?;
                let raw = &sql[i..end];
                shape.string(raw, || raw[1..raw.len() - 1].replace("''", "'"), continued(b, end));
                open.token(i, raw, Kind::Other);
                i = end;
            }
            b'"' => {
                let end = quoted_end(b, i + 1).ok_or_else(|| unterminated("quoted identifier", sql, i))?;
                shape.quoted_identifier(&sql[i..end]);
                open.token(i, &sql[i..end], Kind::Quoted);
                i = end;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                let end = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |p| i + p);
                shape.comment(&sql[i..end]);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = block_comment_end(b, i).ok_or_else(|| unterminated("/* comment", sql, i))?;
                shape.comment(&sql[i..end]);
                i = end;
            }
            b'$' => {
                shape.give_up();
                i = dollar(sql, i, &mut open)?;
            }
            b';' => {
                shape.end();
                std::mem::replace(&mut open, Open::new(i + 1)).close(sql, i, &mut statements);
                i += 1;
            }
            b'0'..=b'9' | b'.' | b'-' if starts_number(b, i, shape.sign_allowed()) => {
                let digits = if c == b'-' { i + 1 } else { i };
                let end = match number(b, digits) {
                    Some((end, kind)) => {
                        shape.number(&sql[i..end], kind);
                        end
                    }
                    None => {
                        // Another base, a separator, a letter after it (`0x1F`, `1_000`,
                        // `3E'...'`): the digits are a token, and what follows them the
                        // next, as PostgreSQL 15 reads them; not shaped.
                        shape.give_up();
                        digits
                            + b[digits..]
                                .iter()
                                .take_while(|&&x| x.is_ascii_digit() || x == b'.')
                                .count()
                    }
                };
                open.token(i, &sql[i..end], Kind::Other);
                i = end;
            }
            c if is_word_start(c) => {
                let end = i + b[i..].iter().take_while(|&&x| is_word_byte(x)).count();
                let w = &sql[i..end];
                if b.get(end) == Some(&b'&') && w.eq_ignore_ascii_case("u") {
                    shape.give_up();
                }
                if let Some(end) = prefixed(sql, i, end)? {
                    // E'...', B'...', X'...', N'...', U&'...', U&"...": not shaped.
                    shape.give_up();
                    let kind = if b[end - 1] == b'"' { Kind::Quoted } else { Kind::Other };
                    open.token(i, &sql[i..end], kind);
                    i = end;
                    continue;
                }
                shape.word(w);
                open.token(i, w, Kind::Word);
                i = end;
            }
            _ => {
                let ch = sql[i..].chars().next().unwrap_or(' ');
                shape.other(ch);
                if !ch.is_whitespace() {
                    open.token(i, &sql[i..i + ch.len_utf8()], Kind::Other);
                }
                i += ch.len_utf8();
            }
        }
    }
    open.close(sql, sql.len(), &mut statements);
    let shape = if statements.len() == 1 { shape.finish() } else { None };
    Ok(Scan { statements, shape })
}

/// Whether a number starts at `i`: a digit, a point before a digit, or a sign before either
/// where a sign may stand (no operand before it, and a shape being written).
fn starts_number(b: &[u8], i: usize, sign_allowed: bool) -> bool {
    let digit_at = |j: usize| b.get(j).is_some_and(u8::is_ascii_digit);
    let unsigned_at = |j: usize| digit_at(j) || (b.get(j) == Some(&b'.') && digit_at(j + 1));
    match b[i] {
        b'-' => sign_allowed && unsigned_at(i + 1),
        _ => unsigned_at(i),
    }
}

/// The end of a string whose body starts at `from` (past its opening quote): past its
/// closing quote, `''` read as a quote inside it and, with `escapes` (`E'...'`), a
/// backslash escaping the byte after it.
fn string_end(b: &[u8], from: usize, escapes: bool) -> Option<usize> {
    let mut j = from;
    while j < b.len() {
        match b[j] {
            b'\\' if escapes => j += 2,
            b'\'' if b.get(j + 1) == Some(&b'\'') => j += 2,
            b'\'' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end of a quoted identifier whose body starts at `from`: past its closing quote.
fn quoted_end(b: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    while j < b.len() {
        match b[j] {
            b'"' if b.get(j + 1) == Some(&b'"') => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// Whether another string follows the one ending at `end` after blanks holding a newline:
/// `'a'\n'b'` is one constant in SQL.
fn continued(b: &[u8], end: usize) -> bool {
    let rest = &b[end..];
    let blank = rest.iter().take_while(|x| x.is_ascii_whitespace()).count();
    rest[..blank].contains(&b'\n') && rest.get(blank) == Some(&b'\'')
}

/// The end of a (nesting) block comment starting at `start`.
fn block_comment_end(b: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < b.len() {
        match (b[i], b[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// A string with a prefix, where the word `sql[start..word_end]` is one: its end. `E`, `B`,
/// `X` and `N` are prefixes before a quote (and, as far as where the string ends goes,
/// so is any word: `abc'x'` is a syntax error the parser reports), `U&` before a quote or
/// a double quote.
fn prefixed(sql: &str, start: usize, word_end: usize) -> Result<Option<usize>> {
    let b = sql.as_bytes();
    let w = &sql[start..word_end];
    let end = match (b.get(word_end), b.get(word_end + 1)) {
        (Some(b'\''), _) => string_end(b, word_end + 1, w.eq_ignore_ascii_case("e")),
        (Some(b'&'), Some(b'\'')) if w.eq_ignore_ascii_case("u") => string_end(b, word_end + 2, false),
        (Some(b'&'), Some(b'"')) if w.eq_ignore_ascii_case("u") => quoted_end(b, word_end + 2),
        _ => return Ok(None),
    };
    end.map(Some).ok_or_else(|| unterminated("quoted string", sql, start))
}

/// A `$` at `i`: a parameter `$n`, a dollar-quoted string `$tag$...$tag$`, or a `$` alone;
/// returns where the next token starts.
fn dollar(sql: &str, i: usize, open: &mut Open) -> Result<usize> {
    let b = sql.as_bytes();
    let after = i + 1;
    if b.get(after).is_some_and(u8::is_ascii_digit) {
        let end = after + b[after..].iter().take_while(|x| x.is_ascii_digit()).count();
        open.token(i, &sql[i..end], Kind::Other);
        return Ok(end);
    }
    let tag_end = after
        + b[after..]
            .iter()
            .take_while(|&&x| x.is_ascii_alphanumeric() || x == b'_' || x >= 0x80)
            .count();
    if b.get(tag_end) != Some(&b'$') {
        open.token(i, "$", Kind::Other);
        return Ok(after);
    }
    let tag = &sql[i..=tag_end];
    let body = tag_end + 1;
    let close = sql[body..]
        .find(tag)
        .ok_or_else(|| unterminated("dollar-quoted string", sql, i))?;
    let end = body + close + tag.len();
    open.token(i, &sql[i..end], Kind::Other);
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<String> {
        scan(sql).unwrap().texts()
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        assert_eq!(texts("SELECT 1; SELECT 2;"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(
            texts("SELECT 'a;b'; SELECT \"c;d\""),
            ["SELECT 'a;b'", "SELECT \"c;d\""]
        );
        assert_eq!(texts("SELECT E'x\\';y'; SELECT 2"), ["SELECT E'x\\';y'", "SELECT 2"]);
        assert_eq!(
            texts("SELECT $$a;b$$; SELECT $t$ ; $$ ; $t$"),
            ["SELECT $$a;b$$", "SELECT $t$ ; $$ ; $t$"]
        );
        assert_eq!(
            texts("SELECT 1 -- a;b\n; /* c; /* d; */ */ SELECT 2"),
            ["SELECT 1 -- a;b", "/* c; /* d; */ */ SELECT 2"]
        );
        assert_eq!(
            texts("SELECT $1; SELECT U&'d;' || U&\"e;\""),
            ["SELECT $1", "SELECT U&'d;' || U&\"e;\""]
        );
        assert!(texts("  ; ;\n -- nothing\n; /* at all */").is_empty());
    }

    #[test]
    fn open_quotes_and_comments_are_syntax_errors() {
        for sql in [
            "SELECT 'a",
            "SELECT \"a",
            "SELECT E'a\\'",
            "SELECT $x$ a",
            "SELECT /* a /* b */",
        ] {
            let e = scan(sql).unwrap_err();
            assert!(
                matches!(&e, SqlError::Unterminated(m) if m.starts_with("unterminated")),
                "{sql}: {e:?}"
            );
        }
        // A `$` that starts no quote is a token of its own.
        assert_eq!(texts("SELECT a $ b"), ["SELECT a $ b"]);
    }

    #[test]
    fn each_statement_keeps_its_first_words_and_names() {
        let s = scan(
            "set search_path = x; /* c */ Create or Replace PROCEDURE p(); select version ( ); VACUUM(ANALYZE) t, u",
        )
        .unwrap();
        let words: Vec<Vec<String>> = s.statements.iter().map(|t| t.words()).collect();
        assert_eq!(words[0], ["SET", "SEARCH_PATH", "=", "X"]);
        assert!(s.statements[1].starts_with(&["CREATE", "OR", "REPLACE", "PROCEDURE"]));
        assert_eq!(s.statements[2].compact().as_deref(), Some("selectversion()"));
        assert_eq!(words[3], ["VACUUM", "(", "ANALYZE", ")"]);
        assert_eq!(s.statements[3].compact(), None);
        let s = scan("SELECT * FROM \"PERMAFROST_STATS\"; select typname from PG_type; SELECT 'pg_x'").unwrap();
        let flags: Vec<(bool, bool)> = s
            .statements
            .iter()
            .map(|t| (t.names_stats_view, t.names_system_catalogs))
            .collect();
        assert_eq!(flags, [(true, false), (false, true), (false, false)]);
        assert!(s.names_system_catalogs());
    }

    #[test]
    fn only_one_statement_has_a_shape() {
        assert!(scan("SELECT 1; SELECT 2").unwrap().shape.is_none());
        assert_eq!(scan("SELECT 1; -- done").unwrap().shape.unwrap().text, "SELECT $1");
        assert!(scan("-- nothing").unwrap().shape.is_none());
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_statements_are_pieces_of_the_text(
            sql in proptest::prop_oneof!["[ -~\\n\\t]{0,80}", "[-'\"$;()0-9a-eE.x/*_ \\n&uU]{0,60}", "\\PC{0,40}"]
        ) {
            if let Ok(s) = scan(&sql) {
                for t in &s.statements {
                    proptest::prop_assert!(sql.contains(t.text));
                    proptest::prop_assert!(!t.text.is_empty());
                }
            }
        }
    }
}
