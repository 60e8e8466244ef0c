//! `--format text`: the post-mortem at the terminal, in a screenful or two whatever the
//! capture: a verdict first (did the controller hand out producer IDs correctly?), the
//! findings by severity, a table per broker, a timeline of the blocks per broker, what
//! InitProducerId granted (when the capture has any), the exchanges worth a look (errors, no answer, slow; `--all`: every exchange), and what was
//! read with the diagnostics by kind. Coloured or not as the caller decides.

mod metadata_log;
mod producers;
mod timeline;
pub(super) mod writes;

use std::collections::BTreeMap;
use std::io::{self, Write};

use anstyle::{AnsiColor, Style};

use super::flagged::{FlaggedProducers, Grant};
use super::model::{ApiKeyCount, Broker, Diagnostic, Exchange, Report};
use super::sink::{Analysed, Needs, Sink};
use super::spill::{Ordered, DEFAULT_RUN_BYTES};
use crate::analysis::look::{self, Gist, Why};
use crate::analysis::verdict::Grade;
use crate::analysis::{Block, Placed};
use crate::diag::{Kind, Severity, MAX_LISTED_PER_KIND};
use crate::kafka::tables::ApiKey;
use crate::pairing::{self, ExchangeOrder};
use timeline::Timeline;

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();
const RED: Style = AnsiColor::Red.on_default().bold();
const YELLOW: Style = AnsiColor::Yellow.on_default();
const GREEN: Style = AnsiColor::Green.on_default();

fn severity_style(severity: Severity) -> Style {
    match severity {
        Severity::Error => RED,
        Severity::Warning => YELLOW,
        Severity::Info => DIM,
    }
}

/// Time of day from an RFC 3339 timestamp, for compact lines.
fn clock(timestamp: &str) -> &str {
    timestamp
        .split_once('T')
        .map_or(timestamp, |(_, t)| t.trim_end_matches('Z'))
}

/// An exchange's line, and its style: green when it granted a block, red when it
/// failed, yellow when it only granted none or its answer is not known.
fn exchange_line(ex: &Exchange, gist: &Gist) -> (String, Style) {
    let req = &ex.request;
    let broker = match (req.broker_id, req.broker_epoch) {
        (Some(id), Some(epoch)) => format!("broker {id}/{epoch}"),
        _ => "broker ?".to_owned(),
    };
    let style = match gist {
        Gist::Granted { .. } => GREEN,
        Gist::NoBlock | Gist::Unanswered | Gist::ResponseUnknown => YELLOW,
        Gist::Error(_) | Gist::Undecoded => RED,
    };
    let latency = ex
        .latency_us
        .map(|us| format!("  {:.3} ms", us / 1000.0))
        .unwrap_or_default();
    let line = format!(
        "  {}  conn {}  {} -> {}  corr {}  {broker}  {}{latency}",
        clock(&req.timestamp),
        ex.connection,
        ex.client,
        ex.server,
        ex.correlation_id,
        gist.words()
    );
    (line, style)
}

/// Findings and exchanges listed before the rest are only counted.
const MAX_LISTED: usize = 20;
/// Kafka APIs listed before the rest are only counted.
const MAX_APIS: usize = 12;
/// Capture files listed before the rest are only counted.
const MAX_CAPTURES: usize = 5;

/// `--format text`: each exchange's line rendered as it comes into a list in report order
/// (off the heap past a bound, see [`Ordered`]), marked when it is worth a look, with its
/// latency (what is slow is known only at the end); the blocks go into the timeline. The
/// report is written around them at the end. Memory does not grow with the exchanges.
pub struct TextSink {
    colour: bool,
    all: bool,
    lines: Ordered<ExchangeOrder>,
    /// Exchanges handed to the sink: those the filters let through.
    shown: u64,
    blocks: u64,
    timeline: Timeline,
    /// The producers in trouble, with who they are, which the findings alone do not say.
    flagged: FlaggedProducers,
    out: Box<dyn Write + Send>,
}

impl TextSink {
    /// With colour only when `colour`.
    pub fn new(colour: bool, out: Box<dyn Write + Send>) -> Self {
        Self {
            colour,
            all: false,
            lines: Ordered::new(DEFAULT_RUN_BYTES),
            shown: 0,
            blocks: 0,
            timeline: Timeline::default(),
            flagged: FlaggedProducers::default(),
            out,
        }
    }

    /// Lists every exchange, not only those worth a look (`--all`).
    pub fn listing_all(mut self, all: bool) -> Self {
        self.all = all;
        self
    }
}

/// A listed line: why it is worth a look whatever its latency ([`trouble_byte`]), the
/// latency (NaN without one), then the line.
const LINE_HEAD: usize = 9;

