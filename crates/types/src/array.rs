//! Array literals as text (`{1,2,NULL}`, `{"a b",c}`): reading them ([`read`],
//! [`elements`]), writing them in PostgreSQL's output form ([`literal`]), and re-writing one
//! element by element ([`reformat`]). An array value is carried as its literal in that
//! output form, so equal arrays have equal text and tuples store it as text; the element
//! type ([`ElemType`]) lives in the column's or expression's type, and `crate::array_value`
//! reads the elements as values of it. This module knows text only (the values' module
//! builds on it). Bad text is an error ([`ArrayError`]), never a panic.

/// The type of an array's elements: a scalar type without its modifiers (PostgreSQL keeps
/// `varchar(n)` and `numeric(p,s)` of elements too; here `character varying[]` and
/// `numeric[]`). Its scalar type and names: `crate::array_value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    SmallInt,
    Integer,
    BigInt,
    Double,
    Numeric,
    Text,
    Varchar,
    Timestamp,
    TimestampTz,
    Date,
    Boolean,
    Bytea,
    Uuid,
    Interval,
    Time,
    Json,
    Jsonb,
}

/// Why text is not an array literal this engine keeps.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayError {
    /// Not an array literal (`detail`: PostgreSQL's DETAIL).
    Malformed { input: String, detail: String },
    /// A form not kept here (several dimensions, bounds other than 1).
    Unsupported(String),
}

type Result<T> = std::result::Result<T, ArrayError>;

fn malformed(text: &str, detail: impl Into<String>) -> ArrayError {
    let shown: String = text.chars().take(64).collect();
    ArrayError::Malformed {
        input: shown,
        detail: detail.into(),
    }
}

/// An array literal as read: its elements in order (`None` for NULL, else the element's
/// text unquoted and unescaped), how deep its braces nest, and whether it gave explicit
/// bounds (`[1:3]={...}`).
pub struct Literal {
    pub items: Vec<Option<String>>,
    pub depth: usize,
    pub bounds: Option<String>,
}

/// Reads array literal `text` (nested arrays are read flat, as `x = ANY(...)` reads them).
pub fn read(text: &str) -> Result<Literal> {
    let s = text.trim();
    let (s, bounds) = match s.strip_prefix('[') {
        Some(_) => {
            let (b, rest) = s
                .split_once('=')
                .ok_or_else(|| malformed(text, "Missing \"=\" after array dimensions."))?;
            (rest.trim_start(), Some(b.trim().to_string()))
        }
        None => (s, None),
    };
    if !s.starts_with('{') {
        return Err(malformed(
            text,
            "Array value must start with \"{\" or dimension information.",
        ));
    }
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut max_depth) = (0usize, 0usize);
    let mut i = 0;
    // After an element or a closing brace, before a delimiter.
    let mut after_item = false;
    // After a delimiter: an element or an opening brace must come.
    let mut after_comma = false;
    while i < b.len() {
        match b[i] {
            b'{' if !after_item => {
                depth += 1;
                max_depth = max_depth.max(depth);
                i += 1;
                after_comma = false;
            }
            b'}' if after_comma => return Err(malformed(text, "Unexpected \"}\" character.")),
            b'}' => {
                if depth == 0 {
                    return Err(malformed(text, "Unexpected \"}\" character."));
                }
                depth -= 1;
                i += 1;
                after_item = true;
                if depth == 0 {
                    if s[i..].trim().is_empty() {
                        return Ok(Literal {
                            items: out,
                            depth: max_depth,
                            bounds,
                        });
                    }
                    return Err(malformed(text, "Junk after closing right brace."));
                }
            }
            b',' if after_item => {
                after_item = false;
                after_comma = true;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ if after_item || depth == 0 => return Err(malformed(text, "Expected \",\" or \"}\".")),
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
                    return Err(malformed(text, "Unexpected end of input."));
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
                    return Err(malformed(text, format!("Unexpected \"{}\" character.", b[i] as char)));
                }
                let item = item.trim_end();
                if item.is_empty() {
                    return Err(malformed(text, "Unexpected \",\" character."));
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
    Err(malformed(text, "Unexpected end of input."))
}

/// The elements of array literal `text`, flat ([`read`]).
pub fn elements(text: &str) -> Result<Vec<Option<String>>> {
    read(text).map(|l| l.items)
}

/// Whether an element's text must be quoted in an array's output (PostgreSQL's
/// `array_out`): empty, `NULL` in any case, or holding a brace, quote, backslash, comma
/// or white space.
fn needs_quotes(t: &str) -> bool {
    t.is_empty()
        || t.eq_ignore_ascii_case("null")
        || t.bytes().any(|c| {
            matches!(
                c,
                b'{' | b'}' | b'"' | b'\\' | b',' | b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c
            )
        })
}

/// The literal of `items` in PostgreSQL's output form (NULL for `None`).
pub fn literal<'a>(items: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(t) if !needs_quotes(t) => out.push_str(t),
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

/// `input` read as an array literal of one dimension and written again in PostgreSQL's
/// output form, each element's text given to `element` first (which reads it as the
/// element type and gives its text form back, or its error).
pub fn reformat<E: From<ArrayError>>(
    input: &str,
    mut element: impl FnMut(&str) -> std::result::Result<String, E>,
) -> std::result::Result<String, E> {
    let lit = read(input)?;
    if lit.depth > 1 {
        return Err(ArrayError::Unsupported("multidimensional arrays (arrays here have one dimension)".into()).into());
    }
    if let Some(b) = &lit.bounds {
        let upper = lit.items.len().to_string();
        let ok = b
            .strip_prefix("[1:")
            .and_then(|r| r.strip_suffix(']'))
            .is_some_and(|u| u.trim() == upper);
        if !ok {
            return Err(ArrayError::Unsupported(format!("array bounds {b} (arrays here start at 1)")).into());
        }
    }
    let mut texts = Vec::with_capacity(lit.items.len());
    for item in &lit.items {
        texts.push(match item {
            None => None,
            Some(t) => Some(element(t)?),
        });
    }
    Ok(literal(texts.iter().map(|t| t.as_deref())))
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
        let back = literal([Some("a\"b"), None, Some("c\\d"), Some(""), Some("x"), Some("null")]);
        assert_eq!(back, r#"{"a\"b",NULL,"c\\d","",x,"null"}"#);
        assert_eq!(
            els(&back),
            vec![
                Some("a\"b".into()),
                None,
                Some("c\\d".into()),
                Some(String::new()),
                Some("x".into()),
                Some("null".into())
            ]
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
            assert!(matches!(elements(bad), Err(ArrayError::Malformed { .. })), "{bad}");
        }
    }

    #[test]
    fn reformatting_keeps_one_dimension() {
        let same = |s: &str| reformat::<ArrayError>(s, |t| Ok(t.to_string()));
        assert_eq!(same(" { 1 , 2,NULL } ").unwrap(), "{1,2,NULL}");
        assert_eq!(same(r#"{a,"b c",""}"#).unwrap(), r#"{a,"b c",""}"#);
        assert_eq!(same("[1:2]={5,6}").unwrap(), "{5,6}");
        assert!(matches!(same("{{1},{2}}"), Err(ArrayError::Unsupported(_))));
        assert!(matches!(same("[0:1]={1,2}"), Err(ArrayError::Unsupported(_))));
        assert!(matches!(same("{1"), Err(ArrayError::Malformed { .. })));
    }
}
