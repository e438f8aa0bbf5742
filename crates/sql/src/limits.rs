//! What one statement may ask of the front end: its length, its nesting depth, and the
//! stack that parsing, binding, planning and dropping it take.
//!
//! A client controls how deep a statement's syntax tree is: `1 + 1 + ... + 1` with n terms
//! parses into a left-deep tree of depth n, and every recursive walk of that tree (binding,
//! printing, even dropping it) takes stack in proportion. A thread's fixed stack would
//! overflow and abort the whole server, so:
//!
//! - The front end of a long statement runs on a stack sized for its text
//!   ([`with_stack_for`]): the deepest tree a text of n bytes can spell has about n/2
//!   levels, and each level of the walks that follow the raw tree (dropping it, printing it
//!   in an error) takes at most [`STACK_PER_BYTE`] bytes per byte of text. The stack is
//!   mapped on demand and given back when the statement has been planned, so a short
//!   statement (the common case) pays nothing and a long one pays a map and an unmap.
//! - Bound expressions are at most [`MAX_EXPR_DEPTH`] deep (SQLSTATE 54001, "stack depth
//!   limit exceeded", as PostgreSQL answers a statement too deep for its `max_stack_depth`).
//!   AND, OR and `||` chains are associative, so the binder turns them into balanced trees
//!   (depth log2 n): a 100,000-term OR chain, which generated SQL produces and PostgreSQL
//!   runs, binds about 17 levels deep. A chain of `+` is not (overflow and types depend on
//!   the order), so it keeps its depth and is refused past the limit, as in PostgreSQL
//!   (1,200 terms run; 10,000 get 54001).
//! - Statements longer than [`MAX_STATEMENT_BYTES`] are refused (54000) before they are
//!   parsed: the parse tree of a statement takes many times its text in memory.
//!
//! Execution walks bound trees only, so its recursion is bounded by [`MAX_EXPR_DEPTH`]; the
//! threads that run statements have stacks sized for that ([`EXECUTION_STACK`]).

pub use crate::caps::{MAX_EXPR_DEPTH, MAX_STATEMENT_BYTES};
use crate::error::{Result, SqlError};

/// Statements up to this many bytes are parsed on the caller's stack: they cannot nest
/// deeply enough to need more than a thread's default stack (2 MiB; unoptimized builds
/// take several times the stack per level).
const SMALL_STATEMENT: usize = if cfg!(debug_assertions) { 128 } else { 1024 };

/// Stack reserved per byte of a long statement's text, for the walks over its raw tree
/// (measured by the tests below: release builds need 16, unoptimized ones more than 128).
const STACK_PER_BYTE: usize = if cfg!(debug_assertions) { 512 } else { 64 };

/// Stack reserved for binding and planning, whose recursion [`MAX_EXPR_DEPTH`] bounds.
const BIND_STACK: usize = 64 << 20;

/// The stack a thread that executes statements needs: evaluation and dropping of bound
/// trees [`MAX_EXPR_DEPTH`] deep, with room to spare.
pub const EXECUTION_STACK: usize = 64 << 20;

/// Runs `f`, which executes statements, with an execution stack: at once on a thread that
/// has half of [`EXECUTION_STACK`] left (the engine's threads and the server's connection
/// threads are made with it), else on a stack of that size mapped for the call (a caller's
/// thread of an embedding program or a test's runtime running a statement inline).
pub fn on_execution_stack<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(EXECUTION_STACK / 2, EXECUTION_STACK, f)
}

/// Refuses a statement text longer than [`MAX_STATEMENT_BYTES`].
pub fn check_length(sql: &str) -> Result<()> {
    if sql.len() > MAX_STATEMENT_BYTES {
        return Err(SqlError::TooLong(sql.len()));
    }
    Ok(())
}

