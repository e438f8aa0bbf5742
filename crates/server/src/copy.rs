//! `COPY table [(columns)] FROM STDIN` for bulk loads and `COPY {table [(columns)] |
//! (query)} TO STDOUT` for exports, in PostgreSQL's text and CSV formats.
//!
//! COPY TO runs its query like any other (a scan over evicted data streams: the rows go
//! out as the blocks are read, `respond::respond_copy_out`), writing each value as
//! PostgreSQL's text output.
//!
//! Rows are parsed and converted to the column types as the CopyData messages arrive and
//! kept until CopyDone; then all of them are inserted as one transaction over every
//! partition (`Request::rows`). A COPY is atomic, as in PostgreSQL: a bad line, a
//! constraint violation, a CopyFail or a client that goes away before CopyDone stores
//! nothing. What a COPY may hold is bounded by the memory one statement may hold
//! (`Database::statement_memory`: a quarter of `memory_limit`, at least 16 MiB); a larger
//! load is refused with 54000 and must be split into several COPYs. The rows are taken
//! from the statement pool as they arrive, and the partitions are told to count it again
//! every megabyte (`Database::check_memory`): they evict ahead to make room for the rows,
//! so that the batch is stored into room already made instead of past the budget. The
//! pool is given back just before the insert, and the partitions told again, so that a
//! write gate closed for the rows does not refuse their own insert.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use futures::stream;
use permafrost_executor::{AdHoc, Database, Request};
use permafrost_storage::TableSchema;
use permafrost_types::DataType;
use permafrost_types::Value;
use pgwire::api::ClientInfo;
use pgwire::api::results::CopyResponse;
use pgwire::error::{PgWireError, PgWireResult};
use sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement};

use crate::copy_binary as binary;
use crate::error::{client_error, db_error, sql_error};

/// How the rows are written.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyFormat {
    pub csv: bool,
    /// PostgreSQL's binary COPY format (FROM STDIN only): a signature, then each row as a
    /// field count and each field's length and bytes in its type's binary form.
    pub binary: bool,
    pub delimiter: u8,
    /// The text that means NULL (`\N` in text format, an unquoted empty field in CSV).
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

/// A planned `COPY ... FROM STDIN`.
#[derive(Debug)]
pub struct CopyCommand {
    table: Arc<TableSchema>,
    /// Whether the statement named the table with its schema.
    qualified: bool,
    /// Positions of the copied columns in the table.
    columns: Vec<usize>,
    format: CopyFormat,
}

fn unsupported(what: impl Into<String>) -> PgWireError {
    client_error("0A000", what.into())
}

/// A planned `COPY ... TO STDOUT`: the query whose rows are written, and how.
pub struct CopyOut {
    pub stmt: AdHoc,
    /// The columns written: names and types (what the text of each value follows).
    pub columns: Vec<(String, pgwire::api::Type)>,
    pub format: CopyFormat,
}

impl Debug for CopyOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyOut")
            .field("columns", &self.columns)
            .field("format", &self.format)
            .finish()
    }
}

/// A planned COPY.
pub enum CopyPlan {
    In(CopyCommand),
    Out(CopyOut),
}

/// Plans a COPY statement: FROM STDIN, or TO STDOUT (of a table or a query, planned against
/// `catalog`: a transaction block's after its schema changes).
pub fn plan(db: &Database, catalog: &Arc<permafrost_sql::Catalog>, stmt: &Statement) -> PgWireResult<CopyPlan> {
    let Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        values,
    } = stmt
    else {
        return Err(client_error("XX000", "internal error: not a COPY statement"));
    };
    let format = copy_format(options, legacy_options)?;
    if *to {
        if *target != CopyTarget::Stdout {
            return Err(unsupported(
                "COPY to files or programs on the server (use COPY ... TO STDOUT, psql's \\copy)",
            ));
        }
        if format.binary {
            return Err(unsupported("COPY TO in binary format (text and csv are)"));
        }
        return plan_out(db, catalog, source, format).map(CopyPlan::Out);
    }
    if *target != CopyTarget::Stdin || !values.is_empty() {
        return Err(unsupported(
            "COPY from files or programs on the server (use COPY ... FROM STDIN, psql's \\copy)",
        ));
    }
    let CopySource::Table { table_name, columns } = source else {
        return Err(unsupported("COPY (query) FROM"));
    };
    let name = permafrost_sql::bind::object_name(table_name).map_err(sql_error)?;
    let table = catalog
        .table(&name)
        .cloned()
        .ok_or_else(|| sql_error(permafrost_sql::SqlError::UnknownTable(name.clone())))?;
    let columns = if columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                let c = if c.quote_style.is_some() {
                    c.value.clone()
                } else {
                    c.value.to_lowercase()
                };
                table.columns.iter().position(|tc| tc.name == c).ok_or_else(|| {
                    client_error("42703", format!("column \"{c}\" of relation \"{name}\" does not exist"))
                })
            })
            .collect::<PgWireResult<Vec<_>>>()?
    };
    Ok(CopyPlan::In(CopyCommand {
        table,
        qualified: table_name.0.len() > 1,
        columns,
        format,
    }))
}

