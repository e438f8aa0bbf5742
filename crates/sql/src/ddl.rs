//! DDL: CREATE TABLE, CREATE INDEX, DROP TABLE, DROP INDEX, and ALTER TABLE ... ADD
//! PRIMARY KEY / UNIQUE.
//!
//! Partitioning and evictability are PostgreSQL-style storage parameters:
//!
//! ```sql
//! CREATE TABLE usertable (ycsb_key BIGINT PRIMARY KEY, field0 VARCHAR(100), ...)
//!   WITH (partition_by = 'ycsb_key', evictable = true, primary_key_index = 'hash');
//! ```
//!
//! | parameter | values | default |
//! |---|---|---|
//! | `partition_by` | a column name, or `'none'` for a replicated table | chosen by crate::placement: the first primary-key column as a rule |
//! | `evictable` | `true` / `false` | `true` |
//! | `primary_key_index` | `'ordered'` (B-tree) / `'hash'` | `'ordered'` |
//!
//! So plain PostgreSQL DDL works unchanged: tables are partitioned by their primary key and
//! may be evicted. A table created without a primary key, `partition_by` or a column named
//! after a root's key (crate::placement) is replicated until `ALTER TABLE ... ADD PRIMARY
//! KEY` gives it one: it is then partitioned by the key's first column, as if it had been
//! created with the key (each partition keeps the rows of its own keys; pgbench's `-i`
//! creates its tables this way). Indexes from `CREATE INDEX` are ordered unless `USING
//! hash` is given. `ALTER TABLE ... SET (partition_by = ..., replicated = ...)` changes the
//! partitioning later, moving the rows (crate::storage_options).

use std::sync::Arc;

use permafrost_storage::{Column, ColumnDefault, IndexDef, IndexKind, TableSchema};
use permafrost_types::DataType;
use sqlparser::ast::{self, ColumnOption, GeneratedAs, ObjectType, Statement, TableConstraint};

use crate::bind::{ident, object_name};
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};

/// Whether a statement is DDL this module handles.
pub fn is_ddl(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::CreateView(_)
            | Statement::CreateSequence { .. }
            | Statement::CreateType { .. }
            | Statement::AlterType(_)
            | Statement::Drop { .. }
            | Statement::AlterTable(_)
            | Statement::Comment { .. }
            | Statement::CreateSchema { .. }
    )
}

/// Plans a DDL statement against `catalog`. An empty result means nothing to do
/// (`IF NOT EXISTS` on an existing object, `IF EXISTS` on a missing one).
pub fn plan_ddl(catalog: &Catalog, stmt: &Statement) -> Result<Vec<DdlChange>> {
    crate::temp::refuse_reaching(stmt)?;
    match stmt {
        Statement::CreateTable(ct) if crate::temp::makes_temporary(ct) => {
            crate::temp::create_table(catalog, ct, create_table)
        }
        Statement::CreateTable(ct) => {
            let Some(created) = create_table(catalog, ct)? else {
                return Ok(Vec::new());
            };
            // The tables it refines move first: a move that must be tried again (tuples
            // evicted meanwhile) then leaves nothing applied.
            let mut changes = match &created {
                DdlChange::CreateTable(s) => crate::placement::refined(catalog, s),
                _ => Vec::new(),
            };
            changes.push(created);
            Ok(changes)
        }
        Statement::CreateIndex(ci) => Ok(create_index(catalog, ci)?.into_iter().collect()),
        Statement::AlterTable(at) => alter_table(catalog, at),
        Statement::CreateView(cv) => create_view(catalog, cv),
        Statement::CreateSequence { .. } => crate::sequence_ddl::create_sequence(catalog, stmt),
        Statement::CreateType { .. } => crate::enum_ddl::create_type(catalog, stmt),
        Statement::CreateSchema { .. } => crate::schema_ddl::create_schema(catalog, stmt),
        Statement::AlterType(at) => crate::enum_ddl::alter_type(catalog, at),
        Statement::Comment {
            object_type,
            object_name,
            comment,
            if_exists: false,
        } => crate::comment::comment_on(catalog, object_type, object_name, comment.as_deref()),
        Statement::Drop {
            object_type,
            if_exists,
            names,
            cascade,
            ..
        } => {
            if *cascade {
                return match object_type {
                    ObjectType::Schema => crate::schema_ddl::drop_cascade(catalog, names, *if_exists, |c, tables| {
                        drop(c, ObjectType::Table, false, tables)
                    }),
                    _ => unsupported("DROP ... CASCADE"),
                };
            }
            drop(catalog, *object_type, *if_exists, names)
        }
        other => unsupported(format!("statement {other}")),
    }
}

