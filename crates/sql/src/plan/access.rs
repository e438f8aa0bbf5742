//! Access paths and join order: the predicates that an index can answer (sargs), the
//! cheapest access to each relation, and the cheapest order of up to five relations.

use std::sync::Arc;

use permafrost_storage::{IndexKind, TableSchema};
use permafrost_types::DataType;

use super::tree::*;
use crate::bind::Binder;
use crate::error::{Result, SqlError};
use crate::expr::{CmpOp, Expr, Func};
/// A predicate usable to reach relation `rel`: `col op value`, `value` computable before.
struct Sarg {
    col: usize,
    op: CmpOp,
    value: Expr,
}

fn sargs(rel: usize, conjuncts: &[Expr], known: u64) -> Vec<Sarg> {
    let mut out = Vec::new();
    for c in conjuncts {
        if let Expr::Cmp(op, a, b) = c {
            if *op == CmpOp::NotEq {
                continue;
            }
            let usable = |v: &Expr| v.rels() & !known == 0 && v.rels() & (1 << rel) == 0;
            match (a.as_ref(), b.as_ref()) {
                (Expr::Column { rel: r, col }, v) if *r == rel && usable(v) => out.push(Sarg {
                    col: *col,
                    op: *op,
                    value: v.clone(),
                }),
                (v, Expr::Column { rel: r, col }) if *r == rel && usable(v) => out.push(Sarg {
                    col: *col,
                    op: op.flip(),
                    value: v.clone(),
                }),
                _ => {}
            }
        }
    }
    out
}

