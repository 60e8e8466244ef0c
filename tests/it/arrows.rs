//! The module diagram in `src/lib.rs` is the rule for the library's imports: a module
//! names (`crate::module`) only modules above it in the diagram and the leaves at its
//! bottom, and a leaf only other leaves. Test code (`#[cfg(test)]` modules and `tests.rs`
//! files) may reach anywhere, and so may the binary (`main.rs`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::root;

/// The diagram's modules in order, and which of them are leaves.
struct Diagram {
    order: Vec<String>,
    leaves: BTreeSet<String>,
}

impl Diagram {
    fn read() -> Self {
        let lib = fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
        let mut lines = lib.lines().map(|l| l.trim_start_matches("//!").trim());
        lines
            .by_ref()
            .find(|l| *l == "```text")
            .expect("a ```text diagram in lib.rs");
        let (mut order, mut leaves, mut in_leaves) = (Vec::new(), BTreeSet::new(), false);
        for line in lines.take_while(|l| *l != "```") {
            if line.starts_with('-') {
                in_leaves = line.ends_with("leaves");
                continue;
            }
            let name = line
                .split_whitespace()
                .next()
                .expect("a module on each line");
            let name = if name == "(lib.rs)" { "lib" } else { name }.to_owned();
            if in_leaves {
                leaves.insert(name.clone());
            }
            order.push(name);
        }
        Self { order, leaves }
    }

    fn position(&self, module: &str) -> Option<usize> {
        self.order.iter().position(|m| m == module)
    }

    /// Why `from` may not name `to`, if it may not.
    fn refuses(&self, from: &str, to: &str) -> Option<String> {
        let Some(to_at) = self.position(to) else {
            return Some(format!("`{to}` is not in the diagram"));
        };
        let from_at = self.position(from).expect("checked before");
        if self.leaves.contains(from) {
            return (!self.leaves.contains(to)).then(|| format!("leaf `{from}` names `{to}`"));
        }
        (!self.leaves.contains(to) && to_at > from_at)
            .then(|| format!("`{from}` names `{to}`, below it"))
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The library code of a file, the whole of it, without comments and without each item
/// under `#[cfg(test)]` (a `mod real;` line, or a `mod tests { ... }` to its closing brace).
fn library_code(text: &str) -> String {
    let mut code = Vec::new();
    let mut lines = text.lines().filter(|l| !l.trim_start().starts_with("//"));
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            code.push(line);
            continue;
        }
        // skip the item the attribute gates: to its `;`, or to its braces' balance
        let mut depth = 0i32;
        for item in lines.by_ref() {
            depth += item.matches('{').count() as i32 - item.matches('}').count() as i32;
            if depth <= 0 && (item.trim_end().ends_with(';') || item.trim_end().ends_with('}')) {
                break;
            }
        }
    }
    code.join("\n")
}

/// The whole file is read: code after a test-only item is checked too.
#[test]
fn library_code_skips_only_the_items_under_cfg_test() {
    let text = "use crate::a;\n#[cfg(test)]\nmod real;\nuse crate::b;\n#[cfg(test)]\nmod tests {\n    use crate::c;\n    fn f() {\n    }\n}\nuse crate::d;\n";
    let code = library_code(text);
    assert_eq!(
        named_modules(&code),
        ["a", "b", "d"].map(String::from).into_iter().collect()
    );
}

/// The modules a piece of code names: `crate::name` and the names in `use crate::{...}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        names.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.insert(ident(rest));
        }
    }
    names.retain(|n| n.chars().next().is_some_and(|c| c.is_ascii_lowercase()));
    names
}

#[test]
fn every_import_in_src_points_down_the_module_diagram() {
    let diagram = Diagram::read();
    let src = root().join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    for module in lib.lines().filter_map(|l| l.strip_prefix("pub mod ")) {
        let module = module.trim_end_matches(';');
        assert!(
            diagram.position(module).is_some(),
            "module `{module}` is not in lib.rs's diagram"
        );
    }
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut refused = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src/");
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if relative == Path::new("main.rs") || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let first = relative.components().next().expect("a path under src/");
        let module = first
            .as_os_str()
            .to_str()
            .expect("UTF-8 names")
            .trim_end_matches(".rs");
        let text = fs::read_to_string(&file).expect("a source file");
        for named in named_modules(&library_code(&text)) {
            if named != module {
                if let Some(why) = diagram.refuses(module, &named) {
                    refused.push(format!("{}: {why}", relative.display()));
                }
            }
        }
    }
    assert!(
        refused.is_empty(),
        "imports against lib.rs's diagram:\n{}",
        refused.join("\n")
    );
}

#[test]
fn the_checker_reads_groups_and_paths() {
    let code = "use crate::{capture::{A, B}, diag::Kind};\nfn f() { crate::tcp::Dir::X }";
    let names: Vec<_> = named_modules(code).into_iter().collect();
    assert_eq!(names, ["capture", "diag", "tcp"]);
    let diagram = Diagram {
        order: ["capture", "tcp", "diag"].map(String::from).to_vec(),
        leaves: BTreeSet::from(["diag".to_owned()]),
    };
    assert!(diagram.refuses("tcp", "capture").is_none());
    assert!(diagram.refuses("tcp", "diag").is_none());
    assert!(diagram.refuses("capture", "tcp").is_some());
    assert!(diagram.refuses("diag", "capture").is_some());
    assert!(diagram.refuses("tcp", "kafka").is_some());
}
