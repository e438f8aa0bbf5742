//! Regular expressions as PostgreSQL's operators and functions use them: `~`, `~*`, `!~`,
//! `!~*`, `regexp_replace`, `regexp_match`, `regexp_like`, `regexp_count`,
//! `regexp_split_to_array` ([`RegexFn`]), with PostgreSQL's flags (`i`, `c`, `n`, `s`, `x`,
//! `q`, `g`) and its replacement syntax (`\1`, `\&`). The patterns are Rust's `regex`
//! syntax, which agrees with PostgreSQL's for what applications write (classes,
//! quantifiers, groups, anchors, `\d` `\w` `\s`); back-references and look-around are
//! refused (2201B), never matched differently. As in PostgreSQL, `.` matches a newline
//! unless `n` is given. Compiled patterns are kept per thread (a statement compares one
//! pattern over many rows).

use std::cell::RefCell;

use permafrost_types::Value;
use regex::{Regex, RegexBuilder};

use crate::error::{Result, SqlError};
use crate::value_budget::ValueBudget;

/// A regular-expression operator or function (`Func::Regex`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegexFn {
    /// `s ~ p` (`icase`: `~*`; `negated`: `!~`, `!~*`).
    Match { icase: bool, negated: bool },
    /// `regexp_like(s, p [, flags])`.
    Like,
    /// `regexp_replace(s, p, r [, flags])`.
    Replace,
    /// `regexp_match(s, p [, flags])`: the captures of the first match (the whole match
    /// without groups) as a text array.
    FirstMatch,
    /// The rows of `regexp_matches(s, p [, flags])` as one array: each match's captures
    /// (the whole match without groups) as an array literal, every match with the `g`
    /// flag, else the first (`plan/set_functions.rs` makes them rows).
    AllMatches,
    /// `like_escape(p, e)`: a LIKE pattern whose escape character is `e` (none if empty)
    /// as one with the backslash for it (`x LIKE p ESCAPE e`).
    LikeEscape,
    /// `similar_to_escape(p [, e])`: a SIMILAR TO pattern as the regular expression it
    /// stands for (`x SIMILAR TO p [ESCAPE e]`), as PostgreSQL writes it.
    SimilarEscape,
    /// `regexp_count(s, p [, start [, flags]])`.
    Count,
    /// `regexp_split_to_array(s, p [, flags])`.
    Split,
}

/// Most compiled patterns kept per thread.
const CACHED: usize = 16;

thread_local! {
    static COMPILED: RefCell<Vec<(String, String, Regex)>> = const { RefCell::new(Vec::new()) };
}

fn invalid(what: impl std::fmt::Display) -> SqlError {
    SqlError::InvalidRegex(format!("invalid regular expression: {what}"))
}

/// `pattern` compiled with PostgreSQL's `flags` (`g` is the caller's: it changes nothing
/// here).
pub fn compile(pattern: &str, flags: &str) -> Result<Regex> {
    let cached = COMPILED.with(|c| {
        c.borrow()
            .iter()
            .find(|(p, f, _)| p == pattern && f == flags)
            .map(|(_, _, r)| r.clone())
    });
    if let Some(r) = cached {
        return Ok(r);
    }
    let mut icase = false;
    let mut newline = false;
    let mut expanded = false;
    let mut literal = false;
    for f in flags.chars() {
        match f {
            'i' => icase = true,
            'c' => icase = false,
            'n' | 'm' => newline = true,
            's' | 'p' | 'w' => newline = false,
            'x' => expanded = true,
            't' => expanded = false,
            'q' => literal = true,
            'g' => {}
            other => {
                return Err(SqlError::InvalidArgument(format!(
                    "invalid regular expression option: \"{other}\""
                )));
            }
        }
    }
    let source = if literal {
        regex::escape(pattern)
    } else {
        pattern.to_string()
    };
    let re = RegexBuilder::new(&source)
        .case_insensitive(icase)
        .dot_matches_new_line(!newline)
        .multi_line(newline)
        .ignore_whitespace(expanded)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| match e {
            regex::Error::Syntax(s) => invalid(postgres_words(&s)),
            other => invalid(other),
        })?;
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() == CACHED {
            c.remove(0);
        }
        c.push((pattern.to_string(), flags.to_string(), re.clone()));
    });
    Ok(re)
}

