//! `format(fmt, args...)`, `quote_ident`, `quote_literal` and `quote_nullable` as
//! PostgreSQL 15 gives them: `%s` (a value's text, NULL as nothing), `%I` (an identifier,
//! quoted where it must be), `%L` (a literal, NULL unquoted), `%%`; positions (`%2$s`),
//! the `-` flag and widths (`%-10s`, `%*s`, `%*2$s`). The result is checked against the
//! statement's memory before it is built.

use permafrost_types::{Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::value_budget::ValueBudget;

/// The keywords PostgreSQL's `quote_ident` quotes (all but its unreserved ones).
const QUOTED_KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// `quote_ident(s)`: `s`, or `s` in double quotes (doubled inside) unless it is lower case
/// letters, digits and underscores not starting with a digit, and no keyword.
pub fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !QUOTED_KEYWORDS.contains(&s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// `quote_literal(s)`: `s` in single quotes (doubled inside); with a backslash, as an
/// escape string (`E'...'`, backslashes doubled).
pub fn quote_literal(s: &str) -> String {
    let body = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

fn text_of(v: ValueRef<'_>) -> Option<String> {
    (!v.is_null()).then(|| v.to_string())
}

/// `format(fmt, args)`.
pub(super) fn format(fmt: &str, args: &[Value], budget: &ValueBudget<'_>) -> Result<Value> {
    let longest = args.iter().map(|a| 2 * a.to_string().len() + 3).sum::<usize>();
    budget.check(fmt.len().saturating_add(longest))?;
    let too_few = || SqlError::InvalidArgument("too few arguments for format()".into());
    let mut out = String::new();
    let mut next = 0usize;
    let mut chars = fmt.char_indices().peekable();
    // A number at the front of `chars` (digits), if any.
    fn number(chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>) -> Option<usize> {
        let mut n: Option<usize> = None;
        while let Some(&(_, c)) = chars.peek() {
            let Some(d) = c.to_digit(10) else { break };
            n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
            chars.next();
        }
        n
    }
    while let Some((_, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let unterminated = || SqlError::FormatUnterminated;
        if chars.peek().map(|&(_, c)| c) == Some('%') {
            chars.next();
            out.push('%');
            continue;
        }
        // [position$][-][width | * | *position$]type
        let mut position = None;
        let mut left = false;
        let mut width: Option<i64> = None;
        let n = number(&mut chars);
        if chars.peek().map(|&(_, c)| c) == Some('$') {
            chars.next();
            position = n.filter(|&p| p > 0).map(|p| p - 1);
            if n == Some(0) {
                return Err(SqlError::InvalidArgument(
                    "format specifies argument 0, but arguments are numbered from 1".into(),
                ));
            }
        } else if let Some(w) = n {
            width = Some(w as i64);
        }
        if width.is_none() {
            if chars.peek().map(|&(_, c)| c) == Some('-') {
                chars.next();
                left = true;
            }
            if chars.peek().map(|&(_, c)| c) == Some('*') {
                chars.next();
                let from = match number(&mut chars) {
                    Some(p) if chars.peek().map(|&(_, c)| c) == Some('$') => {
                        chars.next();
                        p.checked_sub(1).ok_or_else(too_few)?
                    }
                    Some(_) => return Err(unterminated()),
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                let w = args.get(from).ok_or_else(too_few)?;
                width = Some(match w.as_ref() {
                    ValueRef::Null => 0,
                    ValueRef::Int(i) => i,
                    other => other.to_string().trim().parse().map_err(|_| {
                        SqlError::InvalidText(format!("invalid input syntax for type integer: \"{other}\""))
                    })?,
                });
            } else if let Some(w) = number(&mut chars) {
                width = Some(w as i64);
            }
        }
        let Some((_, ty)) = chars.next() else {
            return Err(unterminated());
        };
        let at = match position {
            Some(p) => p,
            None => {
                next += 1;
                next - 1
            }
        };
        if position.is_some() {
            next = at + 1;
        }
        let arg = args.get(at).ok_or_else(too_few)?.as_ref();
        let text = match ty {
            's' => text_of(arg).unwrap_or_default(),
            'I' => quote_ident(&text_of(arg).ok_or_else(|| {
                SqlError::NullArgument("null values cannot be formatted as an SQL identifier".into())
            })?),
            'L' => text_of(arg).map_or_else(|| "NULL".to_string(), |t| quote_literal(&t)),
            other => {
                return Err(SqlError::FormatType(other));
            }
        };
        let w = width.unwrap_or(0);
        let (left, w) = (left || w < 0, w.unsigned_abs() as usize);
        let pad = w.saturating_sub(text.chars().count());
        budget.check(out.len().saturating_add(pad).saturating_add(text.len()))?;
        if left {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&text);
        }
    }
    Ok(Value::text(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_answers_as_postgresql_does() {
        let b = ValueBudget::default();
        let f = |fmt: &str, args: &[Value]| format(fmt, args, &b).map(|v| v.to_string());
        let t = |s: &str| Value::text(s);
        assert_eq!(f("Hello %s, %1$s", &[t("World")]).unwrap(), "Hello World, World");
        assert_eq!(
            f("INSERT INTO %I VALUES(%L)", &[t("Foo bar"), t("O'Reilly")]).unwrap(),
            "INSERT INTO \"Foo bar\" VALUES('O''Reilly')"
        );
        assert_eq!(f("|%10s|%-10s|", &[t("a"), t("b")]).unwrap(), "|         a|b         |");
        assert_eq!(f("|%*s|", &[Value::Int(-4), t("a")]).unwrap(), "|a   |");
        assert_eq!(f("%s %L %%", &[Value::Null, Value::Null]).unwrap(), " NULL %");
        assert_eq!(f("%s", &[]).unwrap_err().sqlstate(), "22023");
        assert_eq!(f("%x", &[t("a")]).unwrap_err().sqlstate(), "22023");
        assert_eq!(f("%I", &[Value::Null]).unwrap_err().sqlstate(), "22004");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("abc_1"), "abc_1");
        assert_eq!(quote_literal("a\\b'c"), "E'a\\\\b''c'");
    }
}
