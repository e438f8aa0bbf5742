//! The json and jsonb operators and functions. A document is carried as its text
//! (`permafrost_types::json`); an operator reads the text where it is applied. A part of a
//! document (`->`, `#>`) is the slice of the text it was written as, so a jsonb's parts
//! are in jsonb's normal form too.

use std::collections::HashMap;

use permafrost_types::json::{write_jsonb, write_string};
use permafrost_types::{Value, ValueRef, double_text};
use serde_json::Value as Json;
use serde_json::value::RawValue;

use crate::error::{Result, SqlError};

/// The kind of a value made into JSON (`to_json`, the values of `json_build_object`):
/// what its SQL type says of it, which its engine value alone does not (a json text is
/// embedded, other text quoted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonFrom {
    /// A json or jsonb document, embedded as it is.
    Document,
    /// Any other value, by its kind.
    Value,
    /// An array (its literal's text) of elements of this type: a JSON array of them.
    Array(permafrost_types::ElemType),
    /// A row made a JSON object (`row_to_json(t)`): a document, which `json_agg` puts on
    /// a line of its own as it does arrays.
    Row,
}

/// How a value of type `t` is made JSON.
pub fn json_from(t: Option<permafrost_types::DataType>) -> JsonFrom {
    use permafrost_types::DataType;
    match t {
        Some(DataType::Json | DataType::Jsonb) => JsonFrom::Document,
        Some(DataType::Array(e)) => JsonFrom::Array(e),
        _ => JsonFrom::Value,
    }
}

/// `?`, `?|`, `?&`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exists {
    One,
    Any,
    All,
}

fn bad_json(text: &str) -> SqlError {
    SqlError::InvalidText(format!(
        "invalid input syntax for type json: \"{}\"",
        text.chars().take(64).collect::<String>()
    ))
}

fn parse(doc: &str) -> Result<Json> {
    serde_json::from_str(doc).map_err(|_| bad_json(doc))
}

/// The text of `doc`'s field `key` (an object's member) or element `index` (an array's,
/// negative from the end); `None` where there is none.
fn step<'d>(doc: &'d str, key: Option<&str>, index: Option<i64>) -> Result<Option<&'d str>> {
    let raw: &RawValue = serde_json::from_str(doc).map_err(|_| bad_json(doc))?;
    let text = raw.get().trim_start();
    match text.as_bytes().first() {
        Some(b'{') => {
            let Some(key) = key else { return Ok(None) };
            let members: HashMap<String, &'d RawValue> = serde_json::from_str(doc).map_err(|_| bad_json(doc))?;
            Ok(members.get(key).map(|v| v.get()))
        }
        Some(b'[') => {
            let Some(i) = index else { return Ok(None) };
            let items: Vec<&'d RawValue> = serde_json::from_str(doc).map_err(|_| bad_json(doc))?;
            let at = if i < 0 { items.len() as i64 + i } else { i };
            Ok(usize::try_from(at).ok().and_then(|a| items.get(a)).map(|v| v.get()))
        }
        _ => Ok(None),
    }
}

/// A part of a document as `->>` gives it: a string unquoted, JSON null as SQL NULL,
/// anything else its text.
fn part_text(part: &str) -> Result<Value> {
    let t = part.trim();
    Ok(match t.as_bytes().first() {
        Some(b'"') => Value::text(serde_json::from_str::<String>(t).map_err(|_| bad_json(t))?),
        _ if t == "null" => Value::Null,
        _ => Value::text(t),
    })
}

/// `doc -> k` (`as_text`: `->>`): `k` text for an object's member, an integer for an
/// array's element.
pub fn get(doc: &str, k: ValueRef<'_>, as_text: bool) -> Result<Value> {
    let part = match k {
        ValueRef::Text(key) => step(doc, Some(key), None)?,
        ValueRef::Int(i) => step(doc, None, Some(i))?,
        other => {
            return Err(SqlError::Type(format!(
                "a json key or index cannot be {}",
                other.kind_name()
            )));
        }
    };
    finish(part, as_text)
}

fn finish(part: Option<&str>, as_text: bool) -> Result<Value> {
    match part {
        None => Ok(Value::Null),
        Some(p) if as_text => part_text(p),
        Some(p) => Ok(Value::text(p.trim())),
    }
}

/// `doc #> path` (`as_text`: `#>>`): the part reached by following `path`'s keys (an
/// array's step is an integer).
pub fn path(doc: &str, path: &[Option<String>], as_text: bool) -> Result<Value> {
    let mut at: &str = doc;
    for s in path {
        let Some(s) = s else { return Ok(Value::Null) };
        let index = s.trim().parse::<i64>().ok();
        match step(at, Some(s), index)? {
            Some(next) => at = next,
            None => return Ok(Value::Null),
        }
    }
    finish(Some(at), as_text)
}

