//! The PostgreSQL frontend message decoder and the query-text parsers behind it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    permafrost_server::fuzzing::frontend_messages(data);
});