/// The `col = ANY(array)` predicates usable to reach relation `rel`: the column and the
/// array, computable before.
fn any_sargs(rel: usize, conjuncts: &[Expr], known: u64) -> Vec<(usize, Expr)> {
    conjuncts
        .iter()
        .filter_map(|c| match c {
            Expr::Func(Func::AnyEq { negated: false, .. }, args) => match args.as_slice() {
                [Expr::Column { rel: r, col }, v]
                    if *r == rel && v.rels() & !known == 0 && v.rels() & (1 << rel) == 0 =>
                {
                    Some((*col, v.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The best access path for `schema` given the usable predicates (`anys`: `col =
/// ANY(array)`), with its cost and the number of rows it is expected to produce.
fn choose_access(schema: &TableSchema, sargs: &[Sarg], anys: &[(usize, Expr)]) -> (Access, f64, f64) {
    let eq = |col: usize| {
        sargs
            .iter()
            .find(|s| s.col == col && s.op == CmpOp::Eq)
            .map(|s| s.value.clone())
    };
    let mut best = (Access::Scan, 1000.0, 1000.0);
    for (i, ix) in schema.indexes.iter().enumerate() {
        let prefix: Vec<Expr> = ix.columns.iter().map_while(|&c| eq(c)).collect();
        let (cost, rows, access) = if prefix.len() == ix.columns.len() {
            let (cost, rows) = if ix.unique { (1.0, 1.0) } else { (4.0, 10.0) };
            let cost = if ix.kind == IndexKind::Ordered {
                cost * 1.2
            } else {
                cost
            };
            (cost, rows, Access::IndexEq { index: i, keys: prefix })
        } else if ix.kind == IndexKind::Ordered {
            let next = ix.columns[prefix.len()];
            let bound = |ops: [CmpOp; 2]| {
                sargs
                    .iter()
                    .find(|s| s.col == next && ops.contains(&s.op))
                    .map(|s| (s.value.clone(), s.op == ops[1]))
            };
            let lower = bound([CmpOp::Gt, CmpOp::GtEq]);
            let upper = bound([CmpOp::Lt, CmpOp::LtEq]);
            if prefix.is_empty() && lower.is_none() && upper.is_none() {
                continue;
            }
            let ranged = lower.is_some() as u8 + upper.is_some() as u8;
            let cost = 20.0 - 2.0 * prefix.len() as f64 - ranged as f64;
            let rows = 100.0 / (1.0 + prefix.len() as f64 + ranged as f64);
            (
                cost,
                rows,
                Access::IndexRange {
                    index: i,
                    prefix,
                    lower,
                    upper,
                    backward: false,
                },
            )
        } else {
            continue;
        };
        if cost < best.1 {
            best = (access, cost, rows);
        }
    }
    for (i, ix) in schema.indexes.iter().enumerate() {
        let [col] = ix.columns.as_slice() else { continue };
        let Some((_, array)) = anys.iter().find(|(c, _)| c == col) else {
            continue;
        };
        let (cost, rows) = if ix.unique { (3.0, 10.0) } else { (12.0, 40.0) };
        if cost < best.1 {
            best = (
                Access::IndexAny {
                    index: i,
                    array: array.clone(),
                },
                cost,
                rows,
            );
        }
    }
    best
}

/// The access to relation `r` (of `schema`) that its predicates `reach` allow once the
/// relations `known` are bound, entered `fanout` times: its path, cost and rows
/// ([`choose_access`], [`hashed`]), with the predicates it was chosen from.
fn access_to(
    schema: &TableSchema,
    r: usize,
    reach: &[Expr],
    known: u64,
    fanout: f64,
) -> ((Access, f64, f64), Vec<Sarg>) {
    let sg = sargs(r, reach, known);
    let best = choose_access(schema, &sg, &any_sargs(r, reach, known));
    (hashed(best, &sg, fanout), sg)
}

/// A relation that no index reaches, entered once per row of those before it (`fanout`
/// of them, expected): reached through a hash table of its rows by the columns its
/// equalities name (`Access::Hash`), built at its first entry (a scan's cost, shared by
/// the entries), then a lookup per entry. Scanned instead when entered once.
fn hashed(best: (Access, f64, f64), sargs: &[Sarg], fanout: f64) -> (Access, f64, f64) {
    if !matches!(best.0, Access::Scan) || fanout <= 1.0 {
        return best;
    }
    let (mut cols, mut keys) = (Vec::new(), Vec::new());
    for s in sargs.iter().filter(|s| s.op == CmpOp::Eq) {
        if !cols.contains(&s.col) {
            cols.push(s.col);
            keys.push(s.value.clone());
        }
    }
    if cols.is_empty() {
        return best;
    }
    (Access::Hash { cols, keys }, 2.0 + best.1 / fanout, 10.0)
}

/// Whether `c` reads values of the query around this one (a correlated subquery's).
fn reads_outer(c: &Expr) -> bool {
    let mut found = false;
    c.walk(&mut |e| found |= matches!(e, Expr::Outer(_)));
    found
}

/// How many times a correlated subquery is taken to run, for its join order and access
/// paths (it runs once per row of the query around it, the rows of a scan's guess).
const PER_ROW: f64 = 1000.0;

/// A group of relations null-extended together (the right side of a LEFT JOIN, the left
/// of a RIGHT JOIN: one relation or a join's) and its conditions: its ON conditions and
/// those of the inner joins inside it.
pub(super) struct OuterJoin {
    /// Its relations, as bits.
    pub rels: u64,
    pub on: Vec<Expr>,
    /// A FULL JOIN's right side.
    pub full: bool,
}

/// The relations of the bits of `m`.
fn rels_of(m: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |r| m & (1 << r) != 0)
}

/// Whether each of `groups` takes consecutive places of `order`.
fn contiguous(order: &[usize], groups: &[OuterJoin]) -> bool {
    groups.iter().all(|g| {
        let n = g.rels.count_ones() as usize;
        match order.iter().position(|&r| g.rels & (1 << r) != 0) {
            Some(i) => order
                .get(i..i + n)
                .is_some_and(|run| run.iter().all(|&r| g.rels & (1 << r) != 0)),
            None => true,
        }
    })
}

pub(super) fn plan_joins(
    b: &Binder<'_>,
    conjuncts: Vec<Expr>,
    mut outer: Vec<OuterJoin>,
) -> Result<(Vec<RelPlan>, Vec<Expr>)> {
    let n = b.rels.len();
    let pre_filters: Vec<Expr> = conjuncts.iter().filter(|c| c.rels() == 0).cloned().collect();
    let conjuncts: Vec<Expr> = conjuncts.into_iter().filter(|c| c.rels() != 0).collect();
    if n == 0 {
        return Ok((vec![], pre_filters));
    }
    if let Some(full) = outer.iter().find(|o| o.full) {
        return full_join(b, conjuncts, full, pre_filters);
    }
    // Innermost first (a group inside another has fewer relations). A null-extended group
    // is reached through its own conditions alone, after the relations they read outside
    // it, its relations one after another.
    outer.sort_by_key(|o| o.rels.count_ones());
    let mut home: Vec<Option<usize>> = vec![None; n];
    let mut deps = vec![0u64; n];
    for (g, o) in outer.iter().enumerate() {
        let needs = o.on.iter().fold(0, |m, c| m | c.rels()) & !o.rels;
        for r in rels_of(o.rels) {
            home[r].get_or_insert(g);
            deps[r] |= needs;
        }
    }
    // A LATERAL item comes after the relations it reads.
    let mut lateral: Vec<Option<Arc<Lateral>>> = vec![None; n];
    for (r, l) in &b.lateral {
        deps[*r] |= l.args.iter().fold(0, |m, a| m | a.rels());
        lateral[*r] = Some(l.clone());
    }
    let reach = |r: usize| home[r].map_or(&conjuncts[..], |g| &outer[g].on[..]);
    let orders: Vec<Vec<usize>> = if n <= 5 {
        permutations(n)
            .into_iter()
            .filter(|o| {
                let mut known = 0u64;
                contiguous(o, &outer)
                    && o.iter().all(|&r| {
                        let ok = deps[r] & !known == 0;
                        known |= 1 << r;
                        ok
                    })
            })
            .collect()
    } else {
        vec![greedy_order(b, &conjuncts, &deps, &outer, &reach)]
    };
    // A correlated subquery is entered once per row of the query around it (its walks
    // share their hash tables, `Reader`).
    let entries = if conjuncts.iter().any(reads_outer) {
        PER_ROW
    } else {
        1.0
    };
    let mut best: Option<(f64, Vec<usize>)> = None;
    for order in orders {
        let mut known = 0u64;
        let mut cost = 0.0;
        let mut fanout = entries;
        for &r in &order {
            let (_, c, rows) = access_to(&b.rels[r].schema, r, reach(r), known, fanout).0;
            cost += c * fanout;
            fanout *= rows;
            known |= 1 << r;
        }
        if best.as_ref().is_none_or(|(bc, _)| cost < *bc) {
            best = Some((cost, order));
        }
    }
    let order = best
        .ok_or_else(|| SqlError::Unsupported("these outer joins' order".into()))?
        .1;
    let mut level_of = vec![0; n];
    for (level, &r) in order.iter().enumerate() {
        level_of[r] = level;
    }
    // Each group's first and last level.
    let spans: Vec<(usize, usize)> = outer
        .iter()
        .map(|o| {
            let levels: Vec<usize> = rels_of(o.rels).map(|r| level_of[r]).collect();
            (
                levels.iter().copied().min().unwrap_or(0),
                levels.iter().copied().max().unwrap_or(0),
            )
        })
        .collect();
    let mut known = 0u64;
    let mut fanout = entries;
    let mut accesses = Vec::with_capacity(n);
    for &r in &order {
        let schema = b.rels[r].schema.clone();
        let ((mut access, _, rows), sg) = access_to(&schema, r, reach(r), known, fanout);
        if lateral[r].is_some() {
            // (Its rows differ from one entry to the next: no hash table of them.)
            access = Access::Scan;
        }
        fanout *= rows;
        let implied = implied_by(&access, &schema, r);
        accesses.push((schema, access, sg, implied, known));
        known |= 1 << r;
    }
    // Each condition is checked at the level that binds the last relation it reads (for a
    // group's, not before the group's first): there as a filter, or, where that level is
    // inside a group within the condition's own, once the walk is past that group.
    let mut filters: Vec<Vec<Expr>> = vec![Vec::new(); n];
    let mut afters: Vec<Vec<Expr>> = vec![Vec::new(); outer.len()];
    let scoped = conjuncts
        .into_iter()
        .map(|c| (None, c))
        .chain(
            outer
                .iter_mut()
                .enumerate()
                .flat_map(|(g, o)| std::mem::take(&mut o.on).into_iter().map(move |c| (Some(g), c))),
        )
        .collect::<Vec<_>>();
    for (scope, c) in scoped {
        let mut at = rels_of(c.rels()).map(|r| level_of[r]).max().unwrap_or(0);
        if let Some(g) = scope {
            at = at.max(spans[g].0);
        }
        let within = |t: &OuterJoin| match scope {
            None => true,
            Some(g) => t.rels != outer[g].rels && t.rels & !outer[g].rels == 0,
        };
        let r = order[at];
        let around = (0..outer.len())
            .filter(|&t| outer[t].rels & (1 << r) != 0 && within(&outer[t]))
            .max_by_key(|&t| outer[t].rels.count_ones());
        match around {
            Some(t) => afters[t].push(c),
            None if accesses[at].3.contains(&c) => {}
            None => filters[at].push(c),
        }
    }
    let mut rels = Vec::with_capacity(n);
    for (level, ((schema, access, sg, _, before), mut filters)) in accesses.into_iter().zip(filters).enumerate() {
        let r = order[level];
        // The range's bounds first, or the predicates a hash table's rows are checked
        // against as it is built (`RelPlan::bounds`).
        let is_bound = |c: &Expr| match &access {
            // (Not one that reads the query around: its walks share the table.)
            Access::Hash { .. } => c.rels() == 1 << r && !reads_outer(c),
            _ => range_bound_of(&access, &schema, r, before | 1 << r, c),
        };
        filters.sort_by_key(|c| !is_bound(c));
        let bounds = filters.iter().take_while(|c| is_bound(c)).count();
        let pick = partition_pick(&schema, &sg);
        let starts = (0..outer.len())
            .filter(|&g| spans[g].0 == level)
            .map(|g| (g, spans[g].1))
            .collect();
        let ends = (0..outer.len())
            .filter(|&g| spans[g].1 == level)
            .map(|g| GroupEnd {
                id: g,
                start: spans[g].0,
                after: std::mem::take(&mut afters[g]),
            })
            .collect();
        rels.push(RelPlan {
            rel: r,
            schema,
            access,
            filters,
            starts,
            ends,
            full: false,
            bounds,
            pick,
            lateral: lateral[r].take(),
        });
    }
    Ok((rels, pre_filters))
}

/// Whether conjunct `c` is one an `IndexRange` access of relation `rel` took a bound
/// from: a comparison of the range's column with that bound's value, the right way.
fn range_bound_of(access: &Access, schema: &TableSchema, rel: usize, known: u64, c: &Expr) -> bool {
    let Access::IndexRange {
        index,
        prefix,
        lower,
        upper,
        ..
    } = access
    else {
        return false;
    };
    let next = schema.indexes[*index].columns[prefix.len()];
    sargs(rel, std::slice::from_ref(c), known).iter().any(|s| {
        let from = |b: &Option<(Expr, bool)>, ops: [CmpOp; 2]| {
            b.as_ref()
                .is_some_and(|(v, incl)| *v == s.value && s.op == ops[usize::from(*incl)])
        };
        s.col == next && (from(lower, [CmpOp::Gt, CmpOp::GtEq]) || from(upper, [CmpOp::Lt, CmpOp::LtEq]))
    })
}

/// The equality predicates an exact-key index lookup already guarantees for every tuple it
/// returns (the lookup converts the value exactly to the column type or returns nothing;
/// `col = ANY(array)` reads each element as the column's type, as its lookups do).
pub(super) fn implied_by(access: &Access, schema: &TableSchema, rel: usize) -> Vec<Expr> {
    if let Access::IndexAny { index, array } = access {
        let col = schema.indexes[*index].columns[0];
        let elem = Some(schema.columns[col].ty);
        return vec![Expr::Func(
            Func::AnyEq { elem, negated: false },
            vec![Expr::Column { rel, col }, array.clone()],
        )];
    }
    let Access::IndexEq { index, keys } = access else {
        return vec![];
    };
    schema.indexes[*index]
        .columns
        .iter()
        .zip(keys)
        .flat_map(|(&col, k)| {
            let c = Expr::Column { rel, col };
            [
                Expr::Cmp(CmpOp::Eq, c.clone().boxed(), k.clone().boxed()),
                Expr::Cmp(CmpOp::Eq, k.clone().boxed(), c.boxed()),
            ]
        })
        .collect()
}

fn partition_pick(schema: &TableSchema, sargs: &[Sarg]) -> PartitionPick {
    match schema.partition_column {
        None => PartitionPick::Replicated,
        Some(pc) => match sargs.iter().find(|s| s.col == pc && s.op == CmpOp::Eq) {
            Some(s) => PartitionPick::Key(s.value.clone()),
            None => PartitionPick::All,
        },
    }
}

/// `a FULL JOIN b ON ...`, the query's only relations: `a` scanned whole, `b` reached
/// through the ON conditions alone and null-extended, every other predicate checked at
/// `b`'s level (`after`), where the walk also emits, at its end, the tuples of `b` no
/// tuple of `a` matched (`RelPlan::full`).
fn full_join(
    b: &Binder<'_>,
    conjuncts: Vec<Expr>,
    full: &OuterJoin,
    pre_filters: Vec<Expr>,
) -> Result<(Vec<RelPlan>, Vec<Expr>)> {
    let [x, y] = [0, 1];
    if b.rels.len() != 2 || b.rels.iter().any(|r| r.schema.id == DERIVED_TABLE) {
        return Err(SqlError::Unsupported(
            "FULL JOIN beside other relations or of a subquery (it joins two tables here)".into(),
        ));
    }
    let (first, second) = if full.rels == 1 << y { (x, y) } else { (y, x) };
    let schema = b.rels[first].schema.clone();
    let first_plan = RelPlan {
        rel: first,
        pick: partition_pick(&schema, &[]),
        schema,
        access: Access::Scan,
        filters: Vec::new(),
        starts: Vec::new(),
        ends: Vec::new(),
        full: false,
        bounds: 0,
        lateral: None,
    };
    let schema = b.rels[second].schema.clone();
    let known = 1u64 << first;
    let sg = sargs(second, &full.on, known);
    let (access, _, _) = choose_access(&schema, &sg, &any_sargs(second, &full.on, known));
    let implied = implied_by(&access, &schema, second);
    let mut filters: Vec<Expr> = full.on.iter().filter(|c| !implied.contains(c)).cloned().collect();
    let is_bound = |c: &Expr| range_bound_of(&access, &schema, second, known | 1 << second, c);
    filters.sort_by_key(|c| !is_bound(c));
    let bounds = filters.iter().take_while(|c| is_bound(c)).count();
    let second_plan = RelPlan {
        rel: second,
        pick: partition_pick(&schema, &sg),
        schema,
        access,
        filters,
        starts: vec![(0, 1)],
        ends: vec![GroupEnd {
            id: 0,
            start: 1,
            after: conjuncts,
        }],
        full: true,
        bounds,
        lateral: None,
    };
    Ok((vec![first_plan, second_plan], pre_filters))
}

/// A join order for more relations than every order can be costed for: at each step the
/// relation that is cheapest to reach from those before it and gives the fewest rows once
/// the predicates it completes are checked (each taken to keep a tenth), so that lookups
/// and relations joined to those before come first and cross products last. Once a
/// null-extended group's first relation is taken, the rest of the group comes next.
fn greedy_order<'e>(
    b: &Binder<'_>,
    conjuncts: &[Expr],
    deps: &[u64],
    groups: &[OuterJoin],
    reach: &dyn Fn(usize) -> &'e [Expr],
) -> Vec<usize> {
    let n = b.rels.len();
    let mut known = 0u64;
    let mut fanout = 1.0;
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        // The rest of the innermost group begun, or any relation.
        let open = groups
            .iter()
            .filter(|g| g.rels & known != 0 && g.rels & !known != 0)
            .min_by_key(|g| g.rels.count_ones())
            .map_or(u64::MAX, |g| g.rels);
        let mut best: Option<(f64, usize, f64)> = None;
        for r in (0..n).filter(|&r| known & (1 << r) == 0 && open & (1 << r) != 0 && deps[r] & !known == 0) {
            let (_, cost, rows) = access_to(&b.rels[r].schema, r, reach(r), known, fanout).0;
            let with = known | 1 << r;
            let checked = conjuncts
                .iter()
                .filter(|c| c.rels() & !with == 0 && c.rels() & (1 << r) != 0)
                .count();
            let score = cost + rows * 0.1f64.powi(checked.min(300) as i32);
            if best.is_none_or(|(s, _, _)| score < s) {
                best = Some((score, r, rows));
            }
        }
        let Some((_, r, rows)) = best else {
            // (Outer joins whose ON conditions read each other: FROM order.)
            let r = (0..n)
                .find(|&r| known & (1 << r) == 0 && open & (1 << r) != 0)
                .expect("a relation left");
            order.push(r);
            known |= 1 << r;
            continue;
        };
        order.push(r);
        known |= 1 << r;
        fanout *= rows;
    }
    order
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    fn go(cur: &mut Vec<usize>, used: &mut [bool], out: &mut Vec<Vec<usize>>) {
        if cur.len() == used.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..used.len() {
            if !used[i] {
                used[i] = true;
                cur.push(i);
                go(cur, used, out);
                cur.pop();
                used[i] = false;
            }
        }
    }
    let mut out = Vec::new();
    go(&mut Vec::new(), &mut vec![false; n], &mut out);
    out
}

// ---------------------------------------------------------------------------------------
// INSERT, UPDATE, DELETE

/// Whether the one relation of `rels` is read in `order` already, and then reads it that
/// way: its access is a range of an ordered index over one partition's rows, and the sort
/// keys are, after columns the range fixes by equality, the index's next columns in order,
/// all ascending or all descending (visited backward), none of them nullable and each of a
/// type whose index key orders as its values do (integers, dates, timestamps). Then the
/// rows need no sort, and a LIMIT stops the walk at its last row (`ORDER BY o_id DESC
/// LIMIT 1` over `(w_id, d_id, o_id)` reads one entry, not the district's).
pub(super) fn index_order(rels: &mut [RelPlan], order: &[SortKey]) -> bool {
    let [r] = rels else { return false };
    if order.is_empty() || r.lateral.is_some() || r.full || matches!(r.pick, PartitionPick::All) {
        return false;
    }
    let Access::IndexRange {
        index,
        prefix,
        backward,
        ..
    } = &mut r.access
    else {
        return false;
    };
    let ix = &r.schema.indexes[*index];
    if ix.kind != IndexKind::Ordered {
        return false;
    }
    let fixed = &ix.columns[..prefix.len()];
    let mut next = prefix.len();
    let mut desc = None;
    for k in order {
        let Expr::Column { rel, col } = &k.expr else {
            return false;
        };
        if *rel != r.rel {
            return false;
        }
        if fixed.contains(col) {
            continue;
        }
        let c = &r.schema.columns[*col];
        let keyed = matches!(
            c.ty,
            DataType::SmallInt
                | DataType::Integer
                | DataType::BigInt
                | DataType::Date
                | DataType::Timestamp
                | DataType::TimestampTz
        );
        if ix.columns.get(next) != Some(col) || c.nullable || !keyed || *desc.get_or_insert(k.desc) != k.desc {
            return false;
        }
        next += 1;
    }
    *backward = desc.unwrap_or(false);
    true
}
