//! Responses: a statement's result as pgwire messages (rows in text or binary format, a
//! command tag, a COPY TO stream). A result whose rest follows its rows (a scan over
//! evicted data) is streamed from a blocking thread, a batch or two ahead of the socket.

use std::sync::Arc;
use std::time::Instant;

use futures::{StreamExt, stream};
use permafrost_executor::{Rows, StatementKind, StopFlag};
use permafrost_sql::workmem::{MemoryPool, Reservation};
use permafrost_types::zone::{SessionZone, Zone};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{DataRowEncoder, FieldFormat, QueryResponse, Response, Tag};
use pgwire::error::PgWireResult;
use pgwire::types::format::FormatOptions;

use crate::copy;
use crate::error::client_error;
use crate::pg_types::{RowWriter, encode};
use crate::pg_types::{columns_of, fields};
use crate::session::CancelToken;

/// A response of rows given as text (SHOW, catalog lookups, built-in procedures), in the
/// formats the client asked for: a binary column gets the binary form of its type.
pub(crate) fn text_rows(
    columns: &[(String, Type)],
    rows: Vec<Vec<Option<String>>>,
    format: &Format,
) -> PgWireResult<Response> {
    let schema = Arc::new(fields(columns, format));
    let mut enc = DataRowEncoder::new(schema.clone());
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        for (i, (v, (_, ty))) in row.into_iter().zip(columns).enumerate() {
            match format.format_for(i) {
                FieldFormat::Binary => encode_text(&mut enc, v, ty)?,
                // As it is: the library would quote a string in an array-typed column.
                FieldFormat::Text => enc.encode_field_with_type_and_format(
                    &v,
                    &Type::TEXT,
                    FieldFormat::Text,
                    &FormatOptions::default(),
                )?,
            }
        }
        out.push(Ok(enc.take_row()));
    }
    Ok(Response::Query(QueryResponse::new(schema, stream::iter(out))))
}

/// Encodes a value given as text in the binary form of `ty`.
pub(crate) fn encode_text(enc: &mut DataRowEncoder, v: Option<String>, ty: &Type) -> PgWireResult<()> {
    let bad = |s: &str| client_error("XX000", format!("internal error: \"{s}\" is not a {}", ty.name()));
    let Some(s) = v else {
        return enc.encode_field(&None::<String>);
    };
    match *ty {
        Type::INT8 => enc.encode_field(&s.parse::<i64>().map_err(|_| bad(&s))?),
        Type::INT4 => enc.encode_field(&s.parse::<i32>().map_err(|_| bad(&s))?),
        Type::INT2 => enc.encode_field(&s.parse::<i16>().map_err(|_| bad(&s))?),
        Type::FLOAT8 => enc.encode_field(&s.parse::<f64>().map_err(|_| bad(&s))?),
        Type::BOOL => enc.encode_field(&matches!(s.as_str(), "t" | "true")),
        _ => enc.encode_field(&s),
    }
}

