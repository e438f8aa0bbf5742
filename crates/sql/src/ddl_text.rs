//! Schema-change texts as the logs keep them: the session zone a change was made in
//! ([`in_zone`], [`zone_of`]), and the statements of a text, `ALTER SEQUENCE` among them
//! (sqlparser does not read it: sequence_alter.rs), each planned against a catalog.

use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError};
pub use crate::sequence_alter::is_alter_sequence;
use crate::sequence_alter::{AlterSequence, alter_sequence, parse_alter_sequence};

/// The comment a schema change's text starts with when it was made in a session whose
/// TimeZone is not UTC ([`in_zone`]), up to the zone's name and [`ZONE_MARK_END`].
const ZONE_MARK: &str = "/* permafrost: TimeZone ";
const ZONE_MARK_END: &str = " */ ";

/// Schema-change text `text` marked with the session zone it was made in (unmarked in UTC):
/// what it reads as a `timestamptz` (a DEFAULT's literal) is read in that zone, when it is
/// applied and when recovery applies it again (docs/format.md, "Schema log").
pub fn in_zone(text: &str, zone: Option<&permafrost_types::zone::Zone>) -> String {
    match zone.filter(|z| !z.is_utc()) {
        Some(z) => format!("{ZONE_MARK}{}{ZONE_MARK_END}{text}", z.name()),
        None => text.to_string(),
    }
}

/// The zone a schema-change text was marked with ([`in_zone`]), and the text after the mark;
/// a zone this build does not know is an error naming it.
pub fn zone_of(text: &str) -> Result<(Option<permafrost_types::zone::Zone>, &str)> {
    let Some(rest) = text.trim_start().strip_prefix(ZONE_MARK) else {
        return Ok((None, text));
    };
    let Some((name, body)) = rest.split_once(ZONE_MARK_END) else {
        return Ok((None, text));
    };
    let zone = permafrost_types::zone::Zone::named(name)
        .ok_or_else(|| SqlError::from(permafrost_types::ValueError::TimeZone { name: name.to_string() }))?;
    Ok((Some(zone), body))
}

/// A schema statement.
#[derive(Debug, Clone)]
pub enum DdlStatement {
    Sql(Box<sqlparser::ast::Statement>),
    AlterSequence(AlterSequence),
}

/// The statements of one statement's text.
pub fn parse(text: &str) -> Result<Vec<DdlStatement>> {
    if is_alter_sequence(text) {
        return Ok(vec![DdlStatement::AlterSequence(parse_alter_sequence(text)?)]);
    }
    Ok(crate::parse::parse_statements(text)?
        .into_iter()
        .map(|s| DdlStatement::Sql(Box::new(s)))
        .collect())
}

/// Its changes to `catalog`.
pub fn plan(catalog: &Catalog, stmt: &DdlStatement) -> Result<Vec<DdlChange>> {
    match stmt {
        DdlStatement::Sql(s) => crate::ddl::plan_ddl(catalog, s),
        DdlStatement::AlterSequence(a) => alter_sequence(catalog, a),
    }
}

/// PostgreSQL's NOTICE for `ALTER SEQUENCE IF EXISTS` of a sequence there is not (what
/// `ddl::skipped` gives the statements sqlparser reads).
pub fn skipped_alter_sequence(catalog: &Catalog, sql: &str) -> Vec<(&'static str, String)> {
    match parse_alter_sequence(sql) {
        Ok(a) if a.if_exists && !crate::sequence_alter::exists(catalog, &a.name) => {
            vec![("00000", format!("relation \"{}\" does not exist, skipping", a.name))]
        }
        _ => Vec::new(),
    }
}