/// `a @> b`: whether jsonb `a` contains `b`, as PostgreSQL defines it.
pub fn contains(a: &str, b: &str) -> Result<bool> {
    let (a, b) = (parse(a)?, parse(b)?);
    Ok(match (&a, &b) {
        // At the top level an array contains a scalar it has as an element.
        (Json::Array(items), s) if !matches!(s, Json::Array(_) | Json::Object(_)) => {
            items.iter().any(|i| contained(i, s))
        }
        _ => contained(&a, &b),
    })
}

fn contained(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => y.iter().all(|(k, v)| x.get(k).is_some_and(|w| contained(w, v))),
        (Json::Array(x), Json::Array(y)) => y.iter().all(|v| x.iter().any(|w| contained(w, v))),
        (Json::Number(x), Json::Number(y)) => same_number(&x.to_string(), &y.to_string()),
        (x, y) => !matches!(x, Json::Array(_) | Json::Object(_)) && x == y,
    }
}

fn same_number(x: &str, y: &str) -> bool {
    match (permafrost_types::Numeric::parse(x), permafrost_types::Numeric::parse(y)) {
        (Ok(a), Ok(b)) => a.as_ref().compare(b.as_ref()) == std::cmp::Ordering::Equal,
        _ => x == y,
    }
}

/// `doc ? key`, `doc ?| keys`, `doc ?& keys`: whether the keys are top-level members of
/// an object, string elements of an array, or the string a document is.
pub fn exists(doc: &str, keys: &[Option<String>], mode: Exists) -> Result<bool> {
    let d = parse(doc)?;
    let has = |k: &str| match &d {
        Json::Object(m) => m.contains_key(k),
        Json::Array(items) => items.iter().any(|i| matches!(i, Json::String(s) if s == k)),
        Json::String(s) => s == k,
        _ => false,
    };
    let mut present = keys.iter().flatten().map(|k| has(k));
    Ok(match mode {
        Exists::One | Exists::Any => present.any(|p| p),
        Exists::All => present.all(|p| p),
    })
}

/// `jsonb_typeof(doc)`.
pub fn type_of(doc: &str) -> Result<Value> {
    Ok(Value::text(match parse(doc)? {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }))
}

/// `jsonb_array_length(doc)`.
pub fn array_length(doc: &str) -> Result<Value> {
    match parse(doc)? {
        Json::Array(items) => Ok(Value::Int(items.len() as i64)),
        Json::Object(_) => Err(SqlError::InvalidArgument(
            "cannot get array length of a non-array".into(),
        )),
        _ => Err(SqlError::InvalidArgument("cannot get array length of a scalar".into())),
    }
}

/// A value as JSON text (`to_json`): a document as it is, numbers and booleans as JSON
/// has them, anything else as the string of its text form (timestamps in ISO 8601 with a
/// `T`, as PostgreSQL writes them in JSON).
pub fn to_json(v: ValueRef<'_>, from: JsonFrom) -> String {
    let mut out = String::new();
    match v {
        ValueRef::Null => out.push_str("null"),
        ValueRef::Text(t) if matches!(from, JsonFrom::Document | JsonFrom::Row) => out.push_str(t),
        // An array's elements, as PostgreSQL writes them: `[1,2,null]`.
        ValueRef::Text(t) if let JsonFrom::Array(elem) = from => match permafrost_types::array_value::values(elem, t) {
            Ok(items) => {
                let from = json_from(Some(elem.data_type()));
                let items: Vec<String> = items.iter().map(|x| to_json(x.as_ref(), from)).collect();
                out.push('[');
                out.push_str(&items.join(","));
                out.push(']');
            }
            Err(_) => write_string(t, &mut out),
        },
        ValueRef::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        ValueRef::Int(i) => out.push_str(&i.to_string()),
        ValueRef::Decimal(d) => out.push_str(&d.to_string()),
        ValueRef::Double(d) if d.is_finite() => out.push_str(&double_text(d)),
        ValueRef::Timestamp(_) | ValueRef::TimestampTz(_) => {
            // PostgreSQL writes the zone of a timestamptz in JSON with its minutes (+00:00,
            // -04:00, +05:53:28).
            let text = match v {
                ValueRef::TimestampTz(t) => {
                    let offset = permafrost_types::zone::session_offset(t);
                    let local = t.saturating_add(i64::from(offset) * 1_000_000);
                    let plain = permafrost_types::datetime::timestamp_text(local);
                    format!("{plain}{}", permafrost_types::zone::offset_text(offset, true))
                }
                _ => v.to_string(),
            };
            let text = text.replacen(' ', "T", 1);
            write_string(&text, &mut out)
        }
        other => write_string(&other.to_string(), &mut out),
    }
    out
}

