//! The engineer at the terminal: help, colour, a closed pipe, progress on standard input,
//! the list of kinds and the messages for values pidshark does not know.

use std::io::Read;
use std::process::{Command, Stdio};

use predicates::prelude::*;

use crate::common::{apid_capture, have_program, pidshark, root};

#[test]
fn short_help_is_a_screenful_and_long_help_is_grouped_with_examples() {
    let short = pidshark().arg("-h").assert().success();
    let short = String::from_utf8(short.get_output().stdout.clone()).unwrap();
    // A screenful, although it lists every option (a line each).
    assert!(
        short.lines().count() <= 60,
        "-h is {} lines",
        short.lines().count()
    );
    assert!(short.contains("pidshark --help"), "-h points to --help");
    let long = pidshark().arg("--help").assert().success();
    let long = String::from_utf8(long.get_output().stdout.clone()).unwrap();
    let headings = [
        "Input:",
        "Output:",
        "Filters:",
        "Analysis:",
        "CI gates:",
        "Limits:",
        "Examples:",
    ];
    let mut at = 0;
    for heading in headings {
        let found = long[at..].find(heading);
        assert!(found.is_some(), "--help lacks {heading} (in this order)");
        at += found.unwrap();
    }
    assert!(long.contains("pidshark --format text capture.pcap"));
}

#[test]
fn dash_r_reads_a_capture_as_tshark_does() {
    let plain = pidshark()
        .args(["--compact", "fixtures/controller-loopback.pcap"])
        .assert()
        .success();
    pidshark()
        .args(["--compact", "-r", "fixtures/controller-loopback.pcap"])
        .assert()
        .success()
        .stdout(plain.get_output().stdout.clone());
}

#[test]
fn colour_is_what_color_says_and_never_into_a_pipe_by_default() {
    let text = |extra: &[&str]| {
        let run = pidshark()
            .args(["--format", "text", "fixtures/controller-loopback.pcap"])
            .args(extra)
            .assert()
            .success();
        run.get_output().stdout.clone()
    };
    let escape = |out: &[u8]| out.windows(2).any(|w| w == b"\x1b[");
    assert!(escape(&text(&["--color", "always"])), "--color always");
    assert!(!escape(&text(&["--color", "never"])), "--color never");
    assert!(!escape(&text(&[])), "auto, into a pipe");
    // the same words either way
    let stripped = anstream::adapter::strip_bytes(&text(&["--color", "always"])).into_vec();
    assert_eq!(stripped, text(&[]));
}

/// A terminal for a shell command, by util-linux `script`; what it printed.
fn on_tty(command: &str, env: &[(&str, &str)]) -> Option<Vec<u8>> {
    if !have_program(
        "script",
        "util-linux `script` gives pidshark a terminal",
        "apt-get install util-linux (Debian, Ubuntu)",
    ) {
        return None;
    }
    let out = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .envs(env.iter().copied())
        .current_dir(root())
        .output()
        .expect("`script` runs");
    Some(out.stdout)
}

#[test]
fn on_a_terminal_colour_is_on_unless_no_color_is_set() {
    let bin = assert_cmd::cargo::cargo_bin("pidshark");
    let cmd = format!(
        "'{}' --quiet --format text fixtures/controller-loopback.pcap",
        bin.display()
    );
    let escape = |out: &[u8]| out.windows(2).any(|w| w == b"\x1b[");
    let Some(coloured) = on_tty(&cmd, &[]) else {
        return;
    };
    assert!(escape(&coloured), "auto on a terminal");
    let plain = on_tty(&cmd, &[("NO_COLOR", "1")]).unwrap();
    assert!(!escape(&plain), "NO_COLOR");
    let forced = on_tty(&format!("{cmd} --color always"), &[("NO_COLOR", "1")]).unwrap();
    assert!(escape(&forced), "--color always wins over NO_COLOR");
}

#[test]
fn standard_input_shows_a_spinner_with_bytes_and_rate_not_a_bar() {
    let bin = assert_cmd::cargo::cargo_bin("pidshark");
    let cmd = format!(
        "cat fixtures/controller-loopback.pcap | '{}' - -o /dev/null",
        bin.display()
    );
    let Some(out) = on_tty(&cmd, &[]) else {
        return;
    };
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains(" read, "), "bytes read: {out:?}");
    assert!(out.contains("B/s"), "a rate: {out:?}");
    assert!(
        !out.contains("eta"),
        "no time left for a stream of unknown size"
    );
}

