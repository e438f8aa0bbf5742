//! Where a table made by plain DDL (no `partition_by`) is partitioned: chosen at CREATE
//! TABLE from the shapes of its key and of the tables already there
//! (docs/architecture/multi-partition.md, "A partitioning for plain DDL").
//!
//! - A table with a primary key is partitioned by the key's first column (sysbench's,
//!   YCSB's and pgbench's tables; TPC-C's composite keys led by the warehouse id, which
//!   co-partitions them, since equal values hash alike), except:
//! - a table whose key is one column that another table's composite key holds after a
//!   different leading column (TPC-C's ITEM, whose `i_id` STOCK's key `(s_w_id, s_i_id)`
//!   holds second) is replicated: it describes things every partition's rows refer to;
//! - a table without a primary key is partitioned by its column named after a root's key (a
//!   table keyed by its partition column alone: `h_w_id` for WAREHOUSE's `w_id`; the
//!   shortest such name where several are), so its rows go where the rows its writers touch
//!   are (TPC-C's HISTORY with its warehouse); with none, it is replicated as before.
//!
//! The choice is refined when a table is created that would have made an existing table a
//! dimension ([`refined`]: ITEM created before STOCK becomes replicated then), and a user
//! changes it with `ALTER TABLE ... SET (partition_by = ..., replicated = ...)`
//! (crate::storage_options); both move the rows. A `partition_by` given is never changed.
//!
//! A column is named after a key when its name ends with `_` and the key's name (`s_i_id`
//! after `i_id`); for a dimension's key, also when the names are equal. (A keyless table's
//! column merely called like a root's key, `id`, does not make it partitioned.)

use std::sync::Arc;

use permafrost_storage::{Column, TableSchema};

use crate::catalog::{Catalog, DdlChange};

/// Whether `column` is named after `key`: ending with `_` and `key`.
fn named_after(column: &str, key: &str) -> bool {
    column.len() > key.len() + 1 && column.ends_with(key) && column[..column.len() - key.len()].ends_with('_')
}

/// [`named_after`], or equal.
fn named_as(column: &str, key: &str) -> bool {
    column == key || named_after(column, key)
}

/// Whether values of the two columns' types hash alike (docs/format.md, "Partitioning").
fn hash_alike(a: &Column, b: &Column) -> bool {
    a.ty == b.ty || (a.ty.is_integer() && b.ty.is_integer())
}

/// The other tables of the catalog that are partitioned (temporary tables aside).
fn partitioned(catalog: &Catalog) -> impl Iterator<Item = &TableSchema> {
    catalog
        .tables()
        .map(|t| &**t)
        .filter(|t| t.partition_column.is_some() && !crate::temp::is_temp(&t.name))
}

/// The partition column of a new table with these columns and primary key (column
/// positions) when its DDL names none; `None`: replicated.
pub(crate) fn choose(catalog: &Catalog, columns: &[Column], pk: Option<&[usize]>) -> Option<usize> {
    match pk {
        Some([k]) if is_dimension(catalog, &columns[*k]) => None,
        Some(cols) => cols.first().copied(),
        None => by_root_key(catalog, columns),
    }
}

/// Whether another table's composite primary key holds a column named after `key` after
/// a leading column that is not.
fn is_dimension(catalog: &Catalog, key: &Column) -> bool {
    partitioned(catalog).any(|t| holds_after_lead(t, key))
}

/// Whether `t`'s composite primary key holds a column named after `key` after a leading
/// column that is not.
fn holds_after_lead(t: &TableSchema, key: &Column) -> bool {
    let Some(pk) = t.indexes.iter().find(|ix| ix.primary).map(|ix| &ix.columns) else {
        return false;
    };
    pk.len() > 1
        && !named_as(&t.columns[pk[0]].name, &key.name)
        && pk[1..]
            .iter()
            .any(|&c| named_as(&t.columns[c].name, &key.name) && hash_alike(&t.columns[c], key))
}

/// The choice refined by a table just created, `created`: each table whose partitioning was
/// chosen (no `partition_by` given) by its one-column key, which `created`'s composite key
/// holds after a different leading column, would have been replicated had `created` existed
/// before it (TPC-C's ITEM created before STOCK), and becomes so now, its rows copied to
/// every partition ([`DdlChange::Repartition`]).
pub(crate) fn refined(catalog: &Catalog, created: &TableSchema) -> Vec<DdlChange> {
    if created.partition_column.is_none() || crate::temp::is_temp(&created.name) {
        return Vec::new();
    }
    partitioned(catalog)
        .filter(|t| !t.partition_declared && t.id != created.id)
        .filter(
            |t| match t.indexes.iter().find(|ix| ix.primary).map(|ix| ix.columns.as_slice()) {
                Some([k]) => t.partition_column == Some(*k) && holds_after_lead(created, &t.columns[*k]),
                _ => false,
            },
        )
        .map(|t| {
            let mut next = t.clone();
            next.partition_column = None;
            DdlChange::Repartition(Arc::new(next))
        })
        .collect()
}

/// The NOTICEs for the tables [`refined`] makes replicated: SQLSTATE and message.
pub(crate) fn refined_notices(catalog: &Catalog, created: &TableSchema) -> Vec<(&'static str, String)> {
    refined(catalog, created)
        .iter()
        .filter_map(|c| match c {
            DdlChange::Repartition(t) => Some((
                "00000",
                format!(
                    "table \"{}\" is now replicated at every partition, its rows copied: the primary key of \"{}\" holds its key (ALTER TABLE ... SET (partition_by = ...) chooses otherwise)",
                    crate::namespace::bare(&t.name),
                    crate::namespace::bare(&created.name)
                ),
            )),
            _ => None,
        })
        .collect()
}

/// The partition column CREATE TABLE would give `schema` were it not replicated: its
/// primary key's first column, else its column named after a root's key (`ALTER TABLE ...
/// SET (replicated = false)`).
pub(crate) fn partitioned_choice(catalog: &Catalog, schema: &TableSchema) -> Option<usize> {
    match schema.indexes.iter().find(|ix| ix.primary) {
        Some(pk) => pk.columns.first().copied(),
        None => by_root_key(catalog, &schema.columns),
    }
}

/// The column of a keyless table named after a root's key (the shortest name where
/// several are), if any.
fn by_root_key(catalog: &Catalog, columns: &[Column]) -> Option<usize> {
    let roots: Vec<&Column> = partitioned(catalog)
        .filter_map(|t| {
            let pk = &t.indexes.iter().find(|ix| ix.primary)?.columns;
            (pk.len() == 1 && t.partition_column == Some(pk[0])).then(|| &t.columns[pk[0]])
        })
        .collect();
    columns
        .iter()
        .enumerate()
        .filter(|(_, c)| roots.iter().any(|r| named_after(&c.name, &r.name) && hash_alike(c, r)))
        .min_by_key(|(i, c)| (c.name.len(), *i))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::{named_after, named_as};

    #[test]
    fn names_match_after_an_underscore_or_whole() {
        assert!(!named_after("w_id", "w_id"));
        assert!(named_as("w_id", "w_id"));
        assert!(named_after("h_w_id", "w_id"));
        assert!(named_after("h_c_w_id", "w_id"));
        assert!(!named_after("hw_id", "w_id"));
        assert!(!named_after("_w_id", "w_id"));
        assert!(!named_as("w_id", "h_w_id"));
        assert!(!named_as("id", "w_id"));
    }
}
