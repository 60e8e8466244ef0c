//! `--format text`: a report a person skims in a terminal: what was read, the Kafka APIs
//! seen, one line per AllocateProducerIds exchange, the blocks' findings and the
//! diagnostics grouped by kind. Colour only on a terminal and without `NO_COLOR`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use anstyle::{AnsiColor, Style};

use super::model::{Diagnostic, Exchange, Report};
use super::sink::{Needs, Sink};
use super::spill::{Ordered, DEFAULT_RUN_BYTES};
use crate::analysis::Block;
use crate::cli::ColorChoice;
use crate::pairing::{self, ExchangeOrder};

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();
const RED: Style = AnsiColor::Red.on_default().bold();
const YELLOW: Style = AnsiColor::Yellow.on_default();
const GREEN: Style = AnsiColor::Green.on_default();

fn severity_style(severity: &str) -> Style {
    match severity {
        "error" => RED,
        "warning" => YELLOW,
        _ => DIM,
    }
}

/// Time of day from an RFC 3339 timestamp, for compact lines.
fn clock(timestamp: &str) -> &str {
    timestamp
        .split_once('T')
        .map_or(timestamp, |(_, t)| t.trim_end_matches('Z'))
}

fn exchange_line(ex: &Exchange) -> (String, Style) {
    let req = &ex.request;
    let broker = match (req.broker_id, req.broker_epoch) {
        (Some(id), Some(epoch)) => format!("broker {id}/{epoch}"),
        _ => "broker ?".to_owned(),
    };
    let (outcome, style) = match &ex.response {
        None if ex.status == "response_unknown" => {
            ("response unknown (bytes lost)".to_owned(), YELLOW)
        }
        None => ("unanswered".to_owned(), YELLOW),
        Some(resp) => match (&resp.error, resp.producer_id_start, resp.producer_id_len) {
            // the same rule as the analysis: a range past the largest id is no block
            (Some(err), Some(start), Some(len)) if err == "NONE" && len > 0 && start >= 0 => {
                match start.checked_add(i64::from(len) - 1) {
                    Some(end) => (format!("NONE ids {start}..={end}"), GREEN),
                    None => ("NONE (no block)".to_owned(), YELLOW),
                }
            }
            (Some(err), _, _) if err == "NONE" => ("NONE (no block)".to_owned(), YELLOW),
            (Some(err), _, _) => (err.clone(), RED),
            (None, _, _) => ("undecoded".to_owned(), RED),
        },
    };
    let latency = ex
        .latency_us
        .map(|us| format!("  {:.3} ms", us / 1000.0))
        .unwrap_or_default();
    let line = format!(
        "  {}  conn {}  {} -> {}  corr {}  {broker}  {outcome}{latency}",
        clock(&req.timestamp),
        ex.connection,
        ex.client,
        ex.server,
        ex.correlation_id
    );
    (line, style)
}

/// Whether the text report is coloured: as `--color` says; for `auto`, when writing to
/// standard output that is a terminal and `NO_COLOR` is unset (<https://no-color.org>).
pub fn use_colour(choice: ColorChoice, to_stdout: bool) -> bool {
    use std::io::IsTerminal;
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            to_stdout
                && io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

/// `--format text`: each exchange's line rendered as it comes into a list in report order
/// (off the heap past a bound, see [`Ordered`]); the report is written around them at the
/// end. Memory does not grow with the number of exchanges.
pub struct TextSink {
    colour: bool,
    lines: Ordered<ExchangeOrder>,
    blocks: u64,
    out: Box<dyn Write + Send>,
}

impl TextSink {
    /// With colour only when `colour`.
    pub fn new(colour: bool, out: Box<dyn Write + Send>) -> Self {
        Self {
            colour,
            lines: Ordered::new(DEFAULT_RUN_BYTES),
            blocks: 0,
            out,
        }
    }
}

impl Sink for TextSink {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: false,
            exact_latency: true,
        }
    }

    fn exchange(&mut self, ex: pairing::Exchange, block: Option<&Block>) -> io::Result<()> {
        self.blocks += u64::from(block.is_some());
        self.lines.push(ex.order(), |out| {
            let (line, style) = exchange_line(&super::exchange(&ex));
            writeln!(out, "{style}{line}{style:#}")
        })
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        let lines = std::mem::replace(&mut self.lines, Ordered::new(1));
        let blocks = self.blocks;
        if self.colour {
            write(&mut self.out, report, lines, blocks)?;
        } else {
            let mut plain = anstream::StripStream::new(&mut self.out);
            write(&mut plain, report, lines, blocks)?;
        }
        self.out.flush()
    }
}

