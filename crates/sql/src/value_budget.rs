//! How a function or operator builds a value: checked against the statement's memory
//! before a byte of it is allocated.
//!
//! A short statement can ask for an enormous value: `lpad('a', 2147483647, 'b')` asks for
//! 2 GiB (8 GiB reserved for four-byte characters), `x || x` doubles whatever `x` holds.
//! The statement's working memory ([`crate::workmem`]) counts the rows a statement
//! gathers, but a value is built before its row is counted, so an unchecked builder takes
//! the process past any budget in one allocation (it drove a server limited to 16 MiB past
//! 6 GB). PostgreSQL refuses a value past 1 GB (`MaxAllocSize`) with 54000, "requested
//! length too large"; here a value is also refused when it would take the statement past
//! its `work_mem` (54000) or the database's statement pool has no room for it (53200).
//!
//! So every value a function builds goes through one API: the function works out the
//! length of its result first (with saturating arithmetic: an overflow is simply too
//! large) and asks [`ValueBudget::check`], or it builds through a [`TextBuilder`] (an
//! aggregate, whose state outlives a call, through [`ValueBudget::append`]), which checks
//! before each growth of its buffer. A function added later that builds through
//! the builder inherits every check; one that allocated on its own would be the defect
//! this module exists to prevent. The system-catalog engine (SQLite, in the server) applies
//! the same rule with the same budget: its own functions build through [`TextBuilder`] and
//! SQLite's are held to the same length by its `SQLITE_LIMIT_LENGTH`.
//!
//! A value is checked, not reserved: it lives only until the row that holds it is counted
//! by the statement's [`crate::workmem::WorkMem`], which does reserve. What the statement
//! holds already ([`ValueBudget::set_held`]) counts against the same `work_mem`, so a row
//! of many large values is refused as its values are built, not after.

use std::cell::Cell;

use permafrost_types::ValueRef;

use crate::error::{Result, SqlError};
use crate::workmem::{MemoryPool, POOL_STEP};

/// The largest value PostgreSQL builds: 1 GB less one byte (`MaxAllocSize`), of which a
/// text value's four-byte length header takes four.
pub const MAX_VALUE_BYTES: usize = 0x3fff_ffff - 4;

/// The least memory a statement may hold (`work_mem` is a quarter of `memory_limit`, at
/// least this): the budget of values built where no statement's is known (constants
/// evaluated while planning, partition routing).
pub const MIN_STATEMENT_MEMORY: usize = 16 << 20;

/// What one value a statement builds may take: its `work_mem` less what it holds, and room
/// in the database's statement pool.
#[derive(Debug, Clone)]
pub struct ValueBudget<'p> {
    limit: usize,
    pool: Option<&'p MemoryPool>,
    held: Cell<usize>,
}

impl Default for ValueBudget<'_> {
    /// The budget of a statement of the least memory, with no pool
    /// ([`MIN_STATEMENT_MEMORY`]).
    fn default() -> Self {
        ValueBudget::new(MIN_STATEMENT_MEMORY, None)
    }
}

