//! Temporary tables (`CREATE TEMP[ORARY] TABLE`): a session's own tables, kept in a schema
//! of its own, `pg_temp_<pid>` (the session's process id, as PostgreSQL's
//! `pg_temp_<backend>`), which is dropped with everything in it when the session ends and,
//! for a session that never ended (a crash), when the server starts
//! ([`drop_statement`], [`leftovers`]).
//!
//! Names (the search path's schemas before public are reached the same way: [`qualify`]).
//! PostgreSQL searches a session's temporary schema before any other, so an
//! unqualified name means the session's temporary table where it has one. Here plans are
//! shared by the sessions (the plan cache keys a statement by its text) and unqualified
//! names are looked up in public (crate::namespace), so a session's statement text is made
//! to say what it means before anything reads it ([`qualify`]): each unqualified relation
//! name of one of the session's temporary tables (or of their indexes) is qualified with
//! its schema (`t` becomes `pg_temp_1000.t`), the table of a `CREATE TEMP TABLE` is made
//! there, and `pg_temp.t` (PostgreSQL's name for the session's own temporary schema)
//! becomes `pg_temp_1000.t`. Another session's temporary schema is not reached (0A000, as
//! PostgreSQL refuses to read another session's temporary tables). Names inside strings
//! (`'t'::regclass`, `nextval('t_id_seq')`) are not rewritten: they name public's.
//!
//! What a temporary table is: a table like any other (partitioned, evictable, its DDL and
//! rows logged for recovery, the log holding the statements as rewritten), in a schema
//! whose name marks it. `CREATE TABLE pg_temp.t` makes one too, as in PostgreSQL. Views,
//! sequences and enum types are not made in a temporary schema (0A000); a foreign key
//! references a table of its own kind, temporary or permanent (42P16, as PostgreSQL), and
//! a view does not read a temporary table (0A000: PostgreSQL would make it temporary). `ON COMMIT
//! PRESERVE ROWS`, the default, is the one kept: `ON COMMIT DROP` and `ON COMMIT DELETE
//! ROWS` are refused (0A000).

use std::ops::ControlFlow;

use sqlparser::ast::{
    self, ColumnOption, CommentObject, CopySource, Ident, ObjectName, ObjectType, OnCommit, Statement, TableConstraint,
    Visit, Visitor,
};

use crate::bind::{ident, object_name};
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};
use crate::namespace::{qualify as qualify_key, split};

/// How a temporary schema's name starts; the session's process id follows.
pub const PREFIX: &str = "pg_temp_";

/// PostgreSQL's name for the session's own temporary schema, whatever it is.
const ALIAS: &str = "pg_temp";

/// The temporary schema of the session with process id `pid`.
pub fn schema_of(pid: i32) -> String {
    format!("{PREFIX}{pid}")
}

/// Whether schema `name` is a temporary one (a session's).
pub fn is_temp_schema(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether catalog key `key` is of an object in a temporary schema.
pub fn is_temp(key: &str) -> bool {
    is_temp_schema(split(key).0)
}

/// Whether statement text `sql` may make or name a temporary table even though its
/// session has none yet (`CREATE TEMP TABLE`, `pg_temp.t`): a quick look for "temp".
pub fn may_name(sql: &str) -> bool {
    sql.as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"temp"))
}

/// The statement that drops temporary schema `schema` with everything in it.
pub fn drop_statement(schema: &str) -> String {
    format!("DROP SCHEMA {schema} CASCADE")
}

/// The temporary schemas in `catalog` (a server starting drops them: their sessions ended).
pub fn leftovers(catalog: &Catalog) -> Vec<String> {
    catalog
        .schemas()
        .map(|(name, _)| name)
        .filter(|n| is_temp_schema(n))
        .map(str::to_string)
        .collect()
}