/// The NOTICEs PostgreSQL gives for a DDL statement that leaves an object alone (`IF NOT
/// EXISTS` on an existing one, `IF EXISTS` on a missing one), and ours for a CREATE TABLE
/// that changes another table's partitioning (crate::placement::refined), against
/// `catalog` before the statement runs: each one's SQLSTATE and message.
pub fn skipped(catalog: &Catalog, stmt: &Statement) -> Vec<(&'static str, String)> {
    let exists = |name: &str| {
        let name = crate::namespace::bare(name);
        format!("relation \"{name}\" already exists, skipping")
    };
    let mut out = Vec::new();
    if let Statement::CreateTable(ct) = stmt
        && let Ok(Some(DdlChange::CreateTable(created))) = create_table(catalog, ct)
    {
        out.extend(crate::placement::refined_notices(catalog, &created));
    }
    match stmt {
        Statement::CreateTable(ct) if ct.if_not_exists => {
            if let Ok(name) = object_name(&ct.name)
                && catalog.table(&name).is_some()
            {
                out.push(("42P07", exists(&name)));
            }
        }
        Statement::CreateSequence {
            if_not_exists: true,
            name,
            ..
        } => {
            if let Ok(name) = object_name(name)
                && catalog.has_relation(&name)
            {
                out.push(("42P07", exists(&name)));
            }
        }
        Statement::CreateIndex(ci) if ci.if_not_exists => {
            if let Some(Ok(name)) = ci.name.as_ref().map(object_name)
                && let Ok(table) = object_name(&ci.table_name)
                && catalog.index_owner(&crate::namespace::sibling(&table, &name)).is_some()
            {
                out.push(("42P07", exists(&name)));
            }
        }
        Statement::Drop {
            object_type,
            if_exists: true,
            names,
            ..
        } => {
            for name in names.iter().filter_map(|n| object_name(n).ok()) {
                let (kind, missing) = match object_type {
                    ObjectType::Table => ("table", catalog.table(&name).is_none()),
                    ObjectType::Index => ("index", catalog.index_owner(&name).is_none()),
                    ObjectType::View => ("view", catalog.view(&name).is_none()),
                    ObjectType::Sequence => ("sequence", catalog.sequence(&name).is_none()),
                    ObjectType::Type => ("type", catalog.enum_type(&name).is_none()),
                    ObjectType::Schema => ("schema", !catalog.has_schema(&name)),
                    _ => continue,
                };
                if missing {
                    out.push(("00000", format!("{kind} \"{name}\" does not exist, skipping")));
                }
            }
        }
        Statement::AlterType(at) => out.extend(crate::enum_ddl::skipped(catalog, at)),
        Statement::CreateSchema { .. } => out.extend(crate::schema_ddl::create_skipped(catalog, stmt)),
        Statement::AlterTable(at) if at.if_exists => {
            if let Ok(name) = object_name(&at.name)
                && catalog.table(&name).is_none()
            {
                out.push(("00000", format!("relation \"{name}\" does not exist, skipping")));
            }
        }
        Statement::AlterTable(at) => {
            let Some(t) = object_name(&at.name).ok().and_then(|n| catalog.table(&n)) else {
                return out;
            };
            for op in &at.operations {
                match op {
                    ast::AlterTableOperation::AddColumn {
                        if_not_exists: true,
                        column_def,
                        ..
                    } if t.columns.iter().any(|c| c.name == ident(&column_def.name)) => {
                        let name = ident(&column_def.name);
                        out.push((
                            "42701",
                            format!("column \"{name}\" of relation \"{}\" already exists, skipping", t.name),
                        ));
                    }
                    ast::AlterTableOperation::DropColumn {
                        if_exists: true,
                        column_names,
                        ..
                    } => {
                        for n in column_names.iter().map(ident) {
                            if !t.columns.iter().any(|c| c.name == n) {
                                out.push((
                                    "00000",
                                    format!("column \"{n}\" of relation \"{}\" does not exist, skipping", t.name),
                                ));
                            }
                        }
                    }
                    _ => {}
                }
                if let ast::AlterTableOperation::DropConstraint {
                    if_exists: true, name, ..
                } = op
                {
                    let name = ident(name);
                    if !t.foreign_keys.iter().any(|fk| fk.name == name)
                        && !t.indexes.iter().any(|ix| ix.name == name)
                        && !t.checks.iter().any(|c| c.name == name)
                    {
                        out.push((
                            "00000",
                            format!(
                                "constraint \"{name}\" of relation \"{}\" does not exist, skipping",
                                t.name
                            ),
                        ));
                    }
                }
            }
        }
        _ => {}
    }
    if let Statement::Drop {
        object_type: ObjectType::Schema,
        cascade: true,
        names,
        ..
    } = stmt
    {
        out.extend(crate::schema_ddl::cascade_notices(catalog, names));
    }
    out
}

