//! The maps the repository keeps of its code stay true:
//! - UNSAFE.md lists every product file that holds `unsafe` code (an `unsafe` block,
//!   function or impl outside its tests), and no file that holds none;
//! - every format a source file cites as `"<Name>, version N"` is a section of
//!   docs/format.md at that version.

use std::path::{Path, PathBuf};

/// The workspace's root (this crate is `crates/cli`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether the product part of a file (before its `#[cfg(test)]` module) holds unsafe code.
fn holds_unsafe(text: &str) -> bool {
    let product = text.split("\n#[cfg(test)]").next().unwrap_or("");
    product.lines().any(|line| {
        let code = line.split("//").next().unwrap_or("");
        code.contains("unsafe {")
            || code.contains("unsafe fn")
            || code.contains("unsafe impl")
            || code.contains("#[unsafe(")
    })
}

/// The product files (under `crates/*/src`) that hold unsafe code, relative to the root.
fn files_with_unsafe() -> Vec<String> {
    let root = root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let mut out: Vec<String> = files
        .iter()
        .filter(|f| holds_unsafe(&std::fs::read_to_string(f).unwrap()))
        .map(|f| f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"))
        .collect();
    out.sort();
    out
}

/// The files UNSAFE.md's tables name (their first column).
fn listed() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("UNSAFE.md")).unwrap();
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|f| f.ends_with(".rs"))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn unsafe_md_lists_exactly_the_files_that_hold_unsafe_code() {
    let found = files_with_unsafe();
    let listed = listed();
    assert!(!found.is_empty(), "no unsafe code found: the scan is broken");
    let missing: Vec<_> = found.iter().filter(|f| !listed.contains(f)).collect();
    let stale: Vec<_> = listed.iter().filter(|f| !found.contains(f)).collect();
    assert!(
        missing.is_empty(),
        "files with unsafe code that UNSAFE.md does not list: {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "files UNSAFE.md lists that hold no unsafe code: {stale:?}"
    );
}

#[test]
fn the_scan_sees_unsafe_code_outside_tests_only() {
    assert!(holds_unsafe("fn f() {\n    unsafe { g() }\n}\n"));
    assert!(holds_unsafe("#[unsafe(export_name = \"x\")]\npub static X: u8 = 0;\n"));
    assert!(!holds_unsafe("fn f() {}\n// unsafe { in a comment }\n"));
    assert!(!holds_unsafe(
        "fn f() {}\n#[cfg(test)]\nmod tests {\n    fn t() { unsafe { g() } }\n}\n"
    ));
}

/// The `"<Name>, version N"` citations in the product files, with the file citing each.
fn format_citations() -> Vec<(String, String)> {
    let root = root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for quoted in text.split('"').skip(1).step_by(2) {
            if let Some((name, n)) = quoted.split_once(", version ")
                && !name.is_empty()
                && name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-')
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
            {
                out.push((quoted.to_string(), f.strip_prefix(&root).unwrap().display().to_string()));
            }
        }
    }
    out
}

#[test]
fn every_cited_format_version_is_a_section_of_format_md() {
    let doc = std::fs::read_to_string(root().join("docs/format.md")).unwrap();
    let sections: Vec<&str> = doc.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    let cited = format_citations();
    assert!(
        cited.len() > 5,
        "only {} citations found: the scan is broken",
        cited.len()
    );
    let wrong: Vec<_> = cited.iter().filter(|(c, _)| !sections.contains(&c.as_str())).collect();
    assert!(
        wrong.is_empty(),
        "cited formats that docs/format.md has no section for: {wrong:?}"
    );
}
