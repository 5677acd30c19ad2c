//! The layout of the crate's sources, held to two rules: no cycle between its modules, and no
//! Rust file under `rust/` longer than [`MAX_LINES`] lines.
//!
//! A module is a file: `lib.rs` is the crate root (`crate`), `a.rs` and `a/mod.rs` are
//! `crate::a`, `a/b.rs` is `crate::a::b`. A module depends on another when one of its files
//! names that module, or something in it, by a path that starts with `crate`, `super` or
//! `self`, or with a module declared in the scope the path stands in (`frame::decode` in
//! `lib.rs`): in a `use`, anywhere else in the code, in a macro's input, and in a doc comment's
//! links (rustdoc resolves those, and a lower module's docs naming an upper one tie the two as
//! much as code does). An inline module (`mod tests { ... }`) is part of its file's module, so
//! what it names counts for that module. Declaring a module (`mod b;`) is not depending on it:
//! a module that only declares and re-exports its children is below none of them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, Span, TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// The most lines a Rust file under `rust/` may have.
const MAX_LINES: usize = 1300;

/// A module's path below the crate root (`["frame", "scan"]` is `crate::frame::scan`; the
/// root is empty).
type ModPath = Vec<String>;

/// The dependencies between modules: for each module, the modules it depends on, each with
/// the first place (`file:line`) that names it.
type Graph = BTreeMap<ModPath, BTreeMap<ModPath, String>>;

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

/// The module a file under `src/` is, from its path relative to `src/`.
fn module_of(relative: &Path) -> ModPath {
    let mut parts: ModPath = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.strip_suffix(".rs").unwrap_or(&file);
    if !(parts.is_empty() && stem == "lib") && stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

/// Every `.rs` file under `dir`, with its text, sorted by path.
fn rust_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let text =
                    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push((path, text));
            }
        }
    }
    out.sort();
    out
}

/// The paths one file names, made absolute, with the line of each.
struct Names<'a> {
    /// Every module of the crate: the files' and the inline ones.
    modules: &'a BTreeSet<ModPath>,
    /// The module the code being read stands in (an inline one inside the file's, at times).
    scope: ModPath,
    found: Vec<(ModPath, usize)>,
}

impl Names<'_> {
    /// `segments` as written in the current scope, made absolute; None for a path that starts
    /// anywhere else (another crate, a local name, a name a `use` brought in, which that
    /// `use` counted already).
    fn resolve(&self, segments: &[String]) -> Option<ModPath> {
        let (first, rest) = segments.split_first()?;
        let mut base = self.scope.clone();
        let mut rest = match first.as_str() {
            "crate" => {
                base.clear();
                rest
            }
            "self" => rest,
            "super" => {
                base.pop()?;
                rest
            }
            _ => {
                let mut child = base.clone();
                child.push(first.clone());
                if !self.modules.contains(&child) {
                    return None;
                }
                segments
            }
        };
        while let Some((next, tail)) = rest.split_first() {
            match next.as_str() {
                "super" => {
                    base.pop()?;
                }
                "self" => {}
                _ => break,
            }
            rest = tail;
        }
        base.extend(rest.iter().filter(|s| *s != "self").cloned());
        Some(base)
    }

    fn name(&mut self, segments: &[String], span: Span) {
        if let Some(path) = self.resolve(segments) {
            self.found.push((path, span.start().line));
        }
    }

    /// Paths in a macro's input, which syn leaves as tokens: `a::b::c` runs of identifiers.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut span = Span::call_site();
        let mut colons = 0;
        for tree in tokens {
            match tree {
                TokenTree::Ident(ident) => {
                    if colons != 2 {
                        self.end_run(&mut run, span);
                        span = ident.span();
                    }
                    run.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() => {
                    colons += 1;
                    if colons == 1 && p.spacing() != Spacing::Joint {
                        self.end_run(&mut run, span);
                        colons = 0;
                    }
                }
                TokenTree::Group(group) => {
                    self.end_run(&mut run, span);
                    colons = 0;
                    self.tokens(group.stream());
                }
                _ => {
                    self.end_run(&mut run, span);
                    colons = 0;
                }
            }
        }
        self.end_run(&mut run, span);
    }

    fn end_run(&mut self, run: &mut Vec<String>, span: Span) {
        if run.len() > 1 {
            let segments = std::mem::take(run);
            self.name(&segments, span);
        }
        run.clear();
    }

    /// Paths in a doc comment's text that start with `crate::`, `super::` or `self::` (the
    /// links rustdoc resolves from the crate, the parent or the module itself).
    fn doc(&mut self, text: &str, span: Span) {
        let bytes = text.as_bytes();
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut i = 0;
        while i < bytes.len() {
            let starts = ["crate::", "super::", "self::"]
                .iter()
                .any(|p| bytes[i..].starts_with(p.as_bytes()));
            if !starts || (i > 0 && word(bytes[i - 1])) {
                i += 1;
                continue;
            }
            let mut segments = Vec::new();
            let mut j = i;
            loop {
                let start = j;
                while j < bytes.len() && word(bytes[j]) {
                    j += 1;
                }
                if j == start {
                    break;
                }
                segments.push(text[start..j].to_owned());
                if bytes[j..].starts_with(b"::") {
                    j += 2;
                } else {
                    break;
                }
            }
            self.name(&segments, span);
            i = j.max(i + 1);
        }
    }
}