/// Turns a statement's result into the response: rows for queries and RETURNING, a
/// command tag with the row count otherwise.
///
/// A result whose rest follows its rows (a scan over evicted data, [`Rows::take_rest`]) is
/// streamed: the rest is read batch by batch on a blocking thread and encoded a batch or two
/// ahead of the socket, so a result larger than memory is never held whole. `stop` stops
/// it (a cancel request or the statement timeout, watched while it streams: the client gets
/// the rows sent so far, then 57014); a client that goes away stops it too.
pub(crate) fn respond(
    mut rows: Rows,
    described: &[(String, Type)],
    kind: Option<StatementKind>,
    format: &Format,
    stop: Option<(StopFlag, Option<(CancelToken, Instant)>)>,
    pool: &Arc<MemoryPool>,
    zone: Option<Zone>,
) -> PgWireResult<Response> {
    if described.is_empty() && rows.columns().is_empty() {
        let n = rows.affected as usize;
        let tag = match kind {
            Some(StatementKind::Insert) => Tag::new("INSERT").with_oid(0).with_rows(n),
            Some(StatementKind::Update) => Tag::new("UPDATE").with_rows(n),
            Some(StatementKind::Delete) => Tag::new("DELETE").with_rows(n),
            Some(StatementKind::Select) => Tag::new("SELECT").with_rows(n),
            None => Tag::new("CALL"),
        };
        return Ok(Response::Execution(tag));
    }
    // The plan may have changed since it was described (DDL in between): the result's own
    // columns are what the rows hold.
    let columns = if described.len() == rows.columns().len() {
        described.to_vec()
    } else {
        columns_of(rows.columns())
    };
    let schema = Arc::new(fields(&columns, format));
    let types: Vec<(Type, bool)> = columns
        .iter()
        .zip(schema.iter())
        .map(|(c, f)| (c.1.clone(), f.format() == FieldFormat::Text))
        .collect();
    let types = Columns { types, zone };
    let mut enc = RowWriter::new(schema.clone());
    let rest = rows.take_rest();
    let first = if rows.data_len() <= EAGER_BYTES {
        stream::iter(encode_rows(&rows, &mut enc, &types)?.into_iter().map(Ok)).boxed()
    } else {
        let (mut lazy, types) = (RowWriter::new(schema.clone()), types.clone());
        lazily(rows, pool, move |rows, range| {
            encode_range(rows, range, &mut lazy, &types)
        })
        .boxed()
    };
    let mut resp = match rest {
        None => QueryResponse::new(schema, first),
        Some(rest) => {
            let (flag, cancel) = stop.unwrap_or_default();
            let more = stream_rest(rest, move |rows| encode_rows(rows, &mut enc, &types), flag, cancel);
            QueryResponse::new(schema, first.chain(more).boxed())
        }
    };
    match kind {
        Some(StatementKind::Insert) => resp.set_command_tag("INSERT 0"),
        Some(StatementKind::Update) => resp.set_command_tag("UPDATE"),
        Some(StatementKind::Delete) => resp.set_command_tag("DELETE"),
        Some(StatementKind::Select) => {}
        None => resp.set_command_tag("CALL"),
    }
    Ok(Response::Query(resp))
}

/// How a result's columns are written: each one's type and whether it is sent as text,
/// and the session TimeZone its `timestamptz` text is written in (`None`: UTC).
#[derive(Clone)]
pub(crate) struct Columns {
    pub types: Vec<(Type, bool)>,
    pub zone: Option<Zone>,
}

/// The data rows of `rows`.
pub(crate) fn encode_rows(
    rows: &Rows,
    enc: &mut RowWriter,
    columns: &Columns,
) -> PgWireResult<Vec<pgwire::messages::data::DataRow>> {
    encode_range(rows, 0..rows.len(), enc, columns)
}

/// The data rows of `rows` in `range`.
fn encode_range(
    rows: &Rows,
    range: std::ops::Range<usize>,
    enc: &mut RowWriter,
    columns: &Columns,
) -> PgWireResult<Vec<pgwire::messages::data::DataRow>> {
    let _zone = SessionZone::set(columns.zone.as_ref());
    let types = &columns.types;
    let mut out = Vec::with_capacity(range.len());
    // Room for the rows at once (integers as text grow; more is added if needed).
    let data = match (range.start < rows.len(), range.end < rows.len()) {
        (false, _) => 0,
        (true, true) => rows.row_offset(range.end) - rows.row_offset(range.start),
        (true, false) => rows.data_len() - rows.row_offset(range.start),
    };
    enc.reserve(data + range.len() * (types.len() * 12 + 8));
    for i in range {
        for (v, (ty, text)) in rows.row(i).values().zip(types) {
            encode(enc, v, ty, *text)?;
        }
        out.push(enc.take_row());
    }
    Ok(out)
}

/// A result up to this many bytes is encoded whole when it is answered (one allocation);
/// a larger one batch by batch as the socket takes it ([`lazily`]).
const EAGER_BYTES: usize = 64 << 10;

/// Rows encoded per batch of a large result.
const LAZY_BATCH_BYTES: usize = 64 << 10;

