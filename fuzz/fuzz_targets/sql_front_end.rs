//! The SQL front end (split, parse, bind, plan) over arbitrary text: no panic, no stack
//! overflow. Run with `cargo fuzz run sql_front_end` (nightly).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use permafrost_sql::Catalog;

fuzz_target!(|data: &[u8]| {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    let catalog = CATALOG.get_or_init(permafrost_sql::fuzzing::catalog);
    permafrost_sql::fuzzing::sql_front_end(catalog, data);
});