/// The trouble of a listed line as its first byte, and back.
fn trouble_byte(trouble: Option<Why>) -> u8 {
    match trouble {
        None => 0,
        Some(Why::Failed) => 1,
        Some(Why::NoBlock) => 2,
        Some(Why::Slow) => 3,
    }
}

fn trouble_of_byte(byte: u8) -> Option<Why> {
    match byte {
        1 => Some(Why::Failed),
        2 => Some(Why::NoBlock),
        3 => Some(Why::Slow),
        _ => None,
    }
}

impl TextSink {
    fn allocate(&mut self, ex: &pairing::Exchange, block: Option<&Block>) -> io::Result<()> {
        self.shown += 1;
        if let Some(block) = block {
            self.blocks += 1;
            self.timeline.add(block.broker_id, block.timestamp);
        }
        self.lines.push(ex.order(), |out| {
            let gist = Gist::of(&ex.outcome);
            let ex = super::exchange(ex);
            let (line, style) = exchange_line(&ex, &gist);
            out.push(trouble_byte(gist.trouble()));
            out.extend(ex.latency_us.unwrap_or(f64::NAN).to_le_bytes());
            writeln!(out, "{style}{line}{style:#}")
        })
    }

    /// Counted from the report's summary and findings at the end; those in trouble kept
    /// to name them.
    fn producer(&mut self, px: &pairing::Granting, placed: &Placed) -> io::Result<()> {
        if let Some(grant) = Grant::of(&super::producer_id_entry(px, placed)) {
            self.flagged.add(grant);
        }
        Ok(())
    }
}

impl Sink for TextSink {
    fn needs(&self) -> Needs {
        Needs::STREAMED
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        match analysed {
            Analysed::Allocate(ex, block) => self.allocate(ex, block),
            Analysed::Producer(px, placed) => self.producer(px, placed),
        }
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        let lines = std::mem::replace(&mut self.lines, Ordered::new(1));
        let timeline = std::mem::take(&mut self.timeline);
        let parts = Parts {
            report,
            lines,
            shown: self.shown,
            blocks: self.blocks,
            timeline,
            flagged: &self.flagged,
            all: self.all,
        };
        if self.colour {
            parts.write(&mut self.out)?;
        } else {
            parts.write(&mut anstream::StripStream::new(&mut self.out))?;
        }
        self.out.flush()
    }
}

/// What the text report is written from.
struct Parts<'a> {
    report: &'a Report,
    lines: Ordered<ExchangeOrder>,
    shown: u64,
    blocks: u64,
    timeline: Timeline,
    flagged: &'a FlaggedProducers,
    all: bool,
}

impl Parts<'_> {
    fn write(self, out: &mut dyn Write) -> io::Result<()> {
        let mut w = io::BufWriter::with_capacity(64 << 10, out);
        let report = self.report;
        let s = &report.summary;
        let connections = match s.forgotten_connections {
            0 => format!("{} TCP connections", s.tcp_connections),
            n => format!(
                "at most {} TCP connections ({n} forgotten at pidshark's limits, each counted again if met again)",
                s.tcp_connections
            ),
        };
        // a metadata log read alone: no capture, so none of a capture's sections
        let log_alone = report.captures.is_empty() && report.metadata_log.is_some();
        match (log_alone, &report.metadata_log) {
            (true, Some(log)) => writeln!(
                w,
                "{BOLD}pidshark {}{BOLD:#}: a metadata log read alone ({}), no capture",
                report.tool.version,
                counted(log.files.len() as u64, "file")
            )?,
            _ => writeln!(
                w,
                "{BOLD}pidshark {}{BOLD:#}: {} packets, {connections}, {} with Kafka",
                report.tool.version, s.packets, s.kafka_connections
            )?,
        }
        verdict(&mut w, report, self.shown)?;
        findings(&mut w, report)?;
        let chosen = chosen_brokers(report);
        brokers(&mut w, report, &chosen)?;
        let pieces = &report.controller_timeline;
        if self.blocks > 0 {
            heading(&mut w, "Blocks over time")?;
            self.timeline.write(&mut w, &chosen)?;
            timeline::write_controllers(&mut w, pieces)?;
        } else if pieces
            .iter()
            .any(|p| p.state == crate::analysis::controllers::pieces::PieceState::Led)
            || report.summary.exchanges.total > 0
        {
            heading(&mut w, "Controllers")?;
            timeline::write_controllers(&mut w, pieces)?;
        }
        producers::write(&mut w, report, self.flagged)?;
        writes::write(&mut w, report)?;
        metadata_log::write(&mut w, report)?;
        if !log_alone {
            exchanges(&mut w, report, self.lines, self.all, self.shown)?;
            captures(&mut w, report)?;
        }
        diagnostics(&mut w, report)?;
        w.flush()
    }
}