impl<'p> ValueBudget<'p> {
    /// A statement's budget: `work_mem` bytes, and room in `pool` (None: no shared limit).
    pub fn new(work_mem: usize, pool: Option<&'p MemoryPool>) -> ValueBudget<'p> {
        ValueBudget {
            limit: work_mem,
            pool,
            held: Cell::new(0),
        }
    }

    /// The statement holds `bytes` now (its gathered rows): a value may take only what
    /// is left of `work_mem`.
    pub fn set_held(&self, bytes: usize) {
        self.held.set(bytes);
    }

    /// The statement's `work_mem`.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether a value of `len` bytes may be built: 54000 past [`MAX_VALUE_BYTES`]
    /// ("requested length too large", as PostgreSQL), 54000 past what is left of the
    /// statement's `work_mem`, 53200 when the statement pool has no room for it.
    pub fn check(&self, len: usize) -> Result<()> {
        if len > MAX_VALUE_BYTES {
            return Err(SqlError::ValueTooLarge);
        }
        if len > self.limit {
            return Err(SqlError::ValueOverWorkMem { len, limit: self.limit });
        }
        if self.held.get().saturating_add(len) > self.limit {
            // The value alone would fit: what the statement holds already does not leave
            // room for it, as for a row it gathers.
            return Err(SqlError::OutOfWorkMem(self.limit));
        }
        // (A value smaller than the step a statement holds without the pool never
        // touches it, as rows do not.)
        if let Some(pool) = self.pool
            && len > POOL_STEP
            && !pool.has_room(len - POOL_STEP)
        {
            return Err(SqlError::StatementMemory {
                held: pool.used(),
                limit: pool.limit(),
            });
        }
        Ok(())
    }

    /// A builder of a text value, its buffer sized for `len` bytes (checked first).
    pub fn text(&self, len: usize) -> Result<TextBuilder<'_, 'p>> {
        self.check(len)?;
        Ok(TextBuilder {
            out: String::with_capacity(len),
            budget: self,
        })
    }

    /// Makes room in `out` (a value being built, an aggregate's state) for `more` bytes
    /// past what it holds, checked first: its buffer grows by doubling, as a `String`
    /// does, but never past what the budget allows.
    pub fn reserve(&self, out: &mut String, more: usize) -> Result<()> {
        let need = out.len().saturating_add(more);
        if need > out.capacity() {
            let doubled = need.max(out.capacity().saturating_mul(2));
            let to = if self.check(doubled).is_ok() { doubled } else { need };
            self.check(to)?;
            out.reserve_exact(to - out.len());
        }
        Ok(())
    }

    /// Appends `s` to `out` ([`ValueBudget::reserve`] first).
    pub fn append(&self, out: &mut String, s: &str) -> Result<()> {
        self.reserve(out, s.len())?;
        out.push_str(s);
        Ok(())
    }

    /// A copy of `s` as a new value (checked: the copy is a new allocation too).
    pub fn copy(&self, s: &str) -> Result<String> {
        let mut b = self.text(s.len())?;
        b.push_str(s)?;
        Ok(b.finish())
    }

    /// `s` repeated `count` times (none when `count` is not positive).
    pub fn repeat(&self, s: &str, count: i64) -> Result<String> {
        let count = usize::try_from(count).unwrap_or(0);
        if s.is_empty() {
            return Ok(String::new());
        }
        let mut b = self.text(s.len().saturating_mul(count))?;
        for _ in 0..count {
            b.push_str(s)?;
        }
        Ok(b.finish())
    }

    /// `s` padded to `len` characters with `fill` repeated, on the left (`left`) or the
    /// right, or cut to `len` characters, as PostgreSQL's `lpad` and `rpad` (an empty
    /// `fill` pads nothing; a negative `len` gives the empty string).
    pub fn pad(&self, s: &str, len: i64, fill: &str, left: bool) -> Result<String> {
        let len = usize::try_from(len).unwrap_or(0);
        let have = s.chars().count();
        if have >= len || fill.is_empty() {
            let cut = s.char_indices().nth(len).map_or(s.len(), |(i, _)| i);
            return self.copy(&s[..cut]);
        }
        // Checked before anything is counted: PostgreSQL refuses a length whose bytes at
        // four per character (UTF-8's longest) pass its limit, whatever the fill.
        if len.saturating_mul(4) > MAX_VALUE_BYTES {
            return Err(SqlError::ValueTooLarge);
        }
        let want = len - have;
        // The fill's bytes for `want` characters: whole rounds and the start of one more.
        let fill_chars = fill.chars().count();
        let rest = fill
            .char_indices()
            .nth(want % fill_chars)
            .map_or(fill.len(), |(i, _)| i);
        let pad_bytes = (want / fill_chars).saturating_mul(fill.len()).saturating_add(rest);
        let mut b = self.text(pad_bytes.saturating_add(s.len()))?;
        if !left {
            b.push_str(s)?;
        }
        for _ in 0..want / fill_chars {
            b.push_str(fill)?;
        }
        b.push_str(&fill[..rest])?;
        if left {
            b.push_str(s)?;
        }
        Ok(b.finish())
    }
}

/// A text value being built: each growth of its buffer is checked against the statement's
/// [`ValueBudget`] first.
#[derive(Debug)]
pub struct TextBuilder<'b, 'p> {
    out: String,
    budget: &'b ValueBudget<'p>,
}

impl TextBuilder<'_, '_> {
    fn grow(&mut self, more: usize) -> Result<()> {
        self.budget.reserve(&mut self.out, more)
    }

    pub fn push_str(&mut self, s: &str) -> Result<()> {
        self.grow(s.len())?;
        self.out.push_str(s);
        Ok(())
    }

    pub fn push(&mut self, c: char) -> Result<()> {
        self.grow(c.len_utf8())?;
        self.out.push(c);
        Ok(())
    }

    /// Appends `v` as text, as PostgreSQL writes it (NULL appends nothing): a text as it
    /// is, bytes as `\x` and two hex digits each (their room checked first), any other
    /// value in its few characters.
    pub fn push_value(&mut self, v: ValueRef<'_>) -> Result<()> {
        match v {
            ValueRef::Null => Ok(()),
            ValueRef::Text(t) => self.push_str(t),
            ValueRef::Bytes(b) => {
                self.grow(b.len().saturating_mul(2).saturating_add(2))?;
                self.out.push_str("\\x");
                for byte in b {
                    for d in [byte >> 4, byte & 15] {
                        self.out.push(char::from_digit(u32::from(d), 16).unwrap_or('0'));
                    }
                }
                Ok(())
            }
            other => self.push_str(&other.to_string()),
        }
    }

