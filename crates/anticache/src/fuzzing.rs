//! Entry points for fuzzing the decoders of anti-cache blocks and the tuples inside them
//! (the `disk_decoders` target in `fuzz/`, and the proptests below, which run them in the
//! test suite): any input is an error or a value, never a panic.

use permafrost_storage::layout::TupleLayout;
use permafrost_storage::{Column, DetachedRow, TableSchema};
use permafrost_types::DataType;

use crate::block::BlockReader;

/// A table with a column of every kind of representation (integers, a double, a numeric,
/// a timestamp, a boolean, short and long text, bytes), for decoding tuples.
fn layout() -> TupleLayout {
    let columns = vec![
        Column::new("a", DataType::BigInt),
        Column::new("b", DataType::Integer),
        Column::new("c", DataType::SmallInt),
        Column::new("d", DataType::Double),
        Column::new(
            "e",
            DataType::Decimal {
                precision: 10,
                scale: 2,
            },
        ),
        Column::new("f", DataType::Timestamp),
        Column::new("g", DataType::Boolean),
        Column::new("h", DataType::Varchar(Some(8))),
        Column::new("i", DataType::Varchar(None)),
        Column::new("j", DataType::Bytea),
    ];
    TupleLayout::new(&TableSchema {
        id: 0,
        name: "t".into(),
        columns,
        indexes: Vec::new(),
        partition_column: None,
        partition_declared: false,
        evictable: true,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
    })
}

/// An anti-cache block: its header and checksum, then each entry, each decoded as a tuple
/// of [`layout`] and every value read.
pub fn block(data: &[u8]) {
    let Ok(reader) = BlockReader::open(data, 0) else {
        return;
    };
    let mut row = DetachedRow::new(layout());
    for entry in reader.entries() {
        let Ok((_, _, bytes)) = entry else { return };
        if let Ok(r) = row.load(bytes) {
            for c in 0..r.len() {
                let _ = r.get(c);
            }
        }
    }
}

/// One serialized tuple (a block entry's body) of [`layout`].
pub fn tuple(data: &[u8]) {
    let mut row = DetachedRow::new(layout());
    if let Ok(r) = row.load(data) {
        for c in 0..r.len() {
            let _ = r.get(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::BlockWriter;
    use proptest::prelude::*;

    fn valid_block() -> Vec<u8> {
        let mut w = BlockWriter::new(4096);
        w.push(3, &[0u8; 40]);
        w.push(9, &[1u8; 70]);
        w.finish(1, 0, 123).to_vec()
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
            block(&data);
            tuple(&data);
        }

        /// Blocks with valid checksums around arbitrary entries: every tuple is decoded.
        #[test]
        fn arbitrary_entries_in_checked_blocks_never_panic(
            bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..6),
        ) {
            let mut w = BlockWriter::new(4096);
            for (i, b) in bodies.iter().enumerate() {
                if w.fits(b.len()) {
                    w.push(i as u32, b);
                }
            }
            block(&w.finish(1, 0, 0));
        }

        #[test]
        fn corrupted_blocks_never_panic(at in 0usize..4096, byte in any::<u8>(), cut in 0usize..4096) {
            let mut b = valid_block();
            let i = at % b.len();
            b[i] = byte;
            b.truncate(cut.max(1).min(b.len()));
            block(&b);
        }
    }
}
