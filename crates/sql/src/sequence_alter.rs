//! `ALTER SEQUENCE`, which sqlparser does not read: parsed here from its text and planned
//! against the catalog.
//!
//! ```text
//! ALTER SEQUENCE [IF EXISTS] name
//!     { RENAME TO new_name
//!     | [AS type] [INCREMENT [BY] n] [MINVALUE n | NO MINVALUE] [MAXVALUE n | NO MAXVALUE]
//!       [START [WITH] n] [RESTART [[WITH] n]] [CACHE n] [NO CYCLE] [OWNED BY {t.c | NONE}] ... }
//! ```
//!
//! A sequence of its own (`CREATE SEQUENCE`) takes every option as `CREATE SEQUENCE` does
//! (CYCLE and a negative INCREMENT are refused as there); the columns
//! whose DEFAULT is its `nextval()` follow a new name or step. A column's sequence (SERIAL,
//! identity: `t_c_seq`) steps by one within its column's type: it takes `AS` that type
//! (Django sends it after changing an id column's type) and CACHE, which change nothing;
//! other options are refused (0A000; `setval()` moves it). `RESTART` of a sequence of its
//! own sets the counter when the change takes effect; inside a transaction block it is
//! refused (a ROLLBACK would not undo the counter).

use std::sync::Arc;

use permafrost_storage::{ColumnDefault, TableSchema};
use permafrost_types::DataType;
use sqlparser::tokenizer::Token;

use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};
use crate::script::Cursor;
use crate::sequence::{SeqStep, SequenceDef, sequence_name};
use crate::sequence_ddl::{check_bounds, type_range};

/// An `ALTER SEQUENCE` statement.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterSequence {
    pub name: String,
    pub if_exists: bool,
    pub action: SeqAction,
}

/// What an `ALTER SEQUENCE` changes.
#[derive(Debug, Clone, PartialEq)]
pub enum SeqAction {
    Rename(String),
    Options(SeqOptions),
}

/// The options given (`None`: not given; `Some(None)`: `NO MINVALUE` / `NO MAXVALUE`, or
/// `RESTART` without a value).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeqOptions {
    pub ty: Option<DataType>,
    pub increment: Option<i64>,
    pub min: Option<Option<i64>>,
    pub max: Option<Option<i64>>,
    pub start: Option<i64>,
    pub restart: Option<Option<i64>>,
    pub cache: Option<i64>,
    /// `OWNED BY`: the dotted name given (`["none"]` for NONE).
    pub owned_by: Option<Vec<String>>,
}

impl SeqOptions {
    /// Whether it changes what a column's sequence has: more than `AS` and `RESTART`.
    fn beyond_type_and_restart(&self) -> bool {
        self.increment.is_some()
            || self.min.is_some()
            || self.max.is_some()
            || self.start.is_some()
            || self.owned_by.is_some()
    }
}

/// Whether `sql` is an `ALTER SEQUENCE` statement.
pub fn is_alter_sequence(sql: &str) -> bool {
    // (Most statements are told apart by their first word, before any tokenizing: the
    // embedded API asks this of every statement.)
    let start = sql.trim_start();
    let head = start.get(..5);
    if !head.is_some_and(|h| h.eq_ignore_ascii_case("alter")) && !start.starts_with("/*") && !start.starts_with("--") {
        return false;
    }
    let mut c = match Cursor::new(sql) {
        Ok(c) => c,
        Err(_) => return false,
    };
    c.keyword("ALTER") && c.keyword("SEQUENCE")
}

/// The sequence an `ALTER SEQUENCE` text names, as written: its dotted parts.
pub fn written_name(sql: &str) -> Option<Vec<String>> {
    let mut c = Cursor::new(sql).ok()?;
    (c.keyword("ALTER") && c.keyword("SEQUENCE")).then_some(())?;
    c.if_exists().ok()?;
    c.parts().ok()
}

