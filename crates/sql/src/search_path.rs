//! Unqualified names under a search_path other than public's: what is left of them once a
//! session's text was qualified (crate::temp::qualify). The planner looks unqualified names
//! up in public only (crate::namespace); PostgreSQL looks them up in the search path's
//! schemas in order (public only if listed), and creates an unqualified object in its first
//! schema. The text was rewritten so that the names it reaches (relations, enum types in
//! definitions and casts, CREATE's names) say their schema; a statement whose remaining
//! unqualified name would still mean something else in PostgreSQL is not run: when
//! PostgreSQL would reach another object it is refused (0A000, the server says so), and
//! when PostgreSQL would find nothing (public left out of the path) it fails as there
//! (42P01, or 3F000 for a CREATE). Any other statement means the same in both, and runs.

use std::ops::ControlFlow;

use sqlparser::ast::{self, ObjectName, Statement};

use crate::catalog::Catalog;
use crate::namespace::qualify;

/// A session's search path as it bears on unqualified names: the existing schemas it puts
/// before public (all of them when it leaves public out), and whether public is on it.
pub struct SearchPath<'a> {
    pub ahead: &'a [String],
    pub public: bool,
}

/// What an unqualified name of a statement would do in PostgreSQL that it does not here.
#[derive(Debug, PartialEq)]
pub enum Hidden {
    /// It names this object (a key) of a schema before public.
    Shadowed(String),
    /// An unqualified CREATE would make its object here (a key).
    CreatedIn(String),
    /// It names public's relation (this name), which the path leaves out.
    Unsearched(String),
    /// An unqualified CREATE with no schema on the path to make it in.
    NoSchema,
}

impl SearchPath<'_> {
    /// Whether unqualified names mean here what they mean in PostgreSQL for any statement.
    pub fn is_plain(&self) -> bool {
        self.ahead.is_empty() && self.public
    }

    /// What statement text `sql` would do otherwise in PostgreSQL (see the module's
    /// documentation). A text that does not parse cannot be told safe: it is answered as if
    /// its first name were shadowed or unsearched.
    pub fn hidden_in(&self, catalog: &Catalog, sql: &str) -> Option<Hidden> {
        if self.is_plain() {
            return None;
        }
        if crate::sequence_alter::is_alter_sequence(sql) {
            return match crate::sequence_alter::written_name(sql)?.as_slice() {
                [one] => self.found(catalog, one),
                _ => None,
            };
        }
        let Ok(statements) = crate::parse::parse_statements(sql) else {
            return Some(match self.ahead.first() {
                Some(first) => Hidden::Shadowed(first.clone()),
                None => Hidden::NoSchema,
            });
        };
        for stmt in &statements {
            if let Some(name) = created(stmt)
                && name.0.len() == 1
            {
                return Some(match self.ahead.first() {
                    Some(first) => Hidden::CreatedIn(qualify(first, &name.to_string())),
                    None if self.public => continue,
                    None => Hidden::NoSchema,
                });
            }
            let mut hidden = None;
            let mut check = |n: &ObjectName| {
                if let [one] = n.0.as_slice()
                    && let Some(i) = one.as_ident()
                {
                    hidden = hidden.take().or_else(|| self.found(catalog, &crate::bind::ident(i)));
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

    /// What PostgreSQL would make of the unqualified relation or type `name` (a key: in
    /// public when it has no dot) that this server does not.
    pub fn found(&self, catalog: &Catalog, name: &str) -> Option<Hidden> {
        if name.contains('.') {
            return None;
        }
        let exists = |key: &str| catalog.has_relation(key) || catalog.enum_type(key).is_some();
        if let Some(key) = self.ahead.iter().map(|s| qualify(s, name)).find(|k| exists(k)) {
            return Some(Hidden::Shadowed(key));
        }
        (!self.public && exists(name)).then(|| Hidden::Unsearched(name.to_string()))
    }
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
