//! No import circles: within each crate of the workspace (every `crates/*/src`), the files
//! import each other one way only, the order the import tables of docs/architecture/crates.md
//! give.
//!
//! The test reads the sources (it lives here, in the crate with no product dependencies, so
//! that it builds in seconds) and draws an edge from file `a` to file `b` when `a` names
//! something `b` defines:
//!
//! * a `use` (or `pub use`, a re-export) of `crate::…`, `super::…`, `self::…` or of a path
//!   starting at a child module or at a name imported before, grouped (`use crate::{a, b::c}`)
//!   or not; `use super::*` is an edge to the parent;
//! * a path in the code: `crate::a::b::f(…)`, `super::x::Y`, `msg::Msg::Commit` after
//!   `use super::msg`.
//!
//! A path is followed as far as it names files (`crate::a::b::f` is `a/b.rs`, or `a.rs`
//! when `b` is not a file of its own) and then through the `use` that brings its last name
//! into that file: `crate::Error`, re-exported by `lib.rs` from `error.rs`, is an edge to
//! `error.rs`; a name that file re-exports from another crate makes no edge. Importing a
//! module (`use crate::partition;`) makes its edges where its paths are used. A `mod x;`
//! declaration is no edge, nor is anything in a `#[cfg(test)]` item (the `mod tests`
//! blocks), a file declared `#[cfg(test)] mod x;`, a comment or a string.
//!
//! Every strongly connected component of more than one file (Tarjan) is a circle; the test
//! fails naming each, with every edge inside it and the line that makes the edge. There is
//! no allowlist. `planted_*` show the checker failing on a planted edge.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// A token of Rust source, once comments, strings and characters are gone.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
    /// A literal or a lifetime.
    Lit,
}

struct Token {
    tok: Tok,
    line: usize,
}

/// Reads a string's body from `i` (just past the opening quote) to past its closing quote.
fn skip_string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => {
                i += 1;
                if c.get(i) == Some(&'\n') {
                    *line += 1;
                }
            }
            '"' => return i + 1,
            '\n' => *line += 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Reads a raw string (`r"…"`, `r#"…"#`) from `i` (at the `#`s or the quote).
fn skip_raw_string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut hashes = 0;
    while c.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    while i < c.len() {
        if c[i] == '\n' {
            *line += 1;
        }
        if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// Skips a block comment (nested ones too) from `i`, at its `/*`.
fn skip_block_comment(c: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            if c[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
    }
    i
}

fn is_ident_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// Splits source text into tokens, dropping comments, strings and characters.
fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        let start = line;
        let tok = if ch == '\n' {
            line += 1;
            i += 1;
            continue;
        } else if ch.is_whitespace() {
            i += 1;
            continue;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        } else if ch == '/' && next == Some('*') {
            i = skip_block_comment(&c, i, &mut line);
            continue;
        } else if ch == '"' {
            i = skip_string(&c, i + 1, &mut line);
            Tok::Lit
        } else if ch == '\'' {
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
            }
            Tok::Lit
        } else if ch.is_ascii_digit() {
            while i < c.len() && is_ident_char(c[i]) {
                i += 1;
            }
            Tok::Lit
        } else if is_ident_char(ch) {
            let begin = i;
            while i < c.len() && is_ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[begin..i].iter().collect();
            let after = c.get(i).copied();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix
                && (after == Some('"') || (after == Some('#') && !c.get(i + 1).is_some_and(|&d| is_ident_char(d))))
            {
                i = skip_raw_string(&c, i, &mut line);
                Tok::Lit
            } else if matches!(word.as_str(), "b" | "c") && after == Some('"') {
                i = skip_string(&c, i + 1, &mut line);
                Tok::Lit
            } else if word == "r" && after == Some('#') {
                let begin = i + 1;
                i = begin;
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
                Tok::Ident(c[begin..i].iter().collect())
            } else {
                Tok::Ident(word)
            }
        } else if ch == ':' && next == Some(':') {
            i += 2;
            Tok::Sep
        } else {
            i += 1;
            Tok::Punct(ch)
        };
        out.push(Token { tok, line: start });
    }
    out
}

