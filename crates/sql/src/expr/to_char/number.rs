//! `to_char` of a number with PostgreSQL's template patterns for numeric formatting
//! (table 9.28): `9` and `0` digit positions, `.` / `D` the decimal point, `,` / `G` a group
//! separator, the signs `S` (anchored to the number), `MI`, `PL`, `SG` and `PR` (angle
//! brackets), `EEEE` (scientific notation), `RN` (Roman numerals), `L` (the C locale's
//! currency symbol: a blank), `FM` (no padding blanks, no trailing zeros of `9` positions);
//! other characters, and text in double quotes, are copied. As in PostgreSQL, a number with
//! more integer digits than the template has positions is written with `#` in each, a
//! template without a digit position after its point writes no point, and a sign without
//! S, MI, SG or PR goes just before the first digit written (a blank for a positive number).
//! `TH` and `V` are refused (0A000).

use permafrost_types::{Value, ValueRef};

use crate::error::{Result, SqlError};

/// A template pattern.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// `9` (`zero`: `0`, which writes leading and trailing zeros).
    Digit {
        zero: bool,
    },
    Point,
    Group,
    /// `S`.
    Sign,
    Mi,
    Pl,
    Sg,
    Pr,
    Eeee,
    Roman {
        lower: bool,
    },
    Currency,
    Text(String),
}

fn syntax(message: impl Into<String>) -> SqlError {
    SqlError::Syntax(message.into())
}

/// The template's patterns, and whether it asks for fill mode (`FM`).
fn parse(format: &str) -> Result<(Vec<Tok>, bool)> {
    let chars: Vec<char> = format.chars().collect();
    let (mut toks, mut fm, mut i) = (Vec::new(), false, 0);
    let at = |i: usize, kw: &str| {
        kw.chars()
            .enumerate()
            .all(|(k, c)| chars.get(i + k).is_some_and(|x| x.eq_ignore_ascii_case(&c)))
    };
    while i < chars.len() {
        let (tok, len) = if at(i, "FM") {
            fm = true;
            i += 2;
            continue;
        } else if at(i, "EEEE") {
            (Tok::Eeee, 4)
        } else if at(i, "MI") {
            (Tok::Mi, 2)
        } else if at(i, "PL") {
            (Tok::Pl, 2)
        } else if at(i, "SG") {
            (Tok::Sg, 2)
        } else if at(i, "PR") {
            (Tok::Pr, 2)
        } else if at(i, "RN") {
            (Tok::Roman { lower: chars[i] == 'r' }, 2)
        } else if at(i, "TH") || at(i, "V") {
            return Err(SqlError::Unsupported(format!(
                "to_char of a number with the template pattern {}",
                if at(i, "V") { "V" } else { "TH" }
            )));
        } else {
            match chars[i] {
                '9' => (Tok::Digit { zero: false }, 1),
                '0' => (Tok::Digit { zero: true }, 1),
                '.' | 'D' | 'd' => (Tok::Point, 1),
                ',' | 'G' | 'g' => (Tok::Group, 1),
                'S' | 's' => (Tok::Sign, 1),
                'L' | 'l' => (Tok::Currency, 1),
                '"' => {
                    let end = chars[i + 1..]
                        .iter()
                        .position(|&c| c == '"')
                        .map_or(chars.len(), |p| i + 1 + p);
                    toks.push(Tok::Text(chars[i + 1..end].iter().collect()));
                    i = end + 1;
                    continue;
                }
                '\\' if chars.get(i + 1) == Some(&'"') => (Tok::Text("\"".into()), 2),
                // (PostgreSQL's `B` pattern, which writes nothing.)
                'B' | 'b' => (Tok::Text(String::new()), 1),
                c => (Tok::Text(c.to_string()), 1),
            }
        };
        check_order(&toks, &tok)?;
        toks.push(tok);
        i += len;
    }
    if toks.contains(&Tok::Eeee)
        && (fm
            || toks
                .iter()
                .any(|t| !matches!(t, Tok::Digit { .. } | Tok::Point | Tok::Eeee | Tok::Text(_))))
    {
        return Err(SqlError::SyntaxExplained {
            message: "\"EEEE\" is incompatible with other formats".into(),
            detail: "\"EEEE\" may only be used together with digit and decimal point patterns.".into(),
        });
    }
    Ok((toks, fm))
}

/// PostgreSQL's errors for a pattern where it may not come.
fn check_order(before: &[Tok], tok: &Tok) -> Result<()> {
    if before.contains(&Tok::Eeee) {
        return Err(syntax("\"EEEE\" must be the last pattern used"));
    }
    match tok {
        Tok::Point if before.contains(&Tok::Point) => Err(syntax("multiple decimal points")),
        Tok::Sign if before.contains(&Tok::Sign) => Err(syntax("cannot use \"S\" twice")),
        Tok::Digit { .. } if before.contains(&Tok::Pr) => Err(syntax("\"9\" must be ahead of \"PR\"")),
        _ => Ok(()),
    }
}