/// The verdict, what the capture cannot show and what to do about it, and what the
/// filters let through.
fn verdict(w: &mut dyn Write, report: &Report, shown: u64) -> io::Result<()> {
    let v = &report.verdict;
    let style = match v.grade {
        Grade::Wrong => RED,
        Grade::Unsure | Grade::Warned => YELLOW,
        Grade::Right => GREEN.bold(),
        Grade::Nothing => BOLD,
    };
    writeln!(w, "\n{style}{}{style:#}", v.headline)?;
    // one limit is all in the headline; more are listed, each with what to do
    for limit in v.limits.iter().filter(|_| v.limits.len() > 1) {
        let advice = limit.advice.map(|a| format!(": {a}")).unwrap_or_default();
        writeln!(w, "  cannot show: {}{advice}", limit.text)?;
    }
    let Some(filters) = &report.filters else {
        return Ok(());
    };
    let total = report.summary.exchanges.total;
    let described = super::filter::describe(filters);
    if shown == 0 && total > 0 {
        let holds = filters
            .frame_holds
            .as_ref()
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        writeln!(
            w,
            "{YELLOW}No exchange matches the filters ({described}): none of the {total} is listed below{holds}{YELLOW:#}"
        )?;
    } else {
        writeln!(
            w,
            "{DIM}Filtered ({described}): {shown} of {total} exchanges and their blocks are listed below{DIM:#}"
        )?;
    }
    writeln!(
        w,
        "{DIM}The verdict, findings, tables and diagnostics are of the whole capture.{DIM:#}"
    )
}

fn heading(w: &mut dyn Write, text: &str) -> io::Result<()> {
    writeln!(w, "\n{BOLD}{text}{BOLD:#}")
}

/// Errors first, then warnings, then the rest.
fn rank(severity: Severity) -> std::cmp::Reverse<Severity> {
    std::cmp::Reverse(severity)
}

/// The findings, errors first, each once: their true counts (the report lists at most
/// 1,000 of a kind; the summary counts them all), then the first few.
fn findings(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let findings = &report.producer_id_blocks.findings;
    let [errors, warnings, info] = report.finding_totals();
    let total = errors + warnings + info;
    if total == 0 {
        return Ok(());
    }
    // findings linked to one fault (`fault_frame`) are that fault seen from each side
    let faults: std::collections::BTreeSet<u64> = findings.iter().filter_map(|f| f.fault).collect();
    let linked = findings.iter().filter(|f| f.fault.is_some()).count();
    let of_faults = match (linked, faults.len()) {
        (0, _) => String::new(),
        (n, faults) if n > faults => {
            format!(" ({n} of them restate {})", counted(faults as u64, "fault"))
        }
        _ => String::new(),
    };
    heading(
        w,
        &format!(
            "Findings: {}, {}, {info} info{of_faults}",
            counted(errors, "error"),
            counted(warnings, "warning"),
        ),
    )?;
    let sorted = report.findings_by_severity();
    for f in sorted.iter().take(MAX_LISTED) {
        let style = severity_style(f.severity);
        writeln!(
            w,
            "  {style}{:7} {}{style:#}: {}",
            f.severity, f.kind, f.message
        )?;
    }
    let listed = sorted.len().min(MAX_LISTED) as u64;
    if total > listed {
        writeln!(
            w,
            "  (first {listed} of {total}; the JSON report lists up to {MAX_LISTED_PER_KIND} of each kind, and its summary counts them all)"
        )?;
    }
    Ok(())
}

/// `1 error`, `2 errors`.
fn counted(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}

/// Brokers drawn one by one in the table and the timeline: every one when they are
/// few, else the most troubled.
const MAX_BROKERS: usize = 12;

/// A broker's trouble: error responses and requests without an answer.
fn trouble(b: &Broker) -> u64 {
    b.error_responses() + b.unanswered + b.response_unknown
}

/// The brokers the table and the timeline draw: all in id order when there are at most
/// [`MAX_BROKERS`], else the most troubled (then the busiest, then by id), in that order.
fn chosen_brokers(report: &Report) -> Vec<i32> {
    let brokers = &report.summary.brokers;
    let mut ids: Vec<(&i32, &Broker)> = brokers.iter().collect();
    if ids.len() > MAX_BROKERS {
        ids.sort_by_key(|(id, b)| (std::cmp::Reverse((trouble(b), b.requests)), **id));
        ids.truncate(MAX_BROKERS - 1);
    }
    ids.into_iter().map(|(id, _)| *id).collect()
}