fn index_columns(schema_cols: &[Column], cols: &[ast::IndexColumn]) -> Result<Vec<usize>> {
    cols.iter()
        .map(|ic| {
            let name = match &ic.column.expr {
                ast::Expr::Identifier(i) => ident(i),
                other => return unsupported(format!("index on expression {other}")),
            };
            let c = schema_cols
                .iter()
                .position(|c| c.name == name)
                .ok_or(SqlError::UnknownColumn(name))?;
            if let Some(class) = &ic.operator_class {
                operator_class(&object_name(class)?, &schema_cols[c])?;
            }
            Ok(c)
        })
        .collect()
}

/// An index column's operator class: the pattern classes of text (what Django declares
/// for LIKE lookups) order as every text index here does, byte by byte; others are
/// refused.
fn operator_class(class: &str, col: &Column) -> Result<()> {
    match class {
        "text_pattern_ops" | "varchar_pattern_ops" | "bpchar_pattern_ops" if col.ty.is_text() => Ok(()),
        "text_pattern_ops" | "varchar_pattern_ops" | "bpchar_pattern_ops" => Err(SqlError::Type(format!(
            "operator class \"{class}\" does not accept data type {}",
            col.ty.sql_name()
        ))),
        other => unsupported(format!(
            "operator class {other} (text_pattern_ops, varchar_pattern_ops and bpchar_pattern_ops are supported)"
        )),
    }
}

