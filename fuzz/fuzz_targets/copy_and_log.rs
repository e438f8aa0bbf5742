//! COPY rows (text and CSV) and schema-log records.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    permafrost_server::fuzzing::copy_and_log(data);
});
