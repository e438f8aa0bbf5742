//! `json` and `jsonb` values. Both are carried as text (`Value::Text`, the column's type
//! saying which): `json` keeps the text it was given once it reads as JSON; `jsonb` keeps
//! PostgreSQL's normal form of it, so that equal documents have equal text and its output
//! is PostgreSQL's: object keys ordered shorter first, then bytewise, the last of
//! duplicate keys kept, numbers as `numeric` writes them, `": "` and `", "` between items.

use serde_json::Value as Json;

use crate::numeric::Numeric;

/// Reads `text` as a JSON document; the error says why it stops reading (PostgreSQL's
/// words where the input ends early).
pub fn parse_json(text: &str) -> Result<Json, String> {
    serde_json::from_str(text).map_err(|e| match e.classify() {
        serde_json::error::Category::Eof => "The input string ended unexpectedly.".to_string(),
        _ => {
            let m = e.to_string();
            let mut c = m.chars();
            match c.next() {
                Some(first) => format!("{}{}.", first.to_uppercase(), c.as_str()),
                None => m,
            }
        }
    })
}

/// `text` in jsonb's normal form, or why it is not JSON.
pub fn normalize_jsonb(text: &str) -> Result<String, String> {
    let doc = parse_json(text)?;
    check_no_nul(&doc)?;
    let mut out = String::with_capacity(text.len());
    write_jsonb(&doc, &mut out);
    Ok(out)
}

/// jsonb refuses `\u0000` in strings (PostgreSQL's text cannot hold it).
fn check_no_nul(doc: &Json) -> Result<(), String> {
    let bad = |s: &str| s.contains('\0');
    match doc {
        Json::String(s) if bad(s) => Err("unsupported Unicode escape sequence".into()),
        Json::Array(items) => items.iter().try_for_each(check_no_nul),
        Json::Object(map) => map.iter().try_for_each(|(k, v)| {
            if bad(k) {
                return Err("unsupported Unicode escape sequence".into());
            }
            check_no_nul(v)
        }),
        _ => Ok(()),
    }
}

/// Writes `doc` as jsonb's output does.
pub fn write_jsonb(doc: &Json, out: &mut String) {
    match doc {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(&number_text(&n.to_string())),
        Json::String(s) => write_string(s, out),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_jsonb(item, out);
            }
            out.push(']');
        }
        Json::Object(map) => {
            let mut entries: Vec<(&String, &Json)> = map.iter().collect();
            entries.sort_by(|a, b| key_order(a.0, b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(k, out);
                out.push_str(": ");
                write_jsonb(v, out);
            }
            out.push('}');
        }
    }
}

/// jsonb's order of object keys: shorter first, then by their bytes.
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// A JSON number as jsonb keeps it: as `numeric` reads and writes it (`1e2` is `100`,
/// `2.50` stays `2.50`).
fn number_text(n: &str) -> String {
    match Numeric::parse(n) {
        Ok(v) => v.to_string(),
        Err(_) => n.to_string(),
    }
}

/// A JSON string as PostgreSQL escapes it: `"` and `\`, the control characters by their
/// short escapes where JSON has one, else `\u00XX`; everything else as it is.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PostgreSQL 15 prints for these `::jsonb` casts.
    #[test]
    fn jsonb_text_is_postgresql_normal_form() {
        for (input, pg) in [
            (
                r#"{"b":1,"a":[1,2.50,1e2,-0],"aa":{"x":"\u00e9\n"},"a":true}"#,
                r#"{"a": true, "b": 1, "aa": {"x": "é\n"}}"#,
            ),
            (r#""x""#, r#""x""#),
            ("  [ ]", "[]"),
            ("{}", "{}"),
            ("12345678901234567890.1234", "12345678901234567890.1234"),
            (r#""\u0041\/""#, r#""A/""#),
            ("[1e2, -0, 0.10]", "[100, 0, 0.10]"),
        ] {
            assert_eq!(normalize_jsonb(input).unwrap(), pg, "{input}");
        }
    }

    #[test]
    fn bad_documents_are_errors() {
        for bad in ["", "{", "[1,]", "{'a':1}", "tru", r#""\u0000""#, "1 2"] {
            assert!(normalize_jsonb(bad).is_err(), "{bad}");
        }
    }
}