/// Parses `ALTER SEQUENCE` (see the module's documentation).
pub fn parse_alter_sequence(sql: &str) -> Result<AlterSequence> {
    let mut c = Cursor::new(sql)?;
    c.expect_keyword("ALTER")?;
    c.expect_keyword("SEQUENCE")?;
    let if_exists = c.if_exists()?;
    let name = c.relation()?;
    if c.keyword("RENAME") {
        c.expect_keyword("TO")?;
        let to = c.ident()?;
        end(&mut c)?;
        return Ok(AlterSequence {
            name,
            if_exists,
            action: SeqAction::Rename(to),
        });
    }
    let mut o = SeqOptions::default();
    loop {
        if c.keyword("AS") {
            let t = c.ident()?;
            o.ty = Some(match t.as_str() {
                "smallint" | "int2" => DataType::SmallInt,
                "integer" | "int" | "int4" => DataType::Integer,
                "bigint" | "int8" => DataType::BigInt,
                _ => return invalid("sequence type must be smallint, integer, or bigint"),
            });
        } else if c.keyword("INCREMENT") {
            c.keyword("BY");
            o.increment = Some(number(&mut c, "INCREMENT")?);
        } else if c.keyword("MINVALUE") {
            o.min = Some(Some(number(&mut c, "MINVALUE")?));
        } else if c.keyword("MAXVALUE") {
            o.max = Some(Some(number(&mut c, "MAXVALUE")?));
        } else if c.keyword("NO") {
            if c.keyword("MINVALUE") {
                o.min = Some(None);
            } else if c.keyword("MAXVALUE") {
                o.max = Some(None);
            } else if !c.keyword("CYCLE") {
                return Err(c.unexpected("MINVALUE, MAXVALUE or CYCLE"));
            }
        } else if c.keyword("START") {
            c.keyword("WITH");
            o.start = Some(number(&mut c, "START")?);
        } else if c.keyword("RESTART") {
            let with = c.keyword("WITH");
            o.restart = Some(if with || starts_number(&c) {
                Some(number(&mut c, "RESTART")?)
            } else {
                None
            });
        } else if c.keyword("CACHE") {
            o.cache = Some(number(&mut c, "CACHE")?);
        } else if c.keyword("CYCLE") {
            return unsupported("CYCLE (a sequence here stops at its MAXVALUE: declare NO CYCLE)");
        } else if c.keyword("OWNED") {
            c.expect_keyword("BY")?;
            o.owned_by = Some(c.parts()?);
        } else if c.peek().is_none() {
            break;
        } else if c.keyword("SET") {
            return unsupported("ALTER SEQUENCE ... SET (there is one schema, and every sequence is logged)");
        } else {
            return Err(c.unexpected("a sequence option"));
        }
    }
    if o == SeqOptions::default() {
        return Err(SqlError::Syntax(
            "syntax error: ALTER SEQUENCE without an option".into(),
        ));
    }
    Ok(AlterSequence {
        name,
        if_exists,
        action: SeqAction::Options(o),
    })
}

/// The end of the statement.
fn end(c: &mut Cursor) -> Result<()> {
    match c.peek() {
        None => Ok(()),
        Some(_) => Err(c.unexpected("the end of the statement")),
    }
}

/// Whether an integer (signed or not) comes next.
fn starts_number(c: &Cursor) -> bool {
    matches!(c.peek(), Some(Token::Number(..) | Token::Minus | Token::Plus))
}

/// An option's integer value, signed or not.
fn number(c: &mut Cursor, what: &str) -> Result<i64> {
    let negative = match c.peek() {
        Some(Token::Minus) => {
            c.pos += 1;
            true
        }
        Some(Token::Plus) => {
            c.pos += 1;
            false
        }
        _ => false,
    };
    let text = match c.next() {
        Some(Token::Number(n, _)) => n,
        _ => {
            c.pos -= 1;
            return Err(c.unexpected(&format!("an integer after {what}")));
        }
    };
    let text = if negative { format!("-{text}") } else { text };
    text.parse::<i64>()
        .map_err(|_| SqlError::InvalidArgument(format!("{what} ({text}) is out of range for a bigint")))
}

fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(SqlError::InvalidArgument(msg.into()))
}