fn create_table(catalog: &Catalog, ct: &ast::CreateTable) -> Result<Option<DdlChange>> {
    if ct.on_commit.is_some() {
        return Err(SqlError::Definition(
            "ON COMMIT can only be used on temporary tables".into(),
        ));
    }
    if ct.temporary
        || ct.external
        || ct.query.is_some()
        || ct.like.is_some()
        || ct.clone.is_some()
        || ct.partition_of.is_some()
    {
        return unsupported("CREATE TEMPORARY / EXTERNAL / AS / LIKE / PARTITION OF");
    }
    let name = object_name(&ct.name)?;
    catalog.check_schema_of(&name)?;
    if catalog.table(&name).is_some() {
        return if ct.if_not_exists {
            Ok(None)
        } else {
            Err(SqlError::DuplicateTable(name))
        };
    }
    let opts = crate::storage_options::table_options(&ct.table_options)?;
    let mut columns = Vec::new();
    let mut pk: Option<Vec<usize>> = None;
    // Each UNIQUE constraint's name, if given, and columns.
    let mut uniques: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    let mut sequence_column: Option<String> = None;
    // Foreign keys, planned once the table's schema is known (a key may reference it).
    let mut foreign: Vec<(Option<usize>, ast::ForeignKeyConstraint)> = Vec::new();
    // Checks likewise: the column they are declared on, the constraint.
    let mut checks: Vec<(Option<usize>, ast::CheckConstraint)> = Vec::new();
    for (i, cd) in ct.columns.iter().enumerate() {
        let serial = serial_type(&cd.data_type);
        let ty = match serial {
            Some(t) => t,
            None => crate::bind::map_type_in(catalog, &cd.data_type)?,
        };
        let mut col = Column::new(ident(&cd.name), ty);
        if serial.is_some() {
            col.nullable = false;
            col.default = Some(ColumnDefault::Sequence);
        }
        for opt in &cd.options {
            match &opt.option {
                ColumnOption::Generated {
                    generated_as: generated @ (GeneratedAs::Always | GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    col.generated_always = matches!(generated, GeneratedAs::Always);
                    if sequence_options.as_ref().is_some_and(|o| !o.is_empty()) {
                        return unsupported("identity sequence options (START WITH, INCREMENT BY, ...)");
                    }
                    if !matches!(col.ty, DataType::SmallInt | DataType::Integer | DataType::BigInt) {
                        return Err(SqlError::Definition(format!(
                            "identity column \"{}\" must be SMALLINT, INTEGER or BIGINT",
                            col.name
                        )));
                    }
                    col.nullable = false;
                    col.default = Some(ColumnDefault::Sequence);
                }
                ColumnOption::Null => col.nullable = true,
                ColumnOption::NotNull => col.nullable = false,
                ColumnOption::Default(e) => col.default = Some(crate::alter_column::default_for(catalog, e, &col)?),
                ColumnOption::PrimaryKey(_) => {
                    if pk.is_some() {
                        return Err(SqlError::Definition(format!(
                            "multiple primary keys for table \"{name}\" are not allowed"
                        )));
                    }
                    pk = Some(vec![i]);
                }
                ColumnOption::Unique(_) => uniques.push((opt.name.as_ref().map(ident), vec![i])),
                ColumnOption::ForeignKey(fk) => {
                    if !fk.columns.is_empty() || fk.referred_columns.len() > 1 {
                        return Err(SqlError::InvalidForeignKey(
                            "number of referencing and referenced columns for foreign key disagree".into(),
                        ));
                    }
                    let mut fk = fk.clone();
                    fk.name = opt.name.clone();
                    foreign.push((Some(i), fk));
                }
                ColumnOption::Check(c) => {
                    let mut c = c.clone();
                    c.name = c.name.or_else(|| opt.name.clone());
                    checks.push((Some(i), c));
                }
                other => return unsupported(format!("column option {other}")),
            }
        }
        if col.default == Some(ColumnDefault::Sequence) {
            if let Some(first) = &sequence_column {
                return unsupported(format!(
                    "more than one SERIAL or identity column in a table (\"{first}\" and \"{}\")",
                    col.name
                ));
            }
            sequence_column = Some(col.name.clone());
        }
        columns.push(col);
    }
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(p) => {
                if pk.is_some() {
                    return Err(SqlError::Definition(format!(
                        "multiple primary keys for table \"{name}\" are not allowed"
                    )));
                }
                pk = Some(index_columns(&columns, &p.columns)?);
            }
            TableConstraint::Unique(u) => {
                uniques.push((u.name.as_ref().map(ident), index_columns(&columns, &u.columns)?))
            }
            TableConstraint::ForeignKey(fk) => foreign.push((None, fk.clone())),
            TableConstraint::Check(c) => checks.push((None, c.clone())),
            other => return unsupported(format!("constraint {other}")),
        }
    }
    let mut indexes = Vec::new();
    if let Some(cols) = &pk {
        for &c in cols {
            columns[c].nullable = false;
        }
        indexes.push(IndexDef {
            name: format!("{}_pkey", crate::namespace::bare(&name)),
            columns: cols.clone(),
            unique: true,
            kind: opts.pk_kind,
            primary: true,
            constraint: true,
        });
    }
    for (given, cols) in uniques {
        let names: Vec<&str> = cols.iter().map(|&c| columns[c].name.as_str()).collect();
        indexes.push(IndexDef {
            name: given.unwrap_or_else(|| format!("{}_{}_key", crate::namespace::bare(&name), names.join("_"))),
            columns: cols,
            unique: true,
            kind: IndexKind::Ordered,
            primary: false,
            constraint: true,
        });
    }
    let partition_column = match opts.partition_by.as_deref() {
        Some(p) => crate::storage_options::partition_column(&columns, &name, p)?,
        None => crate::placement::choose(catalog, &columns, pk.as_deref()),
    };
    let mut schema = TableSchema {
        id: catalog.next_table_id(),
        name,
        columns,
        indexes,
        partition_column,
        partition_declared: opts.partition_by.is_some(),
        evictable: opts.evictable,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
    };
    schema.validate()?;
    for (column, fk) in &foreign {
        let planned = crate::foreign::plan(catalog, &schema, *column, fk)?;
        refuse_duplicate_constraint(&schema, &planned.name)?;
        schema.foreign_keys.push(planned);
    }
    for (column, c) in &checks {
        let planned = crate::check::plan(&schema, *column, c.name.as_ref(), &c.expr)?;
        refuse_duplicate_constraint(&schema, &planned.name)?;
        schema.checks.push(planned);
    }
    Ok(Some(DdlChange::CreateTable(Arc::new(schema))))
}

