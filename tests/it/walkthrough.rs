//! `docs/walkthrough.md` runs as written: each `sh` block is run by bash in the
//! repository with the built pidshark first on the PATH, and what it prints must be the
//! `text` block after it.

use std::process::Command;

use crate::common::{have_program, root};

/// The (command, output) pairs of the document.
fn examples(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut blocks = doc.split("```").skip(1).step_by(2).peekable();
    while let Some(block) = blocks.next() {
        let Some(command) = block.strip_prefix("sh\n") else {
            continue;
        };
        let output = blocks
            .next_if(|b| b.starts_with("text\n"))
            .map(|b| b.trim_start_matches("text\n").to_owned())
            .expect("each command is followed by its output");
        out.push((command.trim().to_owned(), output));
    }
    out
}

#[test]
fn the_walkthrough_runs_as_written() {
    if !have_program(
        "jq",
        "the walkthrough's recipes use jq",
        "apt-get install jq (Debian, Ubuntu), brew install jq (macOS)",
    ) {
        return;
    }
    let doc = std::fs::read_to_string(root().join("docs/walkthrough.md")).unwrap();
    let examples = examples(&doc);
    assert!(examples.len() >= 8, "{} examples", examples.len());
    let bin = assert_cmd::cargo::cargo_bin("pidshark");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (command, want) in examples {
        let out = Command::new("bash")
            .args(["-c", &command])
            .env("PATH", &path)
            .current_dir(root())
            .output()
            .unwrap();
        let got = String::from_utf8_lossy(&out.stdout);
        assert_eq!(got.trim_end(), want.trim_end(), "`{command}`");
    }
}
