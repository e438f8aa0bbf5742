//! What a walk has bound at its current point: for each relation, a tuple of its table, a
//! row of a subquery in FROM or of a LATERAL item, or a tuple read from its evicted block
//! ([`super::EvictedRows`]).

use std::rc::Rc;

use permafrost_storage::{Row, Table, TupleRef};
use permafrost_types::{Value, ValueRef};

use crate::expr::ColumnSource;
use crate::rows::{RowRef, Rows};

/// Relations whose bindings [`Bindings`] holds inline; those past them (joins of more
/// relations) are kept in a vector.
const INLINE_RELS: usize = 8;

/// The tuples bound at the current point of the nested loops: for each relation, its row,
/// slot and held partition (position in the stores).
pub(in crate::exec) struct Bindings<'s> {
    rows: [Option<Row<'s>>; INLINE_RELS],
    slots: [u32; INLINE_RELS],
    locals: [usize; INLINE_RELS],
    more: Vec<(Option<Row<'s>>, u32, usize)>,
    /// By relation, the bound row of a subquery in FROM.
    derived: Vec<Option<RowRef<'s>>>,
    /// By relation, the bound row of a LATERAL item of FROM: its rows of the current
    /// entry of its level, and which one.
    lateral: Vec<Option<(Rc<Rows>, usize)>>,
    /// By relation, the bound tuple read from its evicted block ([`Bindings::bind_read`]).
    read: Vec<Option<Rc<[Value]>>>,
}

impl<'s> Bindings<'s> {
    pub(in crate::exec) fn new() -> Self {
        Bindings {
            rows: [None; INLINE_RELS],
            slots: [0; INLINE_RELS],
            locals: [0; INLINE_RELS],
            more: Vec::new(),
            derived: Vec::new(),
            lateral: Vec::new(),
            read: Vec::new(),
        }
    }

    /// Binds row `row` of the subquery in FROM that relation `rel` reads.
    pub(super) fn bind_derived(&mut self, rel: usize, row: RowRef<'s>) {
        if self.derived.len() <= rel {
            self.derived.resize(rel + 1, None);
        }
        self.derived[rel] = Some(row);
    }

    /// Binds row `i` of `rows`, the rows of the LATERAL item of FROM that relation `rel`
    /// reads.
    pub(super) fn bind_lateral(&mut self, rel: usize, rows: &Rc<Rows>, i: usize) {
        if self.lateral.len() <= rel {
            self.lateral.resize(rel + 1, None);
        }
        self.lateral[rel] = Some((rows.clone(), i));
    }

    /// Binds `row`, the values of relation `rel`'s evicted tuple `tuple` (at held partition
    /// `local`) read from its block instead of its table. Its slot ([`Bindings::tuple`]) is
    /// then the tuple reference, the evicted bit set.
    pub(super) fn bind_read(&mut self, rel: usize, row: Rc<[Value]>, tuple: TupleRef, local: usize) {
        self.set(rel, None, tuple.0, local);
        if self.read.len() <= rel {
            self.read.resize(rel + 1, None);
        }
        self.read[rel] = Some(row);
    }

    /// A column of relation `rel` when no tuple of its table is bound: a subquery in FROM,
    /// a LATERAL item, or a tuple read from its block (NULL when it has no row bound).
    #[cold]
    fn derived_column(&self, rel: usize, col: usize) -> ValueRef<'_> {
        match (self.derived.get(rel), self.lateral.get(rel), self.read.get(rel)) {
            (Some(Some(r)), _, _) => r.get(col),
            (_, Some(Some((rows, i))), _) => rows.row(*i).get(col),
            (_, _, Some(Some(values))) => values.get(col).map_or(ValueRef::Null, Value::as_ref),
            _ => ValueRef::Null,
        }
    }

    #[inline]
    pub(in crate::exec) fn bind(&mut self, rel: usize, table: &'s Table, slot: u32, local: usize) {
        self.set(rel, Some(table.row(slot)), slot, local);
    }

    /// Sets relation `rel`'s tuple row (`None`: not one of its table's), slot and held
    /// partition.
    #[inline]
    fn set(&mut self, rel: usize, row: Option<Row<'s>>, slot: u32, local: usize) {
        if rel < INLINE_RELS {
            self.rows[rel] = row;
            self.slots[rel] = slot;
            self.locals[rel] = local;
        } else {
            let i = rel - INLINE_RELS;
            if self.more.len() <= i {
                self.more.resize(i + 1, (None, 0, 0));
            }
            self.more[i] = (row, slot, local);
        }
    }

    /// Binds no tuple of relation `rel` (a null-extended relation: its columns read NULL).
    pub(in crate::exec) fn unbind(&mut self, rel: usize) {
        if let Some(d) = self.derived.get_mut(rel) {
            *d = None;
        }
        if let Some(l) = self.lateral.get_mut(rel) {
            *l = None;
        }
        if let Some(r) = self.read.get_mut(rel) {
            *r = None;
        }
        if rel < INLINE_RELS {
            self.rows[rel] = None;
        } else if let Some(m) = self.more.get_mut(rel - INLINE_RELS) {
            m.0 = None;
        }
    }

    /// Relation `rel`'s bound tuple: the position of its partition among the held ones,
    /// and its slot.
    pub(in crate::exec) fn tuple(&self, rel: usize) -> (usize, u32) {
        if rel < INLINE_RELS {
            (self.locals[rel], self.slots[rel])
        } else {
            self.more.get(rel - INLINE_RELS).map_or((0, 0), |m| (m.2, m.1))
        }
    }
}

impl ColumnSource for Bindings<'_> {
    #[inline]
    fn column(&self, rel: usize, col: usize) -> ValueRef<'_> {
        let row = if rel < INLINE_RELS {
            &self.rows[rel]
        } else {
            match self.more.get(rel - INLINE_RELS) {
                Some(m) => &m.0,
                None => return self.derived_column(rel, col),
            }
        };
        match row {
            Some(r) => r.get(col),
            None => self.derived_column(rel, col),
        }
    }
}
