//! The text functions and operators of [`super::Expr`]: `||`, `concat`, `lower`, `upper`,
//! `btrim`, `substr` and LIKE's matcher.
//!
//! Each one that makes a new value builds it through the statement's
//! [`ValueBudget`](crate::value_budget::ValueBudget), which refuses a value past 1 GB
//! (54000, "requested length too large"), past the statement's `work_mem` (54000) or
//! past the room left in the statement pool (53200) before it is allocated: `x || x`
//! nested a few levels deep would otherwise double its way past any memory budget.

use permafrost_types::{Value, ValueRef};

use super::datum::Datum;
use crate::error::{Result, SqlError};
use crate::value_budget::ValueBudget;

/// The bytes `v` takes written as text, for sizing a result before it is built (a value
/// of a few characters counts as none: the builder grows, checked, for it).
fn text_len(v: ValueRef<'_>) -> usize {
    match v {
        ValueRef::Text(t) => t.len(),
        ValueRef::Bytes(b) => b.len().saturating_mul(2).saturating_add(2),
        _ => 0,
    }
}

/// `x || y`: NULL when either is.
pub(super) fn concat_pair(x: ValueRef<'_>, y: ValueRef<'_>, budget: &ValueBudget<'_>) -> Result<Value> {
    if x.is_null() || y.is_null() {
        return Ok(Value::Null);
    }
    let mut b = budget.text(text_len(x).saturating_add(text_len(y)))?;
    b.push_value(x)?;
    b.push_value(y)?;
    Ok(Value::from(b.finish()))
}

/// `concat(args...)`: the arguments as text one after the other, NULLs skipped.
pub(super) fn concat_all(args: &[Datum<'_>], budget: &ValueBudget<'_>) -> Result<Value> {
    let len = args.iter().fold(0usize, |n, a| n.saturating_add(text_len(a.as_ref())));
    let mut b = budget.text(len)?;
    for a in args {
        b.push_value(a.as_ref())?;
    }
    Ok(Value::from(b.finish()))
}

/// `lower(s)` (`upper`: `upper(s)`). A character's other case may take more bytes than
/// it (`ß` is `SS`), so only ASCII text is converted at once; other text goes through
/// the builder character by character.
pub(super) fn change_case(s: &str, upper: bool, budget: &ValueBudget<'_>) -> Result<Value> {
    if s.is_ascii() {
        budget.check(s.len())?;
        return Ok(Value::from(if upper {
            s.to_ascii_uppercase()
        } else {
            s.to_ascii_lowercase()
        }));
    }
    let mut b = budget.text(s.len())?;
    for c in s.chars() {
        if upper {
            for u in c.to_uppercase() {
                b.push(u)?;
            }
        } else {
            for l in c.to_lowercase() {
                b.push(l)?;
            }
        }
    }
    Ok(Value::from(b.finish()))
}

/// `btrim(s)`.
pub(super) fn trim(s: &str, budget: &ValueBudget<'_>) -> Result<Value> {
    Ok(Value::from(budget.copy(s.trim())?))
}

/// `substr(s, start [, len])` as PostgreSQL: characters counted from 1, a window that may
/// start before the string; a negative length is 22011.
pub(super) fn substring(s: &str, start: i64, len: Option<i64>, budget: &ValueBudget<'_>) -> Result<Value> {
    if len.is_some_and(|l| l < 0) {
        return Err(SqlError::NegativeSubstringLength);
    }
    // Characters [from, end) of the string, end exclusive (None: to its end).
    let end = len.map(|l| start.saturating_add(l).max(1) as u64 - 1);
    let from = start.max(1) as u64 - 1;
    let byte_at = |chars: u64| {
        usize::try_from(chars)
            .ok()
            .and_then(|n| s.char_indices().nth(n))
            .map_or(s.len(), |(i, _)| i)
    };
    let (a, b) = match end {
        Some(e) if e <= from => (0, 0),
        Some(e) => (byte_at(from), byte_at(e)),
        None => (byte_at(from), s.len()),
    };
    Ok(Value::from(budget.copy(&s[a..b])?))
}

/// SQL LIKE with `%` and `_`; a backslash escapes the next pattern character.
pub fn like(s: &str, p: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = p.chars().collect();
    // Iterative matcher with backtracking to the last `%`.
    let (mut si, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() {
            match p[pi] {
                '%' => {
                    star = Some((pi, si));
                    pi += 1;
                    continue;
                }
                '_' => {
                    si += 1;
                    pi += 1;
                    continue;
                }
                '\\' if pi + 1 < p.len() && p[pi + 1] == s[si] => {
                    si += 1;
                    pi += 2;
                    continue;
                }
                // An escaped character that does not match.
                '\\' if pi + 1 < p.len() => {}
                c if c == s[si] => {
                    si += 1;
                    pi += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, ss)) => {
                pi = sp + 1;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '%')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        assert!(like("hello", "h%o"));
        assert!(like("hello", "_ello"));
        assert!(!like("hello", "h%x"));
        assert!(like("50%", "50\\%"));
        assert!(!like("505", "50\\%"));
        assert!(like("", "%"));
        assert!(like("abcabc", "%bc%c"));
    }

    #[test]
    fn substrings_are_postgresql_s() {
        let b = ValueBudget::default();
        let sub = |s: &str, from: i64, len: Option<i64>| substring(s, from, len, &b).unwrap().to_string();
        assert_eq!(sub("abcdef", 2, Some(3)), "bcd");
        assert_eq!(sub("abcdef", 0, Some(3)), "ab");
        assert_eq!(sub("abcdef", -5, Some(3)), "");
        assert_eq!(sub("abcdef", 3, None), "cdef");
        assert_eq!(sub("abcdef", 10, None), "");
        assert_eq!(sub("héllo", 2, Some(2)), "él");
        assert_eq!(sub("abc", 1, Some(0)), "");
        assert_eq!(sub("abc", i64::MIN, Some(i64::MAX)), "");
        assert_eq!(sub("abc", 2, Some(i64::MAX)), "bc");
        let e = substring("abc", 1, Some(-1), &b).unwrap_err();
        assert_eq!(
            (e.sqlstate(), e.to_string().as_str()),
            ("22011", "negative substring length not allowed")
        );
    }

    #[test]
    fn built_text_is_checked_against_the_budget() {
        let b = ValueBudget::new(8, None);
        let five = Value::from("abcde");
        let e = concat_pair(five.as_ref(), five.as_ref(), &b).unwrap_err();
        assert_eq!(e.sqlstate(), "54000");
        assert_eq!(
            concat_pair(five.as_ref(), ValueRef::Int(123), &b).unwrap(),
            Value::from("abcde123")
        );
        assert_eq!(concat_pair(five.as_ref(), ValueRef::Null, &b).unwrap(), Value::Null);
        let bytes = [0xab_u8, 0x01];
        assert_eq!(
            concat_pair(ValueRef::Text("x"), ValueRef::Bytes(&bytes), &b).unwrap(),
            Value::from("x\\xab01")
        );
        let args = [
            Datum::Ref(five.as_ref()),
            Datum::Ref(ValueRef::Null),
            Datum::Ref(five.as_ref()),
        ];
        assert_eq!(concat_all(&args, &b).unwrap_err().sqlstate(), "54000");
        // `ß` upper-cases to two letters: the builder counts them.
        assert_eq!(change_case("ßßßß", true, &b).unwrap(), Value::from("SSSSSSSS"));
        assert_eq!(change_case("ßßßßß", true, &b).unwrap_err().sqlstate(), "54000");
        assert_eq!(change_case("AbC", false, &b).unwrap(), Value::from("abc"));
    }
}
