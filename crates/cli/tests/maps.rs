//! The maps the repository keeps of its code stay true:
//! - UNSAFE.md lists every product file that holds `unsafe` code (an `unsafe` block,
//!   function or impl outside its tests), and no file that holds none;
//! - every format a source file cites as `"<Name>, version N"` is a section of
//!   docs/format.md at that version;
//! - every section the repository's `.rs` and `.md` files cite in ARCHITECTURE.md, in a
//!   topic file of docs/architecture/ or in docs/results/architecture-history.md (the
//!   file's path, a comma, the section's name in quotes) is a heading of that file.

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

/// Whether `path` (relative to the root) is a document whose sections are cited by heading:
/// ARCHITECTURE.md, the design's topic files under docs/architecture/, and the figures
/// that were moved out of them.
fn cites_by_heading(path: &str) -> bool {
    path == "ARCHITECTURE.md"
        || (path.starts_with("docs/architecture/") && path.ends_with(".md"))
        || path == "docs/results/architecture-history.md"
}

/// The `.rs` and `.md` files under `dir`, but those in hidden directories and in `target`.
fn rs_and_md_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rs_and_md_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs" || e == "md") {
            out.push(path);
        }
    }
}

/// The citations `<file>, "<Section>"` of the documents cited by heading in `text`, as
/// (file, section). A citation may be wrapped over lines, after its comma or within the
/// name, in a comment (the continued lines begin with `//`, `///` or `//!`), and may stand
/// in a Rust string (`\"`).
fn section_citations(text: &str) -> Vec<(String, String)> {
    let text = text.replace("\\\"", "\"");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(".md,") {
        let end = from + at + ".md".len();
        from = end + 1;
        let rest = &text[end + 1..];
        let gap = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_whitespace() || c == '/' || c == '!')
                .len();
        if gap == 0 || !rest[gap..].starts_with('"') {
            continue;
        }
        let open = end + 1 + gap + 1;
        let start = text[..end]
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.')))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let file = &text[start..end];
        let Some(len) = text[open..].find('"') else { continue };
        if !cites_by_heading(file) {
            continue;
        }
        let section: Vec<&str> = text[open..open + len]
            .lines()
            .map(|l| {
                let l = l.trim_start();
                ["//!", "///", "//"]
                    .iter()
                    .find_map(|c| l.strip_prefix(c))
                    .unwrap_or(l)
                    .trim()
            })
            .collect();
        out.push((file.to_string(), section.join(" ")));
    }
    out
}

/// The headings of a markdown text (lines of `#`s and a space, outside fenced code), as
/// their text.
fn headings(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            let hashes = line.len() - line.trim_start_matches('#').len();
            if hashes > 0 && line[hashes..].starts_with(' ') {
                out.push(line[hashes..].trim().to_string());
            }
        }
    }
    out
}

#[test]
fn every_cited_design_section_is_a_heading_of_its_file() {
    let root = root();
    let mut files = Vec::new();
    rs_and_md_files(&root, &mut files);
    files.sort();
    let mut cited = 0;
    let mut wrong = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (doc, section) in section_citations(&text) {
            cited += 1;
            let found = std::fs::read_to_string(root.join(&doc)).map(|t| headings(&t).contains(&section));
            if !found.unwrap_or(false) {
                let f = f.strip_prefix(&root).unwrap().display();
                wrong.push(format!("{f}: {doc}, \"{section}\""));
            }
        }
    }
    assert!(cited > 10, "only {cited} citations found: the scan is broken");
    assert!(
        wrong.is_empty(),
        "cited sections that their file has no heading for:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scan_reads_citations_wrapped_in_comments_and_quoted_in_strings() {
    // The file names are put together so that this file cites nothing itself.
    let root_doc = ["ARCHITECTURE", ".md"].concat();
    let topic = ["docs/architecture/", "crates.md"].concat();
    let comment = format!("/// as ({root_doc}, \"One transaction,\n    /// through the code\") says\n");
    assert_eq!(
        section_citations(&comment),
        [(root_doc.clone(), "One transaction, through the code".to_string())]
    );
    let string = format!("panic!(\"see {topic}, \\\"Unsafe code\\\"\")");
    assert_eq!(section_citations(&string), [(topic.clone(), "Unsafe code".to_string())]);
    let wrapped = format!("as in {topic},\n\"Files and\nthe disk\", and");
    assert_eq!(section_citations(&wrapped), [(topic, "Files and the disk".to_string())]);
    assert!(section_citations("docs/format.md, \"Snapshot\"").is_empty());
    assert_eq!(
        headings("# A\n\ntext\n## B (c)\n```\n# not a heading\n```\n#no\n"),
        ["A", "B (c)"]
    );
}
