//! `--format html`: one self-contained page for the incident ticket (no network access:
//! CSS and SVG inline, no script): the verdict and the capture's facts, a timeline of the
//! producer-ID blocks under a lane of the controllers leading the quorum, the per-broker
//! table, the producers worth a look (linked to the blocks holding their ids), the
//! findings and the exchanges worth a look, each with a Wireshark display filter. Every
//! number on it is one the JSON report has.

mod bins;
mod groups;
mod lane;
mod latency;
mod metadata_log;
mod producers;
mod svg;
mod ticks;
mod writes;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::io::{self, Write};

use super::exchange;
use super::flagged::{FlaggedProducers, Grant};
use super::model::Report;
use super::sink::{Analysed, Needs, Sink};
use crate::analysis::look::{self, Gist, Why};
use crate::analysis::verdict::VerdictFact;
use crate::analysis::{Block, Placed};
use crate::diag::Fact;
use crate::diag::MAX_LISTED_PER_KIND;
use crate::pairing::{self, Granting};
use groups::Groups;
use svg::{Chart, Drawn, Mark};

/// Exchanges worth a look listed; the page says of how many.
const MAX_ROWS: usize = 50;
/// Findings listed; the page says of how many.
const MAX_FINDINGS: usize = 500;
/// Exchanges kept that may turn out slow (the slowest of those not in trouble): slow
/// ones past them are counted as "at least".
const MAX_SLOW_CANDIDATES: usize = 1000;
/// Brokers listed, most trouble first when there are more.
const MAX_BROKER_ROWS: usize = 200;
/// Brokers the charts keep apart (the first met); the others are drawn with the grey
/// ones. More than the page names, so that those it names are chosen among many.
const MAX_KEPT: usize = 1000;
/// Frames a finding's filter names; past them the filter spans the first to the last.
const MAX_FILTER_FRAMES: usize = 12;

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Wireshark's filter for these frames (past [`MAX_FILTER_FRAMES`], the range from the
/// first to the last, which Wireshark's sets also take). Set members are separated by
/// commas: Wireshark 4 refuses the spaces that 3.x took.
fn filter(frames: &[u64]) -> String {
    if let (true, Some(first), Some(last)) = (
        frames.len() > MAX_FILTER_FRAMES,
        frames.iter().min(),
        frames.iter().max(),
    ) {
        return format!("frame.number in {{{first}..{last}}}");
    }
    let list: Vec<String> = frames.iter().map(u64::to_string).collect();
    format!("frame.number in {{{}}}", list.join(", "))
}

/// An exchange worth a look, as a table row's cells.
struct Row {
    time: String,
    broker: String,
    connection: u64,
    correlation_id: i32,
    outcome: String,
    latency_us: Option<f64>,
    frames: Vec<u64>,
}

/// An exchange in no trouble kept in case it is slow: by its latency in nanoseconds,
/// then its request's frame.
struct Candidate {
    ns: i64,
    row: Row,
}

impl Candidate {
    fn key(&self) -> (i64, Option<u64>) {
        (self.ns, self.row.frames.first().copied())
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// `--format html`.
pub struct HtmlSink {
    chart: Chart,
    latencies: latency::Latencies,
    rows: Vec<Row>,
    more_rows: u64,
    /// The slowest exchanges in no trouble, with their latency in nanoseconds: at the end,
    /// those above the slow threshold are worth a look too.
    slow_candidates: BinaryHeap<Reverse<Candidate>>,
    /// Slow exchanges may have been left out of the count: candidates were dropped.
    more_at_least: bool,
    /// The brokers the charts keep apart.
    kept: BTreeSet<i32>,
    producers: FlaggedProducers,
    out: Box<dyn Write + Send>,
}

impl HtmlSink {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            chart: Chart::default(),
            latencies: latency::Latencies::default(),
            rows: Vec::new(),
            more_rows: 0,
            slow_candidates: BinaryHeap::new(),
            more_at_least: false,
            kept: BTreeSet::new(),
            producers: FlaggedProducers::default(),
            out,
        }
    }

