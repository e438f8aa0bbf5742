//! EXPLAIN: a planned statement shown as text, one line per step, outermost first, as
//! PostgreSQL shows its plans (`->` before each step under another): how each relation is
//! reached (which index, with which key or range, or a scan), in which join order, which
//! predicates are checked at each level, what is done with the rows (aggregation, sort,
//! DISTINCT, LIMIT), its subqueries, and which partitions it runs at for the parameters
//! given. There are no costs: the planner does not estimate them in rows or time.

use permafrost_types::{Value, ValueRef};

use crate::expr::{AggFunc, ArithOp, CmpOp, Expr, Func, SubqueryKind};
use crate::plan::{
    Access, CompoundPlan, DERIVED_TABLE, InitPlan, InsertSource, PartitionPick, Plan, RelPlan, SelectPlan, SetOp,
    SetTree,
};
use crate::prepared::{Prepared, Route};
use crate::rows::{ColumnInfo, MoreRows, Rows};

/// The lines of EXPLAIN for `p` run with `params` over a database of `partitions`.
pub fn explain(p: &Prepared, params: &[Value], partitions: u32) -> Vec<String> {
    explain_with(p, params, partitions, None)
}

/// The lines of EXPLAIN ANALYZE for query `p` once it ran: the plan, each relation of the
/// query's walk with the rows it gave (`levels`: by relation, how often the walk entered
/// it and how many rows passed its filters). [`Analyzed`] adds the result's rows and the
/// time taken.
/// `hashes`: by relation, how its hash table went, if it had one.
pub fn explain_analyzed(
    p: &Prepared,
    params: &[Value],
    partitions: u32,
    levels: Vec<(u64, u64)>,
    hashes: Vec<Option<String>>,
) -> Vec<String> {
    explain_with(p, params, partitions, Some((levels, hashes)))
}

/// `levels`: EXPLAIN ANALYZE's counts and hash notes, by relation of the outermost query.
type Levels = (Vec<(u64, u64)>, Vec<Option<String>>);

fn explain_with(p: &Prepared, params: &[Value], partitions: u32, levels: Option<Levels>) -> Vec<String> {
    let mut out = Vec::new();
    let at = match p.route(params, partitions) {
        Route::Single(n) => format!("partition {n} of {partitions}"),
        Route::Any => format!("any one of {partitions} partitions"),
        Route::All => format!("all {partitions} partitions"),
    };
    let mut w = Writer { out: &mut out, levels };
    match p.plan() {
        Plan::Select(s) => w.select(s, 0, &format!("Select  (runs at {at})")),
        Plan::Compound(c) => w.compound(c, 0, &format!("Set operation  (runs at {at})")),
        Plan::Insert(i) => {
            w.line(0, &format!("Insert on {}  (runs at {at})", i.schema.name));
            match &i.source {
                InsertSource::Values(rows) => w.line(1, &format!("Values: {} row(s)", rows.len())),
                InsertSource::Select(s) => w.select(s, 1, "Select"),
            }
            if i.skip_conflicts.is_some() {
                w.line(1, "On conflict: do nothing");
            }
            if let Some(u) = &i.update_conflicts {
                let arbiters: Vec<&str> = u.arbiters.iter().map(|&x| i.schema.indexes[x].name.as_str()).collect();
                w.line(1, &format!("On conflict: do update, arbiters: {}", arbiters.join(", ")));
            }
            w.subqueries(&i.init, 1);
        }
        Plan::Update(u) => {
            w.line(0, &format!("Update on {}  (runs at {at})", u.target.schema.name));
            w.rel(&u.target, std::slice::from_ref(&u.target), 1, None);
            w.subqueries(&u.init, 1);
        }
        Plan::Delete(d) => {
            w.line(0, &format!("Delete on {}  (runs at {at})", d.target.schema.name));
            w.rel(&d.target, std::slice::from_ref(&d.target), 1, None);
            w.subqueries(&d.init, 1);
        }
    }
    out
}

struct Writer<'o> {
    out: &'o mut Vec<String>,
    /// EXPLAIN ANALYZE's counts and hash notes for the outermost query's relations
    /// (taken by the first query shown).
    levels: Option<Levels>,
}

