//! PostgreSQL array literals (`{1,2,"a b",NULL}`), the form in which array parameters and
//! array constants reach `x = ANY(array)` and `x <> ALL(array)`: the engine has no array
//! values, so an array is the text of its literal, read into its elements where it is
//! compared. Nested arrays (`{{1,2},{3,4}}`) are read flat, as `ANY` reads them. Bad text is
//! an error (22P02), never a panic.

use crate::error::{Result, SqlError};

fn malformed(text: &str, why: &str) -> SqlError {
    let shown: String = text.chars().take(64).collect();
    SqlError::InvalidText(format!("malformed array literal: \"{shown}\" ({why})"))
}

/// The elements of array literal `text`, in order: `None` for NULL, else the element's
/// text (unquoted and unescaped).
pub fn elements(text: &str) -> Result<Vec<Option<String>>> {
    let s = text.trim();
    // Explicit bounds (`[1:3]={...}`) are PostgreSQL's too; their elements are the same.
    let s = match s.strip_prefix('[') {
        Some(_) => s
            .split_once('=')
            .map(|(_, rest)| rest.trim_start())
            .ok_or_else(|| malformed(text, "dimensions without \"=\""))?,
        None => s,
    };
    if !s.starts_with('{') {
        return Err(malformed(text, "it must start with \"{\""));
    }
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    // After an element or a closing brace, before a delimiter.
    let mut after_item = false;
    // After a delimiter: an element or an opening brace must come.
    let mut after_comma = false;
    while i < b.len() {
        match b[i] {
            b'{' if !after_item => {
                depth += 1;
                i += 1;
                after_comma = false;
            }
            b'}' if after_comma => return Err(malformed(text, "\"}\" after \",\"")),
            b'}' => {
                if depth == 0 {
                    return Err(malformed(text, "unbalanced \"}\""));
                }
                depth -= 1;
                i += 1;
                after_item = true;
                if depth == 0 {
                    if s[i..].trim().is_empty() {
                        return Ok(out);
                    }
                    return Err(malformed(text, "junk after the closing \"}\""));
                }
            }
            b',' if after_item => {
                after_item = false;
                after_comma = true;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ if after_item || depth == 0 => return Err(malformed(text, "expected \",\" or \"}\"")),
            b'"' => {
                let mut item = String::new();
                i += 1;
                let mut closed = false;
                while i < b.len() {
                    match b[i] {
                        b'"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        b'\\' if i + 1 < b.len() => {
                            let ch = s[i + 1..].chars().next().unwrap_or_default();
                            item.push(ch);
                            i += 1 + ch.len_utf8();
                        }
                        _ => {
                            let ch = s[i..].chars().next().unwrap_or_default();
                            item.push(ch);
                            i += ch.len_utf8().max(1);
                        }
                    }
                }
                if !closed {
                    return Err(malformed(text, "unterminated quoted element"));
                }
                out.push(Some(item));
                after_item = true;
                after_comma = false;
            }
            _ => {
                let mut item = String::new();
                while i < b.len() && !matches!(b[i], b',' | b'}' | b'{' | b'"') {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    let ch = s[i..].chars().next().unwrap_or_default();
                    item.push(ch);
                    i += ch.len_utf8().max(1);
                }
                if i < b.len() && matches!(b[i], b'{' | b'"') {
                    return Err(malformed(text, "unexpected character inside an element"));
                }
                let item = item.trim_end();
                if item.is_empty() {
                    return Err(malformed(text, "an empty element"));
                }
                after_comma = false;
                out.push(if item.eq_ignore_ascii_case("null") {
                    None
                } else {
                    Some(item.to_string())
                });
                after_item = true;
            }
        }
    }
    Err(malformed(text, "no closing \"}\""))
}

/// The elements of an array value (`None` for a NULL array): the engine carries an array
/// as its literal's text, so anything else is not an array (22P02).
pub fn elements_of(v: permafrost_types::ValueRef<'_>) -> Result<Option<Vec<Option<String>>>> {
    match v {
        permafrost_types::ValueRef::Null => Ok(None),
        permafrost_types::ValueRef::Text(t) => elements(t).map(Some),
        other => Err(not_an_array(other)),
    }
}

/// The error for a value that is not an array where one is compared (22P02).
pub fn not_an_array(v: permafrost_types::ValueRef<'_>) -> SqlError {
    SqlError::InvalidText(format!("malformed array literal: \"{v}\" (ANY and ALL take an array)"))
}

/// An array literal of `items` (NULL for `None`), each element quoted: what a binary array
/// parameter is turned into.
pub fn literal<'a>(items: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(t) => {
                out.push('"');
                for c in t.chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn els(s: &str) -> Vec<Option<String>> {
        elements(s).unwrap()
    }

    fn some(items: &[&str]) -> Vec<Option<String>> {
        items.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn literals_read_as_postgresql_reads_them() {
        assert_eq!(els("{}"), Vec::<Option<String>>::new());
        assert_eq!(els("{1,2,3}"), some(&["1", "2", "3"]));
        assert_eq!(els(" { 1 , 2 } "), some(&["1", "2"]));
        assert_eq!(
            els(r#"{"a b","c,d","e\"f",g\,h}"#),
            some(&["a b", "c,d", "e\"f", "g,h"])
        );
        assert_eq!(els("{NULL,null,\"NULL\"}"), vec![None, None, Some("NULL".into())]);
        assert_eq!(els("{{1,2},{3,4}}"), some(&["1", "2", "3", "4"]));
        assert_eq!(els("[1:2]={7,8}"), some(&["7", "8"]));
        assert_eq!(els("{é,\"ü\"}"), some(&["é", "ü"]));
        let back = literal([Some("a\"b"), None, Some("c\\d"), Some("")]);
        assert_eq!(back, r#"{"a\"b",NULL,"c\\d",""}"#);
        assert_eq!(
            els(&back),
            vec![Some("a\"b".into()), None, Some("c\\d".into()), Some(String::new())]
        );
    }

    #[test]
    fn bad_literals_are_errors() {
        for bad in [
            "",
            "1,2",
            "{1,2",
            "{1,,2}",
            "{1 2\"x\"}",
            "{\"a}",
            "{1}}",
            "{1} x",
            "[1:2]{1}",
            "{,1}",
            "{1,}",
            "}",
        ] {
            let e = elements(bad).unwrap_err();
            assert_eq!(e.sqlstate(), "22P02", "{bad}: {e}");
        }
    }
}
