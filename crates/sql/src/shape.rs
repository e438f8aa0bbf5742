//! A statement's *shape*: its text with the constants taken out, so that statements that
//! differ only in their constants (`... WHERE id = 1`, `... WHERE id = 2`) can share one
//! plan. Clients of the simple query protocol (psql, `pgbench -M simple`, many ORMs) send
//! their values as literals; the server caches plans by shape and binds the constants as
//! parameters (`permafrost_server`'s plan cache), so such a statement is parsed and planned
//! once, not on every call.
//!
//! The shape is written while the text is scanned (scan.rs, [`crate::scan::scan`]), in
//! the same pass that finds its statements, without parsing it. It replaces each plain constant —
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

/// Writes a shape from the tokens of a text as the scanner (scan.rs) reads them, in the
/// same pass; gives up (for good) at the first thing it does not shape.
pub(crate) struct ShapeWriter {
    out: String,
    constants: Vec<Constant>,
    /// The last word seen (lower case).
    word: String,
    /// Paren depth, and the depth of the ORDER BY / GROUP BY list being read.
    depth: usize,
    by_list: Option<usize>,
    /// The next number is a LIMIT's, OFFSET's or FETCH's count.
    count_next: bool,
    /// The last token was an operand (a name, a constant, `)`): a `-` now is a binary
    /// minus; otherwise a `-` before a number is the number's sign and part of the constant.
    operand: bool,
    /// Given up: the text is not shaped.
    given_up: bool,
    /// The statement's `;` was read: what follows (blanks and comments) is not written.
    ended: bool,
}

impl ShapeWriter {
    /// A writer for a text of `len` bytes; one longer than [`MAX_SHAPED_LEN`] is not shaped.
    pub(crate) fn new(len: usize) -> ShapeWriter {
        ShapeWriter {
            out: String::with_capacity(len.min(MAX_SHAPED_LEN) + 8),
            constants: Vec::new(),
            word: String::new(),
            depth: 0,
            by_list: None,
            count_next: false,
            operand: false,
            given_up: len > MAX_SHAPED_LEN,
            ended: false,
        }
    }

    /// Whether tokens are still written.
    pub(crate) fn writing(&self) -> bool {
        !self.given_up && !self.ended
    }

    /// Whether a `-` now is a number's sign (no operand before it).
    pub(crate) fn sign_allowed(&self) -> bool {
        self.writing() && !self.operand
    }

    pub(crate) fn give_up(&mut self) {
        self.given_up = true;
    }

    /// A standard string `raw` (quotes included) whose contents are `contents()`;
    /// `continued`: another string follows it after a newline (one constant in SQL).
    pub(crate) fn string(&mut self, raw: &str, contents: impl FnOnce() -> String, continued: bool) {
        if !self.writing() {
            return;
        }
        if continued {
            return self.give_up();
        }
        let typed = TYPED_LITERAL_WORDS.contains(&self.word.as_str());
        if typed || self.by_list.is_some() {
            self.out.push_str(raw);
        } else {
            self.constant(ConstantKind::String, contents());
        }
        self.word.clear();
        self.count_next = false;
        self.operand = true;
    }

    pub(crate) fn quoted_identifier(&mut self, raw: &str) {
        if self.writing() {
            self.out.push_str(raw);
            self.word.clear();
            self.operand = true;
        }
    }

    pub(crate) fn comment(&mut self, raw: &str) {
        if self.writing() {
            self.out.push_str(raw);
        }
    }

    /// A number (with its sign, when [`ShapeWriter::sign_allowed`] let it have one).
    pub(crate) fn number(&mut self, raw: &str, kind: ConstantKind) {
        if !self.writing() {
            return;
        }
        if self.by_list.is_some() || self.count_next {
            self.out.push_str(raw);
        } else {
            self.constant(kind, raw.to_string());
        }
        self.count_next = false;
        self.word.clear();
        self.operand = true;
    }

    pub(crate) fn word(&mut self, w: &str) {
        if !self.writing() {
            return;
        }
        self.out.push_str(w);
        let prev_word = std::mem::replace(&mut self.word, w.to_ascii_lowercase());
        if self.word == "by" && (prev_word == "order" || prev_word == "group") {
            self.by_list = Some(self.depth);
        } else if self.by_list == Some(self.depth) && AFTER_BY_LIST.contains(&self.word.as_str()) {
            self.by_list = None;
        }
        self.count_next = matches!(self.word.as_str(), "limit" | "offset" | "first" | "next");
        self.operand = !BEFORE_OPERAND.contains(&self.word.as_str());
    }

    /// Any other character (`(`, `)`, an operator, a blank).
    pub(crate) fn other(&mut self, ch: char) {
        if !self.writing() {
            return;
        }
        self.out.push(ch);
        match ch {
            '(' => {
                self.depth += 1;
                self.word.clear();
                self.operand = false;
            }
            ')' => {
                if self.by_list == Some(self.depth) {
                    self.by_list = None;
                }
                self.depth = self.depth.saturating_sub(1);
                self.word.clear();
                self.operand = true;
            }
            c if !c.is_whitespace() => {
                self.word.clear();
                self.count_next = self.count_next && c == '(';
                self.operand = c == ']';
            }
            _ => {}
        }
    }

    /// The statement's `;`: only blanks and comments may follow.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    fn constant(&mut self, kind: ConstantKind, text: String) {
        if self.constants.len() == MAX_CONSTANTS {
            return self.give_up();
        }
        self.constants.push(Constant { kind, text });
        let _ = write!(self.out, "${}", self.constants.len());
    }

    /// The shape, if the text was shaped.
    pub(crate) fn finish(self) -> Option<Shape> {
        if self.given_up {
            return None;
        }
        let text = self.out.trim_end().to_string();
        (!text.is_empty()).then_some(Shape {
            text,
            constants: self.constants,
        })
    }
}

/// A number starting at `start` (a digit, or a point before a digit): its end and kind.
/// `None` for forms left to the parser: other bases, `_` separators, a letter right after
/// the number (`1abc`).
pub(crate) fn number(b: &[u8], start: usize) -> Option<(usize, ConstantKind)> {
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

    /// The shape of `sql`, as the scanner writes it.
    fn shape(sql: &str) -> Option<Shape> {
        crate::scan::scan(sql).ok()?.shape
    }

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