/// The messages of a large result, made a batch at a time by `encode` as the socket takes
/// them, so that the result is not held twice (as rows and as messages). Until the last is
/// taken, the rows count in the statement pool ([`Reservation::hold`]): the statement
/// that made them has ended and given its memory back, but a slow client keeps them.
fn lazily<T: Send + 'static>(
    rows: Rows,
    pool: &Arc<MemoryPool>,
    mut encode: impl FnMut(&Rows, std::ops::Range<usize>) -> PgWireResult<Vec<T>> + Send + 'static,
) -> impl futures::Stream<Item = PgWireResult<T>> + Send + 'static {
    let held = Reservation::hold(pool, rows.held_bytes());
    stream::unfold((rows, 0, held), move |(rows, at, held)| {
        let next = (at < rows.len()).then(|| {
            let mut end = at + 1;
            let start = rows.row_offset(at);
            while end < rows.len() && rows.row_offset(end) - start < LAZY_BATCH_BYTES {
                end += 1;
            }
            let items: Vec<_> = match encode(&rows, at..end) {
                Ok(out) => out.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            // (The rows and what they hold of the pool are dropped after the last batch.)
            (stream::iter(items), (rows, end, held))
        });
        futures::future::ready(next)
    })
    .flatten()
}

/// Batches of encoded rows a streamed result keeps ready ahead of the socket.
pub(crate) const STREAM_AHEAD: usize = 2;

/// The messages of a result's rest ([`respond`], [`respond_copy_out`]): read on a blocking
/// thread and turned into messages by `encode`, batch by batch.
pub(crate) fn stream_rest<T: Send + 'static>(
    mut rest: Box<dyn permafrost_executor::MoreRows>,
    mut encode: impl FnMut(&Rows) -> PgWireResult<Vec<T>> + Send + 'static,
    stop: StopFlag,
    cancel: Option<(CancelToken, Instant)>,
) -> impl futures::Stream<Item = PgWireResult<T>> + Send + 'static {
    let (tx, rx) = tokio::sync::mpsc::channel::<PgWireResult<Vec<T>>>(STREAM_AHEAD);
    // Watches for a cancel request or the timeout until the producer ends (it drops
    // `_running`).
    let (_running, ended) = tokio::sync::oneshot::channel::<()>();
    if let Some((c, started)) = cancel {
        let flag = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = c.stopped(started) => flag.set(),
                _ = ended => {}
            }
        });
    }
    tokio::task::spawn_blocking(move || {
        let _running = _running;
        loop {
            let batch = match rest.next_rows() {
                Ok(Some(rows)) => encode(&rows),
                Ok(None) => break,
                Err(e) => Err(crate::error::sql_error(e)),
            };
            let failed = batch.is_err();
            if tx.blocking_send(batch).is_err() || failed {
                break;
            }
        }
        // Dropping `rest` here ends the scan (its blocks may be reused).
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) }).flat_map(|batch| {
        let items: Vec<PgWireResult<T>> = match batch {
            Ok(items) => items.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        stream::iter(items)
    })
}

/// The answer of `COPY ... TO STDOUT`: a CopyOutResponse, the rows as CopyData lines
/// (streamed as [`respond`] streams rows), CopyDone.
pub(crate) fn respond_copy_out(
    mut rows: Rows,
    c: &copy::CopyOut,
    stop: (StopFlag, Option<(CancelToken, Instant)>),
    pool: &Arc<MemoryPool>,
) -> PgWireResult<Response> {
    let mut header = Vec::new();
    if c.format.header {
        let names: Vec<String> = c.columns.iter().map(|c| c.0.clone()).collect();
        header.push(copy::header_line(&names, &c.format));
    }
    let ncols = c.columns.len();
    let rest = rows.take_rest();
    let header = stream::iter(header.into_iter().map(Ok));
    // (Its timestamps with time zone are written in the session's zone.)
    let zone = stop.0.zone().cloned();
    let first = if rows.data_len() <= EAGER_BYTES {
        let _zone = SessionZone::set(zone.as_ref());
        header
            .chain(stream::iter(copy::copy_lines(&rows, &c.format).into_iter().map(Ok)))
            .boxed()
    } else {
        let (format, zone) = (c.format.clone(), zone.clone());
        header
            .chain(lazily(rows, pool, move |rows, range| {
                let _zone = SessionZone::set(zone.as_ref());
                Ok(copy::copy_lines_of(rows, range, &format))
            }))
            .boxed()
    };
    let data = match rest {
        None => first,
        Some(rest) => {
            let format = c.format.clone();
            let more = stream_rest(
                rest,
                move |rows| {
                    let _zone = SessionZone::set(zone.as_ref());
                    Ok(copy::copy_lines(rows, &format))
                },
                stop.0,
                stop.1,
            );
            first.chain(more).boxed()
        }
    };
    Ok(Response::CopyOut(pgwire::api::results::CopyResponse::new(
        0, ncols, data,
    )))
}