#[test]
fn standard_input_is_not_a_file_named_dash_in_the_directory() {
    // a file named `-` where pidshark runs has a size: standard input has none
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("-"), vec![0u8; 50_000]).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("pidshark");
    let capture = root().join("fixtures/controller-loopback.pcap");
    let cmd = format!(
        "cd '{}' && cat '{}' | '{}' - -o /dev/null",
        dir.path().display(),
        capture.display(),
        bin.display()
    );
    let Some(out) = on_tty(&cmd, &[]) else {
        return;
    };
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains(" read, "), "a spinner: {out:?}");
    assert!(!out.contains("eta"), "no bar: {out:?}");
}

/// What a terminal shows at the end of `bytes`: each line as left after carriage returns
/// and line erasures (`\r`, `ESC[2K`), other escapes dropped.
fn screen(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(
        &anstream::adapter::strip_bytes(
            &String::from_utf8_lossy(bytes)
                .replace("\r\x1b[2K", "\u{E000}")
                .into_bytes(),
        )
        .into_vec(),
    )
    .into_owned();
    text.split('\n')
        .map(|line| {
            line.rsplit('\u{E000}')
                .next()
                .unwrap_or("")
                .replace('\r', "")
        })
        .collect()
}

/// Issue 40: the progress bar is erased before the report's first byte reaches the
/// terminal, in every format written there: no line of the screen holds both.
#[test]
fn the_progress_bar_is_erased_before_the_report_reaches_the_terminal() {
    let bin = assert_cmd::cargo::cargo_bin("pidshark");
    for format in ["text", "json", "ndjson", "csv"] {
        let cmd = format!(
            "'{}' --format {format} fixtures/kafka-real/4.4.0-steady.pcap.gz",
            bin.display()
        );
        let Some(out) = on_tty(&cmd, &[("NO_COLOR", "1")]) else {
            return;
        };
        assert!(
            String::from_utf8_lossy(&out).contains("eta"),
            "{format}: the bar was drawn"
        );
        let lines = screen(&out);
        assert!(lines.len() > 5, "{format}: a report");
        for line in &lines {
            assert!(!line.contains("eta "), "{format}: the bar stayed: {line:?}");
        }
    }
}

#[test]
fn a_closed_output_ends_the_run_quietly() {
    // More text than a pipe holds, so that pidshark writes into a closed pipe.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.pcap");
    apid_capture(&path, 4, 500);
    for format in ["text", "ndjson", "json"] {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("pidshark"))
            .args(["--format", format])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 100];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // the read end is dropped here, as `head -c 100` does
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "{format}: nothing on stderr"
        );
    }
}

#[test]
fn list_kinds_prints_every_kind_with_its_severity_and_meaning() {
    use pidshark::diag::Kind;
    let run = pidshark().arg("--list-kinds").assert().success();
    let out = String::from_utf8(run.get_output().stdout.clone()).unwrap();
    for kind in Kind::ALL {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(kind.as_str()))
            .unwrap_or_else(|| panic!("{} is listed", kind.as_str()));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.get(1), Some(&kind.severity().as_str()), "{line}");
        assert!(words.len() > 4, "{line}: a meaning");
        assert!(!line.contains('`'), "{line}: no Markdown");
    }
}

#[test]
fn an_unknown_condition_names_the_nearest_and_every_valid_one() {
    pidshark()
        .args(["fixtures/seed-v0.pcap", "--fail-on", "pid_overlap"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("did you mean \"pid_block_overlap\"?")
                .and(predicate::str::contains("error-response"))
                .and(predicate::str::contains("pid_slow_response"))
                .and(predicate::str::contains("--list-kinds")),
        );
    pidshark()
        .args(["fixtures/seed-v0.pcap", "--fail-on", "zzzz"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean").not());
    pidshark()
        .args(["fixtures/seed-v0.pcap", "--format", "jsn"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("json").and(predicate::str::contains("ndjson")));
}

#[test]
fn completions_for_each_shell_know_every_option() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = pidshark().args(["--completions", shell]).assert().success();
        let script = String::from_utf8(run.get_output().stdout.clone()).unwrap();
        for option in ["format", "fail-on", "list-kinds", "max-memory", "color"] {
            assert!(script.contains(option), "{shell} completion lacks {option}");
        }
    }
    // bash reads the script without a syntax error
    let run = pidshark()
        .args(["--completions", "bash"])
        .assert()
        .success();
    let path = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(path.path(), &run.get_output().stdout).unwrap();
    let status = Command::new("bash").arg("-n").arg(path.path()).status();
    if let Ok(status) = status {
        assert!(status.success(), "bash -n on the completion script");
    }
    pidshark()
        .args(["--completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bash").and(predicate::str::contains("zsh")));
}

#[test]
fn short_help_lists_every_option() {
    use clap::CommandFactory;
    let short = pidshark().arg("-h").assert().success();
    let short = String::from_utf8(short.get_output().stdout.clone()).unwrap();
    let command = pidshark::cli::Args::command();
    let longs: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .collect();
    assert!(longs.len() > 25, "{longs:?}");
    for long in longs.iter().chain(&["help", "version", "man"]) {
        assert!(
            short.contains(&format!("--{long}")),
            "-h lacks --{long}:\n{short}"
        );
    }
}

/// What bash completes `words` to (the last word being typed), from the script of
/// `pidshark --completions bash`; `None` without bash.
fn bash_completes(words: &[&str]) -> Option<Vec<String>> {
    if !have_program(
        "bash",
        "the completion test runs bash",
        "apt-get install bash",
    ) {
        return None;
    }
    let run = pidshark()
        .args(["--completions", "bash"])
        .assert()
        .success();
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), &run.get_output().stdout).unwrap();
    let cword = words.len() - 1;
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    // As bash calls a completion function: the command, the word, the word before it.
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; _pidshark pidshark '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.path().display(),
        quoted.join(" "),
        words[cword],
        words[cword - 1],
    );
    let out = Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}