/// Statement text `sql` of the session whose temporary schema is `own` and whose
/// search_path puts the existing schemas `ahead` before public (all of them when it leaves
/// public out), with its names made to mean what they mean in PostgreSQL: an unqualified
/// relation name that `own` or one of `ahead` has is qualified with the first that has it,
/// and an object an unqualified CREATE makes is made in `ahead`'s first (see the module's
/// documentation for the temporary schema). `None` when nothing changes, or when the text
/// does not parse (the statement's own path answers it). What is left to public is
/// checked by crate::search_path.
pub fn qualify(catalog: &Catalog, own: &str, ahead: &[String], sql: &str) -> Result<Option<String>> {
    let Ok((text, statements)) = crate::parse::parse_statements_in_text(sql) else {
        return Ok(None);
    };
    let mut edits = Edits {
        catalog,
        own,
        ahead,
        text: &text,
        out: Vec::new(),
    };
    for stmt in &statements {
        edits.statement(stmt)?;
    }
    if edits.out.is_empty() {
        return Ok(None);
    }
    let mut out = text.to_string();
    edits.out.sort_by_key(|e| std::cmp::Reverse(e.0));
    // (A name reached twice, by the visitor and by a statement's own list, is edited once.)
    edits.out.dedup_by_key(|e| e.0);
    for (start, end, with) in edits.out {
        out.replace_range(start..end, &with);
    }
    Ok(Some(out))
}

/// The changes of `sql` ([`qualify`]): byte ranges of the text and what replaces each.
struct Edits<'a> {
    catalog: &'a Catalog,
    own: &'a str,
    ahead: &'a [String],
    text: &'a str,
    out: Vec<(usize, usize, String)>,
}