/// The query a `COPY ... TO STDOUT` writes: the table's columns (or those named), or the
/// query given; planned like any query (a scan of evicted data streams).
fn plan_out(
    db: &Database,
    catalog: &Arc<permafrost_sql::Catalog>,
    source: &CopySource,
    format: CopyFormat,
) -> PgWireResult<CopyOut> {
    let sql = match source {
        CopySource::Table { table_name, columns } if columns.is_empty() => format!("SELECT * FROM {table_name}"),
        CopySource::Table { table_name, columns } => {
            let cols: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
            format!("SELECT {} FROM {table_name}", cols.join(", "))
        }
        CopySource::Query(q) => q.to_string(),
    };
    let prepared = permafrost_sql::prepare(catalog, &sql).map_err(sql_error)?;
    if prepared.kind() != permafrost_sql::StatementKind::Select {
        return Err(unsupported("COPY (a statement that is not a query) TO"));
    }
    if !prepared.param_types().is_empty() {
        return Err(client_error("42P02", "COPY TO cannot take parameters"));
    }
    let columns = prepared
        .columns()
        .iter()
        .map(|c| (c.name.clone(), crate::pg_types::pg_type(c.ty.as_ref())))
        .collect();
    Ok(CopyOut {
        stmt: db.ad_hoc_in(catalog.clone(), prepared),
        columns,
        format,
    })
}

/// The format options of a COPY (text or CSV, delimiter, NULL text, header, quote, escape).
fn copy_format(options: &[CopyOption], legacy_options: &[CopyLegacyOption]) -> PgWireResult<CopyFormat> {
    let mut f = CopyFormat {
        csv: false,
        binary: false,
        delimiter: b'\t',
        null: "\\N".into(),
        header: false,
        quote: b'"',
        escape: b'"',
    };
    let mut delimiter = None;
    let mut null = None;
    let byte = |c: char, what: &str| -> PgWireResult<u8> {
        u8::try_from(c as u32)
            .ok()
            .filter(|b| b.is_ascii() && *b != b'\n' && *b != b'\r')
            .ok_or_else(|| client_error("22023", format!("COPY {what} must be a single one-byte character")))
    };
    for o in options {
        match o {
            CopyOption::Format(id) => match id.value.to_lowercase().as_str() {
                "text" => (f.csv, f.binary) = (false, false),
                "csv" => (f.csv, f.binary) = (true, false),
                "binary" => (f.csv, f.binary) = (false, true),
                other => {
                    return Err(client_error(
                        "22023",
                        format!("COPY format \"{other}\" not recognized (text, csv and binary are)"),
                    ));
                }
            },
            CopyOption::Delimiter(c) => delimiter = Some(byte(*c, "delimiter")?),
            CopyOption::Null(s) => null = Some(s.clone()),
            CopyOption::Header(h) => f.header = *h,
            CopyOption::Quote(c) => f.quote = byte(*c, "quote")?,
            CopyOption::Escape(c) => f.escape = byte(*c, "escape")?,
            CopyOption::Encoding(e) if e.eq_ignore_ascii_case("utf8") || e.eq_ignore_ascii_case("utf-8") => {}
            CopyOption::Freeze(_) => {}
            other => return Err(unsupported(format!("COPY option {other}"))),
        }
    }
    for o in legacy_options {
        match o {
            CopyLegacyOption::Csv(opts) => {
                f.csv = true;
                for c in opts {
                    match c {
                        CopyLegacyCsvOption::Header => f.header = true,
                        CopyLegacyCsvOption::Quote(q) => f.quote = byte(*q, "quote")?,
                        CopyLegacyCsvOption::Escape(e) => f.escape = byte(*e, "escape")?,
                        other => return Err(unsupported(format!("COPY option {other}"))),
                    }
                }
            }
            CopyLegacyOption::Delimiter(c) => delimiter = Some(byte(*c, "delimiter")?),
            CopyLegacyOption::Null(s) => null = Some(s.clone()),
            CopyLegacyOption::Header => f.header = true,
            CopyLegacyOption::Binary => f.binary = true,
            other => return Err(unsupported(format!("COPY option {other}"))),
        }
    }
    if f.binary && (f.csv || f.header || delimiter.is_some() || null.is_some()) {
        return Err(client_error(
            "42601",
            "COPY in binary format takes no CSV, HEADER, DELIMITER or NULL option",
        ));
    }
    if f.header && !f.csv {
        return Err(unsupported("COPY HEADER in text format (it is a CSV option)"));
    }
    if f.csv {
        f.delimiter = delimiter.unwrap_or(b',');
        f.null = null.unwrap_or_default();
    } else {
        f.delimiter = delimiter.unwrap_or(b'\t');
        f.null = null.unwrap_or_else(|| "\\N".into());
    }
    Ok(f)
}

