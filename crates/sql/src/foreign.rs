//! FOREIGN KEY definitions: what `CREATE TABLE ... REFERENCES` and `ALTER TABLE ... ADD
//! [CONSTRAINT c] FOREIGN KEY` declare, checked against the catalog as PostgreSQL checks
//! them, and the schema changes that must respect them (a referenced table or unique index
//! is not dropped while a key references it). What statements do with the keys is
//! exec/foreign.rs.

use std::sync::Arc;

use permafrost_storage::{Column, FkAction, ForeignKey, TableId, TableSchema};
use permafrost_types::DataType;
use sqlparser::ast;

use crate::bind::{ident, object_name};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, unsupported};

/// PostgreSQL's longest identifier, in bytes.
const MAX_NAME: usize = 63;

/// The foreign key `fk` declares on table `schema` (`column`: declared on that column, with
/// REFERENCES), its referenced table found in `catalog` or, by its name, `schema` itself.
pub(crate) fn plan(
    catalog: &Catalog,
    schema: &TableSchema,
    column: Option<usize>,
    fk: &ast::ForeignKeyConstraint,
) -> Result<ForeignKey> {
    if fk
        .match_kind
        .is_some_and(|m| !matches!(m, ast::ConstraintReferenceMatchKind::Simple))
    {
        return unsupported("MATCH FULL / MATCH PARTIAL foreign keys (MATCH SIMPLE, the default, is supported)");
    }
    if fk.characteristics.is_some_and(|c| c.enforced == Some(false)) {
        return unsupported("NOT ENFORCED foreign keys");
    }
    let columns = match column {
        Some(c) => vec![c],
        None => columns_of(schema, &fk.columns)?,
    };
    let parent_name = object_name(&fk.foreign_table)?;
    let parent: &TableSchema = if parent_name == schema.name {
        schema
    } else {
        catalog
            .table(&parent_name)
            .map(|t| &**t)
            .ok_or_else(|| SqlError::UnknownTable(parent_name.clone()))?
    };
    let parent_columns = if fk.referred_columns.is_empty() {
        parent
            .indexes
            .iter()
            .find(|ix| ix.primary)
            .map(|ix| ix.columns.clone())
            .ok_or_else(|| {
                SqlError::InvalidForeignKey(format!(
                    "there is no primary key for referenced table \"{}\"",
                    parent.name
                ))
            })?
    } else {
        columns_of(parent, &fk.referred_columns)?
    };
    if columns.len() != parent_columns.len() {
        return Err(SqlError::InvalidForeignKey(
            "number of referencing and referenced columns for foreign key disagree".into(),
        ));
    }
    let repeated = parent_columns
        .iter()
        .enumerate()
        .any(|(i, c)| parent_columns[..i].contains(c));
    if repeated || parent.index_over(&parent_columns, true).is_none() {
        return Err(SqlError::InvalidForeignKey(format!(
            "there is no unique constraint matching given keys for referenced table \"{}\"",
            parent.name
        )));
    }
    let name = match &fk.name {
        Some(n) => ident(n),
        None => default_name(schema, &columns),
    };
    for (&c, &p) in columns.iter().zip(&parent_columns) {
        let (a, b) = (&schema.columns[c], &parent.columns[p]);
        if !comparable(&a.ty, &b.ty) {
            return Err(incompatible(&name, a, b));
        }
    }
    let characteristics = fk.characteristics.unwrap_or_default();
    let deferrable = characteristics.deferrable == Some(true);
    let deferred = characteristics.initially == Some(ast::DeferrableInitial::Deferred);
    if deferred && characteristics.deferrable == Some(false) {
        return Err(SqlError::Syntax(
            "constraint declared INITIALLY DEFERRED must be DEFERRABLE".into(),
        ));
    }
    Ok(ForeignKey {
        name,
        columns,
        parent: parent.id,
        parent_columns,
        on_delete: action(fk.on_delete, "ON DELETE")?,
        on_update: match action(fk.on_update, "ON UPDATE")? {
            a @ (FkAction::NoAction | FkAction::Restrict) => a,
            _ => return unsupported("ON UPDATE CASCADE / SET NULL (ON UPDATE NO ACTION and RESTRICT are supported)"),
        },
        deferrable,
        deferred,
    })
}