/// The table and column whose sequence is named `name` (SERIAL, identity).
fn column_sequence<'a>(catalog: &'a Catalog, name: &str) -> Option<(&'a Arc<TableSchema>, usize)> {
    catalog.tables().find_map(|t| {
        (0..t.columns.len())
            .find(|&i| matches!(t.columns[i].default, Some(ColumnDefault::Sequence)) && sequence_name(t, i) == name)
            .map(|i| (t, i))
    })
}

/// Whether a sequence named `name` exists (of its own or a column's).
pub(crate) fn exists(catalog: &Catalog, name: &str) -> bool {
    catalog.sequence(name).is_some() || column_sequence(catalog, name).is_some()
}

/// Plans `a` against `catalog` (see the module's documentation).
pub(crate) fn alter_sequence(catalog: &Catalog, a: &AlterSequence) -> Result<Vec<DdlChange>> {
    if let Some(seq) = catalog.sequence(&a.name) {
        return alter_own(catalog, seq, &a.action);
    }
    match column_sequence(catalog, &a.name) {
        Some((t, i)) => alter_column_sequence(t, i, &a.action),
        None if a.if_exists => Ok(Vec::new()),
        None => Err(SqlError::UnknownTable(a.name.clone())),
    }
}

/// A column's sequence: `AS` its column's type, `RESTART`.
fn alter_column_sequence(t: &TableSchema, col: usize, action: &SeqAction) -> Result<Vec<DdlChange>> {
    let name = sequence_name(t, col);
    let SeqAction::Options(o) = action else {
        return unsupported(format!(
            "ALTER SEQUENCE {name} RENAME: the sequence of column {}.{} is named after it",
            t.name, t.columns[col].name
        ));
    };
    let ty = t.columns[col].ty;
    if o.beyond_type_and_restart() || o.ty.is_some_and(|x| x != ty) {
        return unsupported(format!(
            "ALTER SEQUENCE {name} with options other than AS {} and RESTART (the sequence of column {}.{} \
             steps by one within its column's type: alter the column's type)",
            ty.sql_name(),
            t.name,
            t.columns[col].name
        ));
    }
    if o.restart.is_some() {
        return unsupported(format!(
            "ALTER SEQUENCE {name} RESTART (the sequence of column {}.{}: move it with setval('{name}', n, \
             false))",
            t.name, t.columns[col].name
        ));
    }
    // (`AS` its column's type, CACHE: what it has already.)
    Ok(Vec::new())
}

/// A sequence of its own: its new definition, and the columns whose DEFAULT draws from it.
fn alter_own(catalog: &Catalog, seq: &SequenceDef, action: &SeqAction) -> Result<Vec<DdlChange>> {
    let mut next = seq.clone();
    let mut restart = None;
    match action {
        SeqAction::Rename(to) => {
            let to = crate::namespace::sibling(&seq.name, to);
            if catalog.has_relation(&to) {
                return Err(SqlError::DuplicateTable(to));
            }
            next.name = to;
        }
        SeqAction::Options(o) => {
            let (old_lo, old_hi) = type_range(seq.ty);
            let ty = o.ty.unwrap_or(seq.ty);
            let (lo, hi) = type_range(ty);
            let increment = o.increment.unwrap_or(seq.step.increment);
            if increment == 0 {
                return invalid("INCREMENT must not be zero");
            }
            if increment < 0 {
                return unsupported("a sequence that counts down (INCREMENT BY a negative number)");
            }
            // A bound that was its type's stays its new type's, as in PostgreSQL.
            let min = match o.min {
                Some(m) => m.unwrap_or(1),
                None if seq.step.min == old_lo => lo,
                None => seq.step.min,
            };
            let max = match o.max {
                Some(m) => m.unwrap_or(hi),
                None if seq.step.max == old_hi => hi,
                None => seq.step.max,
            };
            check_bounds(ty, min, max)?;
            let start = o.start.unwrap_or(seq.start);
            check_within("START", start, min, max)?;
            let cache = o.cache.unwrap_or(seq.cache);
            if cache <= 0 {
                return invalid(format!("CACHE ({cache}) must be greater than zero"));
            }
            if let Some(at) = o.restart {
                let at = at.unwrap_or(start);
                check_within("RESTART", at, min, max)?;
                restart = Some(at.saturating_sub(increment));
            }
            if let Some(parts) = &o.owned_by {
                next.owned_by = crate::sequence_ddl::owner(catalog, parts)?;
            }
            next.ty = ty;
            next.start = start;
            next.step = SeqStep { increment, min, max };
            next.cache = cache;
        }
    }
    let next = Arc::new(next);
    let mut changes = vec![DdlChange::AlterSequence {
        def: next.clone(),
        restart,
    }];
    // The columns that draw from it keep its name and step in their DEFAULT.
    for t in catalog.tables() {
        let mut schema = (**t).clone();
        let mut changed = false;
        for c in &mut schema.columns {
            if let Some(ColumnDefault::NextVal { sequence, .. }) = &c.default
                && *sequence == seq.id
            {
                c.default = Some(ColumnDefault::NextVal {
                    sequence: seq.id,
                    name: next.name.clone(),
                    increment: next.step.increment,
                    min: next.step.min,
                    max: next.step.max,
                });
                changed = true;
            }
        }
        if changed {
            changes.push(DdlChange::AlterSchema(Arc::new(schema)));
        }
    }
    Ok(changes)
}