/// The lines of `COPY ... TO STDOUT` for `rows`: each value in PostgreSQL's text form (the
/// engine's, `ValueRef`'s `Display`: `t`/`f`, `1e+20`, `2020-01-02 03:04:05.25`, `\x..`),
/// escaped for text format or quoted for CSV; NULL as the format's NULL text.
pub fn copy_lines(rows: &permafrost_executor::Rows, f: &CopyFormat) -> Vec<pgwire::messages::copy::CopyData> {
    copy_lines_of(rows, 0..rows.len(), f)
}

/// The lines of the rows of `rows` in `range`.
pub fn copy_lines_of(
    rows: &permafrost_executor::Rows,
    range: std::ops::Range<usize>,
    f: &CopyFormat,
) -> Vec<pgwire::messages::copy::CopyData> {
    range
        .map(|i| rows.row(i))
        .map(|row| {
            let mut line = Vec::new();
            for (i, v) in row.values().enumerate() {
                if i > 0 {
                    line.push(f.delimiter);
                }
                match v {
                    permafrost_types::ValueRef::Null => line.extend_from_slice(f.null.as_bytes()),
                    v => write_field(&mut line, v.to_string().as_bytes(), f),
                }
            }
            line.push(b'\n');
            pgwire::messages::copy::CopyData::new(line.into())
        })
        .collect()
}

/// The header line of a CSV `COPY ... TO STDOUT`: the column names.
pub fn header_line(names: &[String], f: &CopyFormat) -> pgwire::messages::copy::CopyData {
    let mut line = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            line.push(f.delimiter);
        }
        write_field(&mut line, n.as_bytes(), f);
    }
    line.push(b'\n');
    pgwire::messages::copy::CopyData::new(line.into())
}

/// One non-NULL value of a COPY TO line.
fn write_field(line: &mut Vec<u8>, field: &[u8], f: &CopyFormat) {
    if f.csv {
        let quote = field.is_empty() && f.null.is_empty()
            || field == f.null.as_bytes()
            || field
                .iter()
                .any(|&b| b == f.delimiter || b == f.quote || b == b'\n' || b == b'\r');
        if !quote {
            line.extend_from_slice(field);
            return;
        }
        line.push(f.quote);
        for &b in field {
            if b == f.quote || b == f.escape {
                line.push(f.escape);
            }
            line.push(b);
        }
        line.push(f.quote);
        return;
    }
    for &b in field {
        match b {
            b'\\' => line.extend_from_slice(b"\\\\"),
            b'\n' => line.extend_from_slice(b"\\n"),
            b'\r' => line.extend_from_slice(b"\\r"),
            b'\t' if f.delimiter == b'\t' => line.extend_from_slice(b"\\t"),
            b if b == f.delimiter => {
                line.push(b'\\');
                line.push(b);
            }
            b => line.push(b),
        }
    }
}

