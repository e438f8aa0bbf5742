//! Entry points for fuzzing the decoders of bytes this crate reads back from disk (the
//! `disk_decoders` target in `fuzz/`, and the proptests below, which run them in the test
//! suite): any input is an error or a value, never a panic; a record that decodes encodes
//! back to the same bytes.

use crate::commandlog::format::check_segment_header;
use crate::commandlog::{decode_record, encode_record};

/// A command-log record body.
pub fn record(data: &[u8]) {
    if let Ok(rec) = decode_record(data) {
        let mut again = Vec::new();
        encode_record(&rec, &mut again);
        assert_eq!(decode_record(&again).as_ref(), Ok(&rec), "a decoded record re-encodes");
    }
}

/// A command-log segment header.
pub fn segment_header(data: &[u8]) {
    let _ = check_segment_header(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commandlog::{Request, TxnRecord};
    use permafrost_storage::{Decimal, Value};
    use proptest::prelude::*;

    fn valid_record() -> Vec<u8> {
        let rec = TxnRecord {
            partitions: vec![0, 3],
            now: 1_700_000_000_000_000,
            seed: 42,
            request: Request::Call {
                procedure: "transfer".into(),
                params: vec![
                    Value::Int(7),
                    Value::Text("é".into()),
                    Value::Decimal(Decimal::new(150, 2)),
                    Value::Null,
                    Value::Bool(true),
                ],
            },
        };
        let mut out = Vec::new();
        encode_record(&rec, &mut out);
        out
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..256)) {
            record(&data);
            segment_header(&data);
        }

        #[test]
        fn corrupted_records_never_panic(at in 0usize..64, byte in any::<u8>(), cut in 0usize..80) {
            let mut b = valid_record();
            let i = at % b.len();
            b[i] = byte;
            b.truncate(cut.max(1).min(b.len()));
            record(&b);
        }
    }
}