/// The columns of `schema` `names` gives, in order (42703 for a name it lacks).
pub(crate) fn columns_of(schema: &TableSchema, names: &[ast::Ident]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            let n = ident(n);
            schema
                .columns
                .iter()
                .position(|c| c.name == n)
                .ok_or_else(|| SqlError::UnknownTargetColumn {
                    column: n,
                    table: schema.name.clone(),
                })
        })
        .collect()
}

/// PostgreSQL's name for an unnamed foreign key: table, columns, `fkey`.
fn default_name(schema: &TableSchema, columns: &[usize]) -> String {
    let names: Vec<&str> = columns.iter().map(|&c| schema.columns[c].name.as_str()).collect();
    let mut name = format!("{}_{}_fkey", crate::namespace::bare(&schema.name), names.join("_"));
    if name.len() > MAX_NAME {
        let mut cut = MAX_NAME;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    name
}

/// The error of foreign key `name` whose referencing column `a` and referenced column `b`
/// are of types without an equality between them (42804, PostgreSQL's DETAIL).
pub(crate) fn incompatible(name: &str, a: &Column, b: &Column) -> SqlError {
    SqlError::ForeignKeyTypes {
        name: name.to_string(),
        detail: format!(
            "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
            a.name,
            b.name,
            a.ty.sql_name(),
            b.ty.sql_name()
        ),
    }
}

/// Whether a key column of type `a` may reference one of type `b` (an equality operator
/// between them exists).
pub(crate) fn comparable(a: &DataType, b: &DataType) -> bool {
    (a.is_numeric() && b.is_numeric()) || (a.is_text() && b.is_text()) || a == b
}

fn action(a: Option<ast::ReferentialAction>, what: &str) -> Result<FkAction> {
    Ok(match a {
        None | Some(ast::ReferentialAction::NoAction) => FkAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => FkAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => FkAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => FkAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => {
            return unsupported(format!(
                "{what} SET DEFAULT (NO ACTION, RESTRICT, CASCADE and SET NULL are supported)"
            ));
        }
    })
}

/// The foreign keys that reference table `id`: each referencing table with the key's
/// position among its foreign keys.
pub fn referencing(catalog: &Catalog, id: TableId) -> Referencing {
    let mut out = Vec::new();
    for t in catalog.tables() {
        for (k, fk) in t.foreign_keys.iter().enumerate() {
            if fk.parent == id {
                out.push((t.clone(), k));
            }
        }
    }
    out.sort_by_key(|(t, k)| (t.id, *k));
    out
}

/// Refuses to drop the tables `dropped` while a table not dropped with them references
/// one (2BP01, as PostgreSQL without CASCADE).
pub(crate) fn refuse_drop_referenced(catalog: &Catalog, dropped: &[TableId]) -> Result<()> {
    for &id in dropped {
        if let Some((child, k)) = referencing(catalog, id)
            .into_iter()
            .find(|(c, _)| !dropped.contains(&c.id))
        {
            let parent = catalog.table_by_id(id).map(|t| t.name.clone()).unwrap_or_default();
            return Err(SqlError::DependedOn {
                what: format!("table {parent}"),
                detail: format!(
                    "constraint {} on table {} depends on table {parent}",
                    child.foreign_keys[k].name, child.name
                ),
            });
        }
    }
    Ok(())
}

/// Refuses to drop index `i` of `schema` while a foreign key references its columns and no
/// other unique index of the table holds them (2BP01).
pub(crate) fn refuse_drop_index_referenced(catalog: &Catalog, schema: &TableSchema, i: usize) -> Result<()> {
    // The schema without the index: does another unique index still hold each key?
    let mut without = schema.clone();
    without.indexes.remove(i);
    for (child, k) in referencing(catalog, schema.id) {
        let fk = &child.foreign_keys[k];
        if schema.index_over(&fk.parent_columns, true) == Some(i)
            && without.index_over(&fk.parent_columns, true).is_none()
        {
            return Err(SqlError::DependentObjects(format!(
                "cannot drop index {} because constraint {} on table {} requires it",
                schema.indexes[i].name, fk.name, child.name
            )));
        }
    }
    Ok(())
}

/// `ALTER TABLE ... DROP CONSTRAINT name` of a foreign key: `schema` without it, or `None`
/// when `schema` has no foreign key of that name.
pub(crate) fn without(schema: &TableSchema, name: &str) -> Option<TableSchema> {
    let k = schema.foreign_keys.iter().position(|fk| fk.name == name)?;
    let mut next = schema.clone();
    next.foreign_keys.remove(k);
    Some(next)
}

/// The SQL of a foreign key's definition, as `pg_get_constraintdef` gives it.
pub fn definition(schema: &TableSchema, fk: &ForeignKey, parent: &TableSchema) -> String {
    let names = |t: &TableSchema, cols: &[usize]| {
        cols.iter()
            .map(|&c| t.columns.get(c).map_or("?", |c| c.name.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        "FOREIGN KEY ({}) REFERENCES {}({})",
        names(schema, &fk.columns),
        parent.name,
        names(parent, &fk.parent_columns)
    );
    if fk.on_update != FkAction::NoAction {
        s.push_str(&format!(" ON UPDATE {}", fk.on_update.sql()));
    }
    if fk.on_delete != FkAction::NoAction {
        s.push_str(&format!(" ON DELETE {}", fk.on_delete.sql()));
    }
    if fk.deferrable {
        s.push_str(" DEFERRABLE");
    }
    if fk.deferred {
        s.push_str(" INITIALLY DEFERRED");
    }
    s
}

/// The foreign keys referencing one table: each referencing table, with the key's position
/// among its foreign keys.
pub type Referencing = Vec<(Arc<TableSchema>, usize)>;

/// What a write must check and do for foreign keys, found when it is planned
/// (exec/foreign.rs does it).
#[derive(Debug, Default)]
pub struct FkPlan {
    /// The written table's foreign keys whose columns it writes (by position), with the
    /// tables they reference.
    pub parents: Vec<(usize, Arc<TableSchema>)>,
    /// For the written table, and each table a cascade reaches from it: the keys that
    /// reference it (the referencing table, the key's position among its foreign keys).
    pub referencing: Vec<(TableId, Referencing)>,
}

impl FkPlan {
    /// The keys that reference table `id`, as planned.
    pub fn referencing_of(&self, id: TableId) -> &[(Arc<TableSchema>, usize)] {
        self.referencing
            .iter()
            .find(|(t, _)| *t == id)
            .map_or(&[], |(_, refs)| refs.as_slice())
    }
}

/// How a write changes its table's rows, for [`fk_plan`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writes {
    /// New rows only (INSERT).
    Inserts,
    /// Existing rows' columns (UPDATE).
    Updates,
    /// Rows removed (DELETE).
    Deletes,
}

/// The foreign-key work of a write to `schema` that writes the columns `written` selects,
/// as `writes` says; `None` when there is none.
pub(crate) fn fk_plan(
    catalog: &Catalog,
    schema: &TableSchema,
    written: impl Fn(usize) -> bool,
    writes: Writes,
) -> Result<Option<Arc<FkPlan>>> {
    let deletes = writes == Writes::Deletes;
    let mut plan = FkPlan::default();
    for (k, fk) in schema.foreign_keys.iter().enumerate() {
        if fk.columns.iter().any(|&c| written(c)) {
            let parent = catalog
                .table_by_id(fk.parent)
                .cloned()
                .ok_or_else(|| SqlError::UnknownTable(format!("table id {}", fk.parent)))?;
            plan.parents.push((k, parent));
        }
    }
    // The keys referencing the table whose referenced columns it changes or removes, then
    // those referencing the tables its deletes cascade to.
    let mut queue = if writes == Writes::Inserts {
        Vec::new()
    } else {
        vec![schema.id]
    };
    let mut first = true;
    while let Some(id) = queue.pop() {
        if plan.referencing.iter().any(|(t, _)| *t == id) {
            continue;
        }
        let refs: Referencing = referencing(catalog, id)
            .into_iter()
            .filter(|(child, k)| {
                let fk = &child.foreign_keys[*k];
                !first || deletes || fk.parent_columns.iter().any(|&c| written(c))
            })
            .collect();
        for (child, k) in &refs {
            if deletes && child.foreign_keys[*k].on_delete == FkAction::Cascade {
                queue.push(child.id);
            }
        }
        if !refs.is_empty() {
            plan.referencing.push((id, refs));
        }
        first = false;
    }
    if plan.parents.is_empty() && plan.referencing.is_empty() {
        return Ok(None);
    }
    Ok(Some(Arc::new(plan)))
}

/// Where the referenced row of a key lies, seen from a row of the referencing table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParentAt {
    /// The referenced table is replicated: at every partition.
    Everywhere,
    /// At the partition of the key's value at this position (the referenced table's
    /// partition column).
    KeyValue(usize),
    /// At any partition (the referenced table's partition column is not in the key).
    Anywhere,
}

/// Where the rows `fk` references lie ([`ParentAt`]).
pub fn parent_at(fk: &ForeignKey, parent: &TableSchema) -> ParentAt {
    match parent.partition_column {
        None => ParentAt::Everywhere,
        Some(pc) => fk
            .parent_columns
            .iter()
            .position(|&c| c == pc)
            .map_or(ParentAt::Anywhere, ParentAt::KeyValue),
    }
}

/// Whether the rows of `child` holding a key of `fk` lie at the partition of the `parent`
/// row they reference: the key pairs the two tables' partition columns, whose values hash
/// alike (docs/architecture/multi-partition.md, "Foreign keys").
pub fn children_with_parent(child: &TableSchema, fk: &ForeignKey, parent: &TableSchema) -> bool {
    let (Some(cc), Some(pc)) = (child.partition_column, parent.partition_column) else {
        return false;
    };
    let (a, b) = (&child.columns[cc].ty, &parent.columns[pc].ty);
    (a == b || (a.is_integer() && b.is_integer()))
        && fk
            .columns
            .iter()
            .zip(&fk.parent_columns)
            .any(|(&c, &p)| c == cc && p == pc)
}

impl FkPlan {
    /// Whether the write's foreign-key work can be done at the partitions its rows and
    /// their keys name, rather than at every partition: each referenced table is
    /// replicated or partitioned by a column of the key, and the rows referencing a table
    /// whose keys it removes (through cascades too) lie with the rows they reference.
    /// `schema`: the written table.
    pub fn local(&self, schema: &TableSchema) -> bool {
        let parents = self
            .parents
            .iter()
            .all(|(k, parent)| parent_at(&schema.foreign_keys[*k], parent) != ParentAt::Anywhere);
        let table = |id: TableId| -> Option<&TableSchema> {
            if id == schema.id {
                return Some(schema);
            }
            self.referencing
                .iter()
                .flat_map(|(_, refs)| refs.iter())
                .find(|(t, _)| t.id == id)
                .map(|(t, _)| &**t)
        };
        parents
            && self.referencing.iter().all(|(id, refs)| {
                table(*id).is_some_and(|parent| {
                    refs.iter()
                        .all(|(child, k)| children_with_parent(child, &child.foreign_keys[*k], parent))
                })
            })
    }
}