impl Edits<'_> {
    fn statement(&mut self, stmt: &Statement) -> Result<()> {
        let created = match stmt {
            Statement::CreateTable(ct) if ct.temporary => Some((&ct.name, true)),
            Statement::CreateTable(ct) => Some((&ct.name, false)),
            Statement::CreateView(cv) => Some((&cv.name, false)),
            Statement::CreateSequence { name, .. } | Statement::CreateType { name, .. } => Some((name, false)),
            _ => None,
        };
        match created {
            Some((name, true)) => self.created(name)?,
            // (Made in the path's first schema, as PostgreSQL makes it.)
            Some((name, false)) => match (idents(name).as_slice(), self.ahead.first()) {
                ([one], Some(first)) => self.insert_before(one, first)?,
                ([_], None) => {}
                // (`pg_temp.t`: the session's temporary schema.)
                _ => self.name(name, &[])?,
            },
            None => {}
        }
        let created = created.map(|(name, _)| name);
        let ctes = cte_names(stmt);
        let mut failed = None;
        let mut each = |n: &ObjectName| match self.name(n, &ctes) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        };
        let _ = ast::visit_relations(stmt, |n| match created.is_some_and(|c| std::ptr::eq(c, n)) {
            true => ControlFlow::Continue(()),
            false => each(n),
        });
        if let Some(e) = failed.take() {
            return Err(e);
        }
        // Names the visitor does not take as relations.
        let mut more: Vec<ObjectName> = Vec::new();
        match stmt {
            Statement::Drop {
                object_type: ObjectType::Schema,
                names,
                ..
            } => {
                for n in names.iter().filter_map(|n| object_name(n).ok()) {
                    if is_temp_schema(&n) && n != self.own {
                        return Err(SqlError::FeatureNotSupported(
                            "cannot drop the temporary schema of another session".into(),
                        ));
                    }
                }
            }
            Statement::Drop {
                object_type: ObjectType::Type,
                names,
                ..
            } => {
                for n in names {
                    self.type_name(n)?;
                }
            }
            Statement::AlterType(at) => self.type_name(&at.name)?,
            Statement::Drop { names, .. } => more.extend(names.iter().cloned()),
            Statement::Comment {
                object_type: CommentObject::Column,
                object_name,
                ..
            } => {
                let parts = &object_name.0;
                more.push(ObjectName(parts[..parts.len().saturating_sub(1)].to_vec()));
            }
            Statement::Comment { object_name, .. } => more.push(object_name.clone()),
            Statement::Copy {
                source: CopySource::Table { table_name, .. },
                ..
            } => more.push(table_name.clone()),
            _ => {}
        }
        more.extend(referenced_tables(stmt).into_iter().cloned());
        for n in &more {
            self.name(n, &ctes)?;
        }
        for n in custom_types(stmt) {
            self.type_name(&n)?;
        }
        Ok(())
    }

    /// A type's name: qualified when a schema the path puts before public has an enum
    /// type of that name.
    fn type_name(&mut self, n: &ObjectName) -> Result<()> {
        let parts = idents(n);
        let [one] = parts.as_slice() else {
            return Ok(());
        };
        let bare = ident(one);
        let ahead = self.ahead;
        match ahead
            .iter()
            .find(|schema| self.catalog.enum_type(&qualify_key(schema, &bare)).is_some())
        {
            Some(schema) => self.insert_before(one, schema),
            None => Ok(()),
        }
    }

    /// The name of a table `CREATE TEMP TABLE` makes.
    fn created(&mut self, n: &ObjectName) -> Result<()> {
        match idents(n).as_slice() {
            [one] => self.insert_before(one, self.own),
            [schema, _] => match ident(schema) {
                s if s == ALIAS => self.replace(schema),
                s if s == self.own => Ok(()),
                _ => Err(SqlError::At {
                    error: Box::new(SqlError::Definition(
                        "cannot create temporary relation in non-temporary schema".into(),
                    )),
                    line: schema.span.start.line,
                    column: schema.span.start.column,
                    point: crate::error::Point::Start,
                }),
            },
            _ => Ok(()),
        }
    }

    /// A relation's name: qualified when it is one of the session's temporary tables, or
    /// a relation of a schema its path puts before public.
    fn name(&mut self, n: &ObjectName, ctes: &[String]) -> Result<()> {
        match idents(n).as_slice() {
            [one] => {
                let bare = ident(one);
                if ctes.contains(&bare) {
                    return Ok(());
                }
                let (own, ahead) = (self.own, self.ahead);
                let found = std::iter::once(own)
                    .chain(ahead.iter().map(String::as_str))
                    .find(|schema| {
                        let key = qualify_key(schema, &bare);
                        self.catalog.has_relation(&key) || self.catalog.index_owner(&key).is_some()
                    });
                match found {
                    Some(schema) => self.insert_before(one, schema),
                    None => Ok(()),
                }
            }
            [.., schema, _] => match ident(schema) {
                s if s == ALIAS => self.replace(schema),
                s if is_temp_schema(&s) && s != self.own => Err(SqlError::FeatureNotSupported(
                    "cannot access temporary tables of other sessions".into(),
                )),
                _ => Ok(()),
            },
            [] => Ok(()),
        }
    }

    /// `schema.` before the name part `i`.
    fn insert_before(&mut self, i: &Ident, schema: &str) -> Result<()> {
        let at = self.offset(i.span.start)?;
        let plain = schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        let written = match plain {
            true => schema.to_string(),
            false => format!("\"{}\"", schema.replace('"', "\"\"")),
        };
        self.out.push((at, at, format!("{written}.")));
        Ok(())
    }

    /// `own` in place of the name part `i` (`pg_temp`).
    fn replace(&mut self, i: &Ident) -> Result<()> {
        let (start, end) = (self.offset(i.span.start)?, self.offset(i.span.end)?);
        self.out.push((start, end, self.own.to_string()));
        Ok(())
    }

    /// The byte offset in the text of a place sqlparser gives (line and column, from 1,
    /// in characters).
    fn offset(&self, at: sqlparser::tokenizer::Location) -> Result<usize> {
        let lost = || SqlError::Unsupported("naming a temporary table in this statement".into());
        let (line, column) = (usize::try_from(at.line).ok(), usize::try_from(at.column).ok());
        let (Some(line @ 1..), Some(column @ 1..)) = (line, column) else {
            return Err(lost());
        };
        let mut start = 0;
        for _ in 1..line {
            start += self.text[start..].find('\n').ok_or_else(lost)? + 1;
        }
        let rest = &self.text[start..];
        match rest.char_indices().nth(column - 1) {
            Some((i, _)) => Ok(start + i),
            None if rest.chars().count() == column - 1 => Ok(self.text.len()),
            None => Err(lost()),
        }
    }
}

/// The parts of a name, if each is an identifier.
fn idents(n: &ObjectName) -> Vec<&Ident> {
    let parts: Vec<&Ident> = n.0.iter().filter_map(|p| p.as_ident()).collect();
    match parts.len() == n.0.len() {
        true => parts,
        false => Vec::new(),
    }
}

