//! `docs/report-format.md` in step with the report types: every object of the JSON Schema
//! derived from them has a section there, headed by a path to it (`summary.brokers{}`,
//! `exchanges[].request`), whose table has a row for each of its fields; the tables of
//! diagnostic kinds are those `src/diag/kinds.rs` declares; every exit code has a row. A
//! field added to the types and not to the document fails here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::root;

fn document() -> String {
    std::fs::read_to_string(root().join("docs/report-format.md")).expect("docs/report-format.md")
}

/// The `$defs` name an object schema refers to, looking through arrays, maps and the
/// `anyOf [X, null]` of optional fields.
fn referenced(schema: &Value) -> Option<(&str, &'static str)> {
    if let Some(r) = schema["$ref"].as_str() {
        return Some((r.trim_start_matches("#/$defs/"), ""));
    }
    if let Some(items) = schema.get("items") {
        return referenced(items).map(|(name, _)| (name, "[]"));
    }
    if let Some(map) = schema["patternProperties"].as_object() {
        return map
            .values()
            .next()
            .and_then(referenced)
            .map(|(n, _)| (n, "{}"));
    }
    schema["anyOf"]
        .as_array()?
        .iter()
        .find_map(|s| referenced(s).map(|(name, _)| (name, "")))
}

/// Every object definition of the schema with the paths that reach it ("" for the root).
fn object_paths(schema: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut paths: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut todo = vec![(String::new(), schema)];
    while let Some((path, object)) = todo.pop() {
        for (field, sub) in object["properties"].as_object().into_iter().flatten() {
            let Some((name, suffix)) = referenced(sub) else {
                continue;
            };
            let sub_path = if path.is_empty() {
                format!("{field}{suffix}")
            } else {
                format!("{path}.{field}{suffix}")
            };
            let def = &schema["$defs"][name];
            assert!(def.is_object(), "schema has $defs/{name}");
            if def.get("enum").is_some() {
                continue; // a closed set of names: see `every_name_of_a_closed_set_is_documented`
            }
            paths
                .entry(name.to_owned())
                .or_default()
                .insert(sub_path.clone());
            todo.push((sub_path, def));
        }
    }
    paths
}

/// The document's sections: heading text → the first cells of its table rows.
fn sections(doc: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in doc.lines() {
        if line.starts_with('#') {
            out.push((
                line.trim_start_matches('#').trim().to_owned(),
                BTreeSet::new(),
            ));
        } else if let (Some(rest), Some(last)) = (line.strip_prefix("| "), out.last_mut()) {
            if let Some(cell) = rest.split(" |").next() {
                last.1.insert(cell.trim().to_owned());
            }
        }
    }
    out
}

/// The first-cell set of the section whose heading names one of `paths` in backticks.
fn section_for<'a>(
    sections: &'a [(String, BTreeSet<String>)],
    paths: &BTreeSet<String>,
) -> Option<&'a BTreeSet<String>> {
    sections.iter().find_map(|(heading, rows)| {
        paths
            .iter()
            .any(|p| heading == &format!("`{p}`"))
            .then_some(rows)
    })
}

