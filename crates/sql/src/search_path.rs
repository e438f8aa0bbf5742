//! Unqualified names under a search_path that puts other schemas before public. This
//! server looks unqualified names up in public only (crate::namespace); PostgreSQL looks
//! them up in the search path's schemas in order, and creates an unqualified object in its
//! first schema. So a statement is refused (the server says so, 0A000) when one of its
//! unqualified names would reach another object in PostgreSQL: an existing relation of a
//! schema ahead of public, or a new object made there. Any other statement means the same
//! in both, and runs.

use std::ops::ControlFlow;

use sqlparser::ast::{self, ObjectName, Statement};

use crate::catalog::Catalog;
use crate::namespace::qualify;

/// What statement text `sql` would reach in PostgreSQL, with the schemas `ahead` before
/// public (those that exist, in order), where this server reaches public's object: that
/// object's key. A text that does not parse is answered with the first of `ahead` (it
/// cannot be told safe).
pub fn hidden_object(catalog: &Catalog, ahead: &[String], sql: &str) -> Option<String> {
    let first = ahead.first()?;
    if crate::sequence_alter::is_alter_sequence(sql) {
        let parsed = crate::sequence_alter::parse_alter_sequence(sql).ok()?;
        return found(catalog, ahead, &parsed.name);
    }
    let Ok(statements) = crate::parse::parse_statements(sql) else {
        return Some(first.clone());
    };
    for stmt in &statements {
        if let Some(name) = created(stmt)
            && name.0.len() == 1
        {
            return Some(qualify(first, &name.to_string()));
        }
        let mut hidden = None;
        let mut check = |n: &ObjectName| {
            if let [one] = n.0.as_slice()
                && let Some(i) = one.as_ident()
            {
                hidden = hidden.take().or_else(|| found(catalog, ahead, &crate::bind::ident(i)));
            }
        };
        let _ = ast::visit_relations(stmt, |n| {
            check(n);
            ControlFlow::<()>::Continue(())
        });
        match stmt {
            Statement::Drop { names, .. } => names.iter().for_each(&mut check),
            Statement::Comment { object_name, .. } => check(object_name),
            _ => {}
        }
        if hidden.is_some() {
            return hidden;
        }
    }
    None
}

/// The name of the object a CREATE statement makes (its schema's, where written).
fn created(stmt: &Statement) -> Option<&ObjectName> {
    match stmt {
        Statement::CreateTable(ct) => Some(&ct.name),
        Statement::CreateView(cv) => Some(&cv.name),
        Statement::CreateSequence { name, .. } | Statement::CreateType { name, .. } => Some(name),
        _ => None,
    }
}

/// The key of the first relation or type named `name` (a key: in public when unqualified)
/// in a schema of `ahead`.
pub fn found(catalog: &Catalog, ahead: &[String], name: &str) -> Option<String> {
    if name.contains('.') {
        return None;
    }
    ahead
        .iter()
        .map(|s| qualify(s, name))
        .find(|key| catalog.has_relation(key) || catalog.enum_type(key).is_some())
}