/// The reason a pattern does not compile, in PostgreSQL's words where it has them.
fn postgres_words(rust: &str) -> String {
    let why = rust
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("error:"))
        .unwrap_or(rust);
    let why = why.trim().trim_start_matches("error: ");
    match why {
        "unclosed group" | "unopened group" => "parentheses () not balanced".into(),
        "unclosed character class" => "brackets [] not balanced".into(),
        "repetition operator missing expression" => "quantifier operand invalid".into(),
        w if w.contains("backreferences") => "back-references are not supported here".into(),
        w if w.contains("look-around") => "look-around assertions are not supported here".into(),
        w => w.to_string(),
    }
}

/// `s` with the first match of `re` (every match with `global`) replaced by `replacement`,
/// in which `\1`..`\9` are groups, `\&` the whole match and `\\` a backslash; built
/// under `budget` (a global replacement can multiply the text's length).
pub fn replace(s: &str, re: &Regex, replacement: &str, global: bool, budget: &ValueBudget<'_>) -> Result<String> {
    let mut out = budget.text(s.len())?;
    let mut last = 0;
    for caps in re.captures_iter(s) {
        let Some(m) = caps.get(0) else { continue };
        out.push_str(&s[last..m.start()])?;
        let mut chars = replacement.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek().copied()) {
                ('\\', Some(d)) if d.is_ascii_digit() => {
                    chars.next();
                    let g = d.to_digit(10).unwrap_or(0) as usize;
                    out.push_str(caps.get(g).map_or("", |c| c.as_str()))?;
                }
                ('\\', Some('&')) => {
                    chars.next();
                    out.push_str(m.as_str())?;
                }
                ('\\', Some('\\')) => {
                    chars.next();
                    out.push('\\')?;
                }
                (c, _) => out.push(c)?,
            }
        }
        last = m.end();
        if !global {
            break;
        }
    }
    out.push_str(&s[last..])?;
    Ok(out.finish())
}

/// The text array of `items`, checked against `budget` first (the arrays' one rule).
fn text_array(items: &[Option<&str>], budget: &ValueBudget<'_>) -> Result<Value> {
    let values: Vec<Value> = items.iter().map(|t| t.map_or(Value::Null, Value::text)).collect();
    super::array::literal_checked(&values, budget)
}

/// A match's captures as a text array: its groups', or the whole match's without groups.
fn captured(caps: &regex::Captures<'_>, budget: &ValueBudget<'_>) -> Result<Value> {
    if caps.len() == 1 {
        return text_array(&[caps.get(0).map(|m| m.as_str())], budget);
    }
    let groups: Vec<Option<&str>> = caps.iter().skip(1).map(|g| g.map(|m| m.as_str())).collect();
    text_array(&groups, budget)
}