fn check_within(what: &str, v: i64, min: i64, max: i64) -> Result<()> {
    if v < min {
        return invalid(format!("{what} value ({v}) cannot be less than MINVALUE ({min})"));
    }
    if v > max {
        return invalid(format!("{what} value ({v}) cannot be greater than MAXVALUE ({max})"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alter_sequence_is_parsed() {
        let a = parse_alter_sequence("ALTER SEQUENCE IF EXISTS \"t_id_seq\" AS bigint").unwrap();
        assert_eq!(a.name, "t_id_seq");
        assert!(a.if_exists);
        assert_eq!(
            a.action,
            SeqAction::Options(SeqOptions {
                ty: Some(DataType::BigInt),
                ..SeqOptions::default()
            })
        );
        let b = parse_alter_sequence(
            "alter sequence s increment by 5 minvalue -3 no maxvalue start with 7 restart cache 2 no cycle",
        )
        .unwrap();
        assert_eq!(
            b.action,
            SeqAction::Options(SeqOptions {
                ty: None,
                increment: Some(5),
                min: Some(Some(-3)),
                max: Some(None),
                start: Some(7),
                restart: Some(None),
                cache: Some(2),
                owned_by: None,
            })
        );
        let o = parse_alter_sequence("ALTER SEQUENCE public.s OWNED BY public.t.c").unwrap();
        assert_eq!(o.name, "s");
        assert!(
            matches!(o.action, SeqAction::Options(SeqOptions { owned_by: Some(p), .. }) if p == ["public", "t", "c"])
        );
        let c = parse_alter_sequence("ALTER SEQUENCE s RESTART 40").unwrap();
        assert!(matches!(
            c.action,
            SeqAction::Options(SeqOptions {
                restart: Some(Some(40)),
                ..
            })
        ));
        let d = parse_alter_sequence("ALTER SEQUENCE s RENAME TO r").unwrap();
        assert_eq!(d.action, SeqAction::Rename("r".into()));
        assert!(is_alter_sequence("  alter  sequence x restart"));
        assert!(!is_alter_sequence("alter table x"));
        assert!(is_alter_sequence("/* c */ ALTER SEQUENCE s RESTART"));
        assert!(!is_alter_sequence("SELECT 1"));
        for bad in [
            "ALTER SEQUENCE s",
            "ALTER SEQUENCE s CYCLE",
            "ALTER SEQUENCE s AS text",
            "ALTER SEQUENCE s RENAME TO r x",
            "ALTER SEQUENCE s INCREMENT BY x",
            "ALTER SEQUENCE s OWNED BY",
            "ALTER SEQUENCE db.other.s RESTART",
        ] {
            assert!(parse_alter_sequence(bad).is_err(), "{bad}");
        }
    }
}