fn fields(def: &Value) -> Vec<String> {
    def["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_schema_field_is_documented_under_its_object() {
    let schema: Value = serde_json::from_str(&pidshark::report::model::schema()).unwrap();
    let doc = document();
    let sections = sections(&doc);
    let mut missing = Vec::new();
    let top = sections
        .iter()
        .find(|(h, _)| h == "Top level")
        .map(|(_, rows)| rows)
        .expect("a 'Top level' section");
    for field in fields(&schema) {
        if !top.contains(&format!("`{field}`")) {
            missing.push(format!("top level: `{field}`"));
        }
    }
    for (name, paths) in object_paths(&schema) {
        let Some(rows) = section_for(&sections, &paths) else {
            missing.push(format!(
                "a section headed `{}` ({name})",
                paths.first().unwrap()
            ));
            continue;
        };
        for field in fields(&schema["$defs"][&name]) {
            if !rows.contains(&format!("`{field}`")) {
                missing.push(format!("`{}`: `{field}`", paths.first().unwrap()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/report-format.md lacks:\n{}",
        missing.join("\n")
    );
}

/// The document's two tables of kinds, as `Kind`'s declaration (`src/diag/kinds.rs`)
/// gives them: the kinds with their severity and meaning, and the facts of each.
fn tables_of_kinds() -> [(&'static str, String); 2] {
    use pidshark::diag::Kind;
    let mut kinds = String::from("| kind | severity | meaning |\n|---|---|---|\n");
    let mut facts = String::from("| kind | facts |\n|---|---|\n");
    for kind in Kind::ALL {
        let (name, meaning) = (kind.as_str(), kind.meaning_markdown());
        kinds += &format!("| `{name}` | {} | {meaning} |\n", kind.severity());
        if let Some(described) = kind.facts_markdown() {
            facts += &format!("| `{name}` | {described} |\n");
        }
    }
    facts += "| `pid_*` | the facts of the finding (section `producer_id_blocks.findings[]`) |\n";
    [
        ("| kind | severity | meaning |", kinds),
        ("| kind | facts |", facts),
    ]
}

/// `doc` with the table whose header line is `header` replaced by `table`.
fn with_table(doc: &str, header: &str, table: &str) -> String {
    let start = doc
        .find(header)
        .unwrap_or_else(|| panic!("no table {header}"));
    let len = doc[start..]
        .split_inclusive('\n')
        .take_while(|line| line.starts_with('|'))
        .map(str::len)
        .sum::<usize>();
    format!("{}{table}{}", &doc[..start], &doc[start + len..])
}

/// Issue 41: a kind is declared once, and the document's tables are made from that
/// declaration. `PIDSHARK_BLESS=1` rewrites them.
#[test]
fn the_documents_tables_of_kinds_are_the_declared_ones() {
    let doc = document();
    let made = tables_of_kinds()
        .iter()
        .fold(doc.clone(), |doc, (header, table)| {
            with_table(&doc, header, table)
        });
    if made == doc {
        return;
    }
    if std::env::var_os("PIDSHARK_BLESS").is_some() {
        std::fs::write(root().join("docs/report-format.md"), &made).expect("written");
        return;
    }
    let differ: Vec<(&str, &str)> = doc
        .lines()
        .zip(made.lines())
        .filter(|(a, b)| a != b)
        .take(3)
        .collect();
    panic!(
        "docs/report-format.md's tables of kinds are not those of src/diag/kinds.rs \
         (PIDSHARK_BLESS=1 cargo test --test it report_format rewrites them); first \
         differences (document, declared): {differ:#?}"
    );
}

/// Every name of every closed set the schema declares (`$defs` with an `enum`) is written
/// in the document, in backticks.
#[test]
fn every_name_of_a_closed_set_is_documented() {
    let schema: Value = serde_json::from_str(&pidshark::report::model::schema()).unwrap();
    let doc = document();
    let mut missing = Vec::new();
    let mut sets = 0;
    for (set, def) in schema["$defs"].as_object().unwrap() {
        let Some(names) = def["enum"].as_array() else {
            continue;
        };
        sets += 1;
        for name in names {
            let name = name.as_str().unwrap();
            if !doc.contains(&format!("`{name}`")) {
                missing.push(format!("{set}: `{name}`"));
            }
        }
    }
    assert!(sets >= 10, "{sets} closed sets");
    assert!(
        missing.is_empty(),
        "docs/report-format.md lacks:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_exit_code_is_documented() {
    let doc = document();
    let codes = sections(&doc)
        .into_iter()
        .find(|(h, _)| h == "Exit codes")
        .map(|(_, rows)| rows)
        .expect("an 'Exit codes' section");
    for code in ["`0`", "`1`", "`2`"] {
        assert!(codes.contains(code), "exit code {code}");
    }
}

#[test]
fn the_sync_check_fails_on_a_field_the_document_lacks() {
    // The test above must be able to fail: a document without `broker_epoch` under the
    // request misses it.
    let schema: Value = serde_json::from_str(&pidshark::report::model::schema()).unwrap();
    let doc = document().replace("| `broker_epoch` | integer | body field", "| epoch | x |");
    let sections = sections(&doc);
    let paths = &object_paths(&schema)["Request"];
    let rows = section_for(&sections, paths).expect("the request section");
    assert!(!rows.contains("`broker_epoch`"));
    assert!(rows.contains("`broker_id`"));
}

/// Every fact a diagnostic of a golden report carries is named in its kind's row of the
/// table of facts (a `pid_*` kind's, in the findings' table).
#[test]
fn every_diagnostic_fact_is_documented_for_its_kind() {
    let doc = document();
    let (_, facts_table) = doc.split_once("### Facts of the diagnostics").unwrap();
    let (_, findings_table) = doc.split_once("The facts of each kind").unwrap();
    let row = |table: &str, kind: &str| -> Option<String> {
        table
            .lines()
            .find(|l| l.starts_with(&format!("| `{kind}` |")))
            .map(str::to_owned)
    };
    let mut goldens = Vec::new();
    for dir in [
        "fixtures",
        "fixtures/variants",
        "fixtures/analysis",
        "fixtures/kafka-real",
    ] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".report.json") {
                goldens.push(path);
            }
        }
    }
    assert!(goldens.len() > 10, "{} goldens", goldens.len());
    let mut missing = BTreeSet::new();
    let mut seen = 0;
    for path in goldens {
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for d in report["diagnostics"].as_array().unwrap() {
            let kind = d["kind"].as_str().unwrap();
            let table = if kind.starts_with("pid_") {
                findings_table
            } else {
                facts_table
            };
            let Some(row) = row(table, kind) else {
                missing.insert(format!("a row for {kind}"));
                continue;
            };
            for fact in d["facts"].as_object().unwrap().keys() {
                seen += 1;
                if fact != "frame" && !row.contains(&format!("`{fact}`")) {
                    missing.insert(format!("{kind}: `{fact}`"));
                }
            }
        }
    }
    assert!(seen > 20, "{seen} facts seen");
    // and every fact the schema declares for a kind
    for kind in pidshark::diag::Kind::ALL {
        let name = kind.as_str();
        let table = if name.starts_with("pid_") {
            findings_table
        } else {
            facts_table
        };
        let Some(row) = row(table, name) else {
            missing.insert(format!("a row for {name}"));
            continue;
        };
        for (fact, _) in kind.declared_facts() {
            if *fact != "frame" && !row.contains(&format!("`{fact}`")) {
                missing.insert(format!("{name}: `{fact}` (declared)"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/report-format.md lacks:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The options a table's first column names: each `--long` in the first cell of a row.
fn options_in_first_column(table: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap_or_default();
        for word in first.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            if let Some(long) = word.strip_prefix("--").filter(|l| !l.is_empty()) {
                named.insert(long.to_owned());
            }
        }
    }
    named
}

/// Every `--long` a text mentions.
fn options_mentioned(text: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let before = text[..at].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let long: String = text[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        if long.len() > 1 && !long.ends_with('-') {
            named.insert(long);
        }
    }
    named
}

/// The README's options table (Usage) lists exactly the options `--help` does; the
/// README, the report's document and the walkthrough mention no option that does not
/// exist; and the formats the report's document describes are those `--format` takes,
/// each of them a row of the README's table too.
#[test]
fn readme_help_and_docs_name_the_same_options_and_formats() {
    use clap::{CommandFactory, ValueEnum};
    let mut command = pidshark::cli::Args::command();
    let longs: BTreeSet<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(str::to_owned)
        .collect();
    let help = command.render_long_help().to_string();
    for long in &longs {
        assert!(help.contains(&format!("--{long}")), "--help lacks --{long}");
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let usage = readme
        .split("\n## Usage\n")
        .nth(1)
        .and_then(|s| s.split("\n### ").next())
        .expect("README has a Usage section");
    let in_table = options_in_first_column(usage);
    assert_eq!(
        in_table.difference(&longs).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "README's options table names options --help does not have"
    );
    assert_eq!(
        longs.difference(&in_table).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "README's options table lacks options --help has"
    );
    let known: BTreeSet<String> = longs
        .iter()
        .cloned()
        .chain(["help", "version"].map(String::from))
        .collect();
    for path in ["README.md", "docs/report-format.md", "docs/walkthrough.md"] {
        let text = std::fs::read_to_string(root().join(path)).unwrap();
        let unknown: Vec<String> = options_mentioned(&text)
            .difference(&known)
            .filter(|o| !FOREIGN_OPTIONS.contains(&o.as_str()))
            .cloned()
            .collect();
        assert!(
            unknown.is_empty(),
            "{path} mentions options pidshark lacks: {unknown:?}"
        );
    }
    // formats: one list, the one --format takes
    let formats: BTreeSet<String> = pidshark::cli::Format::value_variants()
        .iter()
        .filter_map(|f| f.to_possible_value())
        .map(|v| v.get_name().to_owned())
        .collect();
    let doc = document();
    let table = doc
        .split("\n## Formats\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/report-format.md has a Formats section");
    let documented: BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|f| *f != "--format")
        .map(str::to_owned)
        .collect();
    assert_eq!(documented, formats, "docs/report-format.md's Formats table");
    for format in &formats {
        assert!(
            usage.contains(&format!("`{format}`"))
                || usage.contains(&format!("`--format {format}`")),
            "README's Usage lacks the format {format}"
        );
    }
}

/// Options of other programs (cargo, the scripts, jq) the documents show in their commands.
const FOREIGN_OPTIONS: &[&str] = &[
    "bench",
    "benches",
    "brokers",
    "check",
    "quick",
    "shape",
    "span-scale",
    "release",
    "locked",
    "path",
    "test-threads",
    "prefix",
    "scenario",
    "per-broker",
    "out",
    "change",
    "base",
    "keep",
    "all-targets",
    "nocapture",
    "ignored",
    "include-ignored",
    "exact",
    "no-fail-fast",
    "bin",
    "lib",
    "test",
    "arg",
    "slurp",
    "raw-output",
    "compact-output",
    "color-output",
    "argjson",
    "sort-keys",
    "only",
    "features",
];
