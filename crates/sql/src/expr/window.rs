//! Window function calls as the binder leaves them for the executor (`exec/window.rs`):
//! the function, its arguments, the partition and order keys, and the frame.

use permafrost_types::DataType;

use super::{AggFunc, Expr};

/// A window function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WinFunc {
    RowNumber,
    Rank,
    DenseRank,
    /// `lag(x [, n [, default]])` / `lead(...)`: `x` of the row `n` before / after.
    Lag,
    Lead,
    FirstValue,
    /// `last_value(x)`: `x` of the frame's last row (by default the current row's last peer).
    LastValue,
    /// `nth_value(x, n)`: `x` of the frame's `n`-th row, NULL while the frame is shorter.
    NthValue,
    /// `ntile(n)`: the partition cut into `n` buckets as equal as can be, the first ones
    /// a row larger; the bucket's number.
    Ntile,
    /// `percent_rank()`: (rank - 1) / (rows of the partition - 1), 0 for one row.
    PercentRank,
    /// `cume_dist()`: rows up to the current row's last peer / rows of the partition.
    CumeDist,
    /// An aggregate over the frame (by default the partition's rows up to the current
    /// row's last peer with ORDER BY, the whole partition without).
    Agg(AggFunc),
}

/// `func(args) OVER (PARTITION BY partition ORDER BY order frame)`.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCall {
    pub func: WinFunc,
    /// `None` for `count(*)`, else the arguments.
    pub args: Vec<Expr>,
    pub star: bool,
    pub partition: Vec<Expr>,
    /// ORDER BY keys: expression, descending, NULLs first.
    pub order: Vec<(Expr, bool, bool)>,
    /// The rows an aggregate or a value function (`first_value`, `last_value`,
    /// `nth_value`) reads; ranking and offsets ignore it, as in PostgreSQL.
    pub frame: Frame,
    pub ty: Option<DataType>,
}

/// A window frame: for each row, the rows of its partition that the window function
/// reads, from `start` to `end`, counted in `units`.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Default for Frame {
    /// `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`: with ORDER BY, up to the
    /// current row's last peer; without, the whole partition (every row is a peer).
    fn default() -> Frame {
        Frame {
            units: FrameUnits::Range,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
        }
    }
}

/// What a frame's offsets count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    /// Rows: `ROWS 2 PRECEDING` is the two rows before the current one and itself.
    Rows,
    /// Values of the one ORDER BY key: `RANGE 10 PRECEDING` is the rows whose key is at
    /// most 10 below the current row's (above, when descending); CURRENT ROW is its peers.
    Range,
    /// Peer groups: `GROUPS 1 PRECEDING` is the previous peer group and the current one.
    Groups,
}

/// One end of a frame. An offset is an expression without columns, evaluated once per
/// partition: NULL or negative is an error (22004, 22013).
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}
