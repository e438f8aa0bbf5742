//! The decoders of bytes read back from disk: command-log records and segment headers,
//! snapshot files and section bodies, the schema log's records, anti-cache blocks and the
//! tuples in them. The first byte picks the decoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    match which % 7 {
        0 => permafrost_durability::fuzzing::record(rest),
        1 => permafrost_durability::fuzzing::segment_header(rest),
        2 => permafrost_durability::fuzzing::snapshot_section(rest),
        3 => permafrost_durability::fuzzing::snapshot_file(rest),
        4 => permafrost_server::fuzzing::schema_log(rest),
        5 => permafrost_anticache::fuzzing::block(rest),
        _ => permafrost_anticache::fuzzing::tuple(rest),
    }
});