/// The per-broker table: the `chosen` brokers, then the others summed up.
fn brokers(w: &mut dyn Write, report: &Report, chosen: &[i32]) -> io::Result<()> {
    let brokers = &report.summary.brokers;
    if brokers.is_empty() {
        return Ok(());
    }
    let title = match brokers.len() > chosen.len() {
        true => format!(
            "Brokers: {} of {}, those with most errors and unanswered requests",
            chosen.len(),
            brokers.len()
        ),
        false => "Brokers".to_owned(),
    };
    heading(w, &title)?;
    writeln!(
        w,
        "  {:>8}  {:>8}  {:>8}  {:>10}  {:>7}  {:>12}  {:>9}  {:>9}  epochs; errors",
        "broker",
        "requests",
        "complete",
        "unanswered",
        "unknown",
        "ids granted",
        "p50 ms",
        "p99 ms"
    )?;
    let ms = |us: Option<f64>| us.map_or("-".to_owned(), |us| format!("{:.3}", us / 1000.0));
    for (id, b) in chosen.iter().filter_map(|id| brokers.get_key_value(id)) {
        let epochs: Vec<String> = b.epochs_seen.iter().map(i64::to_string).collect();
        let errors: Vec<String> = b.errors.iter().map(|(e, n)| format!("{e} {n}")).collect();
        let errors = if errors.is_empty() {
            String::new()
        } else {
            format!("; {}{}", errors.join(", "), b.more_errors())
        };
        writeln!(
            w,
            "  {id:>8}  {:>8}  {:>8}  {:>10}  {:>7}  {:>12}  {:>9}  {:>9}  {}{errors}",
            b.requests,
            b.complete,
            b.unanswered,
            b.response_unknown,
            b.ids_granted,
            ms(b.latency_us.map(|l| l.p50)),
            ms(b.latency_us.map(|l| l.p99)),
            epochs.join(",") + &b.more_epochs()
        )?;
    }
    let others: Vec<&Broker> = brokers
        .iter()
        .filter(|(id, _)| !chosen.contains(id))
        .map(|(_, b)| b)
        .collect();
    if !others.is_empty() {
        let sum = |f: fn(&Broker) -> u64| others.iter().map(|b| f(b)).sum::<u64>();
        let ids = others
            .iter()
            .fold(0i64, |sum, b| sum.saturating_add(b.ids_granted));
        writeln!(
            w,
            "  {:>8}  {:>8}  {:>8}  {:>10}  {:>7}  {ids:>12}  (the other {} brokers, {} of them with errors or unanswered requests)",
            "others",
            sum(|b| b.requests),
            sum(|b| b.complete),
            sum(|b| b.unanswered),
            sum(|b| b.response_unknown),
            others.len(),
            others.iter().filter(|b| trouble(b) > 0).count()
        )?;
    }
    Ok(())
}

/// The exchanges worth a look (or all of them), then the latency.
fn exchanges(
    w: &mut dyn Write,
    report: &Report,
    lines: Ordered<ExchangeOrder>,
    all: bool,
    shown: u64,
) -> io::Result<()> {
    let s = &report.summary;
    let slow = report.producer_id_blocks.slow_threshold_us;
    let worth = |item: &[u8]| {
        let trouble = item.first().copied().and_then(trouble_of_byte);
        let latency = item
            .get(1..LINE_HEAD)
            .and_then(|b| b.try_into().ok())
            .map(f64::from_le_bytes)
            .filter(|l| !l.is_nan());
        look::worth_a_look(trouble, latency, slow).is_some()
    };
    let total = match report.filters {
        Some(_) => format!("the {shown} shown of {}", s.exchanges.total),
        None => s.exchanges.total.to_string(),
    };
    // the counts are the whole capture's, whatever the filters let through
    let of_all = if report.filters.is_some() {
        "of all, "
    } else {
        ""
    };
    let title = if all {
        format!(
            "AllocateProducerIds exchanges: {total} ({of_all}{} complete, {} unanswered, {} response unknown)",
            s.exchanges.complete, s.exchanges.unanswered, s.exchanges.response_unknown
        )
    } else {
        format!(
            "Exchanges worth a look, of {total}: errors, no answer, slow (--all lists every one)"
        )
    };
    heading(w, &title)?;
    let (mut listed, mut more) = (0usize, 0u64);
    lines.write_each(|_, item| {
        if !all && !worth(item) {
            return Ok(());
        }
        if all || listed < MAX_LISTED {
            listed += 1;
            w.write_all(item.get(LINE_HEAD..).unwrap_or_default())
        } else {
            more += 1;
            Ok(())
        }
    })?;
    if listed == 0 {
        writeln!(w, "  none")?;
    }
    if more > 0 {
        writeln!(
            w,
            "  (first {listed} of {} worth a look; --all lists every exchange)",
            listed as u64 + more
        )?;
    }
    if let Some(l) = &s.latency_us {
        writeln!(
            w,
            "  latency: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms over {}{}",
            l.p50 / 1000.0,
            l.p99 / 1000.0,
            l.max / 1000.0,
            l.count,
            match report.filters {
                Some(_) => " (all the capture's complete exchanges)",
                None => "",
            }
        )?;
    }
    Ok(())
}