    fn allocate(&mut self, ex: &pairing::Exchange, block: Option<&Block>) -> io::Result<()> {
        let gist = Gist::of(&ex.outcome);
        let ex = exchange(ex);
        let series = self.keep(ex.request.broker_id);
        if let Some(b) = block {
            let series = self.keep(Some(b.broker_id));
            self.chart.add_block(Drawn {
                broker: b.broker_id,
                series,
                start: b.start,
                end: b.end,
                at: super::model::UnixTime(b.timestamp).seconds(),
                frames: (b.request_frame, b.response_frame),
                time: b.timestamp,
            });
        }
        if let Some(us) = ex.latency_us {
            self.latencies.add(latency::Dot {
                at: ex.request.unix_time.seconds(),
                us,
                broker: ex.request.broker_id,
                series,
                time: ex.request.unix_time.0,
                frame: ex.request.frame,
            });
        }
        let frames: Vec<u64> = std::iter::once(ex.request.frame)
            .chain(ex.response.as_ref().map(|r| r.frame))
            .collect();
        let time = ex
            .response
            .as_ref()
            .map_or(&ex.request.timestamp, |r| &r.timestamp);
        let row = |outcome| Row {
            time: time.clone(),
            broker: ex.request.broker_id.map_or("?".into(), |b| b.to_string()),
            connection: ex.connection,
            correlation_id: ex.correlation_id,
            outcome,
            latency_us: ex.latency_us,
            frames: frames.clone(),
        };
        let Some(why) = gist.trouble() else {
            // worth a look only if slow, which is known at the end
            if let Some(us) = ex.latency_us {
                let ns = (us * 1000.0) as i64;
                self.slow_candidate(ns, ex.request.frame, || row(String::new()));
            }
            return Ok(());
        };
        let outcome = gist.words();
        if why == Why::Failed {
            let time = ex
                .response
                .as_ref()
                .map_or(ex.request.unix_time, |r| r.unix_time);
            self.chart.add_mark(Mark {
                broker: ex.request.broker_id,
                series,
                at: time.seconds(),
                time: time.0,
                what: outcome.clone(),
                frame: ex.response.as_ref().map_or(ex.request.frame, |r| r.frame),
            });
        }
        if self.rows.len() < MAX_ROWS {
            self.rows.push(row(outcome));
        } else {
            self.more_rows += 1;
        }
        Ok(())
    }

    fn producer(&mut self, px: &Granting, placed: &Placed) -> io::Result<()> {
        let entry = super::producer_id_entry(px, placed);
        if let Some(grant) = Grant::of(&entry) {
            self.producers.add(grant);
        }
        Ok(())
    }
}

impl Sink for HtmlSink {
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
        let mut page = String::with_capacity(64 << 10);
        head(&mut page, report);
        let groups = Groups::new(report, |b| self.kept.contains(&b));
        // written first: the timeline gives an id to the blocks its rows link to
        let mut producers = String::new();
        let chart = &self.chart;
        let anchored = producers::html(&self.producers, &mut producers, report, |frame| {
            chart.draws_block(frame)
        });
        self.chart.anchored = anchored;
        if log_alone(report) {
            metadata_log::html(&mut page, report);
            findings(&mut page, report);
            page.push_str("</main>\n</body>\n</html>\n");
            self.out.write_all(page.as_bytes())?;
            return self.out.flush();
        }
        page.push_str("<h2>Producer-ID blocks over time</h2>\n");
        self.chart.findings = report.producer_id_blocks.findings.clone();
        // who led, where anything is known or there are requests to set it beside
        let timeline = &report.controller_timeline;
        if timeline
            .iter()
            .any(|p| p.state == crate::analysis::controllers::pieces::PieceState::Led)
            || report.summary.exchanges.total > 0
        {
            self.chart.controllers = timeline.clone();
        }
        page.push_str(&self.chart.svg(&groups, report.filters.is_some()));
        page.push_str("<h2>Latency</h2>\n");
        let summary = &report.summary;
        let latency = summary.latency_us.as_ref();
        page.push_str(&self.latencies.svg(
            &groups,
            latency,
            &summary.brokers,
            report.filters.is_some(),
        ));
        brokers(&mut page, report, &groups);
        page.push_str(&producers);
        writes::html(&mut page, report);
        metadata_log::html(&mut page, report);
        findings(&mut page, report);
        self.add_slow_rows(report.producer_id_blocks.slow_threshold_us);
        let filtered = report.filters.is_some();
        worth_a_look(
            &mut page,
            &self.rows,
            (self.more_rows, self.more_at_least),
            filtered,
        );
        page.push_str("</main>\n</body>\n</html>\n");
        self.out.write_all(page.as_bytes())?;
        self.out.flush()
    }
}

