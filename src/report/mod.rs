//! The report: turns what the pipeline found into the contract's JSON shape.
//!
//! Ordering rules, for byte-identical output: captures in the time order of their first
//! packets (whatever the command-line order); exchanges by
//! request frame, then connection, then correlation id; diagnostics in packet order;
//! every map is a `BTreeMap`. Time comes only from the capture.

mod committed;
pub mod csv;
pub mod filter;
mod flagged;
pub mod html;
pub mod json;
pub mod model;
pub mod out;
pub mod sink;
pub mod spill;
pub mod text;
pub mod tree;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;

use crate::analysis::controllers::pieces;
use crate::analysis::{verdict, Analysis, Block, BrokerStats, Finding, Said};
use crate::capture::{link_type_name, CaptureInfo};
use crate::diag::Diagnostics;
use crate::kafka::allocate_producer_ids;
use crate::kafka::decoded::Undecoded;
use crate::kafka::reader::TaggedField;
use crate::kafka::tables::{ApiKey, ErrorCode};
use crate::pairing::{self, MessageMeta};
use model::UnixTime;

/// Everything the pipeline found, ready to be reported.
#[derive(Debug)]
pub struct Findings {
    pub captures: Vec<CaptureInfo>,
    pub analysis: Analysis,
    pub tcp_connections: u64,
    pub forgotten_connections: u64,
    pub kafka_connections: u64,
    pub not_kafka_connections: u64,
    pub encrypted_connections: u64,
    pub pairing: pairing::Pairing,
    pub diagnostics: Diagnostics,
    /// pidshark's own limits of this run, for what it gave up at them.
    pub budget: verdict::Budget,
}

/// `ip:port`, IPv6 as `[addr]:port`, as Rust's `SocketAddr` displays them; IPv4 (nearly
/// every address of a capture, two per exchange and block) without `fmt`'s machinery.
fn address(addr: SocketAddr) -> String {
    let mut out = Vec::with_capacity(21);
    push_address(&mut out, addr);
    String::from_utf8(out).unwrap_or_else(|_| addr.to_string())
}

/// [`address`], appended to `out`. IPv4 addresses' texts are kept per thread: an
/// exchange and its block name the same two, and a capture's clients come back with
/// each exchange of their connection.
pub(crate) fn push_address(out: &mut Vec<u8>, addr: SocketAddr) {
    thread_local! {
        static KEPT: RefCell<AddressTexts> = RefCell::new(AddressTexts::default());
    }
    let SocketAddr::V4(v4) = addr else {
        // into a Vec, writing cannot fail
        let _ = std::io::Write::write_fmt(out, format_args!("{addr}"));
        return;
    };
    let kept = KEPT.with(|kept| {
        let mut kept = kept.try_borrow_mut().ok()?;
        kept.text(v4)?.push_onto(out);
        Some(())
    });
    if kept.is_none() {
        address_v4(v4).push_onto(out);
    }
}

/// An IPv4 address and port as text, put together on the stack: one length check, not
/// one per byte.
fn address_v4(v4: std::net::SocketAddrV4) -> ShortText<21> {
    let mut text = ShortText::<21>::default(); // 255.255.255.255:65535
    let [a, b, c, d] = v4.ip().octets();
    text.octet(a);
    for octet in [b, c, d] {
        text.push(b'.');
        text.octet(octet);
    }
    text.push(b':');
    text.extend(itoa::Buffer::new().format(v4.port()).as_bytes());
    text
}

/// Addresses' texts, each in the slot its hash picks: one made replaces the one there.
/// A connection's client meets few others between two of its exchanges, where a list of
/// the last few written was outrun by every capture with more connections than it held.
struct AddressTexts {
    /// The address and port packed, with bit 48 set (0: an empty slot), and its text.
    slots: Box<[(u64, ShortText<21>)]>,
}

/// 128 KiB a thread that writes addresses: room for the clients of thousands of open
/// connections (control, 200 k packets: 4,709 texts made for 150,000 written; 26,618
/// with 256 slots).
const ADDRESS_SLOTS: usize = 4096;

impl Default for AddressTexts {
    fn default() -> Self {
        Self {
            slots: vec![(0, ShortText::default()); ADDRESS_SLOTS].into_boxed_slice(),
        }
    }
}