impl CopyCommand {
    /// The table's catalog key, when the statement named it without a schema.
    pub fn unqualified_table(&self) -> Option<&str> {
        (!self.qualified).then_some(self.table.name.as_str())
    }

    /// The CopyInResponse: text or binary format, one column per copied column.
    pub fn response(&self) -> CopyResponse {
        CopyResponse::new(i8::from(self.format.binary), self.columns.len(), stream::empty())
    }
}

/// A field of a row as read.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    Null,
    Text(String),
}

/// Splits complete lines (records) off the front of `buf`: returns the length of the
/// prefix that holds whole records. CSV records may hold line breaks inside quotes.
fn complete_prefix(buf: &[u8], f: &CopyFormat) -> usize {
    if !f.csv {
        return buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    }
    let mut in_quotes = false;
    let mut end = 0;
    for (i, &b) in buf.iter().enumerate() {
        if b == f.quote {
            in_quotes = !in_quotes;
        } else if b == b'\n' && !in_quotes {
            end = i + 1;
        }
    }
    end
}

/// Parses one text-format line (without its line break) into fields.
pub fn parse_text_line(line: &[u8], f: &CopyFormat) -> Result<Vec<Field>, String> {
    let mut out = Vec::new();
    for raw in line.split(|&b| b == f.delimiter) {
        if raw == f.null.as_bytes() {
            out.push(Field::Null);
            continue;
        }
        let mut bytes = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            let b = raw[i];
            if b != b'\\' {
                bytes.push(b);
                i += 1;
                continue;
            }
            let Some(&n) = raw.get(i + 1) else {
                return Err("a backslash at the end of a line".into());
            };
            i += 2;
            match n {
                b'b' => bytes.push(8),
                b'f' => bytes.push(12),
                b'n' => bytes.push(b'\n'),
                b'r' => bytes.push(b'\r'),
                b't' => bytes.push(b'\t'),
                b'v' => bytes.push(11),
                b'0'..=b'7' => {
                    let mut v = u32::from(n - b'0');
                    let mut k = 0;
                    while k < 2 && i < raw.len() && (b'0'..=b'7').contains(&raw[i]) {
                        v = v * 8 + u32::from(raw[i] - b'0');
                        i += 1;
                        k += 1;
                    }
                    bytes.push((v & 0xff) as u8);
                }
                b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                    let mut v = 0u32;
                    let mut k = 0;
                    while k < 2 && i < raw.len() && raw[i].is_ascii_hexdigit() {
                        v = v * 16 + (raw[i] as char).to_digit(16).unwrap_or(0);
                        i += 1;
                        k += 1;
                    }
                    bytes.push(v as u8);
                }
                other => bytes.push(other),
            }
        }
        out.push(Field::Text(
            String::from_utf8(bytes).map_err(|_| "invalid UTF-8".to_string())?,
        ));
    }
    Ok(out)
}

/// Parses one CSV record (without its final line break) into fields.
pub fn parse_csv_record(rec: &[u8], f: &CopyFormat) -> Result<Vec<Field>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        // One field.
        let mut bytes = Vec::new();
        let mut quoted = false;
        if rec.get(i) == Some(&f.quote) {
            quoted = true;
            i += 1;
            loop {
                match rec.get(i) {
                    None => return Err("unterminated CSV quoted field".into()),
                    Some(&b) if b == f.escape && f.escape != f.quote && rec.get(i + 1) == Some(&f.quote) => {
                        bytes.push(f.quote);
                        i += 2;
                    }
                    Some(&b) if b == f.quote => {
                        if f.escape == f.quote && rec.get(i + 1) == Some(&f.quote) {
                            bytes.push(f.quote);
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    }
                    Some(&b) => {
                        bytes.push(b);
                        i += 1;
                    }
                }
            }
        }
        while let Some(&b) = rec.get(i) {
            if b == f.delimiter {
                break;
            }
            if quoted {
                return Err("extra data after a closing quote".into());
            }
            bytes.push(b);
            i += 1;
        }
        let text = String::from_utf8(bytes).map_err(|_| "invalid UTF-8".to_string())?;
        out.push(if !quoted && text == f.null {
            Field::Null
        } else {
            Field::Text(text)
        });
        if rec.get(i).is_none() {
            return Ok(out);
        }
        i += 1; // the delimiter
    }
}

