//! `pidshark`: parse arguments, run the library, write the report, check `--expect` and
//! `--fail-on`, map the outcome to an exit code (0 clean, 1 a check failed, 2 fatal).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pidshark::cli::{Args, Format};
use pidshark::report::model::{self, Report};
use pidshark::report::serialized::SerializedExchanges;
use pidshark::report::{compact, text, tree};
use pidshark::{expect, gate, Config, Error};

/// Where the output goes: the `-o` file or standard output.
fn open_output(config: &Config) -> Result<(Box<dyn Write + Send>, PathBuf), Error> {
    match &config.output {
        Some(path) => {
            let file = File::create(path).map_err(|source| Error::Write {
                path: path.clone(),
                source,
            })?;
            Ok((Box::new(BufWriter::new(file)), path.clone()))
        }
        // Not locked: ndjson lines are written from the analysis thread.
        None => Ok((
            Box::new(BufWriter::with_capacity(1 << 16, io::stdout())),
            "<stdout>".into(),
        )),
    }
}

fn write_report(
    config: &Config,
    report: &Report,
    serialized: Option<SerializedExchanges>,
) -> Result<(), Error> {
    let (mut out, path) = open_output(config)?;
    let pretty = !config.compact;
    let result = match (config.format, serialized) {
        (Format::Json, Some(serialized)) => serialized.write_report(report, &mut out),
        (Format::Json, None) if !pretty => {
            serde_json::to_writer(&mut out, report).map_err(io::Error::from)
        }
        (Format::Json | Format::Ndjson, _) => {
            serde_json::to_writer_pretty(&mut out, report).map_err(io::Error::from)
        }
        (Format::Tree, _) => out.write_all(tree::render(report).as_bytes()),
        (Format::Text, _) => {
            text::write(&mut out, report, text::use_colour(config.output.is_none()))
        }
    };
    let needs_newline = config.format == Format::Json;
    result
        .and_then(|()| {
            if needs_newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| out.flush())
        .map_err(|source| Error::Write { path, source })
}

/// `--format ndjson`: a line per exchange as it completes, flushed at once, then a line
/// with everything else the report holds (no `exchanges`, no `producer_id_blocks.blocks`).
fn stream(config: &Config) -> Result<Report, Error> {
    let (mut out, path) = open_output(config)?;
    // Lines reach the reader within a tenth of a second, without a write per line.
    let mut last_flush = std::time::Instant::now();
    let mut line = Vec::new();
    let mut sink = |ex: &model::Exchange| -> io::Result<()> {
        line.clear();
        compact::exchange(&mut line, ex);
        line.push(b'\n');
        out.write_all(&line)?;
        if last_flush.elapsed() >= std::time::Duration::from_millis(100) {
            last_flush = std::time::Instant::now();
            out.flush()?;
        }
        Ok(())
    };
    let report = pidshark::run_streaming(config, &mut sink)?;
    let mut last = serde_json::to_value(&report).map_err(|e| Error::Write {
        path: path.clone(),
        source: e.into(),
    })?;
    if let Some(obj) = last.as_object_mut() {
        obj.remove("exchanges");
    }
    if let Some(blocks) = last["producer_id_blocks"].as_object_mut() {
        blocks.remove("blocks");
    }
    serde_json::to_writer(&mut out, &last)
        .map_err(io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|source| Error::Write { path, source })?;
    Ok(report)
}

/// Reads the `--expect` file before anything runs, so a bad path fails fast.
fn read_expected(config: &Config) -> Result<Option<serde_json::Value>, Error> {
    let Some(path) = &config.expect else {
        return Ok(None);
    };
    let fail = |reason: String| Error::Expect {
        path: path.clone(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| fail(format!("not JSON ({e})")))
}

/// Runs everything; `Ok(true)` when every check passed.
fn run(config: &Config) -> Result<bool, Error> {
    let expected = read_expected(config)?;
    let report = if config.format == Format::Ndjson {
        if let Some(path) = &config.expect {
            return Err(Error::Expect {
                path: path.clone(),
                reason:
                    "--expect compares the exchanges of a JSON report; use it with --format json"
                        .into(),
            });
        }
        stream(config)?
    } else if config.format == Format::Json && config.expect.is_none() {
        // The exchanges are serialized as they complete, beside the reading.
        let (report, serialized) = pidshark::run_serialized(config, !config.compact)?;
        write_report(config, &report, Some(serialized))?;
        report
    } else {
        let report = pidshark::run(config)?;
        write_report(config, &report, None)?;
        report
    };
    let mut passed = true;
    if let (Some(expected), Some(path)) = (&expected, &config.expect) {
        let differences = expect::compare(expected, &report).map_err(|reason| Error::Expect {
            path: path.clone(),
            reason,
        })?;
        if !differences.is_empty() {
            eprintln!(
                "pidshark: the exchanges differ from {} in {} place(s):",
                path.display(),
                differences.len()
            );
            for line in differences {
                eprintln!("  {line}");
            }
            passed = false;
        }
    }
    let failing = gate::failing(&config.fail_on, &report);
    if !failing.is_empty() {
        let list: Vec<String> = failing.iter().map(|(c, n)| format!("{c} ({n})")).collect();
        eprintln!("pidshark: --fail-on conditions hold: {}", list.join(", "));
        passed = false;
    }
    Ok(passed)
}

/// A progress bar on stderr while the captures are read: only when stderr is a terminal
/// and `--quiet` was not given. Returns what stops it.
fn progress(
    config: &mut Config,
    quiet: bool,
) -> Option<(ProgressBar, std::thread::JoinHandle<()>, Arc<AtomicBool>)> {
    use std::io::IsTerminal;
    if quiet || !io::stderr().is_terminal() {
        return None;
    }
    let total: u64 = config
        .inputs
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let count = Arc::new(AtomicU64::new(0));
    config.bytes_read = Some(Arc::clone(&count));
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let done = Arc::new(AtomicBool::new(false));
    let (b, d) = (bar.clone(), Arc::clone(&done));
    let ticker = std::thread::spawn(move || {
        while !d.load(Ordering::Relaxed) {
            b.set_position(count.load(Ordering::Relaxed));
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    });
    Some((bar, ticker, done))
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.schema {
        print!("{}", model::schema());
        return ExitCode::SUCCESS;
    }
    let quiet = args.quiet;
    let mut config = Config::from(args);
    let bar = progress(&mut config, quiet);
    let outcome = run(&config);
    if let Some((bar, ticker, done)) = bar {
        done.store(true, Ordering::Relaxed);
        let _ = ticker.join();
        bar.finish_and_clear();
    }
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("pidshark: {err}");
            ExitCode::from(2)
        }
    }
}
