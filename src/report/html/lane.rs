//! The controller lane of the timeline: a band per span of `controllers` (who led the
//! KRaft quorum in which epoch) above the blocks, on their time axis, labelled with the
//! leader and epoch (cut to the band) and titled with its facts and how it is known.

use std::fmt::Write as _;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::esc;
use super::svg::pct;
use crate::report::model::ControllerSpan;

/// Spans drawn; the report lists every one.
pub const MAX_SPANS: usize = 1000;
/// The lane's height over the plot, its gap below included.
pub const HEIGHT: f64 = 28.0;
const BAND: f64 = 20.0;
/// Alternate fills, so that two spans side by side are told apart.
const FILLS: [&str; 2] = ["#dbe6f1", "#f1f5f9"];

/// A span's times: from, and to (`None`: to the end of the capture).
pub fn times(spans: &[ControllerSpan]) -> Vec<(f64, Option<f64>)> {
    spans
        .iter()
        .take(MAX_SPANS)
        .enumerate()
        .map(|(i, span)| {
            let from = span.from_unix_time.seconds();
            let next = spans
                .get(i + 1)
                .filter(|n| Some(n.from_frame) == span.to_frame)
                .map(|n| n.from_unix_time.seconds());
            let to = next.or_else(|| span.to_timestamp.as_deref().and_then(seconds));
            (from, to)
        })
        .collect()
}

/// Seconds since the epoch of a report's RFC 3339 time.
fn seconds(timestamp: &str) -> Option<f64> {
    let t = OffsetDateTime::parse(timestamp, &Rfc3339).ok()?;
    Some(t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
}

/// What a span's first message is, in words.
fn how(how: &str) -> &str {
    match how {
        "begin_quorum_epoch" => "a BeginQuorumEpoch request (the new leader's)",
        "end_quorum_epoch" => "an EndQuorumEpoch request (the leader resigning)",
        "begin_quorum_epoch_response" => "a BeginQuorumEpoch response (a voter's)",
        "end_quorum_epoch_response" => "an EndQuorumEpoch response (a voter's)",
        "vote_response" => "a Vote response (a voter's)",
        "allocate_producer_ids" => "an AllocateProducerIds answer",
        other => other,
    }
}

/// The lane from `top` pixels down, over `t0..t1` seconds across.
pub fn draw(s: &mut String, spans: &[ControllerSpan], (t0, t1): (f64, f64), top: f64) {
    let x = |t: f64| (t - t0) / (t1 - t0);
    let _ = writeln!(
        s,
        "<text x=\"-6\" y=\"{:.1}\" text-anchor=\"end\">controller</text>",
        top + BAND / 2.0 + 4.0
    );
    for (i, (span, (from, to))) in spans.iter().zip(times(spans)).enumerate() {
        let until = match (&span.to_frame, &span.to_timestamp) {
            (Some(frame), Some(time)) => format!("until frame {frame} ({time})"),
            _ => "to the end of the capture".to_owned(),
        };
        let title = format!(
            "controller {} led in epoch {} from frame {} ({}) {until}; known from {} in frame {}",
            span.leader_id,
            span.epoch,
            span.from_frame,
            span.from_timestamp,
            how(span.how),
            span.from_frame
        );
        let (a, b) = (x(from), x(to.unwrap_or(t1)).max(x(from)));
        let fill = FILLS.get(i % 2).copied().unwrap_or("#eee");
        let _ = writeln!(
            s,
            "<g class=\"controller\"><title>{}</title><clipPath id=\"lane-{i}\"><rect x=\"{x}\" y=\"{top:.1}\" width=\"{width}\" height=\"{BAND}\"/></clipPath><rect x=\"{x}\" y=\"{top:.1}\" width=\"{width}\" height=\"{BAND}\" fill=\"{fill}\" stroke=\"#5b7a99\"/><text x=\"{x}\" dx=\"4\" y=\"{:.1}\" clip-path=\"url(#lane-{i})\">leader {} epoch {}</text></g>",
            esc(&title),
            top + 14.0,
            span.leader_id,
            span.epoch,
            x = pct(a),
            width = pct(b - a),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::UnixTime;
    use crate::timestamp::Timestamp;

    fn span(
        leader_id: i32,
        epoch: i32,
        from: (u64, i64),
        to: Option<(u64, &str)>,
    ) -> ControllerSpan {
        ControllerSpan {
            leader_id,
            epoch,
            from_frame: from.0,
            from_timestamp: format!("t{}", from.1),
            from_unix_time: UnixTime(Timestamp {
                secs: from.1,
                nanos: 0,
                nano: false,
            }),
            to_frame: to.map(|t| t.0),
            to_timestamp: to.map(|t| t.1.to_owned()),
            how: "begin_quorum_epoch",
        }
    }

    #[test]
    fn a_span_lasts_to_the_next_or_to_its_later_epoch_or_to_the_end() {
        let spans = [
            span(1, 4, (4, 100), Some((18, "ignored"))),
            span(2, 5, (18, 110), Some((30, "1970-01-01T00:02:00.5Z"))),
            span(3, 7, (40, 130), None),
        ];
        assert_eq!(
            times(&spans),
            [(100.0, Some(110.0)), (110.0, Some(120.5)), (130.0, None)]
        );
    }

    #[test]
    fn a_band_per_span_titled_with_its_facts() {
        let spans = [
            span(3001, 4, (4, 100), Some((18, "t110"))),
            span(3002, 5, (18, 110), None),
        ];
        let mut s = String::new();
        draw(&mut s, &spans, (90.0, 130.0), 8.0);
        assert_eq!(s.matches("<g class=\"controller\">").count(), 2);
        assert!(s.contains("controller 3001 led in epoch 4 from frame 4 (t100) until frame 18 (t110); known from a BeginQuorumEpoch request"));
        assert!(s.contains(
            "controller 3002 led in epoch 5 from frame 18 (t110) to the end of the capture"
        ));
        assert!(s.contains(">leader 3002 epoch 5</text>"));
        // the first band from 25% (100 s of 90..130) for 25%
        assert!(s.contains("<rect x=\"25.00%\" y=\"8.0\" width=\"25.00%\""));
    }
}
