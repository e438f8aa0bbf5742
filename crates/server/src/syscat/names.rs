//! The names of PostgreSQL's functions on the catalogs' engine (SQLite, `super`): which
//! ones the engine defines itself (`pf_<name>`, `super::functions`), which are renamed to
//! SQLite's own, and which SQLite has with PostgreSQL's meaning. A name in none of these
//! lists is 42883, even where SQLite has a function of that name, so that a catalog query
//! never runs one of SQLite's functions by accident (and none that builds values outside
//! the query's budget, `super::limits`).

use sqlparser::ast::{self, FunctionArguments, Ident, ObjectName, ObjectNamePart};

/// A translation that failed: the message says what is not supported.
#[derive(Debug)]
pub struct Unsupported(pub String);

/// The last part of a name, lower-cased.
pub(super) fn last_name(n: &ObjectName) -> String {
    match n.0.last() {
        Some(ObjectNamePart::Identifier(i)) => i.value.to_ascii_lowercase(),
        _ => String::new(),
    }
}

/// Functions the engine defines as `pf_<name>`, and the PostgreSQL type of their result.
pub(super) const FUNCTIONS: &[(&str, &str)] = &[
    ("format_type", "text"),
    ("pg_get_expr", "text"),
    ("pg_get_indexdef", "text"),
    ("pg_get_constraintdef", "text"),
    ("pg_get_serial_sequence", "text"),
    ("pg_get_userbyid", "name"),
    ("pg_get_viewdef", "text"),
    ("pg_get_triggerdef", "text"),
    ("pg_get_ruledef", "text"),
    ("pg_get_partkeydef", "text"),
    ("pg_get_statisticsobjdef", "text"),
    ("pg_get_statisticsobjdef_columns", "text"),
    ("pg_get_policy_expr", "text"),
    ("pg_relation_is_publishable", "bool"),
    ("pg_get_function_result", "text"),
    ("pg_get_function_arguments", "text"),
    ("pg_get_function_identity_arguments", "text"),
    ("pg_partition_ancestors", "regclass"),
    ("to_regclass", "regclass"),
    ("to_regtype", "regtype"),
    ("to_regproc", "regproc"),
    ("to_regnamespace", "oid"),
    ("pg_table_is_visible", "bool"),
    ("pg_type_is_visible", "bool"),
    ("pg_function_is_visible", "bool"),
    ("pg_collation_is_visible", "bool"),
    ("pg_table_size", "int8"),
    ("pg_relation_size", "int8"),
    ("pg_indexes_size", "int8"),
    ("pg_total_relation_size", "int8"),
    ("pg_database_size", "int8"),
    ("pg_size_pretty", "text"),
    ("obj_description", "text"),
    ("col_description", "text"),
    ("shobj_description", "text"),
    ("pg_encoding_to_char", "name"),
    ("current_schema", "name"),
    ("current_schemas", "_name"),
    ("current_database", "name"),
    ("current_catalog", "name"),
    ("current_user", "name"),
    ("current_role", "name"),
    ("session_user", "name"),
    ("user", "name"),
    ("version", "text"),
    ("pg_backend_pid", "int4"),
    ("current_setting", "text"),
    ("set_config", "text"),
    ("has_table_privilege", "bool"),
    ("has_schema_privilege", "bool"),
    ("has_database_privilege", "bool"),
    ("has_column_privilege", "bool"),
    ("has_function_privilege", "bool"),
    ("has_sequence_privilege", "bool"),
    ("pg_has_role", "bool"),
    ("pg_is_in_recovery", "bool"),
    ("pg_tablespace_location", "text"),
    ("quote_ident", "text"),
    ("quote_literal", "text"),
    ("array_to_string", "text"),
    ("array_upper", "int4"),
    ("array_lower", "int4"),
    ("array_position", "int4"),
    ("regexp_replace", "text"),
    ("split_part", "text"),
    ("starts_with", "bool"),
    ("left", "text"),
    ("right", "text"),
    ("lpad", "text"),
    ("rpad", "text"),
    ("repeat", "text"),
];

/// Whether `name` is one of [`FUNCTIONS`].
pub(super) fn is_catalog_function(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    FUNCTIONS.iter().any(|(n, _)| *n == lower)
}

/// Renamed: to one of SQLite's own functions, or to an aggregate of ours.
const RENAMED: &[(&str, &str)] = &[
    // (`pf_array_agg` is an aggregate of `super::limits`, not one of FUNCTIONS: its
    // result is the array's JSON, typed by `super::translate`'s hint.)
    ("array_agg", "pf_array_agg"),
    ("string_agg", "group_concat"),
    ("bool_and", "min"),
    ("bool_or", "max"),
    ("every", "min"),
    ("json_build_object", "json_object"),
    ("jsonb_build_object", "json_object"),
    ("json_build_array", "json_array"),
    ("greatest", "max"),
    ("least", "min"),
    ("cardinality", "json_array_length"),
    ("array_length", "json_array_length"),
    ("char_length", "length"),
    ("character_length", "length"),
    ("strpos", "instr"),
];

/// PostgreSQL's functions that SQLite has too, with the same meaning (and the
/// set-returning ones a select list's rewrite turns into joins).
const SHARED: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "coalesce",
    "nullif",
    "lower",
    "upper",
    "length",
    "substr",
    "replace",
    "trim",
    "ltrim",
    "rtrim",
    "abs",
    "round",
    "concat",
    "concat_ws",
    "row_number",
    "rank",
    "dense_rank",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
    "ntile",
    "percent_rank",
    "cume_dist",
    "unnest",
    "generate_subscripts",
    "_pg_expandarray",
];

/// Renames a function to what the engine calls it; one PostgreSQL does not have (or that
/// is not defined here) is 42883, even where SQLite has one of that name.
pub(super) fn function(f: &mut ast::Function) -> Result<(), Unsupported> {
    let name = last_name(&f.name);
    let to = if let Some((_, to)) = RENAMED.iter().find(|(n, _)| *n == name) {
        (*to).to_string()
    } else if FUNCTIONS.iter().any(|(n, _)| *n == name) {
        format!("pf_{name}")
    } else if SHARED.contains(&name.as_str()) || name.starts_with("pf_") {
        // (`pf_`: one of this module's, put in by an earlier rewrite.)
        if f.name.0.len() > 1 {
            f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]);
        }
        return Ok(());
    } else {
        return Err(Unsupported(format!("SQLSTATE 42883: function {name} does not exist")));
    };
    // `array_length(a, 1)`: SQLite's json_array_length takes the array alone.
    if name == "array_length"
        && let FunctionArguments::List(l) = &mut f.args
    {
        l.args.truncate(1);
    }
    f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(to))]);
    if matches!(f.args, FunctionArguments::None) {
        f.args = FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: Vec::new(),
            clauses: Vec::new(),
        });
    }
    Ok(())
}