impl Writer<'_> {
    fn line(&mut self, depth: usize, text: &str) {
        let text = if depth == 0 {
            text.to_string()
        } else {
            format!("{}->  {text}", "      ".repeat(depth - 1))
        };
        self.out.push(text);
    }

    /// A detail of the step at `depth` (a predicate, a key), under its line.
    fn detail(&mut self, depth: usize, text: &str) {
        let indent = if depth == 0 { 2 } else { 6 * depth };
        self.out.push(format!("{}{text}", " ".repeat(indent)));
    }

    fn select(&mut self, s: &SelectPlan, depth: usize, title: &str) {
        let show = |e: &Expr| show(e, &s.rels);
        let levels = self.levels.take();
        let actual = |i: usize| {
            levels
                .as_ref()
                .and_then(|(l, h)| Some((l.get(i).copied()?, h.get(i).cloned().flatten())))
        };
        self.line(depth, title);
        let mut d = depth;
        if s.limit.is_some() || s.offset.is_some() {
            d += 1;
            self.line(d, "Limit");
            if let Some(l) = &s.limit {
                self.detail(d, &format!("Count: {}", show(l)));
            }
            if let Some(o) = &s.offset {
                self.detail(d, &format!("Offset: {}", show(o)));
            }
        }
        if s.distinct {
            d += 1;
            self.line(d, "Distinct");
        }
        if s.distinct_on > 0 {
            d += 1;
            self.line(d, &format!("Distinct On  (first {} sort key(s))", s.distinct_on));
        }
        if !s.order.is_empty() {
            d += 1;
            self.line(d, "Sort");
            let keys: Vec<String> = s
                .order
                .iter()
                .map(|k| format!("{}{}", show(&k.expr), if k.desc { " DESC" } else { "" }))
                .collect();
            self.detail(d, &format!("Sort Key: {}", keys.join(", ")));
        }
        if !s.windows.is_empty() {
            d += 1;
            self.line(d, &format!("WindowAgg  ({} window call(s))", s.windows.len()));
        }
        if let Some(a) = &s.agg {
            d += 1;
            self.line(d, if a.groups.is_empty() { "Aggregate" } else { "Group" });
            if !a.groups.is_empty() {
                let keys: Vec<String> = a.groups.iter().map(&show).collect();
                self.detail(d, &format!("Group Key: {}", keys.join(", ")));
            }
            let calls: Vec<String> = a
                .aggs
                .iter()
                .map(|c| {
                    let name = match c.func {
                        AggFunc::Count => "count",
                        AggFunc::Sum => "sum",
                        AggFunc::Min => "min",
                        AggFunc::Max => "max",
                        AggFunc::Avg => "avg",
                        AggFunc::ArrayAgg => "array_agg",
                        AggFunc::StringAgg => "string_agg",
                        AggFunc::JsonAgg { jsonb: false, .. } => "json_agg",
                        AggFunc::JsonAgg { jsonb: true, .. } => "jsonb_agg",
                        AggFunc::JsonObjectAgg { jsonb: false, .. } => "json_object_agg",
                        AggFunc::JsonObjectAgg { jsonb: true, .. } => "jsonb_object_agg",
                        AggFunc::BoolAnd => "bool_and",
                        AggFunc::BoolOr => "bool_or",
                    };
                    let arg = c.arg.as_ref().map_or("*".to_string(), &show);
                    let distinct = if c.distinct { "DISTINCT " } else { "" };
                    let filter = c
                        .filter
                        .as_ref()
                        .map_or(String::new(), |f| format!(" FILTER (WHERE {})", show(f)));
                    format!("{name}({distinct}{arg}){filter}")
                })
                .collect();
            if !calls.is_empty() {
                self.detail(d, &format!("Aggregates: {}", calls.join(", ")));
            }
            if let Some(h) = &a.having {
                self.detail(d, &format!("Filter: {}", show(h)));
            }
        }
        for f in &s.pre_filters {
            self.detail(d, &format!("One-Time Filter: {}", show(f)));
        }
        match s.rels.len() {
            0 => self.line(d + 1, "Result  (one row, no relation)"),
            1 => self.rel(&s.rels[0], &s.rels, d + 1, actual(0)),
            n => {
                self.line(d + 1, &format!("Nested Loop  ({n} relations, outermost first)"));
                for (i, r) in s.rels.iter().enumerate() {
                    self.rel(r, &s.rels, d + 2, actual(i));
                }
            }
        }
        for dr in &s.derived {
            let name = s
                .rels
                .iter()
                .find(|r| r.rel == dr.rel)
                .map_or("?".to_string(), |r| r.schema.name.clone());
            self.tree(&dr.query, d + 1, &format!("Subquery in FROM {name}  (run first)"));
        }
        for r in &s.rels {
            if let Some(l) = &r.lateral {
                let title = format!(
                    "LATERAL item of FROM {}  (run at each entry of its level)",
                    r.schema.name
                );
                self.tree(&l.query, d + 1, &title);
            }
        }
        self.subqueries(&s.init, d + 1);
    }

    /// A relation's step; `actual`: for EXPLAIN ANALYZE, how often it was entered and the
    /// rows it gave.
    /// `actual`: for EXPLAIN ANALYZE, how often the relation was entered, the rows it gave,
    /// and how its hash table went.
    fn rel(&mut self, r: &RelPlan, rels: &[RelPlan], depth: usize, actual: Option<((u64, u64), Option<String>)>) {
        let hash = actual.as_ref().and_then(|(_, h)| h.clone());
        let actual = actual.map(|(a, _)| a);
        let show = |e: &Expr| show(e, rels);
        let name = &r.schema.name;
        let level = rels.iter().position(|x| std::ptr::eq(x, r)).unwrap_or(0);
        let join: String = r
            .starts
            .iter()
            .map(|&(_, end)| match end - level {
                0 => "  (null-extended: left join)".to_string(),
                1 => "  (null-extended with the next relation: left join)".to_string(),
                n => format!("  (null-extended with the next {n} relations: left join)"),
            })
            .collect();
        let title = if r.schema.id == DERIVED_TABLE {
            let hashed = if matches!(r.access, Access::Hash { .. }) {
                "  (its rows hashed at the first entry)"
            } else {
                ""
            };
            format!("Subquery Scan on {name}{hashed}{join}")
        } else {
            let where_ = match &r.pick {
                PartitionPick::All => "every partition",
                PartitionPick::Key(_) => "the partition of its key",
                PartitionPick::Replicated => "one copy (replicated)",
            };
            match &r.access {
                Access::Scan => format!("Seq Scan on {name}  (at {where_}){join}"),
                Access::IndexEq { index, .. } => {
                    let ix = &r.schema.indexes[*index];
                    let kind = if ix.unique {
                        "Unique Index Lookup"
                    } else {
                        "Index Lookup"
                    };
                    format!("{kind} using {} on {name}  (at {where_}){join}", ix.name)
                }
                Access::IndexAny { index, .. } => {
                    format!(
                        "Index Lookups (each array element) using {} on {name}  (at {where_}){join}",
                        r.schema.indexes[*index].name
                    )
                }
                Access::IndexRange { index, backward, .. } => {
                    format!(
                        "Index Range Scan{} using {} on {name}  (at {where_}){join}",
                        if *backward { " Backward" } else { "" },
                        r.schema.indexes[*index].name
                    )
                }
                Access::Hash { .. } => {
                    // Its table holds the rows of every partition it reads.
                    let where_ = match r.pick {
                        PartitionPick::Replicated => where_,
                        _ => "every partition",
                    };
                    format!("Hash Lookup on {name}  (its rows at {where_} hashed at the first entry){join}")
                }
            }
        };
        let title = match actual {
            None => title,
            Some((0, _)) => format!("{title}  (never executed)"),
            // As PostgreSQL: the rows of one entry on average, rounded.
            Some((loops, rows)) => format!(
                "{title}  (actual rows={} loops={loops})",
                (rows as f64 / loops as f64).round() as u64
            ),
        };
        self.line(depth, &title);
        let col = |c: usize| r.schema.columns.get(c).map_or("?".to_string(), |c| c.name.clone());
        match &r.access {
            Access::IndexEq { index, keys } => {
                let conds: Vec<String> = r.schema.indexes[*index]
                    .columns
                    .iter()
                    .zip(keys)
                    .map(|(&c, k)| format!("{} = {}", col(c), show(k)))
                    .collect();
                self.detail(depth, &format!("Index Cond: {}", conds.join(" AND ")));
            }
            Access::IndexAny { index, array } => {
                let c = r.schema.indexes[*index].columns[0];
                self.detail(depth, &format!("Index Cond: {} = ANY ({})", col(c), show(array)));
            }
            Access::IndexRange {
                index,
                prefix,
                lower,
                upper,
                ..
            } => {
                let cols = &r.schema.indexes[*index].columns;
                let mut conds: Vec<String> = cols
                    .iter()
                    .zip(prefix)
                    .map(|(&c, k)| format!("{} = {}", col(c), show(k)))
                    .collect();
                if let Some(&next) = cols.get(prefix.len()) {
                    if let Some((v, incl)) = lower {
                        conds.push(format!("{} {} {}", col(next), if *incl { ">=" } else { ">" }, show(v)));
                    }
                    if let Some((v, incl)) = upper {
                        conds.push(format!("{} {} {}", col(next), if *incl { "<=" } else { "<" }, show(v)));
                    }
                }
                self.detail(depth, &format!("Index Cond: {}", conds.join(" AND ")));
            }
            Access::Hash { cols, keys } => {
                let conds: Vec<String> = cols
                    .iter()
                    .zip(keys)
                    .map(|(&c, k)| format!("{} = {}", col(c), show(k)))
                    .collect();
                self.detail(depth, &format!("Hash Cond: {}", conds.join(" AND ")));
            }
            Access::Scan => {}
        }
        let label = if RelPlan::null_extended(rels, level) {
            "Join Filter"
        } else {
            "Filter"
        };
        let shown = match r.access {
            Access::Hash { .. } => 0,
            _ => r.bounds.min(r.filters.len()),
        };
        for f in &r.filters[shown..] {
            self.detail(depth, &format!("{label}: {}", show(f)));
        }
        for f in r.ends.iter().flat_map(|g| &g.after) {
            self.detail(depth, &format!("Filter: {}", show(f)));
        }
        if let Some(h) = hash {
            self.detail(depth, &h);
        }
    }

    fn subqueries(&mut self, init: &[std::sync::Arc<InitPlan>], depth: usize) {
        for (i, ip) in init.iter().enumerate() {
            let kind = match ip.kind {
                SubqueryKind::Scalar => "scalar",
                SubqueryKind::Exists => "EXISTS",
                SubqueryKind::In => "IN",
                SubqueryKind::Array => "ARRAY",
            };
            let title = if ip.correlated {
                format!("SubPlan {}  ({kind}, run per row)", i + 1)
            } else {
                format!("InitPlan {}  ({kind}, run once first)", i + 1)
            };
            self.tree(&ip.query, depth, &title);
        }
    }

    fn tree(&mut self, t: &SetTree, depth: usize, title: &str) {
        match t {
            SetTree::Select { plan, .. } => self.select(plan, depth, title),
            SetTree::Compound(c) => self.compound(c, depth, title),
            SetTree::Op { op, all, left, right } => {
                let op = match op {
                    SetOp::Union => "Union",
                    SetOp::Intersect => "Intersect",
                    SetOp::Except => "Except",
                };
                let all = if *all { " All" } else { "" };
                self.line(depth, &format!("{title}: {op}{all}"));
                self.tree(left, depth + 1, "Select");
                self.tree(right, depth + 1, "Select");
            }
            SetTree::Values { rows, .. } => self.line(depth, &format!("{title}: Values  ({} rows)", rows.len())),
            SetTree::Series { .. } => self.line(depth, &format!("{title}: Function Scan on generate_series")),
            SetTree::Unnest { .. } => self.line(depth, &format!("{title}: Function Scan on unnest")),
            SetTree::Working { .. } => self.line(
                depth,
                &format!("{title}: WorkTable Scan  (the rows the last step added)"),
            ),
            SetTree::Recursive { base, step, all, .. } => {
                let all = if *all { " All" } else { "" };
                self.line(depth, &format!("{title}: Recursive Union{all}"));
                self.tree(base, depth + 1, "Select");
                self.tree(step, depth + 1, "Select  (run until it adds no row)");
            }
        }
    }

    fn compound(&mut self, c: &CompoundPlan, depth: usize, title: &str) {
        self.line(depth, title);
        let mut d = depth;
        if c.limit.is_some() || c.offset.is_some() {
            d += 1;
            self.line(d, "Limit");
        }
        if !c.order.is_empty() {
            d += 1;
            self.line(d, "Sort");
        }
        self.tree(&c.tree, d + 1, "Select");
    }
}

