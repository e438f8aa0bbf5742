//! Entry points for the fuzz targets (`fuzz/`, run with `cargo fuzz`) and for the tests
//! that feed the same decoders random bytes on stable Rust: everything the server decodes
//! from a client or from disk. None of them may panic, whatever the bytes.
//!
//! Known: the frontend message decoder is pgwire's, and pgwire 0.42.1 panics on some
//! truncated messages (a Parse of length 4: `P 00 00 00 04`). The panic ends that
//! connection's task only — the server goes on serving every other client (test
//! `wire::a_truncated_message_ends_only_its_connection`) — and is to be fixed upstream.
//! Our own decoders (query text, COPY rows, schema log) are checked here on every run.

use bytes::BytesMut;
use pgwire::messages::{DecodeContext, PgWireFrontendMessage, ProtocolVersion};

use crate::copy::{CopyFormat, parse_csv_record, parse_text_line};

/// Decodes a stream of frontend messages, first as a connection's start (SSL request,
/// startup packet) and then as messages of a logged-in connection; each decoded query
/// text goes through the statement splitter and the procedure parser.
pub fn frontend_messages(data: &[u8]) {
    for started in [false, true] {
        let mut ctx = DecodeContext::new(ProtocolVersion::PROTOCOL3_0);
        if started {
            ctx.awaiting_frontend_ssl = false;
            ctx.awaiting_frontend_startup = false;
        }
        let mut buf = BytesMut::from(data);
        // Every message consumes bytes, so this ends.
        for _ in 0..data.len() + 1 {
            match PgWireFrontendMessage::decode(&mut buf, &ctx) {
                Ok(Some(PgWireFrontendMessage::Query(q))) => sql_text(&q.query),
                Ok(Some(PgWireFrontendMessage::Parse(p))) => sql_text(&p.query),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
            ctx.awaiting_frontend_ssl = false;
            ctx.awaiting_frontend_startup = false;
        }
    }
}

/// The scanner and the parsers of statements sqlparser does not read.
pub fn sql_text(sql: &str) {
    if let Ok(scan) = permafrost_sql::scan::scan(sql) {
        for s in scan.texts() {
            let _ = permafrost_sql::script::parse_create_procedure(&s);
            let _ = permafrost_sql::script::parse_drop_procedure(&s);
            crate::syscat::fuzz_translate(&s);
        }
    }
}

/// COPY rows in the three formats, and the schema log's records.
pub fn copy_and_log(data: &[u8]) {
    let text = CopyFormat {
        csv: false,
        binary: false,
        delimiter: b'\t',
        null: "\\N".into(),
        header: false,
        quote: b'"',
        escape: b'"',
    };
    let csv = CopyFormat {
        csv: true,
        delimiter: b',',
        null: String::new(),
        ..text.clone()
    };
    for line in data.split(|&b| b == b'\n') {
        let _ = parse_text_line(line, &text);
        let _ = parse_csv_record(line, &csv);
    }
    crate::copy_binary::fuzz(data);
    schema_log(data);
}

/// The records of a schema log (`permafrost_executor::schema_log`).
pub fn schema_log(data: &[u8]) {
    let _ = permafrost_executor::schema_log::decode(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_bytes_never_panic_our_decoders(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            copy_and_log(&data);
            sql_text(&String::from_utf8_lossy(&data));
        }

        #[test]
        fn sql_like_text_never_panics_the_parsers(
            words in proptest::collection::vec(
                prop::sample::select(vec![
                    "CREATE", "OR", "REPLACE", "PROCEDURE", "DROP", "IF", "EXISTS", "p", "(", ")", ",", "a", "INT",
                    "NUMERIC(3,", "LANGUAGE", "SQL", "PARTITION", "ON", "AS", "$$", "$x$", ";", "'", "\"", "--", "/*",
                    "SELECT", "1", "pg_catalog.pg_class c", "c.relkind IN (", "oid = '", "OPERATOR(pg_catalog.~) '",
                ]),
                0..40,
            ),
        ) {
            sql_text(&words.join(" "));
        }
    }
}
