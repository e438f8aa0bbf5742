//! Functions that build or take apart jsonb documents: `jsonb_set`, `jsonb || jsonb`,
//! `jsonb - key`, `jsonb - index`, `jsonb - keys`, and the element, key and value lists
//! the set-returning `jsonb_array_elements[_text]`, `json_array_elements[_text]`,
//! `jsonb_object_keys` and `jsonb_each[_text]` give rows of (plan/from.rs reads them as
//! `unnest` of these lists). As PostgreSQL 15 computes them; results in jsonb's normal
//! form (`permafrost_types::json`).

use permafrost_types::Value;
use permafrost_types::json::write_jsonb;
use serde_json::Value as Json;
use serde_json::value::RawValue;

use crate::error::{Result, SqlError};

fn parse(doc: &str) -> Result<Json> {
    serde_json::from_str(doc).map_err(|_| {
        SqlError::InvalidText(format!(
            "invalid input syntax for type json: \"{}\"",
            doc.chars().take(64).collect::<String>()
        ))
    })
}

fn jsonb(doc: &Json) -> Value {
    let mut out = String::new();
    write_jsonb(doc, &mut out);
    Value::text(out)
}

fn invalid(message: &str) -> SqlError {
    SqlError::InvalidArgument(message.into())
}

/// `jsonb_set(target, path, new_value, create_missing)`.
pub(super) fn set(target: &str, path: &[Option<String>], new: &str, create: bool) -> Result<Value> {
    let mut doc = parse(target)?;
    let new = parse(new)?;
    if path.is_empty() {
        return Ok(jsonb(&doc));
    }
    if !matches!(doc, Json::Object(_) | Json::Array(_)) {
        return Err(invalid("cannot set path in scalar"));
    }
    let mut at = &mut doc;
    for (i, step) in path.iter().enumerate() {
        let Some(step) = step else {
            return Err(SqlError::NullArgument(format!(
                "path element at position {} is null",
                i + 1
            )));
        };
        let last = i + 1 == path.len();
        at = match at {
            Json::Object(m) => {
                if last {
                    if create || m.contains_key(step) {
                        m.insert(step.clone(), new);
                    }
                    break;
                }
                match m.get_mut(step) {
                    Some(next) => next,
                    None => break,
                }
            }
            Json::Array(items) => {
                let n: i64 = step.trim().parse().map_err(|_| {
                    SqlError::InvalidText(format!(
                        "path element at position {} is not an integer: \"{step}\"",
                        i + 1
                    ))
                })?;
                let len = items.len() as i64;
                let index = if n < 0 { n + len } else { n };
                if last {
                    if (0..len).contains(&index) {
                        items[index as usize] = new;
                    } else if create {
                        if index < 0 {
                            items.insert(0, new);
                        } else {
                            items.push(new);
                        }
                    }
                    break;
                }
                if !(0..len).contains(&index) {
                    break;
                }
                &mut items[index as usize]
            }
            // A scalar on the way: nothing is set.
            _ => break,
        };
    }
    Ok(jsonb(&doc))
}

/// `a || b`: objects merged (b's members win), anything else concatenated as arrays (a
/// non-array as an array of itself).
pub(super) fn concat(a: &str, b: &str) -> Result<Value> {
    let (a, b) = (parse(a)?, parse(b)?);
    Ok(jsonb(&match (a, b) {
        (Json::Object(mut x), Json::Object(y)) => {
            x.extend(y);
            Json::Object(x)
        }
        (a, b) => {
            let as_items = |d: Json| match d {
                Json::Array(items) => items,
                other => vec![other],
            };
            let mut items = as_items(a);
            items.extend(as_items(b));
            Json::Array(items)
        }
    }))
}

/// `doc - key` (each of `keys`): an object without those members, an array without the
/// strings equal to them.
pub(super) fn delete_keys(doc: &str, keys: &[Option<String>]) -> Result<Value> {
    let keys: Vec<&str> = keys.iter().flatten().map(String::as_str).collect();
    Ok(jsonb(&match parse(doc)? {
        Json::Object(mut m) => {
            for k in keys {
                m.remove(k);
            }
            Json::Object(m)
        }
        Json::Array(items) => Json::Array(
            items
                .into_iter()
                .filter(|i| !matches!(i, Json::String(s) if keys.contains(&s.as_str())))
                .collect(),
        ),
        _ => return Err(invalid("cannot delete from scalar")),
    }))
}