/// The whole text report, the exchanges' lines from `lines`, through a buffer.
fn write(
    out: &mut dyn Write,
    report: &Report,
    lines: Ordered<ExchangeOrder>,
    blocks: u64,
) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(64 << 10, out);
    head(&mut w, report)?;
    lines.write_each(|_, line| w.write_all(line))?;
    tail(&mut w, report, blocks)?;
    w.flush()
}

fn heading(w: &mut dyn Write, text: &str) -> io::Result<()> {
    writeln!(w, "\n{BOLD}{text}{BOLD:#}")
}

/// What was read, the APIs seen and the exchanges' heading.
fn head(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let s = &report.summary;
    writeln!(
        w,
        "{BOLD}pidshark {}{BOLD:#}: {} packets, {} TCP connections, {} with Kafka",
        report.tool.version, s.packets, s.tcp_connections, s.kafka_connections
    )?;
    heading(w, "Captures")?;
    for c in &report.captures {
        writeln!(
            w,
            "  {}  {} {}  {} packets  {} -> {}",
            c.path,
            c.format,
            c.link_types.join(","),
            c.packets,
            c.first_timestamp.as_deref().unwrap_or("-"),
            c.last_timestamp.as_deref().unwrap_or("-")
        )?;
    }
    heading(w, "Kafka APIs")?;
    if s.api_keys.is_empty() {
        writeln!(w, "  none")?;
    }
    for (name, count) in &s.api_keys {
        writeln!(
            w,
            "  {name} ({})  {} requests, {} responses",
            count.api_key, count.requests, count.responses
        )?;
    }
    if s.unmatched_responses > 0 {
        writeln!(
            w,
            "  {} responses matched no captured request",
            s.unmatched_responses
        )?;
    }
    heading(
        w,
        &format!(
            "AllocateProducerIds exchanges: {} ({} complete, {} unanswered)",
            s.exchanges.total, s.exchanges.complete, s.exchanges.unanswered
        ),
    )?;
    Ok(())
}

/// Latency, the blocks' findings and the diagnostics, after the exchanges' lines.
fn tail(w: &mut dyn Write, report: &Report, blocks: u64) -> io::Result<()> {
    let s = &report.summary;
    if let Some(l) = &s.latency_us {
        writeln!(
            w,
            "  latency: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms over {}",
            l.p50 / 1000.0,
            l.p99 / 1000.0,
            l.max / 1000.0,
            l.count
        )?;
    }
    let findings = &report.producer_id_blocks.findings;
    heading(
        w,
        &format!(
            "Producer ID blocks: {blocks} granted, {} findings",
            findings.len()
        ),
    )?;
    for f in findings {
        let style = severity_style(f.severity);
        writeln!(
            w,
            "  {style}{} {}{style:#}: {}",
            f.severity, f.kind, f.message
        )?;
    }
    heading(w, "Diagnostics")?;
    if report.diagnostics.is_empty() {
        writeln!(w, "  none")?;
    }
    let mut by_kind: BTreeMap<&str, Vec<&Diagnostic>> = BTreeMap::new();
    for d in &report.diagnostics {
        by_kind.entry(d.kind).or_default().push(d);
    }
    for (kind, list) in by_kind {
        let total = s
            .diagnostics
            .get(kind)
            .copied()
            .unwrap_or(list.len() as u64);
        let style = severity_style(list.first().map_or("info", |d| d.severity));
        writeln!(w, "  {style}{kind}{style:#} ({total})")?;
        for d in list {
            let place = match (d.frame, d.connection) {
                (Some(f), Some(c)) => format!("frame {f}, conn {c}: "),
                (Some(f), None) => format!("frame {f}: "),
                _ => String::new(),
            };
            writeln!(w, "    {DIM}{place}{DIM:#}{}", d.message)?;
        }
    }
    Ok(())
}