/// The state of a COPY in progress on a connection.
struct CopyState {
    cmd: Arc<CopyCommand>,
    /// Bytes of an incomplete record.
    partial: Vec<u8>,
    line: u64,
    header_pending: bool,
    done: bool,
    /// The values of the rows read, one row after the other.
    rows: Vec<Value>,
    /// About the memory they hold, against `Database::statement_memory`.
    bytes: usize,
    /// What they take from the memory all running statements share.
    reservation: permafrost_sql::workmem::Reservation,
    error: Option<PgWireError>,
}

type Slot = Mutex<Option<CopyState>>;

/// Starts a COPY on a connection (its rows arrive next).
pub fn begin<C: ClientInfo>(client: &C, cmd: Arc<CopyCommand>) {
    // A CSV header line, or the binary format's signature and header.
    let header_pending = cmd.format.header || cmd.format.binary;
    let slot = client
        .session_extensions()
        .get_or_insert_with(|| -> Slot { Mutex::new(None) });
    if let Ok(mut s) = slot.lock() {
        *s = Some(CopyState {
            cmd,
            partial: Vec::new(),
            line: 0,
            header_pending,
            done: false,
            rows: Vec::new(),
            bytes: 0,
            reservation: Default::default(),
            error: None,
        });
    }
}

fn take<C: ClientInfo>(client: &C) -> PgWireResult<CopyState> {
    client
        .session_extensions()
        .get::<Slot>()
        .and_then(|s| s.lock().ok().and_then(|mut g| g.take()))
        .ok_or_else(|| client_error("08P01", "COPY data without a COPY in progress"))
}

fn put<C: ClientInfo>(client: &C, st: CopyState) {
    if let Some(slot) = client.session_extensions().get::<Slot>()
        && let Ok(mut g) = slot.lock()
    {
        *g = Some(st);
    }
}

/// Drops a COPY in progress and the rows it read (CopyFail): nothing was applied.
pub fn abandon<C: ClientInfo>(db: &Database, client: &C) {
    if let Ok(st) = take(client) {
        st.release(db);
    }
}

/// Fails a COPY in progress with `e` (a CopyData it could not take,
/// `crate::message_memory`): the rows read so far are dropped and their memory given back
/// now; the error is reported at CopyDone, and nothing is loaded.
pub fn fail<C: ClientInfo>(db: &Database, client: &C, e: PgWireError) {
    let Ok(mut st) = take(client) else { return };
    if st.error.is_none() {
        st.error = Some(e);
    }
    st.rows = Vec::new();
    st.partial = Vec::new();
    if std::mem::take(&mut st.reservation).taken() > 0 {
        db.check_memory();
    }
    put(client, st);
}

/// The partitions check the budget whenever a COPY has taken this many more bytes from the
/// statement pool ([`Database::check_memory`]).
const CHECK_STEP: usize = 1 << 20;

/// Takes rows from a CopyData message.
pub async fn data<C: ClientInfo>(db: &Database, client: &C, bytes: &[u8]) -> PgWireResult<()> {
    let mut st = take(client)?;
    // (Text read as a timestamp with time zone is in the session's zone.)
    let zone = crate::session_settings::of(client).zone();
    let _zone = permafrost_types::zone::SessionZone::set(zone.as_ref());
    if st.error.is_none() && !st.done && st.cmd.format.binary {
        st.partial.extend_from_slice(bytes);
        if let Err(e) = st.read_binary(db) {
            st.error = Some(e);
            st.rows = Vec::new();
            st.partial = Vec::new();
        }
    } else if st.error.is_none() && !st.done {
        // The whole records are read where they lie (a client may send a whole batch in
        // one message: it is not copied); only an incomplete one is kept for the next.
        let read = if st.partial.is_empty() {
            let n = complete_prefix(bytes, &st.cmd.format);
            st.partial.extend_from_slice(&bytes[n..]);
            st.read(db, &bytes[..n])
        } else {
            st.partial.extend_from_slice(bytes);
            match complete_prefix(&st.partial, &st.cmd.format) {
                0 => Ok(()),
                n => {
                    let joined = std::mem::take(&mut st.partial);
                    st.partial = joined[n..].to_vec();
                    st.read(db, &joined[..n])
                }
            }
        };
        if let Err(e) = read {
            st.error = Some(e);
            // Nothing will be applied: give the rows' memory back now.
            st.rows = Vec::new();
            st.partial = Vec::new();
        }
    }
    put(client, st);
    Ok(())
}