/// `doc - index`: an array without its element `index` (negative from the end).
pub(super) fn delete_index(doc: &str, index: i64) -> Result<Value> {
    Ok(jsonb(&match parse(doc)? {
        Json::Array(mut items) => {
            let len = items.len() as i64;
            let at = if index < 0 { index + len } else { index };
            if (0..len).contains(&at) {
                items.remove(at as usize);
            }
            Json::Array(items)
        }
        Json::Object(_) => return Err(invalid("cannot delete from object using integer index")),
        _ => return Err(invalid("cannot delete from scalar")),
    }))
}

/// What a set-returning json function lists of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonList {
    /// `json[b]_array_elements` (`text`: `_text`, a string element as its text, null as
    /// NULL); `jsonb`: elements in jsonb's normal form, else as written.
    Elements { text: bool, jsonb: bool },
    /// `jsonb_object_keys`, and the `key` column of `jsonb_each`.
    Keys,
    /// The `value` column of `jsonb_each` (`text`: `jsonb_each_text`).
    Values { text: bool },
}

/// A JSON value's text as `->>` gives it: a string's text, null as NULL.
fn as_text(v: &Json) -> Option<String> {
    match v {
        Json::Null => None,
        Json::String(s) => Some(s.clone()),
        other => {
            let mut out = String::new();
            write_jsonb(other, &mut out);
            Some(out)
        }
    }
}