/// What a `use` tree ends in.
#[derive(Clone, Debug, PartialEq)]
enum Leaf {
    /// A name, bound as the string.
    Name(String),
    /// `self` in a group: the module itself, bound as the string.
    Module(String),
    /// `*`
    Glob,
    /// `as _`: used, bound to no name.
    Hidden,
}

/// A path in a file: a `use` (with its leaf) or one in the code (`leaf` `None`).
#[derive(Clone, Debug)]
struct PathRef {
    /// The module the path is written in (a file's module, or an inline `mod` inside it).
    scope: Vec<String>,
    segs: Vec<String>,
    leaf: Option<Leaf>,
    public: bool,
    line: usize,
}

/// What a file says, before the crate's paths are resolved.
#[derive(Default)]
struct Parsed {
    paths: Vec<PathRef>,
    /// Modules declared `mod name { … }` in the file (absolute paths).
    inline_mods: Vec<Vec<String>>,
    /// Child modules declared `#[cfg(test)] mod name;`: test code, not read.
    test_mods: Vec<String>,
    /// `#![cfg(test)]`: the whole file is test code.
    test_file: bool,
    /// Items defined (`fn`, `struct`, ... `name`), with the module they are in.
    defs: Vec<(Vec<String>, String)>,
}

fn ident(toks: &[Token], i: usize) -> Option<&str> {
    match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn is(toks: &[Token], i: usize, tok: &Tok) -> bool {
    toks.get(i).is_some_and(|t| t.tok == *tok)
}

/// The index past the bracket that closes the one at `i`.
fn matching(toks: &[Token], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < toks.len() {
        match toks[i].tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// An attribute at `i` (its `#`): the index past it, whether it is `cfg(test)`, whether
/// it is an inner one (`#![…]`).
fn attribute(toks: &[Token], i: usize) -> (usize, bool, bool) {
    let inner = is(toks, i + 1, &Tok::Punct('!'));
    let open = if inner { i + 2 } else { i + 1 };
    if !is(toks, open, &Tok::Punct('[')) {
        return (i + 1, false, false);
    }
    let end = matching(toks, open);
    let body: Vec<&Tok> = toks[open + 1..end.saturating_sub(1)].iter().map(|t| &t.tok).collect();
    let cfg_test = [
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
    ];
    (
        end,
        body.len() == 4 && body.iter().zip(&cfg_test).all(|(a, b)| *a == b),
        inner,
    )
}

/// Skips the item after a `#[cfg(test)]` (from `i`), noting `mod name;` declarations.
fn skip_test_item(toks: &[Token], mut i: usize, parsed: &mut Parsed) -> usize {
    while is(toks, i, &Tok::Punct('#')) {
        i = attribute(toks, i).0;
    }
    let mut k = i;
    if ident(toks, k) == Some("pub") {
        k += 1;
        if is(toks, k, &Tok::Punct('(')) {
            k = matching(toks, k);
        }
    }
    if let (Some("mod"), Some(name)) = (ident(toks, k), ident(toks, k + 1))
        && is(toks, k + 2, &Tok::Punct(';'))
    {
        parsed.test_mods.push(name.to_string());
        return k + 3;
    }
    let is_use = ident(toks, k) == Some("use");
    let mut depth = 0usize;
    while i < toks.len() {
        match toks[i].tok {
            Tok::Punct(';') if depth == 0 => return i + 1,
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']') => depth = depth.saturating_sub(1),
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 && !is_use {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Reads one `use` tree from `i` under `prefix`, pushing each path it names.
fn use_tree(toks: &[Token], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<(Vec<String>, Leaf, usize)>) -> usize {
    loop {
        let Some(tok) = toks.get(i) else { return i };
        match &tok.tok {
            Tok::Ident(name) => {
                i += 1;
                if is(toks, i, &Tok::Sep) {
                    prefix.push(name.clone());
                    i += 1;
                    continue;
                }
                let mut bind = name.clone();
                if ident(toks, i) == Some("as") {
                    bind = ident(toks, i + 1).unwrap_or("_").to_string();
                    i += 2;
                }
                let leaf = if name == "self" {
                    if bind == "self" {
                        bind = prefix.last().cloned().unwrap_or_default();
                    }
                    Leaf::Module(bind)
                } else {
                    prefix.push(name.clone());
                    if bind == "_" { Leaf::Hidden } else { Leaf::Name(bind) }
                };
                out.push((prefix, leaf, tok.line));
                return i;
            }
            Tok::Punct('*') => {
                out.push((prefix, Leaf::Glob, tok.line));
                return i + 1;
            }
            Tok::Punct('{') => {
                i += 1;
                while i < toks.len() && !is(toks, i, &Tok::Punct('}')) {
                    let before = i;
                    i = use_tree(toks, i, prefix.clone(), out);
                    if is(toks, i, &Tok::Punct(',')) || i == before {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Tok::Sep => {
                // `use ::name`: another crate.
                prefix.push("::".into());
                i += 1;
            }
            _ => return i,
        }
    }
}

/// Reads the path starting at `i`: its names, and the index past it.
fn path_at(toks: &[Token], mut i: usize) -> (Vec<String>, usize) {
    let mut segs = Vec::new();
    while let Some(name) = ident(toks, i) {
        segs.push(name.to_string());
        if is(toks, i + 1, &Tok::Sep) && ident(toks, i + 2).is_some() {
            i += 2;
        } else {
            i += 1;
            break;
        }
    }
    (segs, i)
}

/// The keywords that define an item, `macro_rules` after its `!`.
const ITEMS: [&str; 9] = [
    "fn",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "const",
    "static",
    "macro_rules",
];

/// Reads a file's paths, inline modules, items and test declarations.
fn parse(toks: &[Token], module: &[String]) -> Parsed {
    let mut parsed = Parsed::default();
    let mut scope = module.to_vec();
    let mut open_mods: Vec<usize> = Vec::new();
    let (mut depth, mut public, mut i) = (0usize, false, 0);
    while i < toks.len() {
        let line = toks[i].line;
        match &toks[i].tok {
            Tok::Punct('#') => {
                let (end, cfg_test, inner) = attribute(toks, i);
                if cfg_test && inner {
                    parsed.test_file = true;
                    return parsed;
                }
                i = if cfg_test {
                    skip_test_item(toks, end, &mut parsed)
                } else {
                    end
                };
                continue;
            }
            Tok::Ident(w) if w == "pub" => {
                i = if is(toks, i + 1, &Tok::Punct('(')) {
                    matching(toks, i + 1)
                } else {
                    i + 1
                };
                public = true;
                continue;
            }
            Tok::Ident(w) if w == "use" => {
                let mut trees = Vec::new();
                i = use_tree(toks, i + 1, Vec::new(), &mut trees);
                for (segs, leaf, line) in trees {
                    let scope = scope.clone();
                    parsed.paths.push(PathRef {
                        scope,
                        segs,
                        leaf: Some(leaf),
                        public,
                        line,
                    });
                }
                public = false;
                continue;
            }
            Tok::Ident(w) if w == "mod" && ident(toks, i + 1).is_some() && is(toks, i + 2, &Tok::Punct('{')) => {
                scope.push(ident(toks, i + 1).unwrap_or_default().to_string());
                parsed.inline_mods.push(scope.clone());
                open_mods.push(depth);
                depth += 1;
                i += 3;
                public = false;
                continue;
            }
            Tok::Ident(w) if ITEMS.contains(&w.as_str()) => {
                let at = if w == "macro_rules" { i + 2 } else { i + 1 };
                if let Some(name) = ident(toks, at) {
                    parsed.defs.push((scope.clone(), name.to_string()));
                }
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if open_mods.last() == Some(&depth) {
                    open_mods.pop();
                    scope.pop();
                }
            }
            Tok::Ident(w)
                if w != "Self"
                    && is(toks, i + 1, &Tok::Sep)
                    && ident(toks, i + 2).is_some()
                    && !(i > 0 && matches!(toks[i - 1].tok, Tok::Sep | Tok::Punct('.'))) =>
            {
                let (segs, end) = path_at(toks, i);
                parsed.paths.push(PathRef {
                    scope: scope.clone(),
                    segs,
                    leaf: None,
                    public: false,
                    line,
                });
                i = end;
                public = false;
                continue;
            }
            _ => {}
        }
        public = false;
        i += 1;
    }
    parsed
}

/// The module a source file (its path under `src/`) is.
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut segs: Vec<String> = rel.split('/').map(str::to_string).collect();
    let last = segs.last().map(String::as_str);
    if matches!(last, Some("mod")) || (segs.len() == 1 && matches!(last, Some("lib" | "main"))) {
        segs.pop();
    }
    segs
}

/// A path as written: the module it is written in, and its names.
type Written = (Vec<String>, Vec<String>);

/// A crate's files, modules and the names each module imports.
struct Crate {
    files: Vec<String>,
    lines: Vec<Vec<String>>,
    parsed: Vec<Parsed>,
    /// Every module (files and inline `mod`s) and the file it is in.
    modules: HashMap<Vec<String>, usize>,
    /// (module, name) -> the `use` path that binds it there (its scope and names).
    bindings: HashMap<(Vec<String>, String), Written>,
    /// module -> the glob `use` paths in it (their scope and names).
    globs: HashMap<Vec<String>, Vec<Written>>,
    /// (module, name) of every item defined.
    defs: HashSet<(Vec<String>, String)>,
}

impl Crate {
    /// Reads `files` (path under `src/`, text); test-only files are left out.
    fn new(files: &[(String, String)]) -> Crate {
        let all: Vec<(String, Vec<String>, Parsed)> = files
            .iter()
            .map(|(rel, text)| {
                let module = module_of(rel);
                let parsed = parse(&lex(text), &module);
                (rel.clone(), module, parsed)
            })
            .collect();
        let mut test_only: Vec<Vec<String>> = Vec::new();
        for (_, module, parsed) in &all {
            for name in &parsed.test_mods {
                test_only.push(module.iter().chain([name]).cloned().collect());
            }
        }
        let mut krate = Crate {
            files: Vec::new(),
            lines: Vec::new(),
            parsed: Vec::new(),
            modules: HashMap::new(),
            bindings: HashMap::new(),
            globs: HashMap::new(),
            defs: HashSet::new(),
        };
        let texts: HashMap<&String, &String> = files.iter().map(|(r, t)| (r, t)).collect();
        for (rel, module, parsed) in all {
            if parsed.test_file || test_only.iter().any(|t| module.starts_with(t)) {
                continue;
            }
            let idx = krate.files.len();
            krate.modules.insert(module, idx);
            for inline in &parsed.inline_mods {
                krate.modules.insert(inline.clone(), idx);
            }
            krate.defs.extend(parsed.defs.iter().cloned());
            for p in &parsed.paths {
                let bound = match &p.leaf {
                    Some(Leaf::Name(b)) | Some(Leaf::Module(b)) => b.clone(),
                    Some(Leaf::Glob) => {
                        krate
                            .globs
                            .entry(p.scope.clone())
                            .or_default()
                            .push((p.scope.clone(), p.segs.clone()));
                        continue;
                    }
                    _ => continue,
                };
                krate
                    .bindings
                    .insert((p.scope.clone(), bound), (p.scope.clone(), p.segs.clone()));
            }
            krate.lines.push(texts[&rel].lines().map(str::to_string).collect());
            krate.files.push(rel);
            krate.parsed.push(parsed);
        }
        krate
    }

    /// The path `segs`, written in module `scope`, from the crate root; `None` for a path
    /// into another crate.
    fn absolute(&self, scope: &[String], segs: &[String], depth: usize) -> Option<Vec<String>> {
        let first = segs.first()?;
        if depth > 16 {
            return None;
        }
        match first.as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "self" => Some(scope.iter().chain(&segs[1..]).cloned().collect()),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let base = scope.get(..scope.len().checked_sub(ups)?)?;
                Some(base.iter().chain(&segs[ups..]).cloned().collect())
            }
            _ => {
                let child: Vec<String> = scope.iter().chain([first]).cloned().collect();
                if self.modules.contains_key(&child) {
                    return Some(scope.iter().chain(segs).cloned().collect());
                }
                let (bscope, bsegs) = self.bindings.get(&(scope.to_vec(), first.clone()))?;
                let mut abs = self.absolute(bscope, bsegs, depth + 1)?;
                abs.extend_from_slice(&segs[1..]);
                Some(abs)
            }
        }
    }

    /// The file that defines what the absolute path `abs` names, and whether the path names
    /// a module; `None` when it leads into another crate.
    fn resolve(&self, abs: &[String], depth: usize) -> Option<(usize, bool)> {
        if depth > 16 {
            return None;
        }
        let mut module: Vec<String> = Vec::new();
        for (k, name) in abs.iter().enumerate() {
            module.push(name.clone());
            if self.modules.contains_key(&module) {
                continue;
            }
            module.pop();
            let Some((bscope, bsegs)) = self.bindings.get(&(module.clone(), name.clone())) else {
                return self.unbound(&module, &abs[k..], depth);
            };
            if bscope == &module && bsegs.len() == 1 && bsegs[0] == *name {
                return Some((*self.modules.get(&module)?, false));
            }
            let mut target = self.absolute(bscope, bsegs, depth + 1)?;
            target.extend_from_slice(&abs[k + 1..]);
            return self.resolve(&target, depth + 1);
        }
        Some((*self.modules.get(&module)?, true))
    }

    /// Where `rest[0]`, which `module` neither has as a child nor imports by name, comes
    /// from: `module`'s file if defined there (or if nothing says otherwise), else through
    /// the module's glob imports: the first one within the crate, none if they all lead out.
    fn unbound(&self, module: &[String], rest: &[String], depth: usize) -> Option<(usize, bool)> {
        let file = *self.modules.get(module)?;
        let globs = self.globs.get(module).map_or(&[][..], Vec::as_slice);
        if globs.is_empty() || self.defs.contains(&(module.to_vec(), rest[0].clone())) {
            return Some((file, false));
        }
        for (scope, segs) in globs {
            if let Some(mut target) = self.absolute(scope, segs, depth + 1) {
                target.extend_from_slice(rest);
                return self.resolve(&target, depth + 1);
            }
        }
        None
    }

    /// Every edge between two files, with the lines that make it.
    fn edges(&self) -> BTreeMap<(usize, usize), BTreeSet<usize>> {
        let mut edges = BTreeMap::new();
        for (from, parsed) in self.parsed.iter().enumerate() {
            for p in &parsed.paths {
                let Some(abs) = self.absolute(&p.scope, &p.segs, 0) else {
                    continue;
                };
                let Some((to, names_module)) = self.resolve(&abs, 0) else {
                    continue;
                };
                let module_import = matches!(p.leaf, Some(Leaf::Name(_) | Leaf::Module(_) | Leaf::Hidden));
                if to == from || (names_module && module_import && !p.public) {
                    // A private import of a module: its edges are where its paths are used.
                    continue;
                }
                edges.entry((from, to)).or_insert_with(BTreeSet::new).insert(p.line);
            }
        }
        edges
    }
}

/// Strongly connected components of the graph `succ` (Tarjan), each sorted.
fn components(n: usize, succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk, v: usize) {
        w.index[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for &u in w.succ[v].iter() {
            match w.index[u] {
                None => {
                    visit(w, u);
                    w.low[v] = w.low[v].min(w.low[u]);
                }
                Some(iu) if w.on_stack[u] => w.low[v] = w.low[v].min(iu),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.index[v] {
            let mut comp = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack[u] = false;
                comp.push(u);
                if u == v {
                    break;
                }
            }
            comp.sort();
            w.out.push(comp);
        }
    }
    let mut w = Walk {
        succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if w.index[v].is_none() {
            visit(&mut w, v);
        }
    }
    w.out
}

/// A shortest circle through `start` inside `comp` (breadth first).
fn shortest_circle(start: usize, comp: &BTreeSet<usize>, succ: &[Vec<usize>]) -> Vec<usize> {
    let mut prev: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &u in &succ[v] {
            if !comp.contains(&u) || prev.contains_key(&u) {
                continue;
            }
            prev.insert(u, v);
            if u == start {
                let mut path = vec![start];
                let mut at = v;
                while at != start {
                    path.push(at);
                    at = prev[&at];
                }
                path.push(start);
                path.reverse();
                return path;
            }
            queue.push_back(u);
        }
    }
    vec![start]
}

/// The import circles among `files` (path under `src/`, text), each described: its files,
/// one circle through them and every edge inside it with the line making it. Empty when
/// the files import one way only.
fn import_circles(files: &[(String, String)]) -> Vec<String> {
    let krate = Crate::new(files);
    let n = krate.files.len();
    let edges = krate.edges();
    let mut succ = vec![Vec::new(); n];
    for &(from, to) in edges.keys() {
        succ[from].push(to);
    }
    let mut out = Vec::new();
    for comp in components(n, &succ).into_iter().filter(|c| c.len() > 1) {
        let set: BTreeSet<usize> = comp.iter().copied().collect();
        let names: Vec<&str> = comp.iter().map(|&f| krate.files[f].as_str()).collect();
        let mut text = format!("{} files in a circle: {}\n", comp.len(), names.join(", "));
        let circle: Vec<&str> = shortest_circle(comp[0], &set, &succ)
            .iter()
            .map(|&f| krate.files[f].as_str())
            .collect();
        text += &format!("  for instance {}\n", circle.join(" -> "));
        for (&(from, to), lines) in edges.range((comp[0], 0)..) {
            if set.contains(&from) && set.contains(&to) {
                let (first, name) = (*lines.first().unwrap_or(&1), &krate.files[from]);
                let src = krate.lines[from].get(first - 1).map_or("", |l| l.trim());
                let more: Vec<String> = lines.iter().skip(1).map(usize::to_string).collect();
                let more = if more.is_empty() {
                    String::new()
                } else {
                    format!(" [also lines {}]", more.join(", "))
                };
                text += &format!("  {name} -> {}   ({name}:{first}: {src}{more})\n", krate.files[to]);
            }
        }
        out.push(text);
    }
    out
}

/// The `.rs` files under `dir`, as (path under `root`, text), sorted.
fn sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

fn workspace_crates() -> Vec<(String, Vec<(String, String)>)> {
    let crates_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let src = dir.join("src");
        if src.is_dir() {
            let mut files = Vec::new();
            sources(&src, &src, &mut files);
            out.push((dir.file_name().unwrap().to_string_lossy().into_owned(), files));
        }
    }
    out
}

#[test]
fn no_import_circles_in_any_crate() {
    let crates = workspace_crates();
    assert!(crates.len() >= 10, "found only {} crates under crates/", crates.len());
    let mut report = String::new();
    for (name, files) in &crates {
        for circle in import_circles(files) {
            report += &format!("crates/{name}/src: {circle}\n");
        }
    }
    assert!(
        report.is_empty(),
        "import circles (see docs/architecture/crates.md, \"Inside the crates: one file per role, imports one way\"):\n\n{report}"
    );
}

#[cfg(test)]
mod checker {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
    }

    const LIB: &str = "mod a;\nmod b;\npub mod c;\npub use a::A;\npub use b::B;\n";
    const A: &str = "pub struct A;\n";
    const B: &str = "use crate::a::A;\npub struct B(A);\n";

    #[test]
    fn one_way_passes() {
        assert_eq!(
            import_circles(&files(&[("lib.rs", LIB), ("a.rs", A), ("b.rs", B), ("c/mod.rs", "")])),
            Vec::<String>::new()
        );
    }

    /// Each way of naming `b.rs` from `a.rs` (which `b.rs` imports) plants a circle.
    #[test]
    fn planted_edge_fails() {
        let plants = [
            "use crate::b::B;",
            "use crate::{b::{self, B}};\nfn f(_: B) {}",
            "pub use super::b::B as C;",
            "fn f() { let _ = crate::b::B(crate::a::A); }",
            "use crate::B;",
            "use super::b;\nfn f(_: b::B) {}",
            "use crate::b::*;",
            "impl From<super::B> for A { fn from(_: super::B) -> A { A } }",
        ];
        for plant in plants {
            let a = format!("pub struct A;\n{plant}\n");
            let circles = import_circles(&files(&[("lib.rs", LIB), ("a.rs", &a), ("b.rs", B)]));
            assert_eq!(circles.len(), 1, "{plant}: {circles:?}");
            assert!(
                circles[0].contains("a.rs -> b.rs") && circles[0].contains("b.rs -> a.rs"),
                "{plant}: {circles:?}"
            );
        }
    }

    /// What is no edge: declarations, test code, comments, strings, other crates, private
    /// imports of a module never used, `self` paths.
    #[test]
    fn no_edge() {
        let quiet = [
            "// use crate::b::B;\n/* crate::b::B */ /// crate::b::B",
            "const S: &str = \"crate::b::B\"; const R: &str = r#\"use crate::b::B;\"#; const C: char = '{';",
            "#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}",
            "#[cfg(test)]\nuse crate::b::B;",
            "#[cfg(test)]\nfn f() -> crate::b::B { todo!() }",
            "use std::fmt;\nuse permafrost_types::Value;\nfn f(_: fmt::Error) {}",
            "mod inner {\n    use super::A;\n    use self::deeper::X;\n    mod deeper { pub struct X; }\n}",
            "#[allow(unused_imports)]\nuse crate::c;",
        ];
        for plant in quiet {
            let a = format!("pub struct A;\n{plant}\n");
            let circles = import_circles(&files(&[("lib.rs", LIB), ("a.rs", &a), ("b.rs", B), ("c/mod.rs", "")]));
            assert!(circles.is_empty(), "{plant}: {circles:?}");
        }
        let declared = import_circles(&files(&[
            ("lib.rs", "mod a;\n"),
            ("a.rs", "pub(crate) mod b;\n"),
            ("a/b.rs", ""),
        ]));
        assert!(declared.is_empty());
    }

    /// `use super::*` is an edge to the parent; a file declared `#[cfg(test)] mod x;` is not read.
    #[test]
    fn glob_of_parent_and_test_files() {
        let parent = "mod child;\npub use child::C;\npub struct P;\n";
        let circle = import_circles(&files(&[
            ("lib.rs", parent),
            ("child.rs", "use super::*;\npub struct C;\n"),
        ]));
        assert_eq!(circle.len(), 1, "{circle:?}");
        assert!(circle[0].contains("child.rs:1: use super::*;"), "{circle:?}");
        let test_only = "#[cfg(test)]\nmod child;\npub struct P;\nfn f() -> child::C { todo!() }\n";
        let none = import_circles(&files(&[
            ("lib.rs", test_only),
            ("child.rs", "use crate::P;\npub struct C;\n"),
        ]));
        assert!(none.is_empty(), "{none:?}");
    }

    /// Deeper paths: a file two levels down naming a file through its parent's import.
    #[test]
    fn paths_descend_to_files() {
        let lib = "mod p;\nmod q;\n";
        let p = "pub(crate) mod x;\npub(crate) mod y;\n";
        let x = "pub fn f() {}\n";
        let y = "pub fn g() { super::x::f() }\n";
        let q = "use crate::p;\npub fn h() { p::y::g() }\n";
        let ok = import_circles(&files(&[
            ("lib.rs", lib),
            ("p/mod.rs", p),
            ("p/x.rs", x),
            ("p/y.rs", y),
            ("q.rs", q),
        ]));
        assert!(ok.is_empty(), "{ok:?}");
        let x = "pub fn f() { crate::q::h() }\n";
        let bad = import_circles(&files(&[
            ("lib.rs", lib),
            ("p/mod.rs", p),
            ("p/x.rs", x),
            ("p/y.rs", y),
            ("q.rs", q),
        ]));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].starts_with("3 files in a circle: p/x.rs, p/y.rs, q.rs"),
            "{bad:?}"
        );
    }

    /// An edge planted against the documented order into the executor's real sources
    /// (`error.rs` is at the bottom; `database.rs` imports it) makes the test fail.
    #[test]
    fn planted_edge_in_the_executor_fails() {
        let (_, mut executor) = workspace_crates()
            .into_iter()
            .find(|(name, _)| name == "executor")
            .unwrap();
        let before = import_circles(&executor).len();
        let error = executor.iter_mut().find(|(path, _)| path == "error.rs").unwrap();
        error.1 += "\nfn planted() -> crate::database::Database { todo!() }\n";
        let after = import_circles(&executor);
        assert!(after.iter().any(|c| c.contains("error.rs -> database.rs")), "{after:?}");
        assert!(after.len() >= before.max(1));
    }
}