/// The integer type of SMALLSERIAL, SERIAL and BIGSERIAL (and their serialN aliases).
fn serial_type(t: &ast::DataType) -> Option<DataType> {
    let ast::DataType::Custom(name, mods) = t else {
        return None;
    };
    if !mods.is_empty() {
        return None;
    }
    match object_name(name).ok()?.as_str() {
        "smallserial" | "serial2" => Some(DataType::SmallInt),
        "serial" | "serial4" => Some(DataType::Integer),
        "bigserial" | "serial8" => Some(DataType::BigInt),
        _ => None,
    }
}

/// `ALTER TABLE [IF EXISTS] [ONLY] name ADD [CONSTRAINT c] PRIMARY KEY (columns)` or
/// `... UNIQUE (columns)`, one or more; anything else is refused.
fn alter_table(catalog: &Catalog, at: &ast::AlterTable) -> Result<Vec<DdlChange>> {
    if at.table_type.is_some() || at.on_cluster.is_some() || at.location.is_some() {
        return unsupported(format!("statement {at}"));
    }
    let table = object_name(&at.name)?;
    let Some(mut schema) = catalog.table(&table).map(|t| (**t).clone()) else {
        return if at.if_exists {
            Ok(Vec::new())
        } else {
            Err(SqlError::UnknownTable(table))
        };
    };
    let mut changes = Vec::new();
    for op in &at.operations {
        if let Some(next) = renamed_or_defaulted(catalog, &schema, op)? {
            changes.push(DdlChange::AlterSchema(next.clone()));
            changes.extend(crate::sequence_ddl::follow_renamed_column(catalog, &schema, &next));
            schema = (*next).clone();
            continue;
        }
        if let ast::AlterTableOperation::DropConstraint {
            if_exists,
            name,
            drop_behavior,
        } = op
        {
            if matches!(drop_behavior, Some(ast::DropBehavior::Cascade)) {
                return unsupported("DROP CONSTRAINT ... CASCADE");
            }
            let name = ident(name);
            if let Some(next) =
                crate::foreign::without(&schema, &name).or_else(|| crate::check::without(&schema, &name))
            {
                let next = Arc::new(next);
                changes.push(DdlChange::AlterSchema(next.clone()));
                schema = (*next).clone();
            } else if let Some(i) = schema.indexes.iter().position(|ix| ix.name == name && ix.constraint) {
                // A UNIQUE or PRIMARY KEY constraint is its index.
                if schema.indexes[i].primary {
                    return unsupported("dropping a primary key");
                }
                crate::foreign::refuse_drop_index_referenced(catalog, &schema, i)?;
                let mut next = schema.clone();
                next.indexes.remove(i);
                let next = Arc::new(next);
                changes.push(DdlChange::DropIndex {
                    schema: next.clone(),
                    dropped: i,
                });
                schema = (*next).clone();
            } else if !*if_exists {
                return Err(SqlError::UnknownObject(format!(
                    "constraint \"{name}\" of relation \"{}\" does not exist",
                    schema.name
                )));
            }
            continue;
        }
        if let ast::AlterTableOperation::SetOptionsParens { options } = op {
            for c in crate::storage_options::set_options(catalog, &schema, options)? {
                if let DdlChange::Repartition(s) | DdlChange::AlterSchema(s) = &c {
                    schema = (**s).clone();
                }
                changes.push(c);
            }
            continue;
        }
        if let Some(column_changes) = crate::alter_column::column_change(catalog, &schema, op)? {
            for c in column_changes {
                if let DdlChange::RewriteTable { schema: s, .. } | DdlChange::AlterSchema(s) = &c
                    && s.id == schema.id
                {
                    schema = (**s).clone();
                }
                changes.push(c);
            }
            continue;
        }
        let ast::AlterTableOperation::AddConstraint {
            constraint,
            not_valid: false,
        } = op
        else {
            return unsupported(format!(
                "ALTER TABLE ... {op} (ADD / DROP COLUMN, ADD / DROP CONSTRAINT, RENAME TO, RENAME COLUMN, ALTER COLUMN ... TYPE, SET / DROP DEFAULT, SET / DROP NOT NULL and SET (partition_by, replicated) are supported)"
            ));
        };
        let next = match constraint {
            TableConstraint::PrimaryKey(pk) => {
                if pk.index_type.is_some()
                    || !pk.include.is_empty()
                    || !pk.index_options.is_empty()
                    || pk.characteristics.is_some()
                {
                    return unsupported(format!("constraint {pk}"));
                }
                let next = with_primary_key(catalog, &schema, pk)?;
                changes.push(DdlChange::AddPrimaryKey(next.clone()));
                next
            }
            TableConstraint::Unique(u) => {
                let columns = index_columns(&schema.columns, &u.columns)?;
                let name = match &u.name {
                    Some(n) => ident(n),
                    None => {
                        let names: Vec<&str> = columns.iter().map(|&c| schema.columns[c].name.as_str()).collect();
                        format!("{}_{}_key", crate::namespace::bare(&table), names.join("_"))
                    }
                };
                let next = with_index(
                    catalog,
                    schema.clone(),
                    IndexDef {
                        name,
                        columns,
                        unique: true,
                        kind: IndexKind::Ordered,
                        primary: false,
                        constraint: true,
                    },
                )?;
                changes.push(DdlChange::CreateIndex(next.clone()));
                next
            }
            TableConstraint::ForeignKey(fk) => {
                let planned = crate::foreign::plan(catalog, &schema, None, fk)?;
                refuse_duplicate_constraint(&schema, &planned.name)?;
                let mut next = schema.clone();
                next.foreign_keys.push(planned);
                let next = Arc::new(next);
                changes.push(DdlChange::AlterSchema(next.clone()));
                next
            }
            TableConstraint::Check(c) => {
                let planned = crate::check::plan(&schema, None, c.name.as_ref(), &c.expr)?;
                refuse_duplicate_constraint(&schema, &planned.name)?;
                let mut next = schema.clone();
                next.checks.push(planned);
                let next = Arc::new(next);
                changes.push(DdlChange::AlterSchema(next.clone()));
                next
            }
            other => return unsupported(format!("constraint {other}")),
        };
        schema = (*next).clone();
    }
    Ok(changes)
}