/// The segments of a path written in the code, or None for one that starts with `::` (in
/// another crate).
fn segments_of(path: &syn::Path) -> Option<Vec<String>> {
    if path.leading_colon.is_some() {
        return None;
    }
    Some(path.segments.iter().map(|s| s.ident.to_string()).collect())
}

/// Each path a `use` tree imports, whole (`a::{b, c::d}` gives `a::b` and `a::c::d`).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Span)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((path, n.ident.span()));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((path, r.ident.span()));
        }
        syn::UseTree::Glob(g) => out.push((prefix.clone(), g.star_token.span)),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                use_paths(item, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.scope.push(item.ident.to_string());
        visit::visit_item_mod(self, item);
        self.scope.pop();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        for attr in &item.attrs {
            self.visit_attribute(attr);
        }
        if item.leading_colon.is_some() {
            return;
        }
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        for (path, span) in paths {
            self.name(&path, span);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(segments) = segments_of(path) {
            // One segment is a name in scope, never a module (those are named by `use`).
            if segments.len() > 1 {
                let span = path.segments[0].ident.span();
                self.name(&segments, span);
            }
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if nv.path.is_ident("doc") {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) = &nv.value
                {
                    self.doc(&text.value(), text.span());
                }
                return;
            }
        }
        visit::visit_attribute(self, attr);
    }
}

/// The inline modules of a file (`mod x { ... }`), as paths below `scope`.
fn inline_modules(items: &[syn::Item], scope: &mut ModPath, out: &mut BTreeSet<ModPath>) {
    for item in items {
        if let syn::Item::Mod(m) = item {
            if let Some((_, inner)) = &m.content {
                scope.push(m.ident.to_string());
                out.insert(scope.clone());
                inline_modules(inner, scope, out);
                scope.pop();
            }
        }
    }
}

/// The module graph of a crate whose `src/` holds `files` (paths relative to `src/`).
fn graph_of(files: &[(PathBuf, String)]) -> Graph {
    let parsed: Vec<(ModPath, String, syn::File)> = files
        .iter()
        .map(|(path, text)| {
            let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (module_of(path), path.display().to_string(), file)
        })
        .collect();
    let file_modules: BTreeSet<ModPath> = parsed.iter().map(|(m, _, _)| m.clone()).collect();
    let mut modules = file_modules.clone();
    for (module, _, file) in &parsed {
        inline_modules(&file.items, &mut module.clone(), &mut modules);
    }
    let mut graph = Graph::new();
    for (module, shown, file) in &parsed {
        let mut names = Names {
            modules: &modules,
            scope: module.clone(),
            found: Vec::new(),
        };
        names.visit_file(file);
        let edges = graph.entry(module.clone()).or_default();
        for (path, line) in names.found {
            // The file module the path leads into: its longest prefix that is one.
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| file_modules.contains(p))
                .unwrap_or_default();
            if target != *module {
                edges
                    .entry(target)
                    .or_insert_with(|| format!("{shown}:{line}"));
            }
        }
    }
    graph
}

/// The modules `from` reaches by one or more dependencies.
fn reach(graph: &Graph, from: &ModPath) -> BTreeSet<ModPath> {
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([from.clone()]);
    while let Some(m) = queue.pop_front() {
        for next in graph.get(&m).into_iter().flat_map(|e| e.keys()) {
            if seen.insert(next.clone()) {
                queue.push_back(next.clone());
            }
        }
    }
    seen
}

/// The shortest cycle through `start` (which reaches itself): its modules in order, `start`
/// first and last.
fn shortest_cycle(graph: &Graph, start: &ModPath) -> Vec<ModPath> {
    let mut back: BTreeMap<ModPath, ModPath> = BTreeMap::new();
    let mut queue = VecDeque::from([start.clone()]);
    let mut last = None;
    'search: while let Some(m) = queue.pop_front() {
        for next in graph[&m].keys() {
            if next == start {
                last = Some(m.clone());
                break 'search;
            }
            if !back.contains_key(next) {
                back.insert(next.clone(), m.clone());
                queue.push_back(next.clone());
            }
        }
    }
    let mut between = Vec::new();
    let mut m = last.expect("a module in a cycle reaches itself");
    while m != *start {
        between.push(m.clone());
        m = back[&m].clone();
    }
    between.reverse();
    let mut way = vec![start.clone()];
    way.extend(between);
    way.push(start.clone());
    way
}

