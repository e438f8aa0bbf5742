//! The text functions and operators of [`super::Expr`]: `||`, `concat`, `concat_ws`,
//! `lower`, `upper`, `initcap`, the trims and pads, `substr`, `left`, `right`, `replace`,
//! `repeat`, `reverse`, `translate`, `split_part`, `strpos`, `chr`, `to_hex`, `md5` and
//! LIKE's matcher, as PostgreSQL defines them (characters, not bytes, count).
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

/// `concat_ws(sep, args...)`: the arguments as text, NULLs skipped, `sep` between them.
pub(super) fn concat_ws(sep: &str, args: &[Datum<'_>], budget: &ValueBudget<'_>) -> Result<Value> {
    let len = args.iter().fold(0usize, |n, a| {
        n.saturating_add(text_len(a.as_ref())).saturating_add(sep.len())
    });
    let mut b = budget.text(len)?;
    let mut first = true;
    for a in args.iter().filter(|a| !a.is_null()) {
        if !first {
            b.push_str(sep)?;
        }
        first = false;
        b.push_value(a.as_ref())?;
    }
    Ok(Value::from(b.finish()))
}

/// `btrim(s, chars)`, `ltrim`, `rtrim`: the characters of `chars` (a space when absent)
/// taken off the start (`start`), the end (`end`) or both.
pub(super) fn trim_chars(
    s: &str,
    chars: Option<&str>,
    start: bool,
    end: bool,
    budget: &ValueBudget<'_>,
) -> Result<Value> {
    let set = |c: char| chars.map_or(c == ' ', |set| set.contains(c));
    let mut t = s;
    if start {
        t = t.trim_start_matches(set);
    }
    if end {
        t = t.trim_end_matches(set);
    }
    Ok(Value::from(budget.copy(t)?))
}

/// The byte offset of character `n` of `s` (its length past its end).
fn char_offset(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// `left(s, n)` (`from_end`: `right(s, n)`): the first (last) `n` characters, or with a
/// negative `n` all but the last (first) `-n`.
pub(super) fn left_right(s: &str, n: i64, from_end: bool, budget: &ValueBudget<'_>) -> Result<Value> {
    let len = s.chars().count() as i64;
    let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) };
    let t = if from_end {
        &s[char_offset(s, (len - keep) as usize)..]
    } else {
        &s[..char_offset(s, keep as usize)]
    };
    Ok(Value::from(budget.copy(t)?))
}

/// `lpad(s, n, fill)` (`right`: `rpad`): `s` cut or filled with `fill` repeated to `n`
/// characters; `s` as it is when there is nothing to fill with.
pub(super) fn pad(s: &str, n: i64, fill: &str, right: bool, budget: &ValueBudget<'_>) -> Result<Value> {
    let n = n.max(0) as u64;
    let len = s.chars().count() as u64;
    if len >= n {
        return Ok(Value::from(budget.copy(&s[..char_offset(s, n as usize)])?));
    }
    if fill.is_empty() {
        return Ok(Value::from(budget.copy(s)?));
    }
    let missing = n - len;
    let widest = fill.chars().map(char::len_utf8).max().unwrap_or(1) as u64;
    let size = usize::try_from(missing.saturating_mul(widest)).unwrap_or(usize::MAX);
    let mut b = budget.text(s.len().saturating_add(size))?;
    if right {
        b.push_str(s)?;
    }
    for c in fill.chars().cycle().take(missing as usize) {
        b.push(c)?;
    }
    if !right {
        b.push_str(s)?;
    }
    Ok(Value::from(b.finish()))
}

/// `repeat(s, n)`: `s` `n` times (none for `n` ≤ 0).
pub(super) fn repeat(s: &str, n: i64, budget: &ValueBudget<'_>) -> Result<Value> {
    let n = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
    budget.check(s.len().saturating_mul(n))?;
    Ok(Value::from(s.repeat(n)))
}

/// `replace(s, from, to)`: every occurrence of `from` replaced (none when it is empty).
pub(super) fn replace(s: &str, from: &str, to: &str, budget: &ValueBudget<'_>) -> Result<Value> {
    if from.is_empty() {
        return Ok(Value::from(budget.copy(s)?));
    }
    let hits = s.matches(from).count();
    budget.check((s.len() - hits * from.len()).saturating_add(hits.saturating_mul(to.len())))?;
    Ok(Value::from(s.replace(from, to)))
}

/// `reverse(s)`.
pub(super) fn reverse(s: &str, budget: &ValueBudget<'_>) -> Result<Value> {
    budget.check(s.len())?;
    Ok(Value::from(s.chars().rev().collect::<String>()))
}

/// `initcap(s)`: each word's first letter upper case, the others lower; words are runs
/// of letters and digits.
pub(super) fn initcap(s: &str, budget: &ValueBudget<'_>) -> Result<Value> {
    let mut b = budget.text(s.len())?;
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            for l in c.to_lowercase() {
                b.push(l)?;
            }
        } else {
            for u in c.to_uppercase() {
                b.push(u)?;
            }
        }
        in_word = c.is_alphanumeric();
    }
    Ok(Value::from(b.finish()))
}

/// `translate(s, from, to)`: each character of `s` found in `from` becomes the one at the
/// same place in `to`, or goes when `to` is shorter.
pub(super) fn translate(s: &str, from: &str, to: &str, budget: &ValueBudget<'_>) -> Result<Value> {
    let to: Vec<char> = to.chars().collect();
    let mut b = budget.text(s.len())?;
    for c in s.chars() {
        match from.chars().position(|f| f == c) {
            Some(i) => {
                if let Some(&t) = to.get(i) {
                    b.push(t)?;
                }
            }
            None => b.push(c)?,
        }
    }
    Ok(Value::from(b.finish()))
}

