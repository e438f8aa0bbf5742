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
//! A column is named after a key when its name ends with `_` and the key's name (`s_i_id`
//! after `i_id`); for a dimension's key, also when the names are equal. (A keyless table's
//! column merely called like a root's key, `id`, does not make it partitioned.)

use permafrost_storage::{Column, TableSchema};

use crate::catalog::Catalog;

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
    partitioned(catalog).any(|t| {
        let Some(pk) = t.indexes.iter().find(|ix| ix.primary).map(|ix| &ix.columns) else {
            return false;
        };
        pk.len() > 1
            && !named_as(&t.columns[pk[0]].name, &key.name)
            && pk[1..]
                .iter()
                .any(|&c| named_as(&t.columns[c].name, &key.name) && hash_alike(&t.columns[c], key))
    })
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