    /// The bytes built so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// The value built.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code<T: std::fmt::Debug>(r: Result<T>) -> &'static str {
        r.unwrap_err().sqlstate()
    }

    #[test]
    fn lengths_past_a_gigabyte_are_refused_before_anything_is_allocated() {
        // A budget larger than any value: only PostgreSQL's limit refuses.
        let b = ValueBudget::new(usize::MAX, None);
        for len in [i32::MAX as usize, MAX_VALUE_BYTES + 1, usize::MAX] {
            let e = b.text(len).unwrap_err();
            assert_eq!(e.sqlstate(), "54000");
            assert_eq!(e.to_string(), "requested length too large");
        }
        assert_eq!(code(b.pad("a", i32::MAX as i64, "b", true)), "54000");
        assert_eq!(code(b.pad("a", i64::MAX, "b", false)), "54000");
        assert_eq!(code(b.repeat("xy", i32::MAX as i64)), "54000");
        assert_eq!(code(b.repeat("x", (MAX_VALUE_BYTES + 1) as i64)), "54000");
        // Four bytes a character: a length PostgreSQL refuses whatever the fill is.
        assert_eq!(code(b.pad("a", (MAX_VALUE_BYTES / 4 + 1) as i64, "b", true)), "54000");
    }

    #[test]
    fn values_past_work_mem_are_54000_and_past_the_pool_53200() {
        let b = ValueBudget::new(1 << 20, None);
        assert_eq!(code(b.repeat("x", (1 << 20) + 1)), "54000");
        assert_eq!(b.repeat("x", 1 << 20).unwrap().len(), 1 << 20);
        // What the statement holds counts.
        b.set_held(1 << 19);
        assert_eq!(code(b.repeat("x", (1 << 19) + 1)), "54000");
        // A value that would fit alone is refused for what is held, not as too large.
        let e = b.check((1 << 19) + 1).unwrap_err();
        assert!(matches!(e, SqlError::OutOfWorkMem(_)), "{e}");
        assert!(matches!(
            b.check((1 << 20) + 1).unwrap_err(),
            SqlError::ValueOverWorkMem { .. }
        ));
        let pool = MemoryPool::new(2 * POOL_STEP);
        let b = ValueBudget::new(usize::MAX, Some(&pool));
        b.repeat("x", 3 * POOL_STEP as i64).unwrap();
        assert_eq!(code(b.repeat("x", 3 * POOL_STEP as i64 + 1)), "53200");
    }

    #[test]
    fn negative_and_empty_lengths_give_empty_values() {
        let b = ValueBudget::new(16, None);
        assert_eq!(b.pad("abc", -1, "x", true).unwrap(), "");
        assert_eq!(b.pad("abc", i64::MIN, "x", false).unwrap(), "");
        assert_eq!(b.pad("abc", 0, "x", true).unwrap(), "");
        assert_eq!(b.repeat("abc", -1).unwrap(), "");
        assert_eq!(b.repeat("abc", i64::MIN).unwrap(), "");
        assert_eq!(b.repeat("", i64::MAX).unwrap(), "");
        assert_eq!(b.text(0).unwrap().finish(), "");
        // An empty fill pads nothing (PostgreSQL), however long the length.
        assert_eq!(b.pad("abc", 100, "", true).unwrap(), "abc");
        assert_eq!(b.pad("abc", i64::MAX, "", false).unwrap(), "abc");
    }

    #[test]
    fn padding_and_repeating_give_postgresql_s_values() {
        let b = ValueBudget::default();
        assert_eq!(b.pad("hi", 5, "xy", true).unwrap(), "xyxhi");
        assert_eq!(b.pad("hi", 5, "xy", false).unwrap(), "hixyx");
        assert_eq!(b.pad("hello", 3, "x", true).unwrap(), "hel");
        assert_eq!(b.pad("héllo", 2, "x", false).unwrap(), "hé");
        assert_eq!(b.pad("a", 4, "ü€", true).unwrap(), "ü€üa");
        assert_eq!(b.pad("a", 3, " ", false).unwrap(), "a  ");
        assert_eq!(b.repeat("ab", 3).unwrap(), "ababab");
    }

    #[test]
    fn a_builder_checks_every_growth() {
        let b = ValueBudget::new(10, None);
        let mut t = b.text(2).unwrap();
        t.push_str("0123456789").unwrap();
        assert_eq!(t.len(), 10);
        assert_eq!(t.push('x').unwrap_err().sqlstate(), "54000");
        assert!(t.out.capacity() <= 10, "the buffer grew past the budget");
        assert_eq!(t.finish(), "0123456789");
    }
}