/// Evaluates `f` over its arguments `v` (NULL for any NULL argument, as every one of them
/// is strict).
pub(super) fn eval(f: RegexFn, v: &[Value], budget: &ValueBudget<'_>) -> Result<Value> {
    if v.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let text = |i: usize| v[i].as_str().unwrap_or_default();
    let flags_at = |i: usize| v.get(i).and_then(Value::as_str).unwrap_or_default();
    Ok(match f {
        RegexFn::Match { icase, negated } => {
            let re = compile(text(1), if icase { "i" } else { "" })?;
            Value::Bool(re.is_match(text(0)) != negated)
        }
        RegexFn::Like => Value::Bool(compile(text(1), flags_at(2))?.is_match(text(0))),
        RegexFn::Replace => {
            let flags = flags_at(3);
            let re = compile(text(1), flags)?;
            Value::text(replace(text(0), &re, text(2), flags.contains('g'), budget)?)
        }
        RegexFn::FirstMatch => {
            let flags = flags_at(2);
            if flags.contains('g') {
                return Err(SqlError::RegexGlobal("regexp_match"));
            }
            let re = compile(text(1), flags)?;
            match re.captures(text(0)) {
                None => Value::Null,
                Some(caps) => captured(&caps, budget)?,
            }
        }
        RegexFn::LikeEscape => Value::text(like_escape(text(0), text(1))?),
        RegexFn::SimilarEscape => Value::text(similar_escape(text(0), v.get(1).map_or(Some("\\"), Value::as_str))?),
        RegexFn::AllMatches => {
            let flags = flags_at(2);
            let re = compile(text(1), flags)?;
            let mut rows: Vec<String> = Vec::new();
            for caps in re.captures_iter(text(0)) {
                rows.push(captured(&caps, budget)?.as_str().unwrap_or_default().to_string());
                if !flags.contains('g') {
                    break;
                }
            }
            let rows: Vec<Option<&str>> = rows.iter().map(|r| Some(r.as_str())).collect();
            text_array(&rows, budget)?
        }
        RegexFn::Count => {
            let (start, flags) = match v.len() {
                2 => (1, ""),
                3 => (v[2].as_i64().unwrap_or(1), ""),
                _ => (v[2].as_i64().unwrap_or(1), flags_at(3)),
            };
            if start < 1 {
                return Err(SqlError::InvalidArgument(format!(
                    "invalid value for parameter \"start\": {start}"
                )));
            }
            let s = text(0);
            let from = s.char_indices().nth((start - 1) as usize).map_or(s.len(), |(i, _)| i);
            Value::Int(compile(text(1), flags)?.find_iter(&s[from..]).count() as i64)
        }
        RegexFn::Split => {
            let flags = flags_at(2);
            if flags.contains('g') {
                return Err(SqlError::RegexGlobal("regexp_split_to_array"));
            }
            let re = compile(text(1), flags)?;
            let s = text(0);
            // As PostgreSQL splits: an empty match splits between characters, never at
            // either end.
            let mut parts = Vec::new();
            let mut last = 0;
            for m in re.find_iter(s) {
                if m.start() == m.end() && (m.start() == 0 || m.start() == s.len()) {
                    continue;
                }
                if m.start() == m.end() && m.start() == last && last != 0 {
                    continue;
                }
                parts.push(Some(&s[last..m.start()]));
                last = m.end();
            }
            parts.push(Some(&s[last..]));
            text_array(&parts, budget)?
        }
    })
}

/// The one escape character of `escape` (`None`: empty, no escape), else 22025.
fn escape_char(escape: &str) -> Result<Option<char>> {
    let mut chars = escape.chars();
    match (chars.next(), chars.next()) {
        (e, None) => Ok(e),
        _ => Err(SqlError::InvalidEscape("invalid escape string")),
    }
}