/// The rows of a COPY that ended well ([`finish`]), not yet applied.
pub struct Loaded {
    pub table: String,
    /// The columns each row gives values of, in order.
    pub columns: Vec<String>,
    /// The values, row after row.
    pub rows: Vec<Value>,
}

/// Ends the COPY: reads what is left; the rows read, or the error of the first bad one.
pub fn finish<C: ClientInfo>(db: &Database, client: &C) -> PgWireResult<Loaded> {
    let mut st = take(client)?;
    let zone = crate::session_settings::of(client).zone();
    let _zone = permafrost_types::zone::SessionZone::set(zone.as_ref());
    if st.error.is_none() && st.cmd.format.binary && (!st.partial.is_empty() || !st.binary_started()) {
        // What is left is not a whole row (or not even the signature).
        st.error = Some(client_error(
            "22P04",
            "unexpected end of binary COPY data: a row (or the signature) is cut short",
        ));
    } else if st.error.is_none() && !st.done && !st.partial.is_empty() {
        let mut rest = std::mem::take(&mut st.partial);
        rest.push(b'\n');
        if let Err(e) = st.read(db, &rest) {
            st.error = Some(e);
        }
    }
    if let Some(e) = st.error.take() {
        let (table, line) = (st.cmd.table.name.clone(), st.line);
        st.release(db);
        return Err(match e {
            PgWireError::UserError(mut info) => {
                info.message = format!("COPY {}, line {}: {} (nothing was loaded)", table, line, info.message);
                PgWireError::UserError(info)
            }
            other => other,
        });
    }
    let t = &st.cmd.table;
    let loaded = Loaded {
        table: t.name.clone(),
        columns: st.cmd.columns.iter().map(|&c| t.columns[c].name.clone()).collect(),
        rows: std::mem::take(&mut st.rows),
    };
    st.release(db);
    Ok(loaded)
}

/// The error of a COPY whose rows could not be applied: nothing was loaded.
pub fn not_loaded(table: &str, e: PgWireError) -> PgWireError {
    match e {
        PgWireError::UserError(mut info) => {
            info.message = format!("COPY {table}: {} (nothing was loaded)", info.message);
            PgWireError::UserError(info)
        }
        other => other,
    }
}

/// Ends a COPY outside a transaction block: reads what is left and inserts every row as
/// one transaction; returns the number loaded.
pub async fn done<C: ClientInfo>(db: &Database, client: &C) -> PgWireResult<u64> {
    let loaded = finish(db, client)?;
    if loaded.rows.is_empty() {
        return Ok(0);
    }
    db.submit(Request::rows(&loaded.table, &loaded.columns, loaded.rows))
        .await
        .map(|r| r.affected)
        .map_err(|e| not_loaded(&loaded.table, db_error(e)))
}

impl CopyState {
    /// Gives back what the COPY took from the statement pool (its rows are applied now, or
    /// dropped) and has the partitions count the pool again at once: they evicted to make
    /// room for the rows as they arrived, and the write gate they closed for them must not
    /// refuse the rows' own insert.
    fn release(self, db: &Database) {
        let held = self.reservation.taken() > 0;
        drop(self);
        if held {
            db.check_memory();
        }
    }

