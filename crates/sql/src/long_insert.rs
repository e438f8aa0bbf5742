//! A long `INSERT ... VALUES (...), (...), ...` planned a chunk of rows at a time.
//!
//! Loaders send their rows as a few long statements: sysbench's and sysbench-tpcc's bulk
//! inserts are 512 KB of text each, thousands of rows of small values. The parser holds
//! every token of a statement (about 90 bytes each) and then its whole syntax tree (about
//! as much again), so one such statement took about 60 MB while it was planned, and two
//! loader threads took a server given 64 MiB to 270 MB resident. Here the text's rows
//! are found by a scan that only follows quotes and parentheses, and planned
//! [`CHUNK_ROWS`] at a time, each chunk's syntax tree dropped before the next is read:
//! the plan is the same (each row's values are converted to their target columns one by
//! one, as PostgreSQL converts an INSERT's VALUES rows), its memory what the rows' plans
//! take. Anything the scan does not follow (a parameter or dollar quote, a comment, a
//! clause after the rows: `ON CONFLICT`, `RETURNING`), a subquery among the values, or a
//! chunk that does not plan leaves the statement to the usual path, which then gives the
//! error with its position.

use crate::catalog::Catalog;
use crate::plan::{InsertSource, Plan};
use crate::prepared::Prepared;

/// Texts shorter than this are planned whole.
pub const LONG_INSERT_BYTES: usize = 64 << 10;

/// Rows planned at once.
pub const CHUNK_ROWS: usize = 256;

/// Plans one DML or query statement from text: a long INSERT of listed rows a chunk of rows
/// at a time ([`prepare_long_insert`]), anything else parsed whole.
pub fn prepare(catalog: &Catalog, sql: &str) -> crate::Result<Prepared> {
    match prepare_long_insert(catalog, sql) {
        Some(p) => Ok(p),
        None => crate::prepared::prepare(catalog, sql),
    }
}

/// `sql` planned as one INSERT, its rows a chunk at a time, when it is a long `INSERT ...
/// VALUES` list with nothing after its rows; `None` otherwise (plan it whole).
pub fn prepare_long_insert(catalog: &Catalog, sql: &str) -> Option<Prepared> {
    if sql.len() < LONG_INSERT_BYTES {
        return None;
    }
    let (head, rows) = split_rows(sql)?;
    let mut chunks = rows.chunks(CHUNK_ROWS);
    let mut text = String::with_capacity(head.len() + CHUNK_ROWS * 128);
    let mut plan_chunk = |rows: &[&str]| {
        text.clear();
        text.push_str(head);
        text.push(' ');
        text.push_str(&rows.join(","));
        crate::prepared::prepare(catalog, &text).ok()
    };
    let mut first = plan_chunk(chunks.next()?)?;
    for chunk in chunks {
        let next = plan_chunk(chunk)?;
        first.append_rows(next)?;
    }
    first.sql = sql.to_string();
    Some(first)
}

impl Plan {
    /// This INSERT's rows followed by `other`'s, when both are INSERTs of listed rows into
    /// the same columns that read no subquery; `None` otherwise.
    pub(crate) fn append_rows(&mut self, other: Plan) -> Option<()> {
        let (Plan::Insert(mine), Plan::Insert(theirs)) = (self, other) else {
            return None;
        };
        let same = mine.targets == theirs.targets
            && mine.schema.id == theirs.schema.id
            && mine.init.is_empty()
            && theirs.init.is_empty()
            && mine.returning.is_empty()
            && mine.skip_conflicts.is_none()
            && mine.update_conflicts.is_none();
        match (&mut mine.source, theirs.source) {
            (InsertSource::Values(rows), InsertSource::Values(more)) if same => {
                rows.extend(more);
                Some(())
            }
            _ => None,
        }
    }
}