/// An expression of a query reading `rels` as text: columns as `table.column`,
/// parameters, constants, operators.
fn show(e: &Expr, rels: &[RelPlan]) -> String {
    let show = |x: &Expr| show(x, rels);
    let bin = |a: &Expr, op: &str, b: &Expr| format!("({} {op} {})", show(a), show(b));
    match e {
        Expr::Column { rel, col } => match rels.iter().find(|r| r.rel == *rel) {
            Some(r) => format!(
                "{}.{}",
                r.schema.name,
                r.schema.columns.get(*col).map_or("?", |c| c.name.as_str())
            ),
            None => format!("column {col} of relation {rel}"),
        },
        Expr::Param(i) => format!("${}", i + 1),
        Expr::Const(v) => match v {
            Value::Null => "NULL".into(),
            Value::Text(t) => format!("'{t}'"),
            v => v.to_string(),
        },
        Expr::Outer(i) => format!("outer.{}", i + 1),
        Expr::Not(x) => format!("NOT {}", show(x)),
        Expr::Neg(x) => format!("-{}", show(x)),
        Expr::And(a, b) => bin(a, "AND", b),
        Expr::Or(a, b) => bin(a, "OR", b),
        Expr::Cmp(op, a, b) => bin(a, cmp_symbol(*op), b),
        Expr::Arith(op, a, b) => {
            let op = match op {
                ArithOp::Add => "+",
                ArithOp::Sub => "-",
                ArithOp::Mul => "*",
                ArithOp::Div => "/",
                ArithOp::Mod => "%",
            };
            bin(a, op, b)
        }
        Expr::Concat(a, b) => bin(a, "||", b),
        Expr::IsNull { expr, negated } => {
            format!("({} IS {}NULL)", show(expr), if *negated { "NOT " } else { "" })
        }
        Expr::Cast(x, ty) => format!("({})::{ty}", show(x)),
        Expr::Func(Func::AnyEq { negated, .. }, args) if args.len() == 2 => {
            let op = if *negated { "<> ALL" } else { "= ANY" };
            format!("({} {op} ({}))", show(&args[0]), show(&args[1]))
        }
        Expr::Func(Func::AnyCmp { op, all, .. }, args) if args.len() == 2 => {
            let which = if *all { "ALL" } else { "ANY" };
            format!("({} {} {which} ({}))", show(&args[0]), cmp_symbol(*op), show(&args[1]))
        }
        Expr::Func(f, args) => {
            let args: Vec<String> = args.iter().map(show).collect();
            format!("{}({})", format!("{f:?}").to_lowercase(), args.join(", "))
        }
        Expr::Now => "now()".into(),
        Expr::Group(i) => format!("group.{}", i + 1),
        Expr::Agg(i) => format!("agg.{}", i + 1),
        Expr::Window(i) => format!("window.{}", i + 1),
        Expr::Subquery(n) => format!("(InitPlan {})", n + 1),
        Expr::Exists(n) => format!("EXISTS(InitPlan {})", n + 1),
        Expr::InSubquery { expr, sub, negated } => {
            format!(
                "({} {}IN (InitPlan {}))",
                show(expr),
                if *negated { "NOT " } else { "" },
                sub + 1
            )
        }
        Expr::SubPlan { sub, kind, args, test } => {
            let args: Vec<String> = args.iter().map(show).collect();
            let run = format!("SubPlan {}({})", sub + 1, args.join(", "));
            match (kind, test) {
                (SubqueryKind::Exists, _) => format!("EXISTS({run})"),
                (SubqueryKind::In, Some((x, negated))) => {
                    format!("({} {}IN ({run}))", show(x), if *negated { "NOT " } else { "" })
                }
                _ => format!("({run})"),
            }
        }
        Expr::IsDistinct { left, right, negated } => {
            let op = if *negated {
                "IS NOT DISTINCT FROM"
            } else {
                "IS DISTINCT FROM"
            };
            bin(left, op, right)
        }
        Expr::InList { expr, list, negated } => {
            let items: Vec<String> = list.iter().map(show).collect();
            format!(
                "({} {}IN ({}))",
                show(expr),
                if *negated { "NOT " } else { "" },
                items.join(", ")
            )
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => {
            let op = match (negated, case_insensitive) {
                (false, false) => "LIKE",
                (true, false) => "NOT LIKE",
                (false, true) => "ILIKE",
                (true, true) => "NOT ILIKE",
            };
            bin(expr, op, pattern)
        }
        Expr::Case { .. } => "CASE ... END".into(),
    }
}

/// EXPLAIN ANALYZE's result: the plan's lines once the query's whole result is counted —
/// at once, or, when the result has a rest (rows spilled past `work_mem`, read where the
/// statement is answered, off its partitions), as that rest once it is read through.
pub struct Analyzed {
    lines: Vec<String>,
    rows: u64,
    rest: Option<Box<dyn MoreRows>>,
    started: std::time::Instant,
    summary: bool,
    columns: std::sync::Arc<[ColumnInfo]>,
}

impl Analyzed {
    /// `lines` (from [`explain_analyzed`]) for a query started at `started` that gave
    /// `result` (its rows are counted, not kept); `columns`: EXPLAIN's one column.
    pub fn new(
        lines: Vec<String>,
        mut result: Rows,
        started: std::time::Instant,
        summary: bool,
        columns: std::sync::Arc<[ColumnInfo]>,
    ) -> Analyzed {
        // (A write without RETURNING gives no rows: what it wrote is counted.)
        let rows = if result.columns().is_empty() {
            result.affected
        } else {
            result.len() as u64
        };
        Analyzed {
            lines,
            rows,
            rest: result.take_rest(),
            started,
            summary,
            columns,
        }
    }

    /// The result: the lines, or none yet and the rest that gives them.
    pub fn into_rows(mut self) -> Rows {
        if self.rest.is_none() {
            return self.finish();
        }
        let mut out = Rows::empty(self.columns.clone());
        out.set_rest(Box::new(self));
        out
    }

    /// The lines, once every row is counted (given once: the lines are taken).
    fn finish(&mut self) -> Rows {
        if let Some(first) = self.lines.first_mut() {
            first.push_str(&format!("  (actual rows={})", self.rows));
        }
        if self.summary {
            let ms = self.started.elapsed().as_secs_f64() * 1000.0;
            self.lines.push(format!("Execution Time: {ms:.3} ms"));
        }
        let mut out = Rows::empty(self.columns.clone());
        for line in std::mem::take(&mut self.lines) {
            out.push_row(std::iter::once(ValueRef::Text(&line)));
        }
        out.varying = usize::from(self.summary);
        out
    }
}

impl MoreRows for Analyzed {
    fn next_rows(&mut self) -> crate::error::Result<Option<Rows>> {
        let Some(rest) = self.rest.as_mut() else {
            return Ok(None);
        };
        while let Some(part) = rest.next_rows()? {
            self.rows += part.len() as u64;
        }
        self.rest = None;
        Ok(Some(self.finish()))
    }
}

/// A comparison operator as SQL writes it.
fn cmp_symbol(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::NotEq => "<>",
        CmpOp::Lt => "<",
        CmpOp::LtEq => "<=",
        CmpOp::Gt => ">",
        CmpOp::GtEq => ">=",
    }
}