    /// Reads whole records from `chunk` into the buckets.
    fn read(&mut self, db: &Database, chunk: &[u8]) -> PgWireResult<()> {
        let f = self.cmd.format.clone();
        let limit = db.statement_memory();
        let mut start = 0;
        while start < chunk.len() {
            let end = if f.csv {
                start + complete_prefix_first(&chunk[start..], &f)
            } else {
                start
                    + chunk[start..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(chunk.len() - start, |i| i + 1)
            };
            let mut rec = &chunk[start..end];
            start = end;
            self.line += 1;
            if let Some(r) = rec.strip_suffix(b"\n") {
                rec = r;
            }
            if let Some(r) = rec.strip_suffix(b"\r") {
                rec = r;
            }
            if self.header_pending {
                self.header_pending = false;
                continue;
            }
            if rec == b"\\." {
                self.done = true;
                return Ok(());
            }
            // Text never holds invalid UTF-8 or a NUL byte, sent as it is or escaped.
            crate::wire_check::text(rec).map_err(|v| v.into_error())?;
            let fields = if f.csv {
                parse_csv_record(rec, &f)
            } else {
                parse_text_line(rec, &f)
            }
            .map_err(|m| client_error("22P04", format!("bad COPY data: {m}")))?;
            for field in &fields {
                if let Field::Text(t) = field {
                    crate::wire_check::text(t.as_bytes()).map_err(|v| v.into_error())?;
                }
            }
            if fields.len() != self.cmd.columns.len() {
                return Err(client_error(
                    "22P04",
                    format!("{} column(s) expected, {} found", self.cmd.columns.len(), fields.len()),
                ));
            }
            for (field, &c) in fields.into_iter().zip(&self.cmd.columns) {
                let col = &self.cmd.table.columns[c];
                let v = match field {
                    Field::Null => Value::Null,
                    Field::Text(s) => convert(&s, &col.ty)
                        .map_err(|e| client_error("22P02", format!("column \"{}\": {e}", col.name)))?,
                };
                self.bytes += permafrost_sql::exec::value_size(&v);
                self.rows.push(v);
            }
            self.row_taken(db, limit)?;
        }
        Ok(())
    }

    /// Accounts for the memory of the rows taken so far: 54000 past what one statement may
    /// hold, 53200 past what running statements may hold together.
    fn row_taken(&mut self, db: &Database, limit: usize) -> PgWireResult<()> {
        let before = self.reservation.taken();
        self.reservation
            .cover(self.bytes, Some(db.statement_pool()))
            .map_err(sql_error)?;
        if self.reservation.taken() / CHECK_STEP > before / CHECK_STEP {
            // The partitions evict ahead to make room for the rows (they count the pool).
            db.check_memory();
        }
        if self.bytes > limit {
            return Err(client_error(
                "54000",
                format!(
                    "this COPY holds more than the {limit} bytes one statement may (a quarter of memory_limit, at \
                     least 16 MiB): a COPY is applied as one transaction, so load the data in several COPYs"
                ),
            ));
        }
        Ok(())
    }

    /// Whether the binary format's signature and header have been read.
    fn binary_started(&self) -> bool {
        !self.header_pending
    }

    /// Reads the whole rows at the front of `partial` in binary format (the header first),
    /// leaving an incomplete one there for the next CopyData.
    fn read_binary(&mut self, db: &Database) -> PgWireResult<()> {
        let limit = db.statement_memory();
        let bad = |m: String| client_error("22P04", format!("bad binary COPY data: {m}"));
        let mut at = 0;
        if self.header_pending {
            match binary::header(&self.partial).map_err(bad)? {
                None => return Ok(()),
                Some(n) => {
                    at = n;
                    self.header_pending = false;
                }
            }
        }
        while !self.done {
            let Some((n, fields)) = binary::row(&self.partial[at..], self.cmd.columns.len()).map_err(bad)? else {
                break;
            };
            at += n;
            let Some(fields) = fields else {
                // The trailer: nothing may follow it.
                self.done = true;
                break;
            };
            self.line += 1;
            for (field, &c) in fields.into_iter().zip(&self.cmd.columns) {
                let col = &self.cmd.table.columns[c];
                let v = match field {
                    None => Value::Null,
                    Some(bytes) => binary::value(bytes, &col.ty)
                        .and_then(|v| v.coerce_to(&col.ty).map_err(|e| (e.sqlstate(), e.to_string())))
                        .map_err(|(code, e)| client_error(code, format!("column \"{}\": {e}", col.name)))?,
                };
                self.bytes += permafrost_sql::exec::value_size(&v);
                self.rows.push(v);
            }
            self.row_taken(db, limit)?;
        }
        self.partial.drain(..at);
        if self.done && !self.partial.is_empty() {
            return Err(bad("data after the trailer".into()));
        }
        Ok(())
    }
}

/// Length of the first CSV record of `buf` (up to and including its line break, or all).
fn complete_prefix_first(buf: &[u8], f: &CopyFormat) -> usize {
    let mut in_quotes = false;
    for (i, &b) in buf.iter().enumerate() {
        if b == f.quote {
            in_quotes = !in_quotes;
        } else if b == b'\n' && !in_quotes {
            return i + 1;
        }
    }
    buf.len()
}

/// Converts a field's text to a column's type.
fn convert(s: &str, ty: &DataType) -> Result<Value, String> {
    Value::text(s).coerce_to(ty).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text() -> CopyFormat {
        CopyFormat {
            csv: false,
            binary: false,
            delimiter: b'\t',
            null: "\\N".into(),
            header: false,
            quote: b'"',
            escape: b'"',
        }
    }

    fn csv() -> CopyFormat {
        CopyFormat {
            csv: true,
            delimiter: b',',
            null: String::new(),
            ..text()
        }
    }

    fn t(s: &str) -> Field {
        Field::Text(s.into())
    }

    #[test]
    fn copy_to_fields_are_escaped_as_postgresql_writes_them() {
        let line = |field: &[u8], f: &CopyFormat| {
            let mut l = Vec::new();
            write_field(&mut l, field, f);
            String::from_utf8(l).unwrap()
        };
        // Text format: backslash escapes for the delimiter, line breaks and backslash.
        assert_eq!(line(b"a\tb\\c\nd\re", &text()), r"a\tb\\c\nd\re");
        assert_eq!(line(b"plain", &text()), "plain");
        let pipe = CopyFormat {
            delimiter: b'|',
            ..text()
        };
        assert_eq!(line(b"a|b\tc", &pipe), "a\\|b\tc");
        // CSV: quoted when it holds the delimiter, a quote or a line break, or could be read
        // as NULL (an empty string); quotes doubled.
        assert_eq!(line(b"x,\"y\"", &csv()), "\"x,\"\"y\"\"\"");
        assert_eq!(line(b"two\nlines", &csv()), "\"two\nlines\"");
        assert_eq!(line(b"", &csv()), "\"\"");
        assert_eq!(line(b"plain", &csv()), "plain");
        // And what is written reads back.
        for s in ["a\tb\\c\nd", "x,\"y\"", "", "two\nlines", "\\N"] {
            let t = line(s.as_bytes(), &text());
            assert_eq!(
                parse_text_line(t.as_bytes(), &text()).unwrap(),
                vec![Field::Text(s.into())],
                "{s:?}"
            );
            let c = line(s.as_bytes(), &csv());
            assert_eq!(
                parse_csv_record(c.as_bytes(), &csv()).unwrap(),
                vec![Field::Text(s.into())],
                "{s:?}"
            );
        }
    }

    #[test]
    fn text_lines_are_unescaped() {
        let f = text();
        assert_eq!(
            parse_text_line(b"1\ta\\tb\\n\t\\N\t\\101\\x41", &f).unwrap(),
            vec![t("1"), t("a\tb\n"), Field::Null, t("AA")]
        );
        assert_eq!(parse_text_line(b"", &f).unwrap(), vec![t("")]);
        assert!(parse_text_line(b"a\\", &f).is_err());
        assert!(parse_text_line(b"\xff", &f).is_err());
    }

    #[test]
    fn csv_records_follow_quotes() {
        let f = csv();
        assert_eq!(
            parse_csv_record(b"1,\"a,b\",,\"\",\"say \"\"hi\"\"\"", &f).unwrap(),
            vec![t("1"), t("a,b"), Field::Null, t(""), t("say \"hi\"")]
        );
        assert_eq!(parse_csv_record(b"\"x\ny\",2", &f).unwrap(), vec![t("x\ny"), t("2")]);
        assert!(parse_csv_record(b"\"open", &f).is_err());
        assert!(parse_csv_record(b"\"a\"b", &f).is_err());
    }

    #[test]
    fn records_split_at_line_breaks_outside_quotes() {
        let f = csv();
        let buf = b"1,\"a\nb\"\n2,c\n3,\"d";
        assert_eq!(complete_prefix(buf, &f), 12);
        assert_eq!(complete_prefix_first(buf, &f), 8);
        assert_eq!(complete_prefix(b"1\t2\n3", &text()), 4);
        assert_eq!(complete_prefix(b"no line break", &text()), 0);
    }
}