/// `split_part(s, delimiter, n)`: field `n` of `s` split at `delimiter`, counted from the
/// end when negative; empty past the last. Field 0 is 22023.
pub(super) fn split_part(s: &str, delim: &str, n: i64, budget: &ValueBudget<'_>) -> Result<Value> {
    if n == 0 {
        return Err(SqlError::InvalidArgument("field position must not be zero".into()));
    }
    let field = if delim.is_empty() {
        (n == 1 || n == -1).then_some(s)
    } else if n > 0 {
        s.split(delim).nth((n - 1) as usize)
    } else {
        s.rsplit(delim).nth((-(n + 1)) as usize)
    };
    Ok(Value::from(budget.copy(field.unwrap_or(""))?))
}

/// `strpos(s, sub)`: where `sub` first starts in `s`, in characters from 1; 0 when it does
/// not occur.
pub(super) fn strpos(s: &str, sub: &str) -> i64 {
    s.find(sub).map_or(0, |at| s[..at].chars().count() as i64 + 1)
}

/// `chr(code)`: the character of that code point. 0 and codes past Unicode's are 54000,
/// as PostgreSQL (UTF8) answers them.
pub(super) fn chr(code: i64) -> Result<Value> {
    if code == 0 {
        return Err(SqlError::ProgramLimit("null character not permitted".into()));
    }
    let c = u32::try_from(code)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(|| SqlError::ProgramLimit(format!("requested character too large for encoding: {code}")))?;
    Ok(Value::from(c.to_string()))
}

/// `to_hex(n)`: `n` in hexadecimal, a negative one as its two's complement in 32 bits
/// (an `integer`) or 64 (a `bigint`).
pub(super) fn to_hex(n: i64, bits32: bool) -> Value {
    Value::from(if bits32 {
        format!("{:x}", n as i32)
    } else {
        format!("{n:x}")
    })
}

/// `md5(s)`: the MD5 digest of the bytes of `s`, 32 lower-case hexadecimal digits.
pub(super) fn md5(bytes: &[u8]) -> Value {
    use md5::Digest;
    let digest = md5::Md5::digest(bytes);
    let mut out = String::with_capacity(32);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    Value::from(out)
}

/// SQL LIKE with `%` and `_`; a backslash escapes the next pattern character (one last in
/// the pattern is an error where the match reaches it, as in PostgreSQL).
pub fn like(s: &str, p: &str) -> crate::error::Result<bool> {
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
                '\\' => {
                    return Err(crate::error::SqlError::InvalidEscape(
                        "LIKE pattern must not end with escape character",
                    ));
                }
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
            None => return Ok(false),
        }
    }
    Ok(p[pi..].iter().all(|&c| c == '%'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        let like = |s: &str, p: &str| like(s, p).unwrap();
        assert!(like("hello", "h%o"));
        assert!(like("hello", "_ello"));
        assert!(!like("hello", "h%x"));
        assert!(like("50%", "50\\%"));
        assert!(!like("505", "50\\%"));
        assert!(like("", "%"));
        assert!(like("abcabc", "%bc%c"));
        // A last backslash fails the match where it gets there, not before.
        assert!(!like("x", "x\\"));
        assert!(super::like("x\\", "x\\").is_err());
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
    fn text_functions_are_postgresql_s() {
        let b = ValueBudget::default();
        let t = |r: Result<Value>| r.unwrap().to_string();
        assert_eq!(t(pad("hi", 5, "xy", false, &b)), "xyxhi");
        assert_eq!(t(pad("hi", 5, " ", true, &b)), "hi   ");
        assert_eq!(t(pad("héllo", 2, "x", false, &b)), "hé");
        assert_eq!(t(pad("hi", 5, "", false, &b)), "hi");
        assert_eq!(t(left_right("abcde", -2, false, &b)), "abc");
        assert_eq!(t(left_right("abcde", -2, true, &b)), "cde");
        assert_eq!(t(left_right("abc", 9, true, &b)), "abc");
        assert_eq!(t(split_part("a,b,,c", ",", 3, &b)), "");
        assert_eq!(t(split_part("a,b,,c", ",", -1, &b)), "c");
        assert_eq!(t(split_part("a,b", ",", 7, &b)), "");
        assert_eq!(split_part("a", ",", 0, &b).unwrap_err().sqlstate(), "22023");
        assert_eq!(strpos("héllo", "l"), 3);
        assert_eq!(strpos("abc", "x"), 0);
        assert_eq!(t(translate("12345", "143", "ax", &b)), "a2x5");
        assert_eq!(t(initcap("hi THERE o'neil 3rd", &b)), "Hi There O'Neil 3rd");
        assert_eq!(to_hex(-1, true).to_string(), "ffffffff");
        assert_eq!(to_hex(-1, false).to_string(), "ffffffffffffffff");
        assert_eq!(md5(b"").to_string(), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(chr(0).unwrap_err().sqlstate(), "54000");
        assert_eq!(chr(0x110000).unwrap_err().sqlstate(), "54000");
        assert_eq!(t(replace("aaa", "a", "bb", &b)), "bbbbbb");
        let small = ValueBudget::new(8, None);
        assert_eq!(repeat("abc", 3, &small).unwrap_err().sqlstate(), "54000");
        assert_eq!(replace("aaaa", "a", "bcd", &small).unwrap_err().sqlstate(), "54000");
        assert_eq!(pad("x", 100, "y", true, &small).unwrap_err().sqlstate(), "54000");
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
