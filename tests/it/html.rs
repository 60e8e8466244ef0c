//! `--format html`: the page's structure on the analysis fixtures, checked against their
//! truth files (a bar per block planted, an outline per overlap and regression, a row per
//! finding), and that it is self-contained.

use serde_json::Value;

use crate::common::{pidshark, root};

fn page(pcap: &str) -> String {
    page_with(pcap, &[])
}

/// The page of `pcap` with more arguments.
fn page_with(pcap: &str, args: &[&str]) -> String {
    let out = pidshark()
        .args([pcap, "--format", "html"])
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

pub fn truth(name: &str) -> Value {
    let path = root().join(format!("fixtures/analysis/{name}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The analysis fixtures, each with a truth file of what it planted.
pub const FIXTURES: [&str; 6] = [
    "healthy",
    "overlap",
    "failover-regression",
    "gaps-irregular",
    "error-streak",
    "slow",
];

/// The exchanges the bars of one chart count (their titles start with the count).
fn binned_in(html: &str, id: &str) -> usize {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("{id}"));
    let chart = &html[start..start + html[start..].find("</figure>").unwrap()];
    chart
        .split("<rect class=\"bin\"")
        .skip(1)
        .map(|b| {
            let title = b.split("<title>").nth(1).unwrap();
            title.split(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .sum()
}

/// What the page must draw for a fixture, from its truth file.
#[derive(Debug, PartialEq, Eq)]
pub struct Expected {
    pub blocks: usize,
    pub overlaps: usize,
    pub regressions: usize,
    pub gaps: usize,
    /// Error responses and requests without an answer: marks on the time axis.
    pub failed: usize,
    pub findings: usize,
    /// Complete exchanges: a latency dot each.
    pub complete: usize,
}

pub fn expected(name: &str) -> Expected {
    let truth = truth(name);
    let findings = truth["expected_findings"].as_array().unwrap();
    let planted = |kind: &str| findings.iter().filter(|f| f["kind"] == kind).count();
    let exchanges = truth["exchanges"].as_array().unwrap();
    Expected {
        blocks: truth["blocks"].as_array().unwrap().len(),
        overlaps: planted("pid_block_overlap"),
        regressions: planted("pid_block_regression"),
        gaps: planted("pid_block_gap"),
        failed: exchanges
            .iter()
            .filter(|e| e["response"].is_null() || e["response"]["error_code"] != 0)
            .count(),
        findings: findings.len(),
        complete: exchanges
            .iter()
            .filter(|e| !e["response"].is_null())
            .count(),
    }
}

#[test]
fn the_page_draws_each_planted_block_and_fault_and_lists_each_finding() {
    for name in FIXTURES {
        let html = page(&format!("fixtures/analysis/{name}.pcap"));
        let count = |needle: &str| html.matches(needle).count();
        let drawn = Expected {
            blocks: count("<rect class=\"block\""),
            overlaps: count("<rect class=\"overlap\""),
            regressions: count("<rect class=\"regression\""),
            gaps: count("<rect class=\"gap\""),
            failed: count("<use class=\"failed\""),
            findings: count("<tr class=\"finding "),
            complete: count("<circle class=\"latency\""),
        };
        let expected = expected(name);
        assert_eq!(drawn, expected, "{name}");
        // worth a look: the failed exchanges, those answered NONE without a block, and
        // the slow ones
        let truth_of = truth(name);
        let slow = truth_of["expected_findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "pid_slow_response")
            .count();
        let answered_none = truth_of["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["response"]["error_code"] == 0)
            .count();
        let no_block = answered_none - expected.blocks;
        assert_eq!(
            count("<tr class=\"exchange\""),
            expected.failed + no_block + slow,
            "{name}: exchanges worth a look"
        );
        let binned = binned_in(&html, "latency-distribution");
        assert_eq!(
            binned, expected.complete,
            "{name}: the bins count every latency"
        );
        // a distribution per broker, when there are several, counting its own
        let truth = truth(name);
        let mut per_broker = std::collections::BTreeMap::<i64, usize>::new();
        for e in truth["exchanges"].as_array().unwrap() {
            if !e["response"].is_null() {
                *per_broker
                    .entry(e["request"]["broker_id"].as_i64().unwrap())
                    .or_default() += 1;
            }
        }
        let multiples = html.matches("<svg id=\"latency-broker-").count();
        assert_eq!(
            multiples,
            if per_broker.len() > 1 {
                per_broker.len()
            } else {
                0
            }
        );
        for (broker, complete) in per_broker.iter().filter(|_| multiples > 0) {
            let id = format!("latency-broker-{broker}");
            assert_eq!(binned_in(&html, &id), *complete, "{name}: broker {broker}");
        }
        // p50, p90 and p99 of the whole, p50 and p99 of each broker
        assert_eq!(
            count("<line class=\"percentile\""),
            3 + 2 * multiples,
            "{name}: p50, p90, p99"
        );
        // every mark says what it is
        assert_eq!(count("<title"), count("</title>"));
        // self-contained: no address but SVG's namespace, no script
        let svgs = count("<svg ");
        assert_eq!(
            count("xmlns=\"http://www.w3.org/2000/svg\""),
            svgs,
            "{name}"
        );
        assert_eq!(count("http"), svgs, "{name}: no URL but the SVG namespace");
        assert!(!html.contains("<script"), "{name}");
        assert!(!html.contains("<link"), "{name}");
    }
}

#[test]
fn the_verdict_and_filters_come_first() {
    let html = page("fixtures/analysis/overlap.pcap");
    let verdict = html.find("id=\"verdict\"").unwrap();
    let chart = html.find("id=\"timeline\"").unwrap();
    let brokers = html.find("id=\"brokers\"").unwrap();
    let findings = html.find("id=\"findings\"").unwrap();
    assert!(verdict < chart && chart < brokers && brokers < findings);
    assert!(html.contains("DUPLICATE PRODUCER IDS: ids 5500..=5999"));
    assert!(html.contains("<code class=\"f\">frame.number in {19, 22}</code>"));
}

/// What the `<rect>`s of `class` count: each title reads `broker B: N ...`.
fn counted_by(html: &str, class: &str) -> usize {
    html.split(&format!("<rect class=\"{class}\""))
        .skip(1)
        .map(|b| {
            let title = b.split("<title>").nth(1).unwrap();
            let count = title.split(": ").nth(1).unwrap().split(' ').next().unwrap();
            count.parse::<usize>().unwrap()
        })
        .sum()
}

/// Past 4,000 blocks the timeline draws columns of time per broker, which count every
/// block, and says so; the page stays small.
#[test]
fn a_big_capture_s_timeline_is_binned_and_counts_every_block() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("big.pcap");
    crate::common::apid_capture(&pcap, 5, 1200);
    let html = page(pcap.to_str().unwrap());
    assert!(html.len() < 3 << 20, "{} bytes", html.len());
    assert_eq!(html.matches("<rect class=\"block\"").count(), 0);
    let bins: Vec<&str> = html.split("<rect class=\"block-bin\"").skip(1).collect();
    assert!(
        !bins.is_empty() && bins.len() <= 5 * 240,
        "{} bins",
        bins.len()
    );
    assert_eq!(counted_by(&html, "block-bin"), 6000);
    assert!(html.contains("The 6000 blocks are more than 4000, so each bar is one broker"));
    // the latencies too: in columns of time per broker, counting every exchange
    assert_eq!(html.matches("<circle class=\"latency\"").count(), 0);
    assert_eq!(counted_by(&html, "latency-bin"), 6000);
    assert_eq!(html.matches("<svg id=\"latency-broker-").count(), 5);
    // every broker's bars in its own colour, and the key names all five
    for broker in 0..5 {
        assert!(
            html.contains(&format!("<title>broker {broker}: ")),
            "{broker}"
        );
        assert!(
            html.contains(&format!("</i>broker {broker}</span>")),
            "{broker}"
        );
    }
}

/// The colours of the `<rect>`s of `class`.
fn fills(html: &str, class: &str) -> std::collections::BTreeSet<String> {
    html.split(&format!("<rect class=\"{class}\""))
        .skip(1)
        .map(|r| {
            r.split("fill=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// A thousand brokers: the charts tell apart the 11 with the most trouble and draw the
/// others in one grey, still counting every block; the broker table lists the 200 with
/// the most trouble and says of how many; the page stays far under 2 MB.
#[test]
fn a_thousand_brokers_make_a_dozen_series_and_a_bounded_table() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("brokers.pcap");
    crate::common::apid_capture(&pcap, 1000, 6);
    let html = page(pcap.to_str().unwrap());
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
    assert_eq!(counted_by(&html, "block-bin"), 6000);
    assert_eq!(counted_by(&html, "latency-bin"), 6000);
    assert!(!html.contains("not drawn"));
    assert_eq!(
        fills(&html, "block-bin").len(),
        12,
        "11 colours and the grey"
    );
    assert!(html.contains("<title>other 989 brokers: "));
    // every broker asked 6 times without trouble: the lowest ids are named
    let key = &html[html.find("<p class=\"key\">").unwrap()..];
    let key = &key[..key.find("</p>").unwrap()];
    for broker in 0..11 {
        assert!(
            key.contains(&format!("</i>broker {broker}</span>")),
            "{key}"
        );
    }
    assert!(key.contains("</i>other 989 brokers</span>"), "{key}");
    // 12 series, 3 marks, and the controller lane's two (proven leading, unknown)
    assert_eq!(key.matches("<span>").count(), 12 + 3 + 2, "{key}");
    // a distribution per named broker and one for the others, together counting all
    let multiples: usize = (0..11)
        .map(|b| binned_in(&html, &format!("latency-broker-{b}")))
        .sum::<usize>()
        + binned_in(&html, "latency-brokers-other");
    assert_eq!(multiples, 6000);
    assert_eq!(html.matches("<svg id=\"latency-broker").count(), 12);
    // the table: 200 rows, said so
    assert_eq!(html.matches("<tr class=\"broker\"").count(), 200);
    assert!(html.contains("First 200 of 1000 brokers, the most trouble first"));
}

/// The page's structure, whatever its whitespace, attribute order or coordinates: each
/// element that carries meaning (headings, figures, the marks of the charts, tables and
/// their rows) on a line, indented by depth, with its id and class and its own text
/// (for a mark, its `<title>`; for a row, its cells).
pub fn structure(html: &str) -> String {
    let doc = scraper::Html::parse_document(html);
    let mut out = String::new();
    outline(doc.root_element(), 0, &mut out);
    out
}

fn outline(el: scraper::ElementRef<'_>, depth: usize, out: &mut String) {
    let name = el.value().name();
    let words = |e: scraper::ElementRef<'_>| e.text().collect::<Vec<_>>().join(" ");
    let tidy = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = matches!(
        name,
        "h1" | "h2" | "h3" | "p" | "figure" | "figcaption" | "svg" | "table" | "tr"
    ) || (matches!(name, "rect" | "path" | "use" | "circle" | "line" | "g")
        && el.value().attr("class").is_some_and(|c| c != "axes"));
    let mut depth = depth;
    if shown {
        let mut line = format!("{}{name}", "  ".repeat(depth));
        if let Some(id) = el.value().attr("id") {
            line += &format!("#{id}");
        }
        if let Some(class) = el.value().attr("class") {
            line += &format!(
                ".{}",
                class.split_whitespace().collect::<Vec<_>>().join(".")
            );
        }
        let text = match name {
            "tr" => el
                .children()
                .filter_map(scraper::ElementRef::wrap)
                .map(|cell| tidy(words(cell)))
                .collect::<Vec<_>>()
                .join(" | "),
            "svg" => el
                .children()
                .filter_map(scraper::ElementRef::wrap)
                .find(|child| child.value().name() == "title")
                .map(|title| tidy(words(title)))
                .unwrap_or_default(),
            "figure" | "table" => String::new(),
            _ => tidy(words(el)),
        };
        if !text.is_empty() {
            line += &format!(" {text}");
        }
        out.push_str(&line);
        out.push('\n');
        depth += 1;
        if !matches!(name, "svg" | "figure" | "table") {
            return; // its text is said; the marks inside an svg are not its own text
        }
    }
    for child in el.children().filter_map(scraper::ElementRef::wrap) {
        outline(child, depth, out);
    }
}

/// Goldens of each analysis fixture's page structure (`fixtures/analysis/*.html.txt`),
/// rewritten by `scripts/bless-golden` (which sets `PIDSHARK_BLESS`).
#[test]
fn page_structure_goldens_of_the_analysis_fixtures() {
    for name in FIXTURES {
        let html = page(&format!("fixtures/analysis/{name}.pcap"));
        let got = structure(&html);
        let path = root().join(format!("fixtures/analysis/{name}.html.txt"));
        if std::env::var_os("PIDSHARK_BLESS").is_some() {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (scripts/bless-golden writes it)", path.display()));
        assert_eq!(
            got, want,
            "{name}: the page's structure moved; bless after review"
        );
    }
}

/// The structure is the same whatever the page's whitespace.
#[test]
fn page_structure_ignores_whitespace() {
    let html = page("fixtures/analysis/overlap.pcap");
    let spaced = html.replace("><", ">\n  <").replace(' ', "  ");
    assert_eq!(structure(&spaced), structure(&html));
    assert!(structure(&html).contains("rect.overlap pid_block_overlap: ids 5500..=5999"));
}

/// A capture of `failed` exchanges answered at once with an error, then `healthy` ones
/// granting contiguous blocks, `slow` of them (the last) answered a second late.
fn worth_capture(path: &std::path::Path, failed: i32, healthy: i32, slow: i32) {
    use crate::common::{apid_request_body, apid_response_body, request, response};
    use crate::common::{Conn, PcapWriter};
    let mut w = PcapWriter::create(path);
    let mut conn = Conn::new("10.0.0.1:40000", "10.0.0.2:9093");
    let mut t: u64 = 1_700_000_000_000_000_000;
    w.set_time(t);
    conn.handshake(&mut w);
    for corr in 0..failed + healthy {
        t += 2_000_000_000;
        w.set_time(t);
        let req = request(67, 0, corr, true, &apid_request_body(1, 7));
        conn.send(&mut w, true, &req, 1400);
        let ok = corr >= failed;
        let late = corr >= failed + healthy - slow;
        w.set_time(t + if late { 1_000_000_000 } else { 1_000_000 });
        let body = match ok {
            // NOT_CONTROLLER
            false => apid_response_body(41, -1, 0),
            true => apid_response_body(0, i64::from(corr - failed) * 1000, 1000),
        };
        conn.send(&mut w, false, &response(corr, true, &body), 1400);
    }
    conn.close(&mut w);
    w.finish();
}

/// What `--format <format> --slow-ms 500` writes for `pcap`.
fn slow_ms_500(pcap: &std::path::Path, format: &str) -> String {
    let out = pidshark()
        .arg(pcap)
        .args(["--format", format, "--slow-ms", "500"])
        .assert()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// Text and HTML list the exchanges worth a look by the analysis's one rule, and count
/// the same: 55 errors and 5 slow ones are 60, of which HTML lists 50 and text 20.
#[test]
fn text_and_html_count_the_same_exchanges_worth_a_look() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("worth.pcap");
    worth_capture(&pcap, 55, 30, 5);
    let run = |format| slow_ms_500(&pcap, format);
    let html = run("html");
    assert!(
        html.contains("<p id=\"exchanges-listed\">50 of 60 exchanges worth a look"),
        "{html}"
    );
    // the errors come first in packet order and fill the rows: no slow one is listed
    assert_eq!(html.matches("<tr class=\"exchange\">").count(), 50);
    assert!(!html.contains("slow (above"));
    let text = run("text");
    assert!(text.contains("(first 20 of 60 worth a look;"), "{text}");
}

/// Slow exchanges past those HTML keeps as candidates are counted as a floor: with 1,100
/// slow ones it keeps 1,000 and says "at least"; text, which keeps every line, counts
/// them all.
#[test]
fn html_counts_slow_exchanges_past_its_candidates_as_a_floor() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("slow.pcap");
    worth_capture(&pcap, 0, 1100, 1100);
    let out = |format| slow_ms_500(&pcap, format);
    let html = out("html");
    assert!(
        html.contains("<p id=\"exchanges-listed\">50 of at least 1000 exchanges worth a look"),
        "{html}"
    );
    assert_eq!(html.matches("slow (above 500000 µs)").count(), 50);
    assert!(out("text").contains("(first 20 of 1100 worth a look;"));
}

/// More findings than the page lists: the table starts with the errors the verdict
/// names (it listed the first 500 in packet order, 500 `pid_retry` infos here, and left
/// the overlap out), and its heading gives the true count, not the listed one.
#[test]
fn the_findings_table_lists_errors_first_under_their_true_count() {
    use crate::common::{apid_request_body, apid_response_body, request, response, Conn};
    use crate::common::{report, PcapWriter};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("retries.pcap");
    let mut w = PcapWriter::create(&path);
    let mut one = Conn::new("10.0.0.1:40000", "10.0.0.9:9093");
    one.handshake(&mut w);
    for i in 0..600 {
        let req = request(67, 0, i, true, &apid_request_body(1, 5));
        let resp = response(i, true, &apid_response_body(41, -1, 0)); // NOT_CONTROLLER
        one.send(&mut w, true, &req, 1448);
        one.send(&mut w, false, &resp, 1448);
    }
    let req = request(67, 0, 600, true, &apid_request_body(1, 5));
    one.send(&mut w, true, &req, 1448);
    one.send(
        &mut w,
        false,
        &response(600, true, &apid_response_body(0, 0, 1000)),
        1448,
    );
    let mut two = Conn::new("10.0.0.2:40000", "10.0.0.9:9093");
    two.handshake(&mut w);
    two.send(
        &mut w,
        true,
        &request(67, 0, 1, true, &apid_request_body(2, 5)),
        1448,
    );
    two.send(
        &mut w,
        false,
        &response(1, true, &apid_response_body(0, 500, 1000)),
        1448,
    );
    w.finish();
    let path = path.to_str().unwrap();
    let json = report(&[path]);
    let listed = json["producer_id_blocks"]["findings"].as_array().unwrap();
    let total: u64 = listed
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect::<std::collections::BTreeSet<_>>()
        .iter()
        .map(|k| json["summary"]["diagnostics"][k].as_u64().unwrap())
        .sum();
    assert!(total > 500, "{total}");
    let html = page(path);
    assert!(
        html.contains(&format!("<h2>Findings ({total})</h2>")),
        "{total}"
    );
    let rows: Vec<&str> = html.split("<tr class=\"finding ").skip(1).collect();
    assert_eq!(rows.len(), 500);
    assert!(rows[0].starts_with("error"), "{}", rows[0]);
    assert!(html.contains(">pid_block_overlap<"));
}

/// Under a filter the page speaks of the exchanges shown: broker 3's of this capture
/// were all answered NONE, but others were answered NOT_CONTROLLER, and the page once
/// said every exchange was answered NONE.
#[test]
fn under_a_filter_no_exchange_worth_a_look_is_said_of_those_shown() {
    let path = root().join("fixtures/analysis/failover-regression.pcap");
    let html = page_with(path.to_str().unwrap(), &["--broker", "3"]);
    assert!(!html.contains("every exchange was answered NONE"));
    assert!(html.contains("None of the exchanges shown: each was answered NONE"));
}