/// `to_char(v, format)` of a number `v`.
pub(in crate::expr) fn number(v: ValueRef<'_>, format: &str) -> Result<Value> {
    let (toks, fm) = parse(format)?;
    if let Some(Tok::Roman { lower }) = toks.iter().find(|t| matches!(t, Tok::Roman { .. })) {
        return roman(v, *lower, fm);
    }
    let pre = toks
        .iter()
        .take_while(|t| **t != Tok::Point)
        .filter(|t| matches!(t, Tok::Digit { .. }))
        .count();
    let post = toks
        .iter()
        .skip_while(|t| **t != Tok::Point)
        .filter(|t| matches!(t, Tok::Digit { .. }))
        .count();
    let eeee = toks.contains(&Tok::Eeee);
    let (negative, int, frac, exponent) = if eeee {
        scientific(v, post)?
    } else {
        let (n, i, f) = digits(v, post)?;
        (n, i, f, None)
    };
    let zero = int.trim_start_matches('0').is_empty() && frac.chars().all(|c| c == '0');
    // The integer digits written: none for a zero before a point with digits after it,
    // but under FM for a zero value (PostgreSQL writes `0.`).
    let int: String = match int.trim_start_matches('0') {
        "" if post == 0 || eeee || (fm && zero) => "0".into(),
        "" => String::new(),
        d => d.into(),
    };
    let overflow = int.len() > pre;
    let anchored = toks
        .iter()
        .any(|t| matches!(t, Tok::Sign | Tok::Mi | Tok::Sg | Tok::Pr));
    // The sign written before the first digit: the default one, a leading S, PR's bracket.
    let leading_sign = toks
        .iter()
        .take_while(|t| !matches!(t, Tok::Digit { .. } | Tok::Point))
        .any(|t| *t == Tok::Sign);
    let before_number: Option<&str> = if toks.contains(&Tok::Pr) {
        Some(if negative { "<" } else { " " })
    } else if leading_sign {
        Some(if negative { "-" } else { "+" })
    } else if !anchored {
        Some(if negative { "-" } else { " " })
    } else {
        None
    };
    let zero_start = toks
        .iter()
        .filter(|t| matches!(t, Tok::Digit { .. }))
        .take(pre)
        .position(|t| *t == Tok::Digit { zero: true })
        .unwrap_or(pre);
    // FM drops the trailing zeros of the `9` positions after the point.
    let frac_positions: Vec<bool> = toks
        .iter()
        .skip_while(|t| **t != Tok::Point)
        .filter_map(|t| match t {
            Tok::Digit { zero } => Some(*zero),
            _ => None,
        })
        .collect();
    let frac_kept = if fm {
        let f: Vec<char> = frac.chars().collect();
        (0..post)
            .rev()
            .find(|&j| f[j] != '0' || frac_positions[j])
            .map_or(0, |j| j + 1)
    } else {
        post
    };
    let mut out = String::new();
    let (mut k, mut j, mut printed, mut signed, mut in_frac) = (0usize, 0usize, false, false, false);
    let sign_here = |out: &mut String, signed: &mut bool| {
        if !*signed {
            *signed = true;
            if let Some(s) = before_number
                && !(fm && s == " ")
            {
                out.push_str(s);
            }
        }
    };
    for t in &toks {
        match t {
            Tok::Digit { .. } if !in_frac => {
                let written = if overflow {
                    Some('#')
                } else if k + int.len() >= pre {
                    Some(int.as_bytes()[k + int.len() - pre] as char)
                } else if k >= zero_start {
                    Some('0')
                } else {
                    None
                };
                match written {
                    Some(c) => {
                        if !printed {
                            sign_here(&mut out, &mut signed);
                        }
                        printed = true;
                        out.push(c);
                    }
                    None if !fm => out.push(' '),
                    None => {}
                }
                k += 1;
            }
            Tok::Digit { .. } => {
                if j < frac_kept {
                    out.push(if overflow { '#' } else { frac.as_bytes()[j] as char });
                }
                j += 1;
            }
            Tok::Point => {
                in_frac = true;
                if post > 0 {
                    if !printed {
                        sign_here(&mut out, &mut signed);
                    }
                    out.push('.');
                }
            }
            Tok::Group => {
                if printed {
                    out.push(',');
                } else if !fm {
                    out.push(' ');
                }
            }
            // (A leading S went before the number.)
            Tok::Sign if leading_sign => {}
            Tok::Sign => out.push(if negative { '-' } else { '+' }),
            // A sign shown only when it applies: a blank in its place otherwise (nothing in
            // FM mode).
            Tok::Mi => out.push_str(shown_or_blank(negative, "-", fm)),
            Tok::Pl => out.push_str(shown_or_blank(!negative, "+", fm)),
            Tok::Sg => out.push(if negative { '-' } else { '+' }),
            Tok::Pr => out.push_str(shown_or_blank(negative, ">", fm)),
            Tok::Eeee => {
                let e = exponent.unwrap_or(0);
                out.push_str(&format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.unsigned_abs()));
            }
            Tok::Currency => out.push(' '),
            Tok::Roman { .. } => {}
            Tok::Text(s) => out.push_str(s),
        }
    }
    Ok(Value::text(out))
}