/// What was read: the files and the Kafka APIs seen.
fn captures(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let s = &report.summary;
    heading(w, "Captures")?;
    for c in report.captures.iter().take(MAX_CAPTURES) {
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
    if report.captures.len() > MAX_CAPTURES {
        writeln!(
            w,
            "  ... and {} more files",
            report.captures.len() - MAX_CAPTURES
        )?;
    }
    if let Some(command) = crate::report::mergecap_command(&report.captures) {
        writeln!(
            w,
            "  merged by time: frame numbers are those of `{command}`"
        )?;
        if s.duplicate_packets > 0 {
            writeln!(
                w,
                "  {} packets were in two files (the same packet seen on two hosts): read once",
                s.duplicate_packets
            )?;
        }
    }
    heading(w, "Kafka APIs")?;
    if s.api_keys.is_empty() {
        writeln!(w, "  none")?;
    }
    // the busiest first; AllocateProducerIds always
    let mut apis: Vec<(&String, &ApiKeyCount)> = s.api_keys.iter().collect();
    apis.sort_by_key(|(_, c)| {
        (
            c.api_key != ApiKey::ALLOCATE_PRODUCER_IDS.0,
            std::cmp::Reverse(c.requests),
        )
    });
    for (name, count) in apis.iter().take(MAX_APIS) {
        writeln!(
            w,
            "  {name} ({})  {} requests, {} responses",
            count.api_key, count.requests, count.responses
        )?;
    }
    if apis.len() > MAX_APIS {
        let rest = apis.get(MAX_APIS..).unwrap_or_default();
        writeln!(
            w,
            "  ... and {} more APIs with {} requests",
            rest.len(),
            rest.iter().map(|(_, c)| c.requests).sum::<u64>()
        )?;
    }
    if s.unmatched_responses > 0 {
        let n = s.unmatched_responses;
        let noun = if n == 1 { "response" } else { "responses" };
        let like = match s.unmatched_like_blocks {
            Some(1) => " (1 reads as a block's grant, unmatched_like_blocks)".to_owned(),
            Some(k) => format!(" ({k} read as blocks' grants, unmatched_like_blocks)"),
            None => String::new(),
        };
        writeln!(w, "  {n} {noun} matched no captured request{like}")?;
    }
    Ok(())
}

/// The diagnostics that are not findings, a line per kind (errors first): its count and
/// its first message.
fn diagnostics(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let findings: std::collections::BTreeSet<Kind> = report
        .producer_id_blocks
        .findings
        .iter()
        .map(|f| f.kind)
        .collect();
    // each severity's kinds by name
    let mut by_kind: BTreeMap<(std::cmp::Reverse<Severity>, &str), Vec<&Diagnostic>> =
        BTreeMap::new();
    for d in report
        .diagnostics
        .iter()
        .filter(|d| !findings.contains(&d.kind))
    {
        by_kind
            .entry((rank(d.severity), d.kind.as_str()))
            .or_default()
            .push(d);
    }
    heading(w, "Diagnostics (besides the findings)")?;
    if by_kind.is_empty() {
        writeln!(w, "  none")?;
    }
    for ((_, kind), list) in by_kind {
        let total = report
            .summary
            .diagnostics
            .get(kind)
            .copied()
            .unwrap_or(list.len() as u64);
        let Some(first) = list.first() else { continue };
        let style = severity_style(first.severity);
        let place = match (first.frame, first.connection) {
            (Some(f), Some(c)) => format!("frame {f}, conn {c}: "),
            (Some(f), None) => format!("frame {f}: "),
            _ => String::new(),
        };
        let others = if total > 1 {
            format!(" {DIM}(and {} more){DIM:#}", total - 1)
        } else {
            String::new()
        };
        writeln!(
            w,
            "  {style}{:7} {kind}{style:#} ({total}): {DIM}{place}{DIM:#}{}{others}",
            first.severity, first.message
        )?;
    }
    Ok(())
}
