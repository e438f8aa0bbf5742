//! LATERAL items of FROM in the walk: a level whose rows are those of a subquery (or a
//! function call) run at each entry of the level, with the values it reads of the tuples
//! bound before it.

use std::ops::ControlFlow;

use permafrost_types::Value;

use super::{Bindings, Emit, LateralRows, Walker};
use crate::error::{Result, SqlError};
use crate::plan::{Lateral, RelPlan};

impl<'w, 's> Walker<'w, 's> {
    /// This walk, computing the rows of the plan's LATERAL items with `rows`.
    pub(in crate::exec) fn lateral(self, rows: &'w dyn LateralRows) -> Self {
        Walker {
            lateral: Some(rows),
            ..self
        }
    }

    /// A level reading a LATERAL item `l`: its rows for the tuples bound before it, each
    /// checked against the level's filters (and null-extended as a table's would be).
    pub(super) fn walk_lateral(
        &mut self,
        level: usize,
        rp: &RelPlan,
        l: &Lateral,
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        let Some(runner) = self.lateral else {
            return Err(SqlError::Unsupported("a LATERAL item of FROM in this statement".into()));
        };
        let args = l
            .args
            .iter()
            .map(|a| Ok(a.eval(b, self.cx)?.into_value()))
            .collect::<Result<Vec<Value>>>()?;
        let rows = runner.rows(l, args, self.cx)?;
        self.count(level, 1, 0);
        for i in 0..rows.len() {
            b.bind_lateral(rp.rel, &rows, i);
            if self.row_bound(level, rp, 0, b, emit)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        self.left(level, b, emit)
    }
}
