//! A statement's *shape*: its text with the constants taken out, so that statements that
//! differ only in their constants (`... WHERE id = 1`, `... WHERE id = 2`) can share one
//! plan. Clients of the simple query protocol (psql, `pgbench -M simple`, many ORMs) send
//! their values as literals; the server caches plans by shape and binds the constants as
//! parameters (`permafrost_server`'s plan cache), so such a statement is parsed and planned
//! once, not on every call.
//!
//! [`shape`] scans the text once, without parsing it. It replaces each plain constant —
//! an integer, a decimal number, a `'...'` string — with a parameter marker `$1`, `$2`, ...
//! in order, so the shape is itself a statement to prepare, and it returns the constants.
//! It keeps the text of constants whose value may change the plan rather than feed it:
//! everything in an `ORDER BY` or `GROUP BY` list (`ORDER BY 1` names a column), the number
//! after `LIMIT`, `OFFSET` or `FETCH FIRST`/`NEXT`, and the string of a typed literal
//! (`DATE '...'`, `TIMESTAMP '...'`, `INTERVAL '...'`, `TIME '...'`). Whether the shape may
//! stand for the statement is then the planner's to say: the server prepares the shape and
//! keeps it only if each marker's inferred type fits its constant and the result columns
//! are the statement's own.
//!
//! Texts it does not shape (`None`): more than one statement, parameter markers of its own,
//! dollar quotes, escape and other prefixed strings (`E'...'`, `B'...'`, `U&'...'`),
//! numbers PostgreSQL reads in other bases or with separators (`0x1F`, `1_000`), and texts
//! longer than [`MAX_SHAPED_LEN`] or with more than [`MAX_CONSTANTS`] constants.

use std::fmt::Write;

/// Longest text shaped.
pub const MAX_SHAPED_LEN: usize = 8 << 10;
/// Most constants in a shaped text.
pub const MAX_CONSTANTS: usize = 256;

/// What kind of constant a marker stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConstantKind {
    /// Digits only: `42`.
    Integer,
    /// With a point or an exponent: `1.5`, `.5`, `2e3`.
    Decimal,
    /// A standard string literal: `'it''s'`.
    String,
}

/// A constant taken out of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constant {
    pub kind: ConstantKind,
    /// Its value as text: the digits of a number, the contents of a string with `''`
    /// read as `'`.
    pub text: String,
}

/// A statement's shape and its constants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The text with `$n` for the n-th constant (and without a trailing `;`).
    pub text: String,
    pub constants: Vec<Constant>,
}

impl Shape {
    /// The kinds of the constants, in order: with [`Shape::text`], what a cached plan is
    /// looked up by (`id = 1` and `id = 1.5` are different statements).
    pub fn kinds(&self) -> impl Iterator<Item = ConstantKind> + '_ {
        self.constants.iter().map(|c| c.kind)
    }
}

/// Words after which a string is a typed literal's and stays in the text.
const TYPED_LITERAL_WORDS: &[&str] = &["date", "time", "timestamp", "timestamptz", "interval"];

/// Keywords after which an expression starts (a `-` after them is a sign, not a minus).
const BEFORE_OPERAND: &[&str] = &[
    "select",
    "where",
    "and",
    "or",
    "not",
    "when",
    "then",
    "else",
    "between",
    "limit",
    "offset",
    "having",
    "on",
    "set",
    "values",
    "return",
    "returning",
    "in",
    "is",
    "like",
    "by",
    "distinct",
    "all",
    "any",
    "some",
];

/// Words that end an `ORDER BY` / `GROUP BY` list.
const AFTER_BY_LIST: &[&str] = &[
    "limit",
    "offset",
    "fetch",
    "having",
    "window",
    "for",
    "union",
    "intersect",
    "except",
    "returning",
];