#[test]
fn bash_completes_the_values_of_fail_on_format_and_color() {
    let Some(overlap) = bash_completes(&["pidshark", "x.pcap", "--fail-on", "pid_block_o"]) else {
        return;
    };
    assert_eq!(overlap, ["pid_block_overlap"]);
    let every = bash_completes(&["pidshark", "--fail-on", ""]).unwrap();
    let kinds = pidshark().arg("--list-kinds").assert().success();
    let kinds = String::from_utf8(kinds.get_output().stdout.clone()).unwrap();
    for kind in kinds
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
    {
        assert!(
            every.iter().any(|c| c == kind),
            "--fail-on lacks {kind}: {every:?}"
        );
    }
    for condition in ["info", "warning", "error", "error-response", "unanswered"] {
        assert!(
            every.iter().any(|c| c == condition),
            "--fail-on lacks {condition}"
        );
    }
    assert_eq!(
        bash_completes(&["pidshark", "--format", "csv"]).unwrap(),
        [
            "csv",
            "csv-blocks",
            "csv-producers",
            "csv-writes",
            "csv-committed"
        ]
    );
    assert_eq!(
        bash_completes(&["pidshark", "--color", "a"]).unwrap(),
        ["auto", "always"]
    );
}

#[test]
fn completion_scripts_hold_the_values_of_fail_on_format_and_color() {
    // (clap_complete's elvish and powershell scripts complete option names only)
    for shell in ["bash", "zsh", "fish"] {
        let run = pidshark().args(["--completions", shell]).assert().success();
        let script = String::from_utf8(run.get_output().stdout.clone()).unwrap();
        for value in [
            "pid_block_overlap",
            "error-response",
            "csv-blocks",
            "always",
        ] {
            assert!(script.contains(value), "{shell} completion lacks {value}");
        }
    }
}

#[test]
fn a_port_that_is_not_a_number_says_what_port_takes() {
    for port in ["kafka", "0", "70000"] {
        pidshark()
            .args(["fixtures/seed-v0.pcap", "--port", port])
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("--port takes a TCP port number 1-65535 (e.g. 9092)")
                    .and(predicate::str::contains("invalid digit").not()),
            );
    }
    pidshark()
        .args(["fixtures/seed-v0.pcap", "--port", "9093"])
        .assert()
        .success();
}

#[test]
fn the_help_jq_example_selects_the_exchanges_not_complete() {
    let help = pidshark().arg("--help").assert().success();
    let help = String::from_utf8(help.get_output().stdout.clone()).unwrap();
    let example = help
        .lines()
        .find(|l| l.contains("--format ndjson") && l.contains("| jq"))
        .expect("--help has the ndjson and jq example");
    let filter = example
        .split('\'')
        .nth(1)
        .expect("the jq filter in single quotes");
    if !have_program(
        "jq",
        "the --help example pipes into jq",
        "apt-get install jq",
    ) {
        return;
    }
    // On the committed ndjson golden: one request unanswered, among exchanges, blocks and
    // the report line.
    let out = Command::new("jq")
        .args(["-c", filter])
        .arg(root().join("fixtures/controller-loopback.ndjson"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "exchange");
    assert_eq!(lines[0]["status"], "unanswered");
}

#[test]
fn the_manual_page_is_roff_with_every_option() {
    let run = pidshark().arg("--man").assert().success();
    let page = String::from_utf8(run.get_output().stdout.clone()).unwrap();
    assert!(page.contains(".TH pidshark 1"), "a section 1 page");
    for option in [
        "\\-\\-format",
        "\\-\\-fail\\-on",
        "\\-\\-list\\-kinds",
        "\\-\\-max\\-memory",
    ] {
        assert!(page.contains(option), "the page lacks {option}");
    }
    assert!(page.contains("Examples:"), "the examples of --help");
}
