//! The decoders of bytes read back from disk: command-log records and segment headers,
//! anti-cache blocks and the tuples in them. The first byte picks the decoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    match which % 4 {
        0 => permafrost_durability::fuzzing::record(rest),
        1 => permafrost_durability::fuzzing::segment_header(rest),
        2 => permafrost_anticache::fuzzing::block(rest),
        _ => permafrost_anticache::fuzzing::tuple(rest),
    }
});