impl AddressTexts {
    fn text(&mut self, v4: std::net::SocketAddrV4) -> Option<&ShortText<21>> {
        let key = 1 << 48 | u64::from(v4.ip().to_bits()) << 16 | u64::from(v4.port());
        // Fibonacci hashing: the product's top bits mix every bit of the key.
        let bits = ADDRESS_SLOTS.trailing_zeros();
        let at = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (u64::BITS - bits)) as usize;
        let (kept, text) = self.slots.get_mut(at)?;
        if *kept != key {
            *kept = key;
            *text = address_v4(v4);
        }
        Some(text)
    }
}

/// At most `N` bytes of text; what would go past them is left out (callers size `N`
/// for the longest text they make).
#[derive(Clone, Copy)]
struct ShortText<const N: usize> {
    text: [u8; N],
    len: usize,
}

impl<const N: usize> Default for ShortText<N> {
    fn default() -> Self {
        Self {
            text: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> ShortText<N> {
    fn push(&mut self, byte: u8) {
        if let Some(slot) = self.text.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        let end = self.len.saturating_add(bytes.len());
        if let Some(room) = self.text.get_mut(self.len..end) {
            room.copy_from_slice(bytes);
            self.len = end;
        }
    }

    /// An address's byte in decimal.
    fn octet(&mut self, octet: u8) {
        if octet >= 100 {
            self.push(b'0' + octet / 100);
        }
        if octet >= 10 {
            self.push(b'0' + octet / 10 % 10);
        }
        self.push(b'0' + octet % 10);
    }

    /// Appends the text to `out`: all `N` bytes copied as one constant-sized move, then
    /// the unused ones cut, rather than a copy of a length known only when it runs.
    fn push_onto(&self, out: &mut Vec<u8>) {
        let end = out.len() + self.len.min(N);
        out.extend_from_slice(&self.text);
        out.truncate(end);
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn tagged(fields: &Option<Vec<TaggedField>>) -> Option<Vec<model::TaggedField>> {
    fields.as_ref().map(|fields| {
        fields
            .iter()
            .map(|f| model::TaggedField {
                tag: f.tag,
                data: hex(&f.data),
                data_len: f.cut.map(|(len, _)| len),
                data_crc32: f.cut.map(|(_, crc)| format!("{crc:08x}")),
            })
            .collect()
    })
}

/// One exchange in the report's form.
pub fn exchange(ex: &pairing::Exchange) -> model::Exchange {
    let req = &ex.request;
    let request = model::Request {
        frame: ex.request_meta.frame,
        capture_index: ex.request_meta.origin.map(|o| o.capture()),
        capture_frame: ex.request_meta.origin.map(|o| o.frame()),
        first_frame: ex.request_meta.first_frame,
        timestamp: ex.request_meta.timestamp.to_rfc3339(),
        unix_time: UnixTime(ex.request_meta.timestamp),
        size: ex.request_meta.size,
        api_key: ApiKey::ALLOCATE_PRODUCER_IDS.0,
        api_version: ex.api_version,
        client_id: req
            .header
            .client_id
            .as_ref()
            .map(|id| id.as_deref().map(str::to_owned)),
        header_tagged_fields: tagged(&req.header.tagged_fields),
        broker_id: req.broker_id,
        broker_epoch: req.broker_epoch,
        tagged_fields: tagged(&req.tagged_fields),
        bytes_not_captured: req.bytes_not_captured,
        decode_error: req.problem.as_ref().map(ToString::to_string),
        raw: req.raw.clone(),
    };
    model::Exchange {
        connection: ex.endpoints.connection,
        client: address(ex.endpoints.client),
        server: address(ex.endpoints.server),
        correlation_id: ex.correlation_id,
        status: ex.outcome.status(),
        request,
        response: ex
            .outcome
            .response()
            .map(|(meta, resp)| response(meta, resp)),
        latency_us: ex.latency_us(),
    }
}

fn response(meta: &MessageMeta, resp: &allocate_producer_ids::Response) -> model::Response {
    model::Response {
        frame: meta.frame,
        capture_index: meta.origin.map(|o| o.capture()),
        capture_frame: meta.origin.map(|o| o.frame()),
        first_frame: meta.first_frame,
        timestamp: meta.timestamp.to_rfc3339(),
        unix_time: UnixTime(meta.timestamp),
        size: meta.size,
        header_tagged_fields: tagged(&resp.header.tagged_fields),
        throttle_time_ms: resp.throttle_time_ms,
        error_code: resp.error_code.map(|code| code.0),
        error: resp.error_code.map(ErrorCode::name),
        producer_id_start: resp.producer_id_start,
        producer_id_len: resp.producer_id_len,
        tagged_fields: tagged(&resp.tagged_fields),
        bytes_not_captured: resp.bytes_not_captured,
        decode_error: resp.problem.as_ref().map(ToString::to_string),
        raw: resp.raw.clone(),
    }
}

/// One exchange that may grant a producer id (InitProducerId, EndTxn) in the report's
/// form, with what the analysis placed.
pub fn producer_id_entry(
    granting: &pairing::Granting,
    placed: &crate::analysis::Placed,
) -> model::ProducerIdEntry {
    match granting {
        pairing::Granting::InitProducerId(px) => {
            let req = &px.request;
            let resp = px.outcome.response().map(|(_, r)| r);
            model::ProducerIdEntry {
                transaction_timeout_ms: req.transaction_timeout_ms,
                requested_producer_id: req.producer_id,
                requested_producer_epoch: req.producer_epoch,
                ongoing_txn_producer_id: resp.and_then(|r| r.ongoing_txn_producer_id),
                ongoing_txn_producer_epoch: resp.and_then(|r| r.ongoing_txn_producer_epoch),
                ..grant_entry(px, placed)
            }
        }
        pairing::Granting::EndTxn(ex) => model::ProducerIdEntry {
            requested_producer_id: ex.request.producer_id,
            requested_producer_epoch: ex.request.producer_epoch,
            committed: ex.request.committed,
            ..grant_entry(ex, placed)
        },
    }
}

/// The fields of a producer-id entry every granting API has; the others absent.
fn grant_entry<A: pairing::GrantsProducerIds>(
    ex: &pairing::ApiExchange<A>,
    placed: &crate::analysis::Placed,
) -> model::ProducerIdEntry {
    let resp = ex.outcome.response();
    let (error_code, producer_id, producer_epoch) =
        resp.map_or((None, None, None), |(_, r)| A::granted(r));
    let decode_error = (ex.request.problem())
        .or_else(|| resp.and_then(|(_, r)| r.problem()))
        .map(ToString::to_string);
    let owned = |s: Option<Option<&str>>| s.map(|s| s.map(str::to_owned));
    model::ProducerIdEntry {
        api: A::GRANTED_BY,
        connection: ex.endpoints.connection,
        client: address(ex.endpoints.client),
        server: address(ex.endpoints.server),
        correlation_id: ex.correlation_id,
        api_version: ex.api_version,
        status: ex.outcome.status(),
        broker_id: placed.broker.map(|(id, _)| id),
        broker_source: placed.broker.map(|(_, source)| source),
        client_id: owned(A::client_id(&ex.request)),
        transactional_id: owned(A::transactional_id(&ex.request)),
        transaction_timeout_ms: None,
        requested_producer_id: None,
        requested_producer_epoch: None,
        committed: None,
        error_code: error_code.map(|c| c.0),
        error: error_code.map(ErrorCode::name),
        producer_id,
        producer_epoch,
        ongoing_txn_producer_id: None,
        ongoing_txn_producer_epoch: None,
        placement: placed.placement.map(|p| p.name()),
        placement_reason: placed.reason.clone(),
        block: placed
            .placement
            .and_then(|p| p.block())
            .map(|b| model::BlockRef {
                start: b.start,
                end: b.end,
                broker_id: b.broker_id,
                response_frame: b.response_frame,
            }),
        duplicate_of_frame: placed.duplicate_of,
        request_frame: ex.request_meta.frame,
        request_timestamp: ex.request_meta.timestamp.to_rfc3339(),
        request_unix_time: UnixTime(ex.request_meta.timestamp),
        response_frame: resp.map(|(meta, _)| meta.frame),
        response_timestamp: resp.map(|(meta, _)| meta.timestamp.to_rfc3339()),
        unix_time: resp.map(|(meta, _)| UnixTime(meta.timestamp)),
        latency_us: ex.latency_us(),
        decode_error,
    }
}

/// An address known to be a broker's, in the report's form.
fn broker_address(a: &crate::analysis::BrokerAddress) -> Option<model::BrokerAddress> {
    let claim = a.claim.as_ref().or(a.first.as_ref())?;
    Some(model::BrokerAddress {
        address: address(a.address),
        broker_id: a.claim.map(|c| c.broker_id),
        source: claim.source,
        frame: match claim.said {
            Said::Message { frame, .. } => Some(frame),
            Said::Log { .. } => None,
        },
        connection: match claim.said {
            Said::Message { connection, .. } => Some(connection),
            Said::Log { .. } => None,
        },
        metadata_log_offset: match claim.said {
            Said::Log { offset } => Some(offset),
            Said::Message { .. } => None,
        },
        listener: a.listener.clone(),
        conflicting_broker_ids: a.conflicting.clone(),
    })
}

/// A leader's span in the report's form.
fn controller_span(l: &crate::analysis::Leadership) -> model::ControllerSpan {
    model::ControllerSpan {
        leader_id: l.leader_id,
        epoch: l.epoch,
        from_frame: l.from.frame,
        from_timestamp: l.from.timestamp.to_rfc3339(),
        from_unix_time: UnixTime(l.from.timestamp),
        to_frame: l.to.map(|m| m.frame),
        to_timestamp: l.to.map(|m| m.timestamp.to_rfc3339()),
        to_unix_time: l.to.map(|m| UnixTime(m.timestamp)),
        how: l.how,
        led_from_frame: l.proven.map(|p| p.first.0.frame),
        led_from_timestamp: l.proven.map(|p| p.first.0.timestamp.to_rfc3339()),
        led_from_unix_time: l.proven.map(|p| UnixTime(p.first.0.timestamp)),
        led_to_frame: l.proven.map(|p| p.last.0.frame),
        led_to_timestamp: l.proven.map(|p| p.last.0.timestamp.to_rfc3339()),
        led_to_unix_time: l.proven.map(|p| UnixTime(p.last.0.timestamp)),
    }
}

/// The first and last packet over every capture file.
fn capture_range(
    captures: &[CaptureInfo],
) -> Option<(crate::timestamp::Timestamp, crate::timestamp::Timestamp)> {
    let first = captures.iter().filter_map(|c| c.first_timestamp).min()?;
    let last = captures.iter().filter_map(|c| c.last_timestamp).max()?;
    Some((first, last))
}

fn controller_piece(p: &pieces::Piece) -> model::ControllerPiece {
    use self::pieces::Source;
    let parts = |b: &pieces::Bound| match b.source {
        Source::Capture { frame, how } => (Some(frame), Some(how)),
        Source::MetadataLog { how } => (None, Some(how)),
        Source::CaptureStart | Source::CaptureEnd => (None, None),
    };
    let (from_frame, from_how) = parts(&p.from);
    let (to_frame, to_how) = parts(&p.to);
    model::ControllerPiece {
        state: if p.led.is_some() {
            pieces::PieceState::Led
        } else {
            pieces::PieceState::Unknown
        },
        leader_id: p.led.and_then(|l| l.controller_id),
        leader_address: p.led.and_then(|l| l.address).map(|a| a.to_string()),
        epoch: p.led.and_then(|l| l.epoch),
        from_timestamp: p.from.at.to_rfc3339(),
        from_unix_time: UnixTime(p.from.at),
        from_source: p.from.source.name(),
        from_frame,
        from_how,
        to_timestamp: p.to.at.to_rfc3339(),
        to_unix_time: UnixTime(p.to.at),
        to_source: p.to.source.name(),
        to_frame,
        to_how,
    }
}

/// The verdict in the report's form.
pub fn verdict(v: &verdict::Verdict) -> model::Verdict {
    model::Verdict {
        code: v.code,
        grade: v.code.grade(),
        headline: v.headline.clone(),
        facts: v.facts.iter().cloned().collect(),
        limits: v
            .limits
            .iter()
            .map(|l| model::VerdictLimit {
                kind: l.kind,
                count: l.count,
                damage: l.damage,
                own: l.own,
                text: l.text.clone(),
                advice: l.advice,
            })
            .collect(),
        cost: v
            .cost
            .iter()
            .map(|c| model::VerdictCost {
                kind: c.kind,
                count: c.count,
                text: c.text.clone(),
            })
            .collect(),
    }
}

/// One block in the report's form.
pub fn pid_block(b: &Block) -> model::PidBlock {
    model::PidBlock {
        start: b.start,
        end: b.end,
        len: b.len,
        broker_id: b.broker_id,
        broker_epoch: b.broker_epoch,
        connection: b.connection,
        client: address(b.client),
        server: address(b.server),
        correlation_id: b.correlation_id,
        request_frame: b.request_frame,
        response_frame: b.response_frame,
        timestamp: b.timestamp.to_rfc3339(),
        unix_time: UnixTime(b.timestamp),
    }
}

/// Counts by error code as the report keys them: by name.
fn by_name(counts: &BTreeMap<ErrorCode, u64>) -> BTreeMap<String, u64> {
    let mut named = BTreeMap::new();
    for (code, n) in counts {
        *named.entry(code.name()).or_default() += n;
    }
    named
}

/// Builds the report.
pub fn build(mut findings: Findings) -> model::Report {
    findings.pairing.sort_exchanges();
    let exchanges: Vec<model::Exchange> = (findings.pairing.exchanges.iter())
        .filter_map(|paired| match paired {
            pairing::PairedExchange::Allocate(ex) => Some(exchange(ex)),
            pairing::PairedExchange::InitProducerId(_) | pairing::PairedExchange::EndTxn(_) => None,
        })
        .collect();
    let summary = summary(&findings);
    let analysis = &findings.analysis;
    let timeline = pieces::pieces(
        &analysis.controllers,
        analysis.metadata_log.as_ref().map(|l| &l.log),
        capture_range(&findings.captures),
    );
    let verdict = verdict(&verdict::judge(&verdict::Evidence {
        packets: summary.packets,
        totals: &analysis.totals,
        brokers: &analysis.brokers,
        findings: &analysis.findings,
        diagnostics: &findings.diagnostics,
        captures: &findings.captures,
        not_kafka_connections: findings.not_kafka_connections,
        encrypted_connections: findings.encrypted_connections,
        log: analysis.metadata_log.as_ref(),
        coverage: &analysis.coverage,
        budget: findings.budget,
        producers: &analysis.producers,
        controllers: &timeline,
        unmatched_responses: findings.pairing.unmatched_responses,
        unmatched_like_blocks: findings.pairing.unmatched_like_blocks,
        writes_producers: &analysis.writes_producers.0,
    }));
    let producer_id_blocks = model::ProducerIdBlocks {
        usual_len: analysis.usual_len,
        slow_threshold_us: analysis.slow_threshold_us,
        blocks: analysis.blocks.iter().map(pid_block).collect(),
        findings: analysis.findings.iter().map(pid_finding).collect(),
    };
    let captures = findings.captures.iter().map(capture).collect();
    model::Report {
        format_version: model::FORMAT_VERSION,
        tool: model::Tool {
            name: "pidshark",
            version: env!("CARGO_PKG_VERSION"),
        },
        filters: None,
        verdict,
        captures,
        summary,
        exchanges,
        producer_id_blocks,
        producer_ids: model::ProducerIds {
            summary: analysis.producers.clone(),
            end_txn: (analysis.end_txn.exchanges > 0).then(|| analysis.end_txn.clone()),
            entries: Vec::new(),
        },
        brokers_by_address: analysis
            .broker_addresses
            .iter()
            .filter_map(broker_address)
            .collect(),
        controllers: analysis
            .controllers
            .spans
            .iter()
            .map(controller_span)
            .collect(),
        controller_timeline: timeline.iter().map(controller_piece).collect(),
        metadata_log: analysis.metadata_log.as_ref().map(committed::section),
        writes: writes_section(
            &analysis.writes,
            &analysis.writes_listed,
            &analysis.writes_producers,
        ),
        diagnostics: findings
            .diagnostics
            .into_sorted()
            .into_iter()
            .map(diagnostic)
            .collect(),
    }
}

/// The report's `summary`: what was read, every Kafka API by name, the exchanges' counts,
/// errors and latencies, and a table per broker.
fn summary(findings: &Findings) -> model::Summary {
    let mut api_keys = BTreeMap::new();
    let (mut kafka_requests, mut kafka_responses) = (0, findings.pairing.unmatched_responses);
    for (key, counts) in &findings.pairing.api_counts {
        kafka_requests += counts.requests;
        kafka_responses += counts.responses;
        api_keys.insert(
            key.name(),
            model::ApiKeyCount {
                api_key: key.0,
                requests: counts.requests,
                responses: counts.responses,
            },
        );
    }
    let totals = &findings.analysis.totals;
    model::Summary {
        packets: findings.captures.iter().map(|c| c.packets).sum(),
        duplicate_packets: findings.captures.iter().map(|c| c.duplicate_packets).sum(),
        tcp_connections: findings.tcp_connections,
        forgotten_connections: findings.forgotten_connections,
        kafka_connections: findings.kafka_connections,
        not_kafka_connections: findings.not_kafka_connections,
        encrypted_connections: findings.encrypted_connections,
        kafka_requests,
        kafka_responses,
        api_keys,
        exchanges: model::ExchangeCounts {
            total: totals.total,
            complete: totals.statuses.complete,
            unanswered: totals.statuses.unanswered,
            response_unknown: totals.statuses.response_unknown,
        },
        unmatched_responses: findings.pairing.unmatched_responses,
        unmatched_like_blocks: Some(findings.pairing.unmatched_like_blocks).filter(|&n| n > 0),
        error_codes: by_name(&totals.error_codes),
        latency_us: totals.latencies.summary().map(Into::into),
        diagnostics: findings.diagnostics.counts(),
        diagnostics_by_severity: findings.diagnostics.by_severity(),
        brokers: findings
            .analysis
            .brokers
            .iter()
            .map(|(id, b)| (*id, broker(b)))
            .collect(),
    }
}

/// A broker's row of `summary.brokers`.
fn broker(b: &BrokerStats) -> model::Broker {
    model::Broker {
        requests: b.requests,
        complete: b.statuses.complete,
        unanswered: b.statuses.unanswered,
        response_unknown: b.statuses.response_unknown,
        errors: by_name(&b.errors),
        ids_granted: b.ids_granted,
        epochs_seen: b.epochs_seen.clone(),
        epochs_unlisted_from_frame: b.epochs_unlisted_from_frame,
        errors_uncounted: (b.errors_uncounted > 0).then_some(b.errors_uncounted),
        errors_unlisted_from_frame: b.errors_unlisted_from_frame,
        latency_us: b
            .latency_p50_us
            .zip(b.latency_p99_us)
            .map(|(p50, p99)| model::BrokerLatency {
                p50,
                p99,
                percentiles_exact: (!b.latency_exact).then_some(false),
            }),
    }
}

fn pid_finding(f: &Finding) -> model::PidFinding {
    model::PidFinding {
        severity: f.kind.severity(),
        kind: f.kind,
        broker_id: f.broker_id,
        connection: f.connection,
        frames: f.frames.clone(),
        timestamp: f.at.to_rfc3339(),
        unix_time: UnixTime(f.at),
        facts: f.facts.iter().cloned().collect(),
        message: f.message.clone(),
        ids: f.ids,
        fault: f.fault,
        detail: f.detail.clone(),
    }
}

fn capture(c: &CaptureInfo) -> model::Capture {
    model::Capture {
        path: c.path.clone(),
        format: c.format,
        link_types: c.link_types.iter().map(|lt| link_type_name(*lt)).collect(),
        packets: c.packets,
        bytes: c.bytes,
        first_timestamp: c.first_timestamp.map(|t| t.to_rfc3339()),
        last_timestamp: c.last_timestamp.map(|t| t.to_rfc3339()),
        first_unix_time: c.first_timestamp.map(UnixTime),
        last_unix_time: c.last_timestamp.map(UnixTime),
        packets_cut: c.packets_cut,
        cut_len: (c.packets_cut > 0).then_some(c.cut_len),
        duplicate_packets: c.duplicate_packets,
    }
}

fn diagnostic(d: crate::diag::Diagnostic) -> model::Diagnostic {
    model::Diagnostic {
        severity: d.severity,
        kind: d.kind,
        connection: d.connection,
        frame: d.frame,
        in_capture: d.origin.map(Into::into),
        timestamp: d.timestamp.map(|t| t.to_rfc3339()),
        unix_time: d.timestamp.map(UnixTime),
        facts: d.facts.into_iter().collect(),
        message: d.message,
    }
}

/// The capture's first and last packet times over every file.
pub fn time_span(captures: &[model::Capture]) -> (Option<String>, Option<String>) {
    // RFC 3339 in UTC compares as text once the fraction has its 9 digits
    let key = |t: &String| {
        let (whole, fraction) = t.trim_end_matches('Z').split_once('.').unwrap_or((t, ""));
        format!("{whole}.{fraction:0<9}")
    };
    let first = captures
        .iter()
        .filter_map(|c| c.first_timestamp.as_ref())
        .min_by_key(|t| key(t))
        .cloned();
    let last = captures
        .iter()
        .filter_map(|c| c.last_timestamp.as_ref())
        .max_by_key(|t| key(t))
        .cloned();
    (first, last)
}

/// With several files: the mergecap command whose output has the report's frame numbers.
pub fn mergecap_command(captures: &[model::Capture]) -> Option<String> {
    if captures.len() < 2 {
        return None;
    }
    let quote = |path: &str| {
        if path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
        {
            path.to_owned()
        } else {
            format!("'{}'", path.replace('\'', "'\\''"))
        }
    };
    let files: Vec<String> = captures.iter().map(|c| quote(&c.path)).collect();
    Some(format!("mergecap -w merged.pcapng {}", files.join(" ")))
}

/// The report's `writes`, when the capture held Produce requests.
fn writes_section(
    totals: &crate::analysis::writes::WriteTotals,
    (listed, not_listed): &(Vec<crate::analysis::writes::ListedBatch>, u64),
    (producers, producers_not_listed): &(Vec<crate::analysis::writes::ProducerWrites>, u64),
) -> Option<model::Writes> {
    (totals.requests > 0).then(|| model::Writes {
        requests: totals.requests,
        requests_not_read: totals.requests_not_read,
        batches: totals.batches,
        idempotent_batches: totals.idempotent_batches,
        acknowledged: totals.acknowledged,
        rejected: totals.rejected,
        unanswered: totals.unanswered,
        response_unknown: totals.response_unknown,
        retries_deduplicated: totals.retries_deduplicated,
        not_appended: totals.not_appended,
        producers: totals.producers,
        errors: totals
            .errors
            .iter()
            .map(|(code, n)| (code.name(), *n))
            .collect(),
        of_interest: listed.iter().map(write_batch).collect(),
        of_interest_not_listed: *not_listed,
        producers_of_interest: producers.clone(),
        producers_of_interest_not_listed: *producers_not_listed,
    })
}

/// A listed batch in the report's form.
fn write_batch(b: &crate::analysis::writes::ListedBatch) -> model::WriteBatch {
    model::WriteBatch {
        connection: b.connection,
        client: b.client.to_string(),
        server: b.server.to_string(),
        client_id: b.client_id.clone(),
        transactional_id: b.transactional_id.clone(),
        correlation_id: b.correlation_id,
        api_version: b.api_version,
        request_frame: b.request_frame,
        response_frame: b.response_frame,
        timestamp: b.timestamp.to_rfc3339(),
        unix_time: UnixTime(b.timestamp),
        topic: b.topic.clone(),
        partition: b.partition,
        producer_id: b.batch.producer_id,
        producer_epoch: b.batch.producer_epoch,
        first_sequence: b.batch.base_sequence,
        last_sequence: b.batch.last_sequence(),
        records: b.batch.records_count,
        crc: b.batch.crc,
        outcome: b.judged.outcome,
        offset: b.judged.offset,
        error: b.judged.error.map(ErrorCode::name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_hex() {
        assert_eq!(address("[::1]:9093".parse().unwrap()), "[::1]:9093");
        assert_eq!(address("127.0.0.1:9093".parse().unwrap()), "127.0.0.1:9093");
        for text in ["0.0.0.0:0", "255.255.255.255:65535", "10.0.200.3:40001"] {
            assert_eq!(address(text.parse().unwrap()), text);
        }
        assert_eq!(hex(&[0x00, 0xab, 0x0f]), "00ab0f");
    }

    /// Addresses met again, and more of them than there are slots to keep them, all come
    /// out as `Display` writes them: a kept text is never another address's.
    #[test]
    fn kept_address_texts_are_their_own() {
        let addresses: Vec<SocketAddr> = (0..ADDRESS_SLOTS as u16 * 3 + 11)
            .map(|i| SocketAddr::from(([10, 0, (i % 3) as u8, 255], 9000 + i % 1013)))
            .chain(["255.255.255.255:65535".parse().unwrap()])
            .collect();
        for round in 0..3 {
            for (i, addr) in addresses.iter().enumerate() {
                let addr = addresses
                    .get((i * 7 + round) % addresses.len())
                    .unwrap_or(addr);
                let mut out = b"x".to_vec();
                push_address(&mut out, *addr);
                assert_eq!(out, format!("x{addr}").into_bytes());
            }
        }
    }
}