/// A number's sign, integer digits and `post` fraction digits, rounded as PostgreSQL
/// rounds it (a numeric half away from zero, a double as printf does).
fn digits(v: ValueRef<'_>, post: usize) -> Result<(bool, String, String)> {
    let (negative, text) = match v {
        ValueRef::Int(i) => (i < 0, format!("{}.{}", i.unsigned_abs(), "0".repeat(post))),
        ValueRef::Double(d) if d.is_finite() => (d.is_sign_negative() && d != 0.0, format!("{:.*}", post, d.abs())),
        ValueRef::Double(_) => return Ok((false, "#".repeat(40), "#".repeat(post))),
        ValueRef::Decimal(n) => {
            let rounded = n
                .abs()
                .as_ref()
                .round(post as i32)
                .map_err(crate::expr::ops::numeric_err)?;
            (n.is_negative(), rounded.to_string())
        }
        other => return Err(SqlError::Type(format!("to_char of {}", other.kind_name()))),
    };
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut frac = frac.to_string();
    frac.truncate(post);
    while frac.len() < post {
        frac.push('0');
    }
    let negative = negative && !(int.trim_start_matches('0').is_empty() && frac.chars().all(|c| c == '0'));
    Ok((negative, int.to_string(), frac))
}

/// Scientific notation: the sign, one integer digit, `post` fraction digits and the
/// exponent.
#[allow(clippy::type_complexity)]
fn scientific(v: ValueRef<'_>, post: usize) -> Result<(bool, String, String, Option<i32>)> {
    let x = match v {
        ValueRef::Int(i) => i as f64,
        ValueRef::Double(d) => d,
        ValueRef::Decimal(n) => n.to_string().parse::<f64>().unwrap_or(f64::NAN),
        other => return Err(SqlError::Type(format!("to_char of {}", other.kind_name()))),
    };
    let text = format!("{:.*e}", post, x.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    Ok((x < 0.0, int.to_string(), frac.to_string(), exponent.parse().ok()))
}

/// `RN`: Roman numerals of the number rounded to an integer, 1 to 3999 (else `#`s),
/// right-aligned in 15 characters but under FM.
fn roman(v: ValueRef<'_>, lower: bool, fm: bool) -> Result<Value> {
    let n = match v {
        ValueRef::Int(i) => i,
        ValueRef::Double(d) => d.round() as i64,
        ValueRef::Decimal(n) => n.round_to_i64().unwrap_or(0),
        other => return Err(SqlError::Type(format!("to_char of {}", other.kind_name()))),
    };
    let text = if (1..=3999).contains(&n) {
        const NUMERALS: [(i64, &str); 13] = [
            (1000, "M"),
            (900, "CM"),
            (500, "D"),
            (400, "CD"),
            (100, "C"),
            (90, "XC"),
            (50, "L"),
            (40, "XL"),
            (10, "X"),
            (9, "IX"),
            (5, "V"),
            (4, "IV"),
            (1, "I"),
        ];
        let (mut n, mut s) = (n, String::new());
        for (value, numeral) in NUMERALS {
            while n >= value {
                s.push_str(numeral);
                n -= value;
            }
        }
        if lower { s.to_lowercase() } else { s }
    } else {
        "#".repeat(15)
    };
    Ok(Value::text(if fm { text } else { format!("{text:>15}") }))
}

/// `sign` when `shown`, else a blank (nothing in FM mode).
fn shown_or_blank(shown: bool, sign: &'static str, fm: bool) -> &'static str {
    match (shown, fm) {
        (true, _) => sign,
        (false, true) => "",
        (false, false) => " ",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_char(v: ValueRef<'_>, f: &str) -> String {
        number(v, f).unwrap().to_string()
    }

    #[test]
    fn numbers_are_written_as_postgresql_writes_them() {
        assert_eq!(to_char(ValueRef::Int(-12), "9999"), "  -12");
        assert_eq!(to_char(ValueRef::Int(12), "0999"), " 0012");
        assert_eq!(to_char(ValueRef::Double(0.5), "9.9"), "  .5");
        assert_eq!(to_char(ValueRef::Int(-1234), "FM9,999"), "-1,234");
        assert_eq!(to_char(ValueRef::Int(12345), "999"), " ###");
        assert_eq!(to_char(ValueRef::Int(-12), "999PR"), " <12>");
        assert_eq!(to_char(ValueRef::Double(12345.678), "9.99EEEE"), " 1.23e+04");
        assert_eq!(to_char(ValueRef::Int(1994), "FMRN"), "MCMXCIV");
        assert_eq!(number(ValueRef::Int(1), "9.9.9").unwrap_err().sqlstate(), "42601");
        assert_eq!(number(ValueRef::Int(1), "9TH").unwrap_err().sqlstate(), "0A000");
    }
}