/// Refuses a constraint named as one `schema` has (42710).
fn refuse_duplicate_constraint(schema: &TableSchema, name: &str) -> Result<()> {
    let taken = schema.indexes.iter().any(|ix| ix.name == name)
        || schema.foreign_keys.iter().any(|fk| fk.name == name)
        || schema.checks.iter().any(|c| c.name == name);
    if taken {
        return Err(SqlError::DuplicateObject(format!(
            "constraint \"{name}\" for relation \"{}\" already exists",
            schema.name
        )));
    }
    Ok(())
}

/// What `op` makes of `schema` when it changes a name or a default only (`RENAME TO`,
/// `RENAME COLUMN`, `ALTER COLUMN ... SET / DROP DEFAULT`); `None` for any other operation.
/// A table or column a view reads keeps its name (0A000: the view names it).
fn renamed_or_defaulted(
    catalog: &Catalog,
    schema: &TableSchema,
    op: &ast::AlterTableOperation,
) -> Result<Option<Arc<TableSchema>>> {
    let mut next = schema.clone();
    let column = |name: &ast::Ident| crate::foreign::columns_of(schema, std::slice::from_ref(name)).map(|c| c[0]);
    match op {
        ast::AlterTableOperation::RenameTable {
            table_name: ast::RenameTableNameKind::To(name),
        } => {
            // (The new name is in the table's schema.)
            let to = crate::namespace::sibling(&schema.name, crate::namespace::bare(&object_name(name)?));
            if to != schema.name && (catalog.table(&to).is_some() || catalog.view(&to).is_some()) {
                return Err(SqlError::DuplicateTable(to));
            }
            refuse_rename_if_viewed(catalog, &schema.name)?;
            next.name = to;
        }
        ast::AlterTableOperation::RenameColumn {
            old_column_name,
            new_column_name,
        } => {
            let from = ident(old_column_name);
            let c = schema
                .columns
                .iter()
                .position(|x| x.name == from)
                .ok_or_else(|| SqlError::UnknownColumn(from.clone()))?;
            let to = ident(new_column_name);
            if schema.columns.iter().any(|x| x.name == to) {
                return Err(SqlError::DuplicateColumn(format!(
                    "column \"{to}\" of relation \"{}\" already exists",
                    schema.name
                )));
            }
            refuse_rename_if_viewed(catalog, &schema.name)?;
            // The checks that read the column read it by its new name.
            for check in &mut next.checks {
                check.expr = crate::check::renamed(&check.expr, &from, &to)?;
            }
            next.columns[c].name = to;
        }
        ast::AlterTableOperation::AlterColumn {
            column_name,
            op: ast::AlterColumnOperation::SetDefault { value },
        } => {
            let c = column(column_name)?;
            next.columns[c].default = Some(crate::alter_column::default_for(catalog, value, &schema.columns[c])?);
        }
        ast::AlterTableOperation::AlterColumn {
            column_name,
            op: ast::AlterColumnOperation::DropDefault,
        } => {
            let c = column(column_name)?;
            next.columns[c].default = None;
        }
        _ => return Ok(None),
    }
    Ok(Some(Arc::new(next)))
}

