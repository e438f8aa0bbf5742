//! Helpers the command log's test files share.

use permafrost_durability::{Chunk, CommandLog, LogError};

/// Appends a chunk and waits for its callback; returns the last LSN and the result.
pub fn append_chunk_wait(log: &CommandLog, chunk: Chunk) -> (u64, Result<(), LogError>) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let last = log.append_chunk(
        chunk,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    (last, rx.recv().expect("done is called"))
}
