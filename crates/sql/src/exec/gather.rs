//! What a SELECT gathers from the rows it visits: the result as it streams, the rows to
//! sort, or the groups of an aggregate ([`Gather`]), and how it finishes them.

use super::*;

/// What a SELECT gathers from the rows it visits.
pub(super) enum Gather {
    /// Rows go straight into the result (no ORDER BY, DISTINCT or aggregate).
    Stream {
        rows: Rows,
        /// Rows skipped for OFFSET so far.
        skipped: u64,
        /// Rows produced so far (in this buffer and the ones handed out before it).
        emitted: u64,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
    },
    /// Output rows with their sort keys, sorted at the end.
    Sorted {
        collected: Vec<(Vec<Value>, Vec<Value>)>,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
    },
    Agg {
        table: AggTable,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
    },
}

impl Gather {
    pub(super) fn new(
        p: &SelectPlan,
        columns: &Arc<[ColumnInfo]>,
        work_mem: usize,
        limit: Option<u64>,
        offset: u64,
    ) -> Gather {
        let mem = WorkMem::new(work_mem);
        if p.agg.is_some() {
            Gather::Agg {
                table: AggTable::default(),
                limit,
                offset,
                mem,
            }
        } else if p.order.is_empty() && !p.distinct {
            Gather::Stream {
                rows: Rows::with_capacity(columns.clone(), p.size_hint()),
                skipped: 0,
                emitted: 0,
                limit,
                offset,
                mem,
            }
        } else {
            Gather::Sorted {
                collected: Vec::new(),
                limit,
                offset,
                mem,
            }
        }
    }

    /// Whether no further row can change the result (a streamed LIMIT reached).
    pub(super) fn is_full(&self) -> bool {
        matches!(self, Gather::Stream { emitted, limit: Some(l), .. } if emitted >= l)
    }