/// The text before a long INSERT's rows (through `VALUES`) and each row's text (its
/// parentheses included), when the text is `INSERT ... VALUES` and rows separated by
/// commas, then blanks and at most one `;`; `None` for anything else the scan does not
/// follow.
fn split_rows(sql: &str) -> Option<(&str, Vec<&str>)> {
    let b = sql.as_bytes();
    let start = sql.len() - sql.trim_start().len();
    if !sql[start..].get(..6)?.eq_ignore_ascii_case("insert") {
        return None;
    }
    // The first `VALUES` outside quotes and parentheses.
    let mut i = start;
    let mut depth = 0usize;
    let values_end = loop {
        match significant(b, i)? {
            (next, None) => i = next,
            (next, Some(b'(')) => {
                depth += 1;
                i = next;
            }
            (next, Some(b')')) => {
                depth = depth.checked_sub(1)?;
                i = next;
            }
            (_, Some(c)) if depth == 0 && c.is_ascii_alphabetic() => {
                let w = i;
                while b.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    i += 1;
                }
                if sql[w..i].eq_ignore_ascii_case("values") {
                    break i;
                }
            }
            (next, Some(_)) => i = next,
        }
    };
    let mut rows = Vec::new();
    let mut i = values_end;
    loop {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if b.get(i) != Some(&b'(') {
            return None;
        }
        let row_start = i;
        let mut depth = 0usize;
        loop {
            let (next, c) = significant(b, i)?;
            i = next;
            match c {
                Some(b'(') => depth += 1,
                Some(b')') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        rows.push(&sql[row_start..i]);
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b';') if sql[i + 1..].trim().is_empty() => break,
            None => break,
            _ => return None,
        }
    }
    Some((&sql[..values_end], rows))
}

/// What is at `i`: the position after it, and its byte (`None` for a quoted string or
/// identifier, skipped whole); `None` at the end or at what the scan does not follow (a
/// parameter or dollar quote, a comment).
fn significant(b: &[u8], i: usize) -> Option<(usize, Option<u8>)> {
    match *b.get(i)? {
        b'\'' | b'"' => Some((skip_quoted(b, i)?, None)),
        b'$' => None,
        b'-' if b.get(i + 1) == Some(&b'-') => None,
        b'/' if b.get(i + 1) == Some(&b'*') => None,
        c => Some((i + 1, Some(c))),
    }
}

/// The position after the quoted string or identifier that starts at `i` (`'...'` with
/// `''`, `E'...'` with backslash escapes too, `"..."` with `""`); `None` when it does not
/// end.
fn skip_quoted(b: &[u8], i: usize) -> Option<usize> {
    let q = b[i];
    let escapes =
        q == b'\'' && i > 0 && matches!(b[i - 1], b'e' | b'E') && (i < 2 || !b[i - 2].is_ascii_alphanumeric());
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'\\' if escapes => j += 2,
            c if c == q => {
                if b.get(j + 1) == Some(&q) {
                    j += 2;
                } else {
                    return Some(j + 1);
                }
            }
            _ => j += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_rows;

    #[test]
    fn rows_are_found_past_quotes_and_nested_parentheses() {
        let sql = "INSERT INTO t (a, \"values\") VALUES (1, 'x,)'), (2, E'it\\'s'),(3, f(4, 'y''z')) ;";
        let (head, rows) = split_rows(sql).unwrap();
        assert_eq!(head, "INSERT INTO t (a, \"values\") VALUES");
        assert_eq!(rows, vec!["(1, 'x,)')", "(2, E'it\\'s')", "(3, f(4, 'y''z'))"]);
        for other in [
            "INSERT INTO t VALUES (1), (2) RETURNING a",
            "INSERT INTO t VALUES (1), (2) ON CONFLICT DO NOTHING",
            "INSERT INTO t VALUES ($1), (2)",
            "INSERT INTO t VALUES (1), (2) -- done",
            "INSERT INTO t SELECT 1",
            "INSERT INTO t VALUES (1, 'open",
            "UPDATE t SET a = 1",
        ] {
            assert!(split_rows(other).is_none(), "{other}");
        }
    }
}