/// `json_build_object(k, v, ...)` (`jsonb`: `jsonb_build_object`) of keys and values
/// already made JSON (`to_json`); `compact`: as `row_to_json` writes a row (`{"k":v,...}`).
pub fn build_object(pairs: &[(String, String)], jsonb: bool, compact: bool) -> Result<Value> {
    if jsonb {
        let mut map = serde_json::Map::new();
        for (k, v) in pairs {
            map.insert(k.clone(), parse(v)?);
        }
        let mut out = String::new();
        write_jsonb(&Json::Object(map), &mut out);
        return Ok(Value::text(out));
    }
    let mut out = String::from("{");
    if compact {
        for (i, (k, v)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(k, &mut out);
            out.push(':');
            out.push_str(v);
        }
    } else {
        write_pairs(pairs, &mut out);
    }
    out.push('}');
    Ok(Value::text(out))
}

/// `"k" : v, ...`, as json's builders write an object's members.
fn write_pairs(pairs: &[(String, String)], out: &mut String) {
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_string(k, out);
        out.push_str(" : ");
        out.push_str(v);
    }
}

/// `json_agg` (`jsonb`: `jsonb_agg`) of values already made JSON; `structured`: of
/// arrays, which json's form puts each on a line of its own after the first (as
/// PostgreSQL writes it: `[[1], +\n [2]]`).
pub fn agg_array(items: &[String], jsonb: bool, structured: bool) -> Result<Value> {
    let mut text = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            text.push_str(", ");
            if structured && item != "null" {
                text.push_str("\n ");
            }
        }
        text.push_str(item);
    }
    text.push(']');
    Ok(Value::text(if jsonb { normalized(&text)? } else { text }))
}

/// `json_object_agg` (`jsonb`: `jsonb_object_agg`) of keys and values already made JSON:
/// `{ "k" : v, ... }` as PostgreSQL writes json's, jsonb's normal form for jsonb.
pub fn agg_object(pairs: &[(String, String)], jsonb: bool) -> Result<Value> {
    if jsonb {
        return build_object(pairs, true, false);
    }
    let mut out = String::from("{ ");
    write_pairs(pairs, &mut out);
    out.push_str(" }");
    Ok(Value::text(out))
}

/// A json text in jsonb's normal form (a cast from json to jsonb, `to_jsonb`).
pub fn normalized(text: &str) -> Result<String> {
    let doc = parse(text)?;
    let mut out = String::new();
    write_jsonb(&doc, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_read_as_postgresql_does() {
        let d = r#"{"a": {"b": [1, "x", null]}, "n": 2.50}"#;
        assert_eq!(get(d, ValueRef::Text("n"), false).unwrap().to_string(), "2.50");
        assert_eq!(
            get(d, ValueRef::Text("a"), false).unwrap().to_string(),
            r#"{"b": [1, "x", null]}"#
        );
        assert!(get(d, ValueRef::Int(0), false).unwrap().is_null());
        let p = |s: &[&str]| s.iter().map(|x| Some(x.to_string())).collect::<Vec<_>>();
        assert_eq!(path(d, &p(&["a", "b", "1"]), true).unwrap().to_string(), "x");
        assert_eq!(path(d, &p(&["a", "b", "-3"]), false).unwrap().to_string(), "1");
        assert!(path(d, &p(&["a", "b", "2"]), true).unwrap().is_null());
        assert!(contains(d, r#"{"a": {"b": ["x"]}}"#).unwrap());
        assert!(!contains(d, r#"{"a": {"b": ["y"]}}"#).unwrap());
        assert!(contains(d, r#"{"n": 2.5}"#).unwrap());
        assert!(contains("[1, 2]", "1").unwrap());
        assert!(!contains(r#"{"a": [1]}"#, r#"{"a": 1}"#).unwrap());
        assert!(exists(d, &p(&["a"]), Exists::One).unwrap());
        assert!(exists(r#"["a", "b"]"#, &p(&["c", "b"]), Exists::Any).unwrap());
        assert!(!exists(r#"["a", "b"]"#, &p(&["c", "b"]), Exists::All).unwrap());
    }
}