    pub(super) fn add(
        &mut self,
        p: &SelectPlan,
        b: &dyn ColumnSource,
        cx: &Cx<'_>,
        pool: Option<&Arc<MemoryPool>>,
    ) -> Result<ControlFlow<()>> {
        match self {
            Gather::Agg { table, mem, .. } => {
                let agg = p.agg.as_ref().expect("an aggregate plan");
                if let Some(new_group) = table.add(agg, b, cx)? {
                    mem.add(new_group, pool)?;
                }
                Ok(ControlFlow::Continue(()))
            }
            Gather::Stream {
                rows,
                skipped,
                emitted,
                limit,
                offset,
                mem,
            } => {
                if limit.is_some_and(|l| *emitted >= l) {
                    return Ok(ControlFlow::Break(()));
                }
                if *skipped < *offset {
                    *skipped += 1;
                    return Ok(ControlFlow::Continue(()));
                }
                rows.begin_row();
                for e in &p.output {
                    match e {
                        Expr::Column { rel, col } => rows.push(b.column(*rel, *col)),
                        e => rows.push(e.eval(b, cx)?.as_ref()),
                    }
                }
                *emitted += 1;
                mem.holds(rows.data_len() + rows.len() * 4, pool)?;
                Ok(if limit.is_some_and(|l| *emitted >= l) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            }
            Gather::Sorted { collected, mem, .. } => {
                let out = p
                    .output
                    .iter()
                    .map(|e| Ok(e.eval(b, cx)?.into_value()))
                    .collect::<Result<Vec<_>>>()?;
                let keys = p
                    .order
                    .iter()
                    .map(|k| Ok(k.expr.eval(b, cx)?.into_value()))
                    .collect::<Result<Vec<_>>>()?;
                // Held twice at the end: here, and as the result rows.
                mem.add(2 * (values_size(&keys) + values_size(&out)), pool)?;
                collected.push((keys, out));
                Ok(ControlFlow::Continue(()))
            }
        }
    }

    /// The rows that can be answered now and the state to go on gathering with: for a
    /// streamed result its rows so far; otherwise nothing yet.
    pub(super) fn split(mut self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>) -> (Rows, Gather) {
        let first = match &mut self {
            Gather::Stream { rows, .. } => {
                p.note_size(rows.data_len());
                std::mem::replace(rows, Rows::empty(columns.clone()))
            }
            _ => Rows::empty(columns.clone()),
        };
        (first, self)
    }

    pub(super) fn finish(self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>, cx: &Cx<'_>) -> Result<Rows> {
        match self {
            Gather::Stream { rows, .. } => {
                p.note_size(rows.data_len());
                Ok(rows)
            }
            Gather::Sorted {
                collected,
                limit,
                offset,
                ..
            } => Ok(emit_sorted(p, collected, Rows::empty(columns.clone()), limit, offset)),
            Gather::Agg {
                table, limit, offset, ..
            } => finish_agg(
                p,
                p.agg.as_ref().expect("an aggregate plan"),
                table,
                columns,
                cx,
                limit,
                offset,
            ),
        }
    }
}

pub(super) fn emit_sorted(
    p: &SelectPlan,
    mut collected: Vec<(Vec<Value>, Vec<Value>)>,
    mut rows: Rows,
    limit: Option<u64>,
    offset: u64,
) -> Rows {
    if !p.order.is_empty() {
        collected.sort_by(|a, b| {
            for (i, k) in p.order.iter().enumerate() {
                let (x, y) = (a.0[i].as_ref(), b.0[i].as_ref());
                let o = match (x.is_null(), y.is_null()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => {
                        if k.nulls_first {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        }
                    }
                    (false, true) => {
                        if k.nulls_first {
                            Ordering::Greater
                        } else {
                            Ordering::Less
                        }
                    }
                    (false, false) => {
                        let o = permafrost_storage::types::total_compare(x, y);
                        if k.desc { o.reverse() } else { o }
                    }
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
    }
    let mut seen: HashSet<Vec<Value>> = HashSet::new();
    let mut skipped = 0u64;
    for (_, out) in collected {
        if p.distinct && !seen.insert(out.clone()) {
            continue;
        }
        if skipped < offset {
            skipped += 1;
            continue;
        }
        if limit.is_some_and(|l| rows.len() as u64 >= l) {
            break;
        }
        rows.push_row(out.iter().map(Value::as_ref));
    }
    rows
}

#[derive(Default)]
pub(super) struct AggTable {
    index: HashMap<Vec<Value>, usize>,
    keys: Vec<Vec<Value>>,
    accs: Vec<Vec<Acc>>,
}

#[derive(Clone)]
pub(super) struct Acc {
    value: Option<Value>,
    count: i64,
    distinct: Option<HashSet<Value>>,
}

impl AggTable {
    /// Adds a row to its group; returns about the bytes a new group took (`None` when the
    /// group existed).
    pub(super) fn add(&mut self, agg: &AggPlan, b: &dyn ColumnSource, cx: &Cx<'_>) -> Result<Option<usize>> {
        let key = agg
            .groups
            .iter()
            .map(|g| Ok(g.eval(b, cx)?.into_value()))
            .collect::<Result<Vec<_>>>()?;
        let mut new_group = None;
        let gi = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.keys.len();
                // The key twice (index and list), the accumulators.
                new_group = Some(2 * values_size(&key) + agg.aggs.len() * std::mem::size_of::<Acc>());
                self.index.insert(key.clone(), i);
                self.keys.push(key);
                self.accs.push(new_accs(agg));
                i
            }
        };
        for (call, acc) in agg.aggs.iter().zip(self.accs[gi].iter_mut()) {
            let v = match &call.arg {
                None => {
                    acc.count += 1;
                    continue;
                }
                Some(e) => e.eval(b, cx)?.into_value(),
            };
            if v.is_null() {
                continue;
            }
            if let Some(set) = &mut acc.distinct
                && !set.insert(v.clone())
            {
                continue;
            }
            acc.count += 1;
            // A sum typed numeric over integers adds as numeric.
            let v = match (&v, call.func, call.ty) {
                (Value::Int(i), AggFunc::Sum, Some(DataType::Decimal { .. })) => {
                    Value::Decimal(permafrost_storage::Numeric::from(*i))
                }
                _ => v,
            };
            acc.value = Some(match (call.func, acc.value.take()) {
                (_, None) => v,
                (AggFunc::Count, Some(x)) => x,
                (AggFunc::Sum | AggFunc::Avg, Some(x)) => arith(crate::expr::ArithOp::Add, x.as_ref(), v.as_ref())?,
                (AggFunc::Min, Some(x)) => {
                    if compare(v.as_ref(), x.as_ref())? == Some(Ordering::Less) {
                        v
                    } else {
                        x
                    }
                }
                (AggFunc::Max, Some(x)) => {
                    if compare(v.as_ref(), x.as_ref())? == Some(Ordering::Greater) {
                        v
                    } else {
                        x
                    }
                }
            });
        }
        Ok(new_group)
    }
}

pub(super) fn new_accs(agg: &AggPlan) -> Vec<Acc> {
    agg.aggs
        .iter()
        .map(|c| Acc {
            value: None,
            count: 0,
            distinct: c.distinct.then(HashSet::new),
        })
        .collect()
}

pub(super) fn finish_agg(
    p: &SelectPlan,
    agg: &AggPlan,
    mut table: AggTable,
    columns: &Arc<[ColumnInfo]>,
    cx: &Cx<'_>,
    limit: Option<u64>,
    offset: u64,
) -> Result<Rows> {
    if agg.groups.is_empty() && table.keys.is_empty() {
        table.keys.push(vec![]);
        table.accs.push(new_accs(agg));
    }
    let mut collected = Vec::with_capacity(table.keys.len());
    for (key, accs) in table.keys.iter().zip(&table.accs) {
        let finals: Vec<Value> = agg
            .aggs
            .iter()
            .zip(accs)
            .map(|(call, acc)| -> Result<Value> {
                Ok(match call.func {
                    AggFunc::Count => Value::Int(acc.count),
                    AggFunc::Avg => match &acc.value {
                        None => Value::Null,
                        Some(Value::Double(d)) => Value::Double(d / acc.count as f64),
                        Some(sum) => arith(
                            crate::expr::ArithOp::Div,
                            to_numeric(sum).as_ref(),
                            ValueRef::Int(acc.count),
                        )?,
                    },
                    _ => acc.value.clone().unwrap_or(Value::Null),
                })
            })
            .collect::<Result<_>>()?;
        let pcx = Cx {
            params: cx.params,
            now: cx.now,
            groups: key,
            aggs: &finals,
            arrays: Default::default(),
        };
        if let Some(h) = &agg.having
            && !h.test(&NoColumns, &pcx)?
        {
            continue;
        }
        let out = p
            .output
            .iter()
            .map(|e| e.eval_const(&pcx))
            .collect::<Result<Vec<_>>>()?;
        let keys = p
            .order
            .iter()
            .map(|k| k.expr.eval_const(&pcx))
            .collect::<Result<Vec<_>>>()?;
        collected.push((keys, out));
    }
    Ok(emit_sorted(p, collected, Rows::empty(columns.clone()), limit, offset))
}

pub(super) fn to_numeric(v: &Value) -> Value {
    match v {
        Value::Int(i) => Value::Decimal((*i).into()),
        other => other.clone(),
    }
}