/// The shape of `sql`; `None` when it is not shaped (see the module).
pub fn shape(sql: &str) -> Option<Shape> {
    if sql.len() > MAX_SHAPED_LEN {
        return None;
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut constants = Vec::new();
    // The last word seen (lower case).
    let mut word = String::new();
    // Paren depth, and the depth of the ORDER BY / GROUP BY list being read.
    let mut depth = 0usize;
    let mut by_list: Option<usize> = None;
    // The next number is a LIMIT's, OFFSET's or FETCH's count.
    let mut count_next = false;
    // The last token was an operand (a name, a constant, `)`): a `-` now is a binary minus;
    // otherwise a `-` before a number is the number's sign and part of the constant.
    let mut operand = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                let (end, text) = string_literal(sql, i)?;
                let typed = TYPED_LITERAL_WORDS.contains(&word.as_str());
                if typed || by_list.is_some() {
                    out.push_str(&sql[i..end]);
                } else {
                    push_constant(&mut out, &mut constants, ConstantKind::String, text)?;
                }
                i = end;
                word.clear();
                count_next = false;
                operand = true;
            }
            b'"' => {
                let end = quoted_identifier(b, i)?;
                out.push_str(&sql[i..end]);
                i = end;
                word.clear();
                operand = true;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                let end = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |p| i + p);
                out.push_str(&sql[i..end]);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = block_comment(b, i)?;
                out.push_str(&sql[i..end]);
                i = end;
            }
            b'$' => return None,
            b';' => {
                // Only a trailing `;` (and blanks or comments after it) is accepted.
                if !only_blanks_and_comments(&b[i + 1..]) {
                    return None;
                }
                break;
            }
            b'0'..=b'9' | b'.' | b'-' if starts_number(b, i, operand) => {
                let (end, kind) = number(b, if c == b'-' { i + 1 } else { i })?;
                if by_list.is_some() || count_next {
                    out.push_str(&sql[i..end]);
                } else {
                    push_constant(&mut out, &mut constants, kind, sql[i..end].to_string())?;
                }
                count_next = false;
                word.clear();
                operand = true;
                i = end;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80) {
                    i += 1;
                }
                let w = &sql[start..i];
                // A prefixed string (E'...', B'...', X'...', N'...', U&'...') is not shaped.
                if b.get(i) == Some(&b'\'') || (b.get(i) == Some(&b'&') && w.eq_ignore_ascii_case("u")) {
                    return None;
                }
                out.push_str(w);
                let prev_word = std::mem::replace(&mut word, w.to_ascii_lowercase());
                if word == "by" && (prev_word == "order" || prev_word == "group") {
                    by_list = Some(depth);
                } else if by_list == Some(depth) && AFTER_BY_LIST.contains(&word.as_str()) {
                    by_list = None;
                }
                count_next = matches!(word.as_str(), "limit" | "offset" | "first" | "next");
                operand = !BEFORE_OPERAND.contains(&word.as_str());
            }
            b'(' => {
                depth += 1;
                out.push('(');
                i += 1;
                word.clear();
                operand = false;
            }
            b')' => {
                if by_list == Some(depth) {
                    by_list = None;
                }
                depth = depth.saturating_sub(1);
                out.push(')');
                i += 1;
                word.clear();
                operand = true;
            }
            _ => {
                let ch = sql[i..].chars().next()?;
                out.push(ch);
                i += ch.len_utf8();
                if !ch.is_whitespace() {
                    word.clear();
                    count_next = count_next && ch == '(';
                    operand = ch == ']';
                }
            }
        }
    }
    let text = out.trim_end().to_string();
    if text.is_empty() {
        return None;
    }
    Some(Shape { text, constants })
}

/// Whether a number starts at `i`: a digit, a point before a digit, or a sign before either
/// where no operand precedes it.
fn starts_number(b: &[u8], i: usize, operand: bool) -> bool {
    let digit_at = |j: usize| b.get(j).is_some_and(u8::is_ascii_digit);
    let unsigned_at = |j: usize| digit_at(j) || (b.get(j) == Some(&b'.') && digit_at(j + 1));
    match b[i] {
        b'-' => !operand && unsigned_at(i + 1),
        _ => unsigned_at(i),
    }
}

fn push_constant(out: &mut String, constants: &mut Vec<Constant>, kind: ConstantKind, text: String) -> Option<()> {
    if constants.len() == MAX_CONSTANTS {
        return None;
    }
    constants.push(Constant { kind, text });
    write!(out, "${}", constants.len()).ok()
}