/// LIKE pattern `pattern` whose escape character is `escape` written with the backslash
/// escape LIKE matches with (`expr/text.rs`): PostgreSQL's `like_escape`.
pub fn like_escape(pattern: &str, escape: &str) -> Result<String> {
    let e = escape_char(escape)?;
    if e == Some('\\') {
        return Ok(pattern.to_string());
    }
    let mut out = String::with_capacity(pattern.len() + 2);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == e {
            // (One last stays a backslash last: the match fails on it where it gets there.)
            out.push('\\');
            out.extend(chars.next());
        } else {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    Ok(out)
}

/// The regular expression SIMILAR TO pattern `pattern` stands for, with `escape` its
/// escape character (`None`: SQL's NULL, which makes the result NULL upstream; empty: no
/// escape), as PostgreSQL's `similar_to_escape` writes it: anchored at both ends, `%` any
/// text, `_` any character, `.` `^` `$` and the backslash literal, parentheses not
/// capturing, the rest (`|` `*` `+` `?` `{m,n}` `[...]`) as in regular expressions.
pub fn similar_escape(pattern: &str, escape: Option<&str>) -> Result<String> {
    let e = escape_char(escape.unwrap_or(""))?;
    let mut out = String::with_capacity(pattern.len() + 10);
    out.push_str("^(?:");
    let (mut after_escape, mut in_class, mut class_pos, mut quotes) = (false, false, 0, 0);
    for c in pattern.chars() {
        if after_escape {
            if c == '"' && !in_class {
                // The separators of SUBSTRING ... SIMILAR's three parts.
                out.push_str(match quotes {
                    0 => "){1,1}?(",
                    1 => "){1,1}(?:",
                    _ => {
                        return Err(SqlError::InvalidEscape(
                            "SQL regular expression may not contain more than two escape-double-quote separators",
                        ));
                    }
                });
                quotes += 1;
            } else {
                out.push('\\');
                out.push(c);
            }
            after_escape = false;
        } else if Some(c) == e {
            after_escape = true;
        } else if in_class {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            // (A `]` first in the class, or after its `^`, is one of its characters.)
            if c == ']' && class_pos > 2 {
                in_class = false;
            } else if c == '^' && class_pos == 1 {
                class_pos = 2;
            } else {
                class_pos = 3;
            }
        } else {
            match c {
                '[' => {
                    out.push('[');
                    in_class = true;
                    class_pos = 1;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    out.push_str(")$");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Value {
        Value::text(s)
    }

    #[test]
    fn functions_answer_as_postgresql_does() {
        let budget = ValueBudget::default();
        let e = |f, v: &[Value]| eval(f, v, &budget).unwrap().to_string();
        let m = RegexFn::Match {
            icase: false,
            negated: false,
        };
        assert_eq!(e(m, &[t("foobar"), t("^fo+b")]), "t");
        assert_eq!(e(m, &[t("a\nb"), t("a.b")]), "t");
        assert_eq!(e(RegexFn::Replace, &[t("aXbXc"), t("x"), t("-"), t("gi")]), "a-b-c");
        assert_eq!(e(RegexFn::Replace, &[t("abc"), t("(b)"), t("[\\1\\&]")]), "a[bb]c");
        assert_eq!(
            e(RegexFn::FirstMatch, &[t("foobarbequebaz"), t("(bar)(beque)")]),
            "{bar,beque}"
        );
        assert_eq!(e(RegexFn::FirstMatch, &[t("abc"), t("b")]), "{b}");
        assert_eq!(e(RegexFn::Count, &[t("ABCABC"), t("b"), Value::Int(1), t("i")]), "2");
        assert_eq!(e(RegexFn::Split, &[t("hello world  x"), t("\\s+")]), "{hello,world,x}");
        assert_eq!(e(RegexFn::Split, &[t("abc"), t("")]), "{a,b,c}");
        assert!(eval(RegexFn::Like, &[t("a"), t("(")], &budget).is_err());
        assert!(eval(RegexFn::Like, &[t("a"), t("a"), t("z")], &budget).is_err());
        assert!(eval(RegexFn::Like, &[t("a"), t("(a)\\1")], &budget).is_err());
        // A replacement past the statement's memory is refused as it grows.
        let huge = eval(
            RegexFn::Replace,
            &[t(&"a".repeat(100_000)), t("a"), t(&"b".repeat(1000)), t("g")],
            &budget,
        );
        assert_eq!(huge.unwrap_err().sqlstate(), "54000");
        // regexp_matches' rows, SIMILAR TO's and LIKE ... ESCAPE's rewritten patterns.
        assert_eq!(
            e(RegexFn::AllMatches, &[t("a1b22"), t("\\d+"), t("g")]),
            r#"{"{1}","{22}"}"#
        );
        assert_eq!(e(RegexFn::AllMatches, &[t("a1b22"), t("[a-z](\\d)")]), r#"{"{1}"}"#);
        assert_eq!(e(RegexFn::AllMatches, &[t("abc"), t("x")]), "{}");
        assert_eq!(similar_escape("a%(b|c)_.", Some("\\")).unwrap(), "^(?:a.*(?:b|c).\\.)$");
        assert_eq!(similar_escape("[]%]#%", Some("#")).unwrap(), "^(?:[]%]\\%)$");
        assert_eq!(like_escape("a!%b\\", "!").unwrap(), "a\\%b\\\\");
        assert_eq!(like_escape("a\\%", "").unwrap(), "a\\\\%");
        assert_eq!(like_escape("x", "ab").unwrap_err().sqlstate(), "22025");
    }
}
