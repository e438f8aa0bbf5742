//! What every benchmark's MariaDB client shares (mysql_async, MariaDB's own driver): the
//! connection from a URL, the PostgreSQL texts in MariaDB's placeholders, which refusals
//! are run again, and which errors end a terminal.

use std::future::Future;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};

use crate::BenchError;
use crate::way::MAX_ATTEMPTS;

/// Statements a connection keeps prepared.
const STATEMENTS: usize = 256;

/// A driver error with what was being done.
pub fn err(what: &str, e: mysql_async::Error) -> BenchError {
    BenchError::Client(format!("{what}: {e}"))
}

/// Whether a refused attempt is run again: a deadlock or a lock wait timeout.
pub fn retryable(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Server(s) if s.code == 1213 || s.code == 1205)
}

/// Whether an error means the connection is gone (the terminal stops, naming it).
pub fn connection_failed(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Io(_) | mysql_async::Error::Driver(_))
}

/// A benchmark's transactions, prepared on a connection, as [`attempts`] runs them.
pub trait Transactions {
    /// What a transaction is given.
    type Input: Sync;
    /// What it answers.
    type Outcome: Send;
    /// One attempt at `input` on `conn` (the connection the statements were prepared on).
    fn attempt(
        &self,
        conn: &mut Conn,
        input: &Self::Input,
    ) -> impl Future<Output = Result<Self::Outcome, mysql_async::Error>> + Send;
}

/// Runs `input` until an attempt is not refused as [`retryable`], at most `MAX_ATTEMPTS`
/// times: its outcome (an error as its text) and the retries; or, when the connection
/// failed, the error that ends the terminal (`what`: the transaction's name, to say which).
pub async fn attempts<T: Transactions + Sync>(
    what: &str,
    transactions: &T,
    conn: &mut Conn,
    input: &T::Input,
) -> Result<(Result<T::Outcome, String>, u32), BenchError> {
    let mut retries = 0;
    let outcome = loop {
        match transactions.attempt(conn, input).await {
            Err(e) if retryable(&e) && retries + 1 < MAX_ATTEMPTS => retries += 1,
            other => break other,
        }
    };
    match outcome {
        Err(e) if connection_failed(&e) => Err(BenchError::Client(format!("{what}: the connection failed: {e}"))),
        outcome => Ok((outcome.map_err(|e| e.to_string()), retries)),
    }
}

/// A connection to the server of `url` (mysql_async's form: `mysql://user@host/db?socket=/path`).
/// An UPDATE's affected rows are the rows it found, as PostgreSQL counts them, not only
/// those whose values it changed: a benchmark asks whether the row was there, and an
/// update writing the values a row already holds must not read as a missing row. The
/// driver keeps every statement a benchmark prepares (TPC-C's are more than its default
/// 32, past which it closes the oldest on the server while a terminal still holds them).
pub async fn connect(url: &str) -> Result<Conn, BenchError> {
    let opts = Opts::from_url(url).map_err(|e| BenchError::Options(format!("--target mariadb={url}: {e}")))?;
    let opts = OptsBuilder::from_opts(opts)
        .client_found_rows(true)
        .stmt_cache_size(STATEMENTS);
    Conn::new(opts)
        .await
        .map_err(|e| err(&format!("cannot connect to {url}"), e))
}

/// The server's version string.
pub async fn version(conn: &mut Conn) -> Result<String, BenchError> {
    let v: Option<String> = conn
        .query_first("SELECT version()")
        .await
        .map_err(|e| err("SELECT version()", e))?;
    Ok(v.unwrap_or_default())
}

/// Runs each statement of `sql` in order.
pub async fn exec_all(conn: &mut Conn, sql: impl IntoIterator<Item = impl AsRef<str>>) -> Result<(), BenchError> {
    for s in sql {
        let s = s.as_ref();
        conn.query_drop(s).await.map_err(|e| {
            let head: String = s.chars().take(80).collect();
            err(&format!("{head}..."), e)
        })?;
    }
    Ok(())
}

/// The count a PostgreSQL counting query answers with `params` (its `$n`, each bound as
/// often as it appears), or the error's text.
pub async fn count(conn: &mut Conn, sql: &str, params: &[i64]) -> Result<i64, String> {
    let (sql, order) = numbered(sql);
    conn.exec_first::<i64, _, _>(sql, bind(&order, params))
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the query returned no count".to_string())
}

/// A PostgreSQL text in MariaDB's placeholders: each `$n` becomes `?`, and the parameter
/// each `?` takes is listed (0-based), so that a `$n` used twice is bound twice.
pub fn numbered(sql: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            let mut n = 0usize;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = n * 10 + d as usize;
                chars.next();
            }
            out.push('?');
            order.push(n.saturating_sub(1));
        } else {
            out.push(c);
        }
    }
    (out, order)
}

/// A PostgreSQL text whose parameters appear once each, in order, with `?` for each `$n`.
pub fn placeholders(sql: &str) -> String {
    numbered(sql).0
}

/// `params` in the order the `?` of [`numbered`]'s text take them.
pub fn bind<T: Clone + Into<mysql_async::Value>>(order: &[usize], params: &[T]) -> Vec<mysql_async::Value> {
    order.iter().map(|&i| params[i].clone().into()).collect()
}

#[cfg(test)]
mod tests {
    use super::{bind, numbered, placeholders};

    #[test]
    fn placeholders_become_question_marks() {
        assert_eq!(
            placeholders("SELECT a FROM t WHERE x >= $1 AND y < $2 HAVING count(*) > $3"),
            "SELECT a FROM t WHERE x >= ? AND y < ? HAVING count(*) > ?"
        );
        assert_eq!(placeholders("SELECT '$' || 1"), "SELECT '$' || 1");
    }

    #[test]
    fn a_parameter_used_twice_is_bound_twice() {
        let (sql, order) = numbered("SELECT 1 FROM t WHERE a >= $1 AND a < $2 AND b >= $1 AND c = $12");
        assert_eq!(sql, "SELECT 1 FROM t WHERE a >= ? AND a < ? AND b >= ? AND c = ?");
        assert_eq!(order, vec![0, 1, 0, 11]);
        let params: Vec<i64> = (10..22).collect();
        assert_eq!(bind(&order, &params), vec![10.into(), 11.into(), 10.into(), 21.into()]);
    }
}