/// The names of the common table expressions (`WITH x AS ...`) anywhere in a statement:
/// a name among them is not a table's.
fn cte_names(stmt: &Statement) -> Vec<String> {
    struct Ctes(Vec<String>);
    impl Visitor for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                self.0.extend(with.cte_tables.iter().map(|c| ident(&c.alias.name)));
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Ctes(Vec::new());
    let _ = stmt.visit(&mut v);
    v.0
}

/// The names of the types a statement names that are not built in (column definitions,
/// casts): an enum type's, perhaps.
fn custom_types(stmt: &Statement) -> Vec<ObjectName> {
    fn custom(t: &ast::DataType, out: &mut Vec<ObjectName>) {
        if let ast::DataType::Custom(n, _) = t {
            out.push(n.clone());
        }
    }
    struct Casts(Vec<ObjectName>);
    impl Visitor for Casts {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::Cast { data_type, .. } = e {
                custom(data_type, &mut self.0);
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Casts(Vec::new());
    let _ = stmt.visit(&mut v);
    let mut out = v.0;
    match stmt {
        Statement::CreateTable(ct) => ct.columns.iter().for_each(|c| custom(&c.data_type, &mut out)),
        Statement::AlterTable(at) => {
            for op in &at.operations {
                match op {
                    ast::AlterTableOperation::AddColumn { column_def, .. } => custom(&column_def.data_type, &mut out),
                    ast::AlterTableOperation::AlterColumn {
                        op: ast::AlterColumnOperation::SetDataType { data_type, .. },
                        ..
                    } => custom(data_type, &mut out),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// The tables a statement's foreign keys reference (CREATE TABLE, ALTER TABLE ADD).
fn referenced_tables(stmt: &Statement) -> Vec<&ObjectName> {
    fn from_constraint(c: &TableConstraint) -> Option<&ObjectName> {
        match c {
            TableConstraint::ForeignKey(fk) => Some(&fk.foreign_table),
            _ => None,
        }
    }
    fn from_column(cd: &ast::ColumnDef) -> impl Iterator<Item = &ObjectName> {
        cd.options.iter().filter_map(|o| match &o.option {
            ColumnOption::ForeignKey(fk) => Some(&fk.foreign_table),
            _ => None,
        })
    }
    let mut out = Vec::new();
    match stmt {
        Statement::CreateTable(ct) => {
            out.extend(ct.constraints.iter().filter_map(from_constraint));
            out.extend(ct.columns.iter().flat_map(from_column));
        }
        Statement::AlterTable(at) => {
            for op in &at.operations {
                match op {
                    ast::AlterTableOperation::AddConstraint { constraint, .. } => {
                        out.extend(from_constraint(constraint));
                    }
                    ast::AlterTableOperation::AddColumn { column_def, .. } => out.extend(from_column(column_def)),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether `CREATE TABLE` statement `ct` makes a temporary table: so marked, or named in
/// a temporary schema (`CREATE TABLE pg_temp.t`, once [`qualify`]d).
pub(crate) fn makes_temporary(ct: &ast::CreateTable) -> bool {
    ct.temporary || object_name(&ct.name).is_ok_and(|n| is_temp(&n))
}

/// `CREATE TEMP TABLE`, its name qualified with the session's temporary schema
/// ([`qualify`]): the schema too when it is the session's first temporary table. The table
/// itself is planned by `plain` (crate::ddl's CREATE TABLE, given the statement without
/// TEMP).
pub(crate) fn create_table(
    catalog: &Catalog,
    ct: &ast::CreateTable,
    plain_table: impl Fn(&Catalog, &ast::CreateTable) -> Result<Option<DdlChange>>,
) -> Result<Vec<DdlChange>> {
    let name = object_name(&ct.name)?;
    let (schema, _) = split(&name);
    if !is_temp_schema(schema) {
        return match name.contains('.') {
            true => Err(SqlError::Definition(
                "cannot create temporary relation in non-temporary schema".into(),
            )),
            false => unsupported(
                "CREATE TEMPORARY TABLE outside a client's session (in a procedure or a script): a session makes \
                 its temporary tables",
            ),
        };
    }
    match ct.on_commit {
        None | Some(OnCommit::PreserveRows) => {}
        Some(OnCommit::Drop) => {
            return unsupported("ON COMMIT DROP (drop the table when done, or leave it to the end of the session)");
        }
        Some(OnCommit::DeleteRows) => return unsupported("ON COMMIT DELETE ROWS (delete the rows when done)"),
    }
    let mut plain = ct.clone();
    plain.temporary = false;
    plain.on_commit = None;
    let mut changes = Vec::new();
    let with_schema;
    let at = match catalog.has_schema(schema) {
        true => catalog,
        false => {
            let made = DdlChange::CreateSchema {
                name: schema.to_string(),
                id: catalog.next_table_id(),
            };
            with_schema = catalog.apply(&made)?;
            changes.push(made);
            &with_schema
        }
    };
    match plain_table(at, &plain)? {
        Some(table) => changes.push(table),
        // (IF NOT EXISTS on a table that exists: its schema does too.)
        None => changes.clear(),
    }
    Ok(changes)
}

/// Refuses what would make a permanent object depend on a temporary one, or an object
/// other than a table in a temporary schema (see the module's documentation).
pub(crate) fn refuse_reaching(stmt: &Statement) -> Result<()> {
    let temp = |n: &ObjectName| object_name(n).is_ok_and(|k| is_temp(&k));
    // A foreign key references a table of its own kind (temporary or permanent).
    let referencing =
        |owner_temporary: bool| match referenced_tables(stmt).into_iter().any(|n| temp(n) != owner_temporary) {
            true if owner_temporary => Err(SqlError::Definition(
                "constraints on temporary tables may reference only temporary tables".into(),
            )),
            true => Err(SqlError::Definition(
                "constraints on permanent tables may reference only permanent tables".into(),
            )),
            false => Ok(()),
        };
    match stmt {
        Statement::CreateTable(ct) => referencing(makes_temporary(ct)),
        Statement::AlterTable(at) => referencing(temp(&at.name)),
        Statement::CreateView(cv) => {
            let mut reads = false;
            let _ = ast::visit_relations(&*cv.query, |n| {
                reads |= temp(n);
                ControlFlow::<()>::Continue(())
            });
            match temp(&cv.name) || reads {
                true => unsupported(
                    "a view in a temporary schema or over a temporary table (PostgreSQL would make it a temporary \
                     view; this server has none)",
                ),
                false => Ok(()),
            }
        }
        Statement::CreateSequence { name, .. } | Statement::CreateType { name, .. } if temp(name) => {
            unsupported("a sequence or a type in a temporary schema (only tables are temporary here)")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `c` with DDL statement `sql` applied.
    fn run(c: &mut Catalog, sql: &str) {
        for stmt in crate::parse::parse_statements(sql).unwrap() {
            for change in crate::ddl::plan_ddl(c, &stmt).unwrap() {
                *c = c.apply(&change).unwrap();
            }
        }
    }

    /// A catalog with public's `t` and `u`, and the session `pg_temp_7`'s `t` and `"Mixed"`.
    fn catalog() -> Catalog {
        let mut c = Catalog::new();
        for sql in [
            "CREATE TABLE t (id INT PRIMARY KEY)",
            "CREATE TABLE u (id INT PRIMARY KEY)",
            "CREATE TEMP TABLE pg_temp_7.t (id INT PRIMARY KEY, v TEXT)",
            "CREATE TEMP TABLE pg_temp_7.\"Mixed\" (id INT PRIMARY KEY)",
            "CREATE INDEX t_v ON pg_temp_7.t (v)",
        ] {
            run(&mut c, sql);
        }
        c
    }

    fn q(sql: &str) -> Result<Option<String>> {
        qualify(&catalog(), "pg_temp_7", &[], sql)
    }

    #[test]
    fn the_sessions_temporary_names_are_qualified_and_nothing_else_is() {
        let cases = [
            (
                "SELECT * FROM t JOIN u ON u.id = t.id",
                "SELECT * FROM pg_temp_7.t JOIN u ON u.id = t.id",
            ),
            (
                "select v\n  from  T where id = 1",
                "select v\n  from  pg_temp_7.T where id = 1",
            ),
            (
                "SELECT 'é', id FROM \"Mixed\"",
                "SELECT 'é', id FROM pg_temp_7.\"Mixed\"",
            ),
            ("SELECT * FROM pg_temp.t", "SELECT * FROM pg_temp_7.t"),
            (
                "INSERT INTO t VALUES (1, 'x'); DELETE FROM t",
                "INSERT INTO pg_temp_7.t VALUES (1, 'x'); DELETE FROM pg_temp_7.t",
            ),
            ("DROP INDEX t_v", "DROP INDEX pg_temp_7.t_v"),
            ("COPY t FROM STDIN", "COPY pg_temp_7.t FROM STDIN"),
            ("COMMENT ON COLUMN t.v IS 'x'", "COMMENT ON COLUMN pg_temp_7.t.v IS 'x'"),
            (
                "CREATE TEMP TABLE n (a INT REFERENCES t (id))",
                "CREATE TEMP TABLE pg_temp_7.n (a INT REFERENCES pg_temp_7.t (id))",
            ),
        ];
        for (sql, expected) in cases {
            assert_eq!(q(sql).unwrap().as_deref(), Some(expected), "{sql}");
        }
        for unchanged in [
            "SELECT * FROM u",
            "SELECT * FROM public.t",
            "WITH t AS (SELECT 1) SELECT * FROM t",
            "SELECT 'FROM t'",
            "this is not SQL",
        ] {
            assert_eq!(q(unchanged).unwrap(), None, "{unchanged}");
        }
    }

    #[test]
    fn a_search_path_before_public_reaches_its_schemas_first() {
        let mut c = catalog();
        for sql in [
            "CREATE SCHEMA app",
            "CREATE TABLE app.u (id INT PRIMARY KEY)",
            "CREATE TYPE app.mood AS ENUM ('ok')",
        ] {
            run(&mut c, sql);
        }
        let ahead = ["app".to_string()];
        let q = |sql: &str| qualify(&c, "pg_temp_7", &ahead, sql).unwrap();
        let cases = [
            // The session's temporary table first, then app's, then public's.
            ("SELECT * FROM t, u", "SELECT * FROM pg_temp_7.t, app.u"),
            ("CREATE TABLE n (m mood)", "CREATE TABLE app.n (m app.mood)"),
            ("SELECT 'ok'::mood", "SELECT 'ok'::app.mood"),
            ("DROP TYPE mood", "DROP TYPE app.mood"),
            (
                "CREATE VIEW v AS SELECT id FROM u",
                "CREATE VIEW app.v AS SELECT id FROM app.u",
            ),
        ];
        for (sql, expected) in cases {
            assert_eq!(q(sql).as_deref(), Some(expected), "{sql}");
        }
        assert_eq!(q("SELECT * FROM public.u"), None);
    }

    #[test]
    fn another_sessions_schema_and_a_permanent_schema_for_a_temporary_table_are_refused() {
        for sql in ["SELECT * FROM pg_temp_8.t", "DROP SCHEMA pg_temp_8 CASCADE"] {
            assert_eq!(q(sql).unwrap_err().sqlstate(), "0A000", "{sql}");
        }
        assert_eq!(q("DROP SCHEMA pg_temp_7 CASCADE").unwrap(), None);
        let e = q("CREATE TEMP TABLE public.x (a INT)").unwrap_err();
        assert_eq!(e.sqlstate(), "42P16");
        assert_eq!(e.offset_in("CREATE TEMP TABLE public.x (a INT)"), Some(18));
    }

    #[test]
    fn a_temporary_schema_is_dropped_with_its_tables_and_their_sequences() {
        let mut c = catalog();
        run(&mut c, "CREATE TEMP TABLE pg_temp_7.s (id SERIAL PRIMARY KEY)");
        assert_eq!(leftovers(&c), ["pg_temp_7"]);
        let stmt = crate::parse::parse_statements(&drop_statement("pg_temp_7"))
            .unwrap()
            .remove(0);
        for change in crate::ddl::plan_ddl(&c, &stmt).unwrap() {
            c = c.apply(&change).unwrap();
        }
        assert!(leftovers(&c).is_empty());
        assert_eq!(c.objects_in_schema("pg_temp_7").count(), 0);
        assert!(c.table("t").is_some() && c.table("u").is_some(), "public's tables stay");
        let stmt = crate::parse::parse_statements("DROP SCHEMA app CASCADE")
            .unwrap()
            .remove(0);
        assert!(crate::ddl::plan_ddl(&c, &stmt).is_err());
    }
}