/// The cycles of the graph, as `a -> b (where a names b) -> a (where b names a)`: the
/// shortest one through each module that is in a cycle, unless one named before passes
/// through it.
fn cycles(graph: &Graph) -> Vec<String> {
    let mut named: BTreeSet<ModPath> = BTreeSet::new();
    let mut out = Vec::new();
    for start in graph.keys() {
        if named.contains(start) || !reach(graph, start).contains(start) {
            continue;
        }
        let way = shortest_cycle(graph, start);
        named.extend(way.iter().cloned());
        let mut text = name(start);
        for pair in way.windows(2) {
            let at = &graph[&pair[0]][&pair[1]];
            let _ = write!(text, " -> {} ({at})", name(&pair[1]));
        }
        out.push(text);
    }
    out
}

fn crate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("rust")
}

/// The files of a crate's `src/`, given as (path below `src/`, text).
fn sources(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
        .collect()
}

#[test]
fn no_cycle_between_the_crates_modules() {
    let src = crate_dir().join("src");
    let files: Vec<(PathBuf, String)> = rust_files(&src)
        .into_iter()
        .map(|(path, text)| (path.strip_prefix(&src).unwrap().to_path_buf(), text))
        .collect();
    let graph = graph_of(&files);
    assert!(
        graph.len() > 10,
        "read the crate's modules: {:?}",
        graph.keys()
    );
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "modules that depend on each other (a -> b (where a names b)):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_rust_file_over_the_cap() {
    let files = rust_files(&crate_dir());
    assert!(files.len() > 10);
    let over: Vec<String> = files
        .iter()
        .filter(|(_, text)| text.lines().count() > MAX_LINES)
        .map(|(path, text)| format!("{}: {} lines", path.display(), text.lines().count()))
        .collect();
    assert!(
        over.is_empty(),
        "Rust files over {MAX_LINES} lines (split them by concern):\n{}",
        over.join("\n")
    );
}

#[test]
fn a_cycle_is_found_and_named() {
    // a -> b by a `use`, b -> c by a doc link, c -> a by a `super::` path in a function, and
    // n/m.rs -> n by `super::`, while n re-exports m: two cycles.
    let files = sources(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod n;\n"),
        (
            "a.rs",
            "use crate::b::f;\npub fn h() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        ("b.rs", "/// As [`crate::c::g`] finds.\npub fn f() {}\n"),
        ("c.rs", "pub fn g() {\n    super::a::h();\n}\n"),
        ("n/mod.rs", "mod m;\npub use m::X;\npub struct Y;\n"),
        ("n/m.rs", "pub struct X(super::Y);\n"),
    ]);
    let found = cycles(&graph_of(&files));
    assert_eq!(
        found,
        [
            "a -> b (a.rs:1) -> c (b.rs:1) -> a (c.rs:2)",
            "n -> n::m (n/mod.rs:2) -> n (n/m.rs:1)",
        ]
    );
}

#[test]
fn paths_in_macros_and_nested_modules_count() {
    // A macro's input, `self::`, an inline module's `super::super::`, and a path through a
    // module the root declares.
    let files = sources(&[
        ("lib.rs", "mod p;\nmod q;\nfn f() {\n    q::run();\n}\n"),
        ("p/mod.rs", "pub mod deep;\n"),
        (
            "p/deep.rs",
            "mod inner {\n    fn f() {\n        let _ = super::super::r();\n    }\n}\n\
             pub fn x() {\n    assert!(crate::q::ok());\n}\n",
        ),
        (
            "q.rs",
            "pub fn run() {\n    let _ = self::ok();\n}\npub fn ok() -> bool { true }\n",
        ),
    ]);
    let graph = graph_of(&files);
    let deps = |m: &[&str]| -> Vec<String> {
        let key: ModPath = m.iter().map(|s| (*s).to_owned()).collect();
        graph[&key].keys().map(|k| name(k)).collect()
    };
    assert_eq!(deps(&[]), ["q"]);
    assert_eq!(deps(&["p", "deep"]), ["p", "q"]);
    assert_eq!(deps(&["q"]), Vec::<String>::new());
    assert!(cycles(&graph).is_empty());
}

#[test]
fn a_facade_over_its_children_is_no_cycle() {
    // The shape of `frame/`: the parent declares and re-exports, the children name each
    // other and the modules below, and its tests reach the parent by `super::`.
    let files = sources(&[
        ("lib.rs", "pub mod cursor;\npub mod frame;\n"),
        ("cursor.rs", "pub struct Span;\n"),
        (
            "frame/mod.rs",
            "mod entry;\nmod scan;\n#[cfg(test)]\nmod tests;\npub use entry::Entry;\npub use scan::decode;\n",
        ),
        ("frame/entry.rs", "use crate::cursor::Span;\npub struct Entry(Span);\n"),
        ("frame/scan.rs", "use crate::frame::entry::Entry;\npub fn decode() -> Entry { todo!() }\n"),
        ("frame/tests.rs", "use super::*;\n"),
    ]);
    assert!(cycles(&graph_of(&files)).is_empty());
}
