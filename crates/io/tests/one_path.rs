//! One import path for the values: `Value`, `DataType`, `Numeric` and everything else that
//! `crates/types` defines are named as `permafrost_types::…` in every crate, and no other
//! crate re-exports them, so that a reader meets one name for one thing.
//!
//! The test reads the sources (here, in the crate with no product dependencies, as the
//! import test next to it does): it takes the public names of `crates/types/src/lib.rs` and
//! fails on any path of another workspace crate that reaches one of them
//! (`permafrost_storage::Value`, `permafrost_executor::{Database, Value}`, a `types::` shim)
//! and on any `pub use` of `permafrost_types` outside it, naming the file and line.
//! `planted_*` show it failing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The names `crates/types/src/lib.rs` makes public (its items and its re-exports).
fn public_names(lib: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("pub ") else {
            continue;
        };
        let mut words = rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '{' || c == ','));
        match words.next() {
            Some("use") => {
                // `pub use numeric::{Numeric, NumericError};`
                let group = rest.split(['{', '}']).nth(1).unwrap_or("");
                names.extend(group.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()));
            }
            Some("enum" | "struct" | "fn" | "const" | "mod" | "type" | "trait" | "static") => {
                if let Some(name) = words.find(|w| !w.is_empty()) {
                    names.insert(name.trim_end_matches(['{', ',']).to_string());
                }
            }
            _ => {}
        }
    }
    names
}

/// What a path or `use` group that starts at `text` (just past `crate_name::`) takes from
/// the crate's root: the first name of the path (`storage` of `storage::Value`), or the
/// first name of each item of a group (`Database` and `Value` of `{Database, Value}`).
fn root_names(text: &str) -> Vec<&str> {
    let word = |t: &str| -> usize { t.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(t.len()) };
    let Some(group) = text.trim_start().strip_prefix('{') else {
        return vec![&text[..word(text)]];
    };
    let mut names = Vec::new();
    let (mut depth, mut item_start) = (0usize, true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && (c.is_alphanumeric() || c == '_') => {
                names.push(&group[i..i + word(&group[i..])]);
                item_start = false;
            }
            _ => {}
        }
    }
    names
}

/// `line` without what its string literals hold.
fn without_strings(line: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in line.chars() {
        if in_string {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => escaped = false,
            }
        } else {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

/// The places in `source` (a file of a crate other than `types`) that name a value type
/// other than as `permafrost_types::…`.
fn other_paths(source: &str, names: &BTreeSet<String>) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let lines: Vec<String> = source.lines().map(without_strings).collect();
    for (n, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if code.trim_start().starts_with("pub use permafrost_types") {
            found.push((n + 1, format!("re-exports permafrost_types: {}", code.trim())));
        }
        let mut rest = code;
        while let Some(at) = rest.find("permafrost_") {
            let after = &rest[at + "permafrost_".len()..];
            let krate: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            rest = &after[krate.len()..];
            let Some(path) = rest.strip_prefix("::") else { continue };
            if krate == "types" {
                continue;
            }
            // A group over several lines is read on from the lines that follow.
            let joined;
            let path = if path.trim_start().starts_with('{') && !path.contains('}') {
                joined = lines[n..lines.len().min(n + 40)].join(" ");
                let from = joined.find(&format!("permafrost_{krate}::")).unwrap_or(0);
                &joined[from + "permafrost_::".len() + krate.len()..]
            } else {
                path
            };
            for name in root_names(path) {
                if names.contains(name) || name == "types" {
                    found.push((n + 1, format!("permafrost_{krate}::{name}")));
                }
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_crate_names_the_values_as_permafrost_types() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let lib = std::fs::read_to_string(crates.join("types/src/lib.rs")).unwrap();
    let names = public_names(&lib);
    for must in ["Value", "ValueRef", "DataType", "Numeric", "NumericRef", "ValueError"] {
        assert!(
            names.contains(must),
            "{must} not found among the public names of crates/types"
        );
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(crates).unwrap().flatten() {
        if entry.file_name() != "types" {
            rust_files(&entry.path(), &mut files);
        }
    }
    files.sort();
    assert!(
        files.len() > 100,
        "found only {} source files under crates/",
        files.len()
    );
    let mut report = String::new();
    for f in &files {
        let source = std::fs::read_to_string(f).unwrap();
        for (line, what) in other_paths(&source, &names) {
            report += &format!("{}:{line}: {what}\n", f.strip_prefix(crates).unwrap().display());
        }
    }
    assert!(
        report.is_empty(),
        "name the values as permafrost_types::… (one path, crates/types):\n\n{report}"
    );
}

#[cfg(test)]
mod checker {
    use super::*;

    fn names() -> BTreeSet<String> {
        public_names(
            "pub mod numeric;\npub use numeric::{Numeric, NumericRef};\npub enum Value {\npub fn total_compare(a: u8) {}\n",
        )
    }

    #[test]
    fn the_public_names_are_read() {
        let n = names();
        for want in ["numeric", "Numeric", "NumericRef", "Value", "total_compare"] {
            assert!(n.contains(want), "{want} missing from {n:?}");
        }
    }

    #[test]
    fn the_one_path_passes() {
        let src = "use permafrost_types::{Value, Numeric};\nuse permafrost_storage::{Column, TableSchema};\n\
                   let v = permafrost_types::Value::Null;\nlet s = permafrost_executor::settings::Shown::Value(t);\n\
                   let q = \"permafrost_storage::Value\";\n";
        assert!(other_paths(src, &names()).is_empty());
    }

    #[test]
    fn planted_other_paths_fail() {
        for planted in [
            "use permafrost_storage::Value;\n",
            "use permafrost_executor::{Database, Value};\n",
            "use permafrost_executor::{\n    Config,\n    Database,\n    Numeric,\n};\n",
            "let n = permafrost_storage::Numeric::from(1);\n",
            "use permafrost_storage::types::DataType;\n",
            "pub use permafrost_types::Value;\n",
        ] {
            assert!(!other_paths(planted, &names()).is_empty(), "not caught: {planted}");
        }
    }
}