impl HtmlSink {
    /// The series a broker's marks go in: itself, when the charts keep it apart.
    fn keep(&mut self, broker: Option<i32>) -> Option<i32> {
        let b = broker?;
        if self.kept.len() < MAX_KEPT {
            self.kept.insert(b);
        }
        self.kept.contains(&b).then_some(b)
    }

    /// Keeps an exchange in no trouble among the slowest, `ns` its latency and `frame`
    /// its request's.
    fn slow_candidate(&mut self, ns: i64, frame: u64, row: impl FnOnce() -> Row) {
        // no row built for one faster than every one kept: it would go at once
        let full = self.slow_candidates.len() >= MAX_SLOW_CANDIDATES;
        let fastest = self.slow_candidates.peek().map(|Reverse(c)| c.key());
        if full && fastest.is_some_and(|k| k >= (ns, Some(frame))) {
            self.more_at_least = true;
            return;
        }
        let row = row();
        self.slow_candidates.push(Reverse(Candidate { ns, row }));
        if self.slow_candidates.len() > MAX_SLOW_CANDIDATES {
            self.slow_candidates.pop();
            self.more_at_least = true;
        }
    }

    /// The slow exchanges join those worth a look, by the analysis's rule
    /// ([`look::worth_a_look`]): what is slow is known only at the end. Those past the
    /// rows are counted; when candidates were dropped and the fastest kept is slow too,
    /// more may be, and the count is a floor.
    fn add_slow_rows(&mut self, threshold: Option<f64>) {
        let candidates = std::mem::take(&mut self.slow_candidates).into_sorted_vec();
        let is_slow = |row: &Row| look::worth_a_look(None, row.latency_us, threshold).is_some();
        self.more_at_least &= candidates
            .last()
            .is_some_and(|Reverse(fastest)| is_slow(&fastest.row));
        let mut slow: Vec<Row> = candidates
            .into_iter()
            .map(|Reverse(candidate)| candidate.row)
            .filter(is_slow)
            .collect();
        slow.sort_by_key(|r| r.frames.first().copied());
        let shown = |t: f64| t.to_string();
        for mut row in slow {
            if self.rows.len() >= MAX_ROWS {
                self.more_rows += 1;
                continue;
            }
            row.outcome = format!(
                "slow (above {} µs)",
                threshold.map_or("-".to_owned(), shown)
            );
            self.rows.push(row);
        }
        self.rows.sort_by_key(|r| r.frames.first().copied());
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
h1{font-size:1.3em;overflow-wrap:anywhere}h2{font-size:1.1em;margin-top:2em}\
.verdict{font-size:1.2em;font-weight:bold;padding:.5em;border-left:6px solid}\
.wrong{border-color:#c0392b;color:#c0392b}.unsure,.warned{border-color:#b9770e}\
.right{border-color:#1e8449}.nothing{border-color:#777}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .4em;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.95em}\
.t{white-space:nowrap}code.f{white-space:normal;overflow-wrap:normal;word-break:keep-all}\
figure.chart{margin:1em 28px 1.5em 90px}figure.small{margin-left:44px}\
svg.plot{display:block;overflow:visible}svg text{font:11px system-ui,sans-serif}\
.key span{margin-right:1em;white-space:nowrap}\
.key i,i.sw{display:inline-block;width:10px;height:10px;margin-right:4px}\
.key i.lane{background:#dbe6f1;border:1px solid #5b7a99;width:8px;height:8px}\
rect.block:target{stroke:#000;stroke-width:2}tr.producer:target{background:#fff3c4}tr.bad{color:#c0392b}\
.key i.outline{border:2px dashed #c0392b;width:6px;height:6px}\
.key i.hatch{background:repeating-linear-gradient(45deg,#888 0 2px,#fff 2px 5px)}\
.tri{color:#c0392b;margin-right:4px;font-size:.8em}\
.who{font-weight:bold;font-size:.9em}.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(280px,1fr));column-gap:1em}\
.wide{overflow-x:auto}\
@media (max-width:800px){body{margin:.6em;font-size:13px}table{font-size:12px}th{font-size:.85em}td,th{padding:.15em .25em}figure.chart{margin-left:76px}}\
@media print{body{margin:0}figure{break-inside:avoid}}";

fn head(page: &mut String, report: &Report) {
    let class = report.verdict.grade.as_str();
    let text = &report.verdict.headline;
    page.push_str(&format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>pidshark: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <h1>pidshark {}: {}</h1>\n<p class=\"verdict {class}\" id=\"verdict\">{}</p>\n",
        esc(text),
        esc(report.tool.version),
        esc(&subject(report)),
        esc(text)
    ));
    limits_and_filters(page, report);
    if log_alone(report) {
        return;
    }
    let s = &report.summary;
    let (first, last) = crate::report::time_span(&report.captures);
    page.push_str(&format!(
        "<p id=\"facts\">{} packets from {} to {}; {} TCP connections, {} with Kafka; {} AllocateProducerIds exchanges ({} complete, {} unanswered, {} response unknown); {} brokers; {} blocks.</p>\n",
        s.packets,
        esc(first.as_deref().unwrap_or("-")),
        esc(last.as_deref().unwrap_or("-")),
        s.tcp_connections,
        s.kafka_connections,
        s.exchanges.total,
        s.exchanges.complete,
        s.exchanges.unanswered,
        s.exchanges.response_unknown,
        s.brokers.len(),
        // the whole capture's, as every other number here
        report.verdict.facts.get(VerdictFact::Blocks.as_str()).and_then(Fact::as_f64).unwrap_or(0.0)
    ));
    if report.captures.len() > MAX_FILES_NAMED {
        let items: String = report
            .captures
            .iter()
            .map(|c| format!("<li><code>{}</code></li>", esc(&c.path)))
            .collect();
        page.push_str(&format!(
            "<details id=\"files\"><summary>the {} files</summary><ul>{items}</ul></details>\n",
            report.captures.len()
        ));
    }
    if let Some(command) = crate::report::mergecap_command(&report.captures) {
        page.push_str(&format!(
            "<p id=\"merged\">The {} files are one capture merged by time: frame numbers and Wireshark filters are those of the file <code>mergecap</code> writes from them{}.</p>\n<details id=\"mergecap\"><summary>the mergecap command</summary><code class=\"f\">{}</code></details>\n",
            report.captures.len(),
            if s.duplicate_packets > 0 {
                format!("; {} packets were in two files (one packet seen on two hosts) and were read once", s.duplicate_packets)
            } else {
                String::new()
            },
            esc(&command),
        ));
    }
}

/// Input files named in the page's title; past them, their number and time span.
const MAX_FILES_NAMED: usize = 3;

/// A metadata log read without a capture: none of a capture's parts.
fn log_alone(report: &Report) -> bool {
    report.captures.is_empty() && report.metadata_log.is_some()
}

/// What the page is about: `AllocateProducerIds in a.pcap, b.pcap`, past a few files
/// `13 files, 04:23:28 to 04:24:01` (UTC), or a metadata log read alone.
fn subject(report: &Report) -> String {
    if let (true, Some(log)) = (log_alone(report), &report.metadata_log) {
        let n = log.files.len();
        return format!(
            "a metadata log read alone ({n} file{})",
            if n == 1 { "" } else { "s" }
        );
    }
    let captures = &report.captures;
    if captures.len() <= MAX_FILES_NAMED {
        let paths: Vec<&str> = captures.iter().map(|c| c.path.as_str()).collect();
        return format!("AllocateProducerIds in {}", paths.join(", "));
    }
    let (first, last) = crate::report::time_span(captures);
    // `2026-12-03T04:23:28.123456Z`: the time of day to the second
    let clock = |t: Option<String>| {
        t.and_then(|t| t.get(11..19).map(str::to_owned))
            .unwrap_or_else(|| "-".to_owned())
    };
    format!(
        "AllocateProducerIds in {} files, {} to {} (UTC)",
        captures.len(),
        clock(first),
        clock(last)
    )
}

/// Under the verdict: what the capture cannot show, each with what to do (one limit is
/// all in the verdict), and what the filters let through.
fn limits_and_filters(page: &mut String, report: &Report) {
    let limits = &report.verdict.limits;
    if limits.len() > 1 {
        page.push_str("<ul id=\"limits\">\n");
        for limit in limits {
            let advice = limit
                .advice
                .map(|a| format!(": {}", esc(a)))
                .unwrap_or_default();
            page.push_str(&format!(
                "<li>cannot show: {}{advice}</li>\n",
                esc(&limit.text)
            ));
        }
        page.push_str("</ul>\n");
    }
    let Some(filters) = &report.filters else {
        return;
    };
    let described = esc(&super::filter::describe(filters));
    let (shown, total) = (filters.exchanges_shown, report.summary.exchanges.total);
    let said = if shown == 0 && total > 0 {
        format!(
            "No exchange matches the filters ({described}): none of the {total} is shown below."
        )
    } else {
        format!("Filtered ({described}): {shown} of {total} exchanges and their blocks are shown below.")
    };
    page.push_str(&format!(
        "<p id=\"filters\">{said} The verdict, findings, tables and diagnostics are of the whole capture.</p>\n"
    ));
}

/// The table of every broker's numbers, which also shows each broker's colour on the
/// charts (plain text rows, for the browser's find); past [`MAX_BROKER_ROWS`] brokers,
/// those with the most trouble.
fn brokers(page: &mut String, report: &Report, groups: &Groups) {
    let all = &report.summary.brokers;
    let listed: Vec<i32> = if all.len() > MAX_BROKER_ROWS {
        let shown = groups.ranked.iter().take(MAX_BROKER_ROWS);
        shown.map(|(id, _)| *id).collect()
    } else {
        all.keys().copied().collect()
    };
    page.push_str("<h2>Brokers</h2>\n");
    if all.len() > MAX_BROKER_ROWS {
        page.push_str(&format!(
            "<p id=\"brokers-listed\">First {} of {} brokers, the most trouble first (failed requests and findings, then requests); the JSON report has every broker.</p>\n",
            listed.len(),
            all.len()
        ));
    }
    let findings = findings_per_broker(report);
    page.push_str("<div class=\"wide\"><table id=\"brokers\">\n<tr><th>broker</th><th>requests</th><th>complete</th><th>unanswered</th><th>response unknown</th><th>ids granted</th><th>p50 µs</th><th>p99 µs</th><th>epochs</th><th>errors</th><th>findings</th></tr>\n");
    for id in listed {
        let Some(b) = all.get(&id) else { continue };
        let us = |v: Option<f64>| v.map_or("-".to_owned(), |v| v.to_string());
        let epochs: Vec<String> = b.epochs_seen.iter().map(i64::to_string).collect();
        let errors: Vec<String> = b.errors.iter().map(|(e, n)| format!("{e} {n}")).collect();
        page.push_str(&format!(
            "<tr class=\"broker\"><td class=\"t\"><i class=\"sw\" style=\"background:{}\"></i>{id}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>\n",
            groups.colour(groups.of(Some(id))),
            b.requests,
            b.complete,
            b.unanswered,
            b.response_unknown,
            b.ids_granted,
            us(b.latency_us.map(|l| l.p50)),
            us(b.latency_us.map(|l| l.p99)),
            short_list(&epochs) + &b.more_epochs(),
            esc(&(short_list(&errors) + &b.more_errors())),
            findings.get(&id).copied().unwrap_or(0)
        ));
    }
    page.push_str("</table></div>\n");
}

/// Findings about each broker.
fn findings_per_broker(report: &Report) -> std::collections::BTreeMap<i32, u64> {
    let mut per = std::collections::BTreeMap::new();
    for f in &report.producer_id_blocks.findings {
        if let Some(b) = f.broker_id {
            *per.entry(b).or_default() += 1;
        }
    }
    per
}

/// A list in a cell: a dozen at most, then how many more.
fn short_list(items: &[String]) -> String {
    const SHOWN: usize = 12;
    let mut text = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text += &format!(" (first {SHOWN} of {})", items.len());
    }
    text
}

/// The findings, errors first (the verdict names them), each severity in packet order,
/// under their true count.
fn findings(page: &mut String, report: &Report) {
    let findings = report.findings_by_severity();
    let total: u64 = report.finding_totals().iter().sum();
    page.push_str(&format!("<h2>Findings ({total})</h2>\n"));
    if findings.is_empty() {
        page.push_str("<p>None.</p>\n");
        return;
    }
    let shown = findings.len().min(MAX_FINDINGS) as u64;
    if total > shown {
        page.push_str(&format!(
            "<p id=\"findings-listed\">First {shown} of {total} findings, errors first, then warnings, then info, each in packet order; the JSON report lists up to {MAX_LISTED_PER_KIND} of each kind, and its summary counts them all.</p>\n"
        ));
    }
    page.push_str("<div class=\"wide\"><table id=\"findings\">\n<tr><th>severity</th><th>kind</th><th>time</th><th>what</th><th>Wireshark filter</th></tr>\n");
    for f in findings.iter().take(MAX_FINDINGS) {
        page.push_str(&format!(
            "<tr class=\"finding {}\"><td>{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td><code class=\"f\">{}</code></td></tr>\n",
            f.severity,
            f.severity,
            f.kind,
            esc(&f.timestamp),
            esc(&f.message),
            filter(&f.frames)
        ));
    }
    page.push_str("</table></div>\n");
}

/// The exchanges worth a look: `rows`, and `more` not listed (at least, `at_least`), of
/// those the filters let through when `filtered`.
fn worth_a_look(page: &mut String, rows: &[Row], (more, at_least): (u64, bool), filtered: bool) {
    page.push_str("<h2>Exchanges worth a look</h2>\n");
    if rows.is_empty() {
        let none = match filtered {
            true => "None of the exchanges shown: each was answered NONE with a block, and none was slow.",
            false => "None: every exchange was answered NONE with a block, and none was slow.",
        };
        page.push_str(&format!("<p>{none}</p>\n"));
        return;
    }
    if more > 0 {
        page.push_str(&format!(
            "<p id=\"exchanges-listed\">{} of {}{} exchanges worth a look (errors, no answer, NONE without a block, slow): the first in packet order, then slow ones; the JSON report lists every exchange.</p>\n",
            rows.len(),
            if at_least { "at least " } else { "" },
            rows.len() as u64 + more
        ));
    }
    page.push_str("<div class=\"wide\"><table id=\"exchanges\">\n<tr><th>time</th><th>broker</th><th>connection</th><th>correlation id</th><th>outcome</th><th>latency µs</th><th>Wireshark filter</th></tr>\n");
    for r in rows {
        page.push_str(&format!(
            "<tr class=\"exchange\"><td class=\"t\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td><code class=\"f\">{}</code></td></tr>\n",
            esc(&r.time),
            esc(&r.broker),
            r.connection,
            r.correlation_id,
            esc(&r.outcome),
            r.latency_us.map_or("-".to_owned(), |l| l.to_string()),
            filter(&r.frames)
        ));
    }
    page.push_str("</table></div>\n");
}
