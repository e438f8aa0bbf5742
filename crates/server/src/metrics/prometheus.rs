//! Rows in the Prometheus text exposition format 0.0.4 ([`render`]).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::catalog::*;
use super::rows::*;

/// A sample value in the exposition format.
pub(crate) fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        v.to_string()
    }
}

/// Escapes HELP text (backslash and line feed).
pub(crate) fn escape_help(h: &str) -> String {
    h.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Renders rows in the Prometheus text exposition format (version 0.0.4): the samples of
/// each family together, after its `# HELP` and `# TYPE` lines. Families are output in the
/// order of their first row; names not in [`METRICS`] are rendered as `untyped`.
pub fn render(rows: &[StatRow]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, Vec<&StatRow>> = HashMap::new();
    for row in rows {
        let family = describe(&row.name).map_or(row.name.as_str(), |i| i.name);
        groups
            .entry(family)
            .or_insert_with(|| {
                order.push(family);
                Vec::new()
            })
            .push(row);
    }
    let mut out = String::with_capacity(rows.len() * 64);
    for family in order {
        match describe(family) {
            Some(info) => {
                let _ = writeln!(out, "# HELP {family} {}", escape_help(info.help));
                let _ = writeln!(out, "# TYPE {family} {}", info.kind.name());
            }
            None => {
                let _ = writeln!(out, "# TYPE {family} untyped");
            }
        }
        for row in groups.get(family).into_iter().flatten() {
            out.push_str(&row.name);
            if !row.labels.is_empty() {
                out.push('{');
                out.push_str(&row.labels);
                out.push('}');
            }
            out.push(' ');
            out.push_str(&format_value(row.value));
            out.push('\n');
        }
    }
    out
}