/// The list `what` of `doc`, as an array value's elements (`None`: NULL).
pub(super) fn list(doc: &str, what: JsonList) -> Result<Vec<Option<String>>> {
    let name = match what {
        JsonList::Elements { text, jsonb } => {
            let f = if jsonb {
                "jsonb_array_elements"
            } else {
                "json_array_elements"
            };
            if text { format!("{f}_text") } else { f.to_string() }
        }
        JsonList::Keys => "jsonb_object_keys".into(),
        JsonList::Values { text: false } => "jsonb_each".into(),
        JsonList::Values { text: true } => "jsonb_each_text".into(),
    };
    if let JsonList::Elements {
        text: false,
        jsonb: false,
    } = what
    {
        // json's elements as they were written.
        return match serde_json::from_str::<Vec<&RawValue>>(doc) {
            Ok(items) => Ok(items.iter().map(|r| Some(r.get().to_string())).collect()),
            Err(_) => match parse(doc)? {
                Json::Object(_) => Err(invalid("cannot extract elements from an object")),
                _ => Err(invalid("cannot extract elements from a scalar")),
            },
        };
    }
    let d = parse(doc)?;
    Ok(match (what, d) {
        (JsonList::Elements { text, .. }, Json::Array(items)) => items
            .iter()
            .map(|i| {
                if text {
                    as_text(i)
                } else {
                    let mut out = String::new();
                    write_jsonb(i, &mut out);
                    Some(out)
                }
            })
            .collect(),
        (JsonList::Elements { .. }, Json::Object(_)) => {
            return Err(invalid("cannot extract elements from an object"));
        }
        (JsonList::Elements { .. }, _) => return Err(invalid("cannot extract elements from a scalar")),
        (JsonList::Keys | JsonList::Values { .. }, Json::Object(m)) => {
            // In jsonb's order of keys: shorter first, then bytewise.
            let mut members: Vec<(&String, &Json)> = m.iter().collect();
            members.sort_by(|a, b| (a.0.len(), a.0.as_bytes()).cmp(&(b.0.len(), b.0.as_bytes())));
            members
                .into_iter()
                .map(|(k, v)| match what {
                    JsonList::Keys => Some(k.clone()),
                    JsonList::Values { text: true } => as_text(v),
                    _ => {
                        let mut out = String::new();
                        write_jsonb(v, &mut out);
                        Some(out)
                    }
                })
                .collect()
        }
        (_, Json::Array(_)) if what == JsonList::Keys => {
            return Err(invalid(&format!("cannot call {name} on an array")));
        }
        (_, Json::Array(_)) => return Err(invalid(&format!("cannot call {name} on a non-object"))),
        (JsonList::Keys, _) => return Err(invalid(&format!("cannot call {name} on a scalar"))),
        _ => return Err(invalid(&format!("cannot call {name} on a non-object"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(items: &[&str]) -> Vec<Option<String>> {
        items.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn edits_answer_as_postgresql_does() {
        let s = |v: Result<Value>| v.unwrap().to_string();
        let p = |items: &[&str]| some(items);
        assert_eq!(
            s(set(r#"{"a":{"b":1}}"#, &p(&["a", "b"]), "2", true)),
            r#"{"a": {"b": 2}}"#
        );
        assert_eq!(s(set(r#"[1,2]"#, &p(&["5"]), "3", true)), "[1, 2, 3]");
        assert_eq!(s(set(r#"[1,2]"#, &p(&["-5"]), "0", true)), "[0, 1, 2]");
        assert_eq!(s(set(r#"{"a":1}"#, &p(&["b"]), "2", false)), r#"{"a": 1}"#);
        assert!(set("1", &p(&["a"]), "2", true).is_err());
        assert_eq!(s(concat(r#"{"a":1,"b":2}"#, r#"{"b":3}"#)), r#"{"a": 1, "b": 3}"#);
        assert_eq!(s(concat("[1]", "2")), "[1, 2]");
        assert_eq!(s(delete_keys(r#"{"a":1,"b":2}"#, &p(&["a"]))), r#"{"b": 2}"#);
        assert_eq!(s(delete_keys(r#"["a","b",1]"#, &p(&["a"]))), r#"["b", 1]"#);
        assert_eq!(s(delete_index("[1,2,3]", -1)), "[1, 2]");
        assert!(delete_index(r#"{"a":1}"#, 0).is_err());
        assert_eq!(
            list(
                r#"[1, "x", null]"#,
                JsonList::Elements {
                    text: true,
                    jsonb: true
                }
            )
            .unwrap(),
            vec![Some("1".into()), Some("x".into()), None]
        );
        assert_eq!(list(r#"{"bb":1,"a":2}"#, JsonList::Keys).unwrap(), p(&["a", "bb"]));
    }
}

/// A function or operator of this module (`Func::JsonEdit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonEdit {
    /// `json_build_array(...)` (`jsonb`: `jsonb_build_array`), its arguments made JSON.
    BuildArray { jsonb: bool },
    /// `jsonb_set(target, path, new [, create_missing])`.
    Set,
    /// `jsonb || jsonb`.
    Concat,
    /// `jsonb - text` (`many`: `jsonb - text[]`).
    DeleteKeys { many: bool },
    /// `jsonb - integer`.
    DeleteIndex,
    /// A list of a document ([`JsonList`]) as an array (what `jsonb_array_elements` and
    /// the like give rows of).
    List(JsonList),
}

/// Evaluates `op` over its arguments `v` (NULL for any NULL argument, but for
/// `json_build_array`, whose NULLs are JSON nulls), checked against `budget` first.
pub(super) fn eval(op: JsonEdit, v: &[Value], budget: &crate::value_budget::ValueBudget<'_>) -> Result<Value> {
    if !matches!(op, JsonEdit::BuildArray { .. }) && v.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    budget.check(v.iter().map(|x| 2 * x.to_string().len()).sum::<usize>() + 16)?;
    let doc = v.first().and_then(Value::as_str).unwrap_or_default();
    let items = |i: usize| -> Result<Vec<Option<String>>> {
        crate::array::elements_of(v[i].as_ref()).map(Option::unwrap_or_default)
    };
    match op {
        JsonEdit::Set => {
            let create = v.get(3).and_then(Value::as_bool).unwrap_or(true);
            set(doc, &items(1)?, v[2].as_str().unwrap_or("null"), create)
        }
        JsonEdit::Concat => concat(doc, v[1].as_str().unwrap_or("null")),
        JsonEdit::DeleteKeys { many: true } => delete_keys(doc, &items(1)?),
        JsonEdit::DeleteKeys { many: false } => delete_keys(doc, &[v[1].as_str().map(str::to_string)]),
        JsonEdit::DeleteIndex => delete_index(doc, v[1].as_i64().unwrap_or(0)),
        JsonEdit::List(what) => {
            let list = list(doc, what)?;
            Ok(Value::text(permafrost_types::array::literal(
                list.iter().map(|i| i.as_deref()),
            )))
        }
        JsonEdit::BuildArray { jsonb } => {
            let items: Vec<String> = v.iter().map(|x| x.as_str().unwrap_or("null").to_string()).collect();
            super::json::agg_array(&items, jsonb, false)
        }
    }
}
