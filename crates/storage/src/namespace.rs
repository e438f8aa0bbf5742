//! Schemas (namespaces). Unqualified names live in `public`; `CREATE SCHEMA s` makes
//! another, whose tables, views, sequences and enum types are known to the catalog by their
//! qualified name `s.name` (a key), so that `s.t` and `t` are different objects and every
//! lookup stays one map access. An index, a constraint and a column's sequence live in their
//! table's schema: an index keeps its bare name in its table, and the derived names
//! (`t_pkey`, `t_c_seq`, ...) are made from the table's bare name.
//!
//! A name written with a dot inside quotes (`"a.b"`) would read as qualified, so a new
//! object's name must not hold one (checked where objects are created: the part before the
//! dot must be a schema, 3F000). Unqualified names are looked up in `public` only: under a
//! search_path that puts another schema first or leaves public out, a statement whose
//! unqualified name would mean something else in PostgreSQL is refused, or fails as there
//! (permafrost_sql::search_path), rather than answered from the wrong schema. (Here, beside the table schema, so that every crate
//! reads a key the one way; permafrost_sql re-exports it.)

/// The schema unqualified names live in.
pub const PUBLIC: &str = "public";

/// The schema and the bare name of catalog key `key`.
pub fn split(key: &str) -> (&str, &str) {
    key.split_once('.').unwrap_or((PUBLIC, key))
}

/// The bare name of catalog key `key`.
pub fn bare(key: &str) -> &str {
    split(key).1
}

/// The catalog key of `name` in schema `schema`.
pub fn qualify(schema: &str, name: &str) -> String {
    if schema == PUBLIC {
        name.to_string()
    } else {
        format!("{schema}.{name}")
    }
}

/// The key of `name` in the schema of key `key` (a table's index, a renamed object).
pub fn sibling(key: &str, name: &str) -> String {
    qualify(split(key).0, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_schema_and_name() {
        assert_eq!(split("t"), ("public", "t"));
        assert_eq!(split("s.t"), ("s", "t"));
        assert_eq!(bare("s.t_pkey"), "t_pkey");
        assert_eq!(qualify("public", "t"), "t");
        assert_eq!(qualify("s", "t"), "s.t");
        assert_eq!(sibling("s.t", "u"), "s.u");
        assert_eq!(sibling("t", "u"), "u");
    }
}
