//! `ALTER TABLE` operations on a table's columns: ADD COLUMN, DROP COLUMN, ALTER COLUMN ...
//! TYPE, SET NOT NULL and DROP NOT NULL. All but DROP NOT NULL rewrite the table's rows
//! (`DdlChange::RewriteTable`: each new column's values from a column of the old rows or
//! one value for all, its indexes built again, at every partition, refused while part of
//! the table is evicted); DROP NOT NULL changes only the definition. A dropped column takes
//! the indexes, checks and foreign keys that use it with it, as in PostgreSQL; one a view or
//! another table's foreign key needs, the partition column and a primary key column stay
//! (2BP01, 0A000).

use std::sync::Arc;

use permafrost_storage::{Column, ColumnDefault, ColumnFrom, TableSchema};
use permafrost_types::{DataType, Value};
use sqlparser::ast::{self, AlterColumnOperation, AlterTableOperation, ColumnOption};

use crate::bind::ident;
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};
use crate::expr::{Expr, Func};
use crate::plan::{bind_constant, eval_constant};

/// The changes `op` makes to `schema`'s columns, or `None` for an operation of another
/// kind. (`schema` is the table as the statement's earlier operations leave it.)
pub(crate) fn column_change(
    catalog: &Catalog,
    schema: &TableSchema,
    op: &AlterTableOperation,
) -> Result<Option<Vec<DdlChange>>> {
    let same = |s: &TableSchema| -> Vec<ColumnFrom> { (0..s.columns.len()).map(ColumnFrom::Column).collect() };
    match op {
        AlterTableOperation::AddColumn {
            if_not_exists,
            column_def,
            column_position,
            ..
        } => {
            if column_position.is_some() {
                return unsupported("ADD COLUMN ... FIRST / AFTER (MySQL's)");
            }
            let name = ident(&column_def.name);
            if schema.columns.iter().any(|c| c.name == name) {
                return if *if_not_exists {
                    Ok(Some(Vec::new()))
                } else {
                    Err(SqlError::DuplicateColumn(format!(
                        "column \"{name}\" of relation \"{}\" already exists",
                        schema.name
                    )))
                };
            }
            let (column, fill, extra) = added_column(catalog, schema, column_def)?;
            let mut next = schema.clone();
            next.columns.push(column);
            let mut from = same(schema);
            from.push(ColumnFrom::Value(fill));
            let next = extra(next)?;
            next.validate()?;
            Ok(Some(vec![DdlChange::RewriteTable {
                schema: Arc::new(next),
                from: from.into(),
            }]))
        }
        AlterTableOperation::DropColumn {
            column_names,
            if_exists,
            drop_behavior,
            ..
        } => {
            let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
            let mut next = schema.clone();
            let mut changes = Vec::new();
            for n in column_names {
                let name = ident(n);
                let Some(c) = next.columns.iter().position(|x| x.name == name) else {
                    if *if_exists {
                        continue;
                    }
                    return Err(SqlError::UnknownTargetColumn {
                        column: name,
                        table: schema.name.clone(),
                    });
                };
                let (without, children) = dropped(catalog, &next, c, cascade)?;
                next = without;
                changes.extend(children);
                changes.extend(crate::sequence_ddl::drop_owned(catalog, schema, Some(&name))?);
            }
            if next.columns.len() == schema.columns.len() {
                return Ok(Some(Vec::new()));
            }
            let from: Vec<ColumnFrom> = next
                .columns
                .iter()
                .map(|c| {
                    let old = schema.columns.iter().position(|o| o.name == c.name).unwrap_or(0);
                    ColumnFrom::Column(old)
                })
                .collect();
            let mut all = vec![DdlChange::RewriteTable {
                schema: Arc::new(next),
                from: from.into(),
            }];
            all.extend(changes);
            Ok(Some(all))
        }
        AlterTableOperation::AlterColumn { column_name, op } => {
            let name = ident(column_name);
            let c = || {
                schema
                    .columns
                    .iter()
                    .position(|x| x.name == name)
                    .ok_or_else(|| SqlError::UnknownTargetColumn {
                        column: name.clone(),
                        table: schema.name.clone(),
                    })
            };
            match op {
                AlterColumnOperation::DropNotNull => {
                    let c = c()?;
                    if schema.indexes.iter().any(|ix| ix.primary && ix.columns.contains(&c)) {
                        return Err(SqlError::Definition(format!("column \"{name}\" is in a primary key")));
                    }
                    let mut next = schema.clone();
                    next.columns[c].nullable = true;
                    Ok(Some(vec![DdlChange::AlterSchema(Arc::new(next))]))
                }
                AlterColumnOperation::SetNotNull => {
                    let c = c()?;
                    if !schema.columns[c].nullable {
                        return Ok(Some(Vec::new()));
                    }
                    let mut next = schema.clone();
                    next.columns[c].nullable = false;
                    Ok(Some(vec![DdlChange::RewriteTable {
                        from: same(schema).into(),
                        schema: Arc::new(next),
                    }]))
                }
                AlterColumnOperation::SetDataType { data_type, using, .. } => {
                    let c = c()?;
                    let ty = crate::bind::map_type_in(catalog, data_type)?;
                    if let Some(u) = using
                        && !is_plain_cast(u, &name)
                    {
                        return unsupported(format!(
                            "ALTER COLUMN ... TYPE ... USING {u} (USING the column cast to the type is supported)"
                        ));
                    }
                    if schema.columns[c].ty == ty {
                        return Ok(Some(Vec::new()));
                    }
                    // (Between integer types every row stays at its partition: an
                    // integer hashes alike whatever its width.)
                    if schema.partition_column == Some(c) && !(schema.columns[c].ty.is_integer() && ty.is_integer()) {
                        return unsupported(format!(
                            "changing the type of column \"{name}\", which partitions table \"{}\" (to another \
                             integer type is supported)",
                            schema.name
                        ));
                    }
                    let mut next = schema.clone();
                    next.columns[c].ty = ty;
                    if let Some(ColumnDefault::Value(v)) = &next.columns[c].default {
                        next.columns[c].default = Some(ColumnDefault::Value(v.clone().coerce_to(&ty)?));
                    }
                    refuse_key_types(catalog, &next)?;
                    // Its checks still bind over the column's new type.
                    crate::check::bound(&next)?;
                    next.validate()?;
                    Ok(Some(vec![DdlChange::RewriteTable {
                        from: same(schema).into(),
                        schema: Arc::new(next),
                    }]))
                }
                _ => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

/// What happens to a table's schema once a column is added, after the column itself: its
/// constraints declared with it.
type Extra<'a> = Box<dyn FnOnce(TableSchema) -> Result<TableSchema> + 'a>;

/// The column `def` adds to `schema`, the value the rows already there take, and what its
/// constraints add to the schema.
fn added_column<'a>(
    catalog: &'a Catalog,
    schema: &TableSchema,
    def: &'a ast::ColumnDef,
) -> Result<(Column, Value, Extra<'a>)> {
    let ty = crate::bind::map_type_in(catalog, &def.data_type)?;
    let mut col = Column::new(ident(&def.name), ty);
    let mut fks = Vec::new();
    let mut checks = Vec::new();
    for opt in &def.options {
        match &opt.option {
            ColumnOption::Null => col.nullable = true,
            ColumnOption::NotNull => col.nullable = false,
            ColumnOption::Default(e) => {
                let d = default_for(catalog, e, &col)?;
                if matches!(
                    d,
                    ColumnDefault::Random | ColumnDefault::RandomUuid | ColumnDefault::NextVal { .. }
                ) {
                    return unsupported(
                        "ADD COLUMN with a DEFAULT of random(), gen_random_uuid() or nextval() (add the column \
                         without it, fill it with UPDATE, then SET DEFAULT)",
                    );
                }
                if matches!(d, ColumnDefault::CurrentTimestamp { .. }) {
                    return unsupported(
                        "ADD COLUMN with DEFAULT now() (the rows there would take the time of the change: add the \
                         column with a constant default, then SET DEFAULT now())",
                    );
                }
                col.default = Some(d);
            }
            ColumnOption::ForeignKey(fk) => {
                let mut fk = fk.clone();
                fk.name = opt.name.clone();
                fks.push(fk);
            }
            ColumnOption::Check(c) => {
                let mut c = c.clone();
                c.name = c.name.or_else(|| opt.name.clone());
                checks.push(c);
            }
            other => {
                return unsupported(format!(
                    "ADD COLUMN ... {other} (add the column, then the constraint with ALTER TABLE ... ADD)"
                ));
            }
        }
    }
    let fill = match &col.default {
        Some(ColumnDefault::Value(v)) => v.clone(),
        _ => Value::Null,
    };
    let at = schema.columns.len();
    let extra: Extra<'a> = Box::new(move |mut next: TableSchema| {
        for fk in &fks {
            let planned = crate::foreign::plan(catalog, &next, Some(at), fk)?;
            next.foreign_keys.push(planned);
        }
        for c in &checks {
            let planned = crate::check::plan(&next, Some(at), c.name.as_ref(), &c.expr)?;
            next.checks.push(planned);
        }
        Ok(next)
    });
    Ok((col, fill, extra))
}

/// `schema` without column `c`, and the changes to other tables that follow; the indexes,
/// checks and foreign keys of the table that use it go with it, as in PostgreSQL, and with
/// `cascade` the other tables' foreign keys that reference it.
fn dropped(catalog: &Catalog, schema: &TableSchema, c: usize, cascade: bool) -> Result<(TableSchema, Vec<DdlChange>)> {
    let name = &schema.columns[c].name;
    if schema.columns.len() == 1 {
        return unsupported(format!("dropping the last column of table \"{}\"", schema.name));
    }
    if schema.partition_column == Some(c) {
        return unsupported(format!(
            "dropping column \"{name}\", which partitions table \"{}\"",
            schema.name
        ));
    }
    if schema.indexes.iter().any(|ix| ix.primary && ix.columns.contains(&c)) {
        return unsupported(format!(
            "dropping column \"{name}\" of the primary key of table \"{}\"",
            schema.name
        ));
    }
    if catalog.views().any(|v| {
        let mut reads = false;
        let _ = ast::visit_relations(&*v.query, |r| {
            reads |= crate::bind::object_name(r).is_ok_and(|n| n == schema.name);
            std::ops::ControlFlow::<()>::Continue(())
        });
        reads
    }) {
        return Err(SqlError::DependentObjects(format!(
            "cannot drop column {name} of table {} because a view reads the table; drop the view first",
            schema.name
        )));
    }
    let shift = |x: usize| if x > c { x - 1 } else { x };
    // Keys of other tables that reference this one: refused if they need the column,
    // else their referenced columns renumbered.
    let mut changes = Vec::new();
    for (child, k) in crate::foreign::referencing(catalog, schema.id) {
        if child.id == schema.id {
            continue;
        }
        let fk = &child.foreign_keys[k];
        if fk.parent_columns.contains(&c) && !cascade {
            return Err(SqlError::DependedOn {
                what: format!("column {name} of table {}", schema.name),
                detail: format!(
                    "constraint {} on table {} depends on column {name} of table {}",
                    fk.name, child.name, schema.name
                ),
            });
        }
    }
    for (child, _) in crate::foreign::referencing(catalog, schema.id) {
        if child.id == schema.id
            || changes
                .iter()
                .any(|ch| matches!(ch, DdlChange::AlterSchema(s) if s.id == child.id))
        {
            continue;
        }
        let mut next = (*child).clone();
        // (With CASCADE, the keys that need the column go.)
        next.foreign_keys
            .retain(|fk| fk.parent != schema.id || !fk.parent_columns.contains(&c));
        for fk in &mut next.foreign_keys {
            if fk.parent == schema.id {
                fk.parent_columns = fk.parent_columns.iter().map(|&x| shift(x)).collect();
            }
        }
        changes.push(DdlChange::AlterSchema(Arc::new(next)));
    }
    let mut next = schema.clone();
    next.columns.remove(c);
    next.indexes.retain(|ix| !ix.columns.contains(&c));
    for ix in &mut next.indexes {
        ix.columns = ix.columns.iter().map(|&x| shift(x)).collect();
    }
    next.partition_column = next.partition_column.map(shift);
    next.foreign_keys
        .retain(|fk| !(fk.columns.contains(&c) || fk.parent == schema.id && fk.parent_columns.contains(&c)));
    for fk in &mut next.foreign_keys {
        fk.columns = fk.columns.iter().map(|&x| shift(x)).collect();
        if fk.parent == schema.id {
            fk.parent_columns = fk.parent_columns.iter().map(|&x| shift(x)).collect();
        }
    }
    next.checks
        .retain(|ch| crate::check::bound_over(&next_columns(schema, c), ch).is_ok());
    Ok((next, changes))
}

/// `schema` with column `c` gone (what its checks may still read).
fn next_columns(schema: &TableSchema, c: usize) -> TableSchema {
    let mut s = schema.clone();
    s.columns.remove(c);
    s.indexes.clear();
    s
}

/// Whether `u` (a USING expression) is column `name` cast to a type: the conversion the
/// change makes anyway.
fn is_plain_cast(u: &ast::Expr, name: &str) -> bool {
    match u {
        ast::Expr::Cast { expr, .. } => matches!(&**expr, ast::Expr::Identifier(i) if ident(i) == name),
        ast::Expr::Identifier(i) => ident(i) == name,
        ast::Expr::Nested(e) => is_plain_cast(e, name),
        _ => false,
    }
}

/// Refuses a column type that no longer matches a foreign key through it (42804).
fn refuse_key_types(catalog: &Catalog, next: &TableSchema) -> Result<()> {
    let ok = crate::foreign::comparable;
    for fk in &next.foreign_keys {
        let parent = if fk.parent == next.id {
            next
        } else {
            match catalog.table_by_id(fk.parent) {
                Some(p) => p,
                None => continue,
            }
        };
        for (&c, &p) in fk.columns.iter().zip(&fk.parent_columns) {
            if !ok(&next.columns[c].ty, &parent.columns[p].ty) {
                return Err(crate::foreign::incompatible(
                    &fk.name,
                    &next.columns[c],
                    &parent.columns[p],
                ));
            }
        }
    }
    for (child, k) in crate::foreign::referencing(catalog, next.id) {
        let fk = &child.foreign_keys[k];
        for (&c, &p) in fk.columns.iter().zip(&fk.parent_columns) {
            if child.id != next.id && !ok(&child.columns[c].ty, &next.columns[p].ty) {
                return Err(crate::foreign::incompatible(
                    &fk.name,
                    &child.columns[c],
                    &next.columns[p],
                ));
            }
        }
    }
    Ok(())
}

/// The default `e` gives column `col` (CREATE TABLE, ADD COLUMN, SET DEFAULT): `now()` kept as
/// such, anything else a constant converted to the column's type.
pub(crate) fn default_for(catalog: &Catalog, e: &ast::Expr, col: &Column) -> Result<ColumnDefault> {
    let (x, _) = bind_constant(catalog, e)?;
    if x == Expr::Now || matches!(&x, Expr::Cast(n, _) if **n == Expr::Now) {
        let now = matches!(e, ast::Expr::Function(f) if f.name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| i.value.eq_ignore_ascii_case("now")));
        return Ok(ColumnDefault::CurrentTimestamp { now });
    }
    // Drawn for each row, as PostgreSQL evaluates a volatile default.
    match (&x, col.ty) {
        (Expr::Func(Func::Random, _), DataType::Double) => return Ok(ColumnDefault::Random),
        (Expr::Func(Func::GenRandomUuid, _), DataType::Uuid) => return Ok(ColumnDefault::RandomUuid),
        (Expr::Func(Func::NextVal { table, step }, _), _)
            if let Some(seq) = catalog.sequences().find(|s| s.id == *table) =>
        {
            return Ok(ColumnDefault::NextVal {
                sequence: seq.id,
                name: seq.name.clone(),
                increment: step.increment,
                min: step.min,
                max: step.max,
            });
        }
        (Expr::Func(Func::NextVal { .. }, _), _) => {
            return unsupported(
                "a DEFAULT of nextval() (declare the column SERIAL, BIGSERIAL or GENERATED ... AS IDENTITY: its \
                 default is its sequence's nextval)",
            );
        }
        (Expr::Func(Func::Clock { .. }, _), _) => {
            return unsupported(
                "a DEFAULT of clock_timestamp() or statement_timestamp() (DEFAULT now() is taken: the \
                 transaction's timestamp)",
            );
        }
        (Expr::Func(Func::Random | Func::GenRandomUuid, _), _) => {
            return unsupported(format!(
                "a DEFAULT of random() or gen_random_uuid() on a column of type {} (random() on double \
                 precision, gen_random_uuid() on uuid are taken)",
                col.ty.sql_name()
            ));
        }
        _ => {}
    }
    let v: Value = eval_constant(&x)?;
    // (A value that does not convert is its conversion's error, as PostgreSQL gives it.)
    Ok(ColumnDefault::Value(v.coerce_to(&col.ty)?))
}