/// Refuses to rename table `name` or one of its columns while a view reads it (0A000: the
/// view keeps its query as written, naming them; PostgreSQL follows the rename).
fn refuse_rename_if_viewed(catalog: &Catalog, name: &str) -> Result<()> {
    refuse_if_viewed(catalog, "table", name).map_err(|_| {
        SqlError::Unsupported(format!(
            "renaming table \"{name}\" or its columns while a view reads it (drop the view, rename, and create it again)"
        ))
    })
}

/// `schema` with index `def` appended as its last, checked: its name must be free in the
/// catalog and in `schema` (42P07).
fn with_index(catalog: &Catalog, mut schema: TableSchema, def: IndexDef) -> Result<Arc<TableSchema>> {
    if catalog
        .index_owner(&crate::namespace::sibling(&schema.name, &def.name))
        .is_some()
        || schema.index_by_name(&def.name).is_some()
    {
        return Err(SqlError::DuplicateTable(def.name));
    }
    schema.indexes.push(def);
    schema.validate()?;
    Ok(Arc::new(schema))
}

/// The table's schema with the primary key `pk`: its columns become NOT NULL, its index
/// is the last, and a table replicated only because it had no key is partitioned by the
/// key's first column.
fn with_primary_key(
    catalog: &Catalog,
    schema: &TableSchema,
    pk: &ast::PrimaryKeyConstraint,
) -> Result<Arc<TableSchema>> {
    if schema.indexes.iter().any(|i| i.primary) {
        return Err(SqlError::Definition(format!(
            "multiple primary keys for table \"{}\" are not allowed",
            schema.name
        )));
    }
    let columns = index_columns(&schema.columns, &pk.columns)?;
    let name = match pk.name.as_ref().or(pk.index_name.as_ref()) {
        Some(n) => ident(n),
        None => format!("{}_pkey", crate::namespace::bare(&schema.name)),
    };
    let mut next = schema.clone();
    for &c in &columns {
        next.columns[c].nullable = false;
    }
    if next.partition_column.is_none() && !next.partition_declared {
        next.partition_column = Some(columns[0]);
    }
    with_index(
        catalog,
        next,
        IndexDef {
            name,
            columns,
            unique: true,
            kind: IndexKind::Ordered,
            primary: true,
            constraint: true,
        },
    )
}

fn create_index(catalog: &Catalog, ci: &ast::CreateIndex) -> Result<Option<DdlChange>> {
    if ci.predicate.is_some() || !ci.include.is_empty() || !ci.with.is_empty() {
        return unsupported("partial indexes, INCLUDE and WITH on indexes");
    }
    let table = object_name(&ci.table_name)?;
    let schema = catalog
        .table(&table)
        .ok_or_else(|| SqlError::UnknownTable(table.clone()))?;
    let columns = index_columns(&schema.columns, &ci.columns)?;
    let kind = match &ci.using {
        None | Some(ast::IndexType::BTree) => IndexKind::Ordered,
        Some(ast::IndexType::Hash) => IndexKind::Hash,
        Some(other) => return unsupported(format!("index method {other}")),
    };
    // An index is in its table's schema, named without one (42P16 for a qualified name).
    let name = match &ci.name {
        Some(n) => match crate::bind::name_parts(n)?.as_slice() {
            [name] => name.clone(),
            _ => {
                return Err(SqlError::Definition(format!(
                    "index name {n} cannot be qualified: it goes in its table's schema"
                )));
            }
        },
        None => {
            let names: Vec<&str> = columns.iter().map(|&c| schema.columns[c].name.as_str()).collect();
            format!("{}_{}_idx", crate::namespace::bare(&table), names.join("_"))
        }
    };
    if catalog.index_owner(&crate::namespace::sibling(&table, &name)).is_some() {
        return if ci.if_not_exists {
            Ok(None)
        } else {
            Err(SqlError::DuplicateTable(name))
        };
    }
    let def = IndexDef {
        name,
        columns,
        unique: ci.unique,
        kind,
        primary: false,
        constraint: false,
    };
    Ok(Some(DdlChange::CreateIndex(with_index(
        catalog,
        (**schema).clone(),
        def,
    )?)))
}