/// A standard string starting at `start`: its end and its contents.
fn string_literal(sql: &str, start: usize) -> Option<(usize, String)> {
    let b = sql.as_bytes();
    let mut text = String::new();
    let mut i = start + 1;
    let mut from = i;
    loop {
        let q = b[i..].iter().position(|&x| x == b'\'')? + i;
        text.push_str(&sql[from..q]);
        if b.get(q + 1) == Some(&b'\'') {
            text.push('\'');
            i = q + 2;
            from = i;
        } else {
            let end = q + 1;
            // 'a' 'b' (strings continued across a newline) are one constant in SQL: not shaped.
            let rest = &b[end..];
            let blank = rest.iter().take_while(|x| x.is_ascii_whitespace()).count();
            if rest[..blank].contains(&b'\n') && rest.get(blank) == Some(&b'\'') {
                return None;
            }
            return Some((end, text));
        }
    }
}

fn quoted_identifier(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        let q = b[i..].iter().position(|&x| x == b'"')? + i;
        if b.get(q + 1) == Some(&b'"') {
            i = q + 2;
        } else {
            return Some(q + 1);
        }
    }
}

/// A (nesting) block comment starting at `start`: its end.
fn block_comment(b: &[u8], start: usize) -> Option<usize> {
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

fn only_blanks_and_comments(mut b: &[u8]) -> bool {
    loop {
        let blank = b.iter().take_while(|x| x.is_ascii_whitespace()).count();
        b = &b[blank..];
        if b.is_empty() {
            return true;
        }
        if b.starts_with(b"--") {
            match b.iter().position(|&x| x == b'\n') {
                Some(p) => b = &b[p..],
                None => return true,
            }
        } else if b.starts_with(b"/*") {
            match block_comment(b, 0) {
                Some(end) => b = &b[end..],
                None => return false,
            }
        } else {
            return false;
        }
    }
}

/// A number starting at `start` (a digit, or a point before a digit): its end and kind.
/// `None` for forms left to the parser: other bases, `_` separators, a letter right after
/// the number (`1abc`).
fn number(b: &[u8], start: usize) -> Option<(usize, ConstantKind)> {
    let digits = |i: usize| b[i..].iter().take_while(|x| x.is_ascii_digit()).count();
    let mut i = start + digits(start);
    let mut kind = ConstantKind::Integer;
    if b.get(i) == Some(&b'.') && b.get(i + 1) != Some(&b'.') {
        kind = ConstantKind::Decimal;
        i += 1;
        i += digits(i);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let n = digits(j);
        if n == 0 {
            return None;
        }
        kind = ConstantKind::Decimal;
        i = j + n;
    }
    match b.get(i) {
        Some(x) if x.is_ascii_alphanumeric() || *x == b'_' || *x == b'.' || *x >= 0x80 => None,
        _ => Some((i, kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(sql: &str) -> (String, Vec<(ConstantKind, String)>) {
        let sh = shape(sql).unwrap_or_else(|| panic!("not shaped: {sql}"));
        (sh.text, sh.constants.into_iter().map(|c| (c.kind, c.text)).collect())
    }

    use ConstantKind::{Decimal, Integer, String as Str};

    #[test]
    fn constants_become_markers() {
        assert_eq!(
            s("SELECT c FROM sbtest1 WHERE id=4242"),
            (
                "SELECT c FROM sbtest1 WHERE id=$1".into(),
                vec![(Integer, "4242".into())]
            )
        );
        assert_eq!(
            s("UPDATE t SET name = 'it''s', price = 1.50 WHERE id = 7;"),
            (
                "UPDATE t SET name = $1, price = $2 WHERE id = $3".into(),
                vec![(Str, "it's".into()), (Decimal, "1.50".into()), (Integer, "7".into())]
            )
        );
        assert_eq!(
            s("insert into t values (-1, .5, 2e3, 'x')"),
            (
                "insert into t values ($1, $2, $3, $4)".into(),
                vec![
                    (Integer, "-1".into()),
                    (Decimal, ".5".into()),
                    (Decimal, "2e3".into()),
                    (Str, "x".into())
                ]
            )
        );
    }

    #[test]
    fn a_sign_belongs_to_its_number_and_a_minus_does_not() {
        assert_eq!(
            s("UPDATE a SET b = b + -42 WHERE c = -.5 AND d = e-1 AND f = (2)-3 AND g = x[1]-4"),
            (
                "UPDATE a SET b = b + $1 WHERE c = $2 AND d = e-$3 AND f = ($4)-$5 AND g = x[$6]-$7".into(),
                vec![
                    (Integer, "-42".into()),
                    (Decimal, "-.5".into()),
                    (Integer, "1".into()),
                    (Integer, "2".into()),
                    (Integer, "3".into()),
                    (Integer, "1".into()),
                    (Integer, "4".into())
                ]
            )
        );
        assert_eq!(s("SELECT -1, - 2").0, "SELECT $1, - $2");
    }

    #[test]
    fn identifiers_comments_and_casts_stay() {
        assert_eq!(
            s("SELECT \"a 1\", t2.c3 FROM t2 -- id = 5\nWHERE x = 5::int8 /* 6 /* 7 */ */"),
            (
                "SELECT \"a 1\", t2.c3 FROM t2 -- id = 5\nWHERE x = $1::int8 /* 6 /* 7 */ */".into(),
                vec![(Integer, "5".into())]
            )
        );
    }

    #[test]
    fn constants_that_shape_the_plan_stay() {
        assert_eq!(
            s("SELECT a, b FROM t WHERE a > 3 GROUP BY 1, (2) HAVING count(*) > 1 ORDER BY 2 DESC, 'x' LIMIT 10 OFFSET 5"),
            (
                "SELECT a, b FROM t WHERE a > $1 GROUP BY 1, (2) HAVING count(*) > $2 ORDER BY 2 DESC, 'x' LIMIT 10 OFFSET 5"
                    .into(),
                vec![(Integer, "3".into()), (Integer, "1".into())]
            )
        );
        assert_eq!(
            s("SELECT * FROM (SELECT a FROM t ORDER BY 1) s WHERE a = 4 FETCH FIRST 3 ROWS ONLY"),
            (
                "SELECT * FROM (SELECT a FROM t ORDER BY 1) s WHERE a = $1 FETCH FIRST 3 ROWS ONLY".into(),
                vec![(Integer, "4".into())]
            )
        );
        assert_eq!(
            s("SELECT * FROM t WHERE d > DATE '2020-01-01' AND e = 'x'"),
            (
                "SELECT * FROM t WHERE d > DATE '2020-01-01' AND e = $1".into(),
                vec![(Str, "x".into())]
            )
        );
    }

    #[test]
    fn texts_left_to_the_parser() {
        for sql in [
            "SELECT 1; SELECT 2",
            "SELECT $1",
            "SELECT $$x$$",
            "SELECT E'\\n'",
            "SELECT x'1F'",
            "SELECT U&'d\\0061t'",
            "SELECT 0x1F",
            "SELECT 1_000",
            "SELECT 1abc",
            "SELECT 'a'\n'b'",
            "SELECT 'unterminated",
            "SELECT /* unterminated",
            "",
            "  ;",
        ] {
            assert_eq!(shape(sql), None, "{sql}");
        }
        assert!(shape(&"SELECT 1,".repeat(MAX_SHAPED_LEN)).is_none());
        let many = format!("SELECT {}", vec!["1"; MAX_CONSTANTS + 1].join(", "));
        assert!(shape(&many).is_none());
    }

    #[test]
    fn a_trailing_semicolon_and_comment_are_dropped() {
        assert_eq!(s("SELECT 1 ; -- done").0, "SELECT $1");
        assert_eq!(s("select 'a;b'").1, vec![(Str, "a;b".into())]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_markers_count_constants(
            sql in proptest::prop_oneof!["[ -~\\n\\t]{0,80}", "[-'\"$;()0-9a-eE.x/*_ \\n&]{0,60}", "\\PC{0,40}"]
        ) {
            if let Some(sh) = shape(&sql) {
                for n in 1..=sh.constants.len() {
                    let marker = format!("${n}");
                    proptest::prop_assert!(sh.text.contains(&marker));
                }
            }
        }
    }
}