/// Runs `f` (the parsing, binding and planning of `sql`, and the dropping of its syntax
/// tree) on a stack large enough for anything a text of that length can nest. A text
/// longer than [`MAX_STATEMENT_BYTES`] gets no larger stack: parsing refuses it at once.
pub fn with_stack_for<T>(sql: &str, f: impl FnOnce() -> T) -> T {
    if sql.len() <= SMALL_STATEMENT || sql.len() > MAX_STATEMENT_BYTES {
        return f();
    }
    stacker::grow(stack_for(sql.len()), f)
}

fn stack_for(len: usize) -> usize {
    BIND_STACK + len * STACK_PER_BYTE
}

/// Runs `f`, one level of a recursion over a tree, on a new stack segment when the one it
/// runs on has less than [`RED_ZONE`] left: how deep a statement may nest is bounded by
/// [`MAX_EXPR_DEPTH`], how much stack each level takes by the compiler (an unoptimized
/// build's frames are several times larger), so a fixed reservation alone can fall short.
pub(crate) fn deep<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(RED_ZONE, DEEP_SEGMENT, f)
}

/// Stack left below which [`deep`] takes a new segment (a level of binding takes about
/// 25 KiB unoptimized).
const RED_ZONE: usize = 1 << 20;

/// The size of each segment [`deep`] takes.
const DEEP_SEGMENT: usize = 16 << 20;

/// Counts nesting while binding: [`MAX_EXPR_DEPTH`] levels at most.
#[derive(Debug, Default, Clone)]
pub(crate) struct Depth(usize);

impl Depth {
    pub(crate) fn enter(&mut self) -> Result<()> {
        self.0 += 1;
        if self.0 > MAX_EXPR_DEPTH {
            return Err(SqlError::TooDeep);
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.0 -= 1;
    }
}

/// Builds a balanced tree over `items` (at least one) with `join`, keeping their order:
/// for an associative operator the value is the chain's, and the depth is log2 n.
pub(crate) fn balanced<E>(mut items: Vec<E>, join: &impl Fn(E, E) -> E) -> E {
    debug_assert!(!items.is_empty());
    while items.len() > 1 {
        let mut next = Vec::with_capacity(items.len().div_ceil(2));
        let mut it = items.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => next.push(join(a, b)),
                None => next.push(a),
            }
        }
        items = next;
    }
    items.pop().expect("at least one item")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum T {
        Leaf(u32),
        Pair(Box<T>, Box<T>),
    }

    fn depth(t: &T) -> usize {
        match t {
            T::Leaf(_) => 1,
            T::Pair(a, b) => 1 + depth(a).max(depth(b)),
        }
    }

    fn leaves(t: &T, out: &mut Vec<u32>) {
        match t {
            T::Leaf(v) => out.push(*v),
            T::Pair(a, b) => {
                leaves(a, out);
                leaves(b, out);
            }
        }
    }

    #[test]
    fn a_balanced_tree_keeps_the_order_and_is_log_deep() {
        for n in [1u32, 2, 3, 7, 8, 9, 1000] {
            let t = balanced((0..n).map(T::Leaf).collect(), &|a, b| T::Pair(Box::new(a), Box::new(b)));
            let mut out = Vec::new();
            leaves(&t, &mut out);
            assert_eq!(out, (0..n).collect::<Vec<_>>());
            let expect = 1 + (n as f64).log2().ceil() as usize;
            assert_eq!(depth(&t), expect, "n = {n}");
        }
    }

    #[test]
    fn depth_is_refused_past_the_limit() {
        let mut d = Depth::default();
        for _ in 0..MAX_EXPR_DEPTH {
            d.enter().unwrap();
        }
        let e = d.enter().unwrap_err();
        assert_eq!(e.sqlstate(), "54001");
    }

    #[test]
    fn overlong_statements_are_refused() {
        let s = "x".repeat(MAX_STATEMENT_BYTES + 1);
        assert_eq!(check_length(&s).unwrap_err().sqlstate(), "54000");
    }
}