fn drop(catalog: &Catalog, ty: ObjectType, if_exists: bool, names: &[ast::ObjectName]) -> Result<Vec<DdlChange>> {
    let mut changes = Vec::new();
    let mut dropped = Vec::new();
    for n in names {
        let name = object_name(n)?;
        match ty {
            ObjectType::Table => match catalog.table(&name) {
                Some(t) => {
                    refuse_if_viewed(catalog, "table", &name)?;
                    dropped.push(t.id);
                    changes.push(DdlChange::DropTable(t.id));
                    changes.extend(crate::sequence_ddl::drop_owned(catalog, t, None)?);
                }
                None if if_exists => {}
                None => return Err(SqlError::UnknownDropTable(name)),
            },
            ObjectType::Index => match catalog.index_owner(&name) {
                Some((t, i)) => {
                    if t.indexes[i].constraint {
                        return Err(SqlError::IndexOfConstraint {
                            index: name,
                            table: t.name.clone(),
                        });
                    }
                    crate::foreign::refuse_drop_index_referenced(catalog, t, i)?;
                    let mut next = (**t).clone();
                    next.indexes.remove(i);
                    changes.push(DdlChange::DropIndex {
                        schema: Arc::new(next),
                        dropped: i,
                    });
                }
                None if if_exists => {}
                None => return Err(SqlError::UnknownIndex(name)),
            },
            ObjectType::View => match catalog.view(&name) {
                Some(_) => {
                    refuse_if_viewed(catalog, "view", &name)?;
                    changes.push(DdlChange::DropView(name))
                }
                None if if_exists => {}
                None => return Err(SqlError::UnknownView(name)),
            },
            ObjectType::Sequence => changes.extend(crate::sequence_ddl::drop_sequence(catalog, &name, if_exists)?),
            ObjectType::Type => changes.extend(crate::enum_ddl::drop_type(catalog, &name, if_exists)?),
            ObjectType::Schema => changes.extend(crate::schema_ddl::drop_schema(catalog, &name, if_exists)?),
            other => return unsupported(format!("DROP {other}")),
        }
    }
    crate::foreign::refuse_drop_referenced(catalog, &dropped)?;
    Ok(changes)
}

/// Refuses to drop relation `name` (a `kind`) while a view reads it (2BP01, as
/// PostgreSQL without CASCADE).
fn refuse_if_viewed(catalog: &Catalog, kind: &str, name: &str) -> Result<()> {
    for v in catalog.views() {
        let mut reads = false;
        let _ = ast::visit_relations(&*v.query, |r| {
            if object_name(r).is_ok_and(|n| n == name) {
                reads = true;
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        if reads && v.name != name {
            return Err(SqlError::DependentObjects(format!(
                "cannot drop {kind} {name} because other objects depend on it (view {} depends on {kind} {name}); drop the view first",
                v.name
            )));
        }
    }
    Ok(())
}

/// `CREATE [OR REPLACE] VIEW name [(columns)] AS query`: the query is planned now (its
/// tables and columns must exist, it takes no parameters) and kept as written.
fn create_view(catalog: &Catalog, cv: &ast::CreateView) -> Result<Vec<DdlChange>> {
    if cv.materialized
        || cv.temporary
        || cv.or_alter
        || cv.secure
        || cv.to.is_some()
        || cv.params.is_some()
        || !cv.cluster_by.is_empty()
        || !matches!(cv.options, ast::CreateTableOptions::None)
    {
        return unsupported("this form of CREATE VIEW (materialized, temporary or with options)");
    }
    let name = object_name(&cv.name)?;
    catalog.check_schema_of(&name)?;
    if cv.if_not_exists && catalog.view(&name).is_some() {
        return Ok(Vec::new());
    }
    let planned = crate::plan::plan_query(catalog, &cv.query)?;
    if !planned.params.is_empty() {
        return Err(SqlError::Syntax("a view's query cannot take parameters".into()));
    }
    if cv.columns.len() > planned.columns.len() {
        return Err(SqlError::SubqueryColumns(
            "CREATE VIEW specifies more column names than columns",
        ));
    }
    Ok(vec![DdlChange::CreateView {
        view: Arc::new(crate::catalog::View {
            name,
            query: Arc::new((*cv.query).clone()),
            columns: cv.columns.iter().map(|c| ident(&c.name)).collect(),
        }),
        replace: cv.or_replace,
    }])
}
