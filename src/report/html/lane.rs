//! The controller lane of the timeline: a band per piece of `controller_timeline` above
//! the blocks, on their time axis: who is proven to have led the KRaft quorum (labelled with
//! the leader and epoch, cut to the band) and, hatched, where nothing tells who led; each
//! titled with its bounds and what they rest on.

use std::fmt::Write as _;

use super::esc;
use super::svg::pct;
use crate::analysis::controllers::pieces::{PieceState, SourceName};
use crate::analysis::controllers::Evidence;
use crate::report::model::ControllerPiece;

/// Pieces drawn; the report lists every one.
pub const MAX_SPANS: usize = 1000;
/// The lane's height over the plot, its gap below included.
pub const HEIGHT: f64 = 28.0;
const BAND: f64 = 20.0;
/// Alternate fills, so that two pieces side by side are told apart.
const FILLS: [&str; 2] = ["#dbe6f1", "#f1f5f9"];

/// Each piece's times, from and to, in seconds.
pub fn times(pieces: &[ControllerPiece]) -> Vec<(f64, f64)> {
    pieces
        .iter()
        .take(MAX_SPANS)
        .map(|p| (p.from_unix_time.seconds(), p.to_unix_time.seconds()))
        .collect()
}

/// What a bound rests on, in words.
fn how(how: Option<Evidence>, source: SourceName, frame: Option<u64>) -> String {
    let what = match how {
        Some(Evidence::BeginQuorumEpoch) => "a BeginQuorumEpoch request (the leader's)",
        Some(Evidence::EndQuorumEpoch) => "an EndQuorumEpoch request (the leader resigning)",
        Some(Evidence::AllocateProducerIds) => "an AllocateProducerIds answer",
        Some(Evidence::LeaderChange) => "the metadata log's LeaderChange record",
        Some(Evidence::Batch) => "a batch the leader appended to the metadata log",
        Some(other) => other.as_str(),
        None if source == SourceName::CaptureStart => {
            return "the capture's first packet".to_owned()
        }
        None => return "the capture's last packet".to_owned(),
    };
    match frame {
        Some(frame) => format!("{what} in frame {frame}"),
        None => what.to_owned(),
    }
}

/// Who a led piece names: `controller 101`, `the controller at 10.0.0.1:9093`.
pub fn leader(p: &ControllerPiece) -> String {
    match (p.leader_id, &p.leader_address) {
        (Some(id), _) => format!("controller {id}"),
        (None, Some(address)) => format!("the controller at {address}"),
        (None, None) => "nobody known".to_owned(),
    }
}

/// The lane from `top` pixels down, over `t0..t1` seconds across.
pub fn draw(s: &mut String, pieces: &[ControllerPiece], (t0, t1): (f64, f64), top: f64) {
    let x = |t: f64| (t - t0) / (t1 - t0);
    let _ = writeln!(
        s,
        "<text x=\"-6\" y=\"{:.1}\" text-anchor=\"end\">controller</text>",
        top + BAND / 2.0 + 4.0
    );
    for (i, (p, (from, to))) in pieces.iter().zip(times(pieces)).enumerate() {
        let bounds = format!(
            "from {} ({}) to {} ({})",
            p.from_timestamp,
            how(p.from_how, p.from_source, p.from_frame),
            p.to_timestamp,
            how(p.to_how, p.to_source, p.to_frame)
        );
        let epoch = p
            .epoch
            .map_or("an epoch the capture does not show".to_owned(), |e| {
                format!("epoch {e}")
            });
        let (title, labels, fill) = match p.state {
            PieceState::Led => (
                format!("{} proven to lead in {epoch} {bounds}", leader(p)),
                match p.epoch {
                    Some(e) => vec![
                        format!("leader {} epoch {e}", label_of(p)),
                        format!("{} e{e}", label_of(p)),
                        label_of(p),
                    ],
                    None => vec![format!("leader {}", label_of(p)), label_of(p)],
                },
                FILLS.get(i % 2).copied().unwrap_or("#eee"),
            ),
            PieceState::Unknown => (
                format!("who led is unknown {bounds}: nothing in the capture or the metadata log shows it"),
                vec!["unknown".to_owned(), "?".to_owned()],
                "url(#hatch)",
            ),
        };
        let (a, b) = (x(from), x(to).max(x(from)));
        // the longest label the band holds at the narrowest plot; none when none fits
        // (the title says it all)
        let text = labels
            .iter()
            .find(|l| fits(l, b - a))
            .map(|label| {
                format!(
                    "<text x=\"{}\" dx=\"4\" y=\"{:.1}\" clip-path=\"url(#lane-{i})\">{}</text>",
                    pct(a),
                    top + 14.0,
                    esc(label)
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "<g class=\"controller {}\"><title>{}</title><clipPath id=\"lane-{i}\"><rect x=\"{x}\" y=\"{top:.1}\" width=\"{width}\" height=\"{BAND}\"/></clipPath><rect x=\"{x}\" y=\"{top:.1}\" width=\"{width}\" height=\"{BAND}\" fill=\"{fill}\" stroke=\"#5b7a99\"/>{text}</g>",
            p.state,
            esc(&title),
            x = pct(a),
            width = pct(b - a),
        );
    }
}

/// The narrowest the plot is drawn (a 700 px window, less the page's margins), and the
/// widest a character of the lane's 11 px labels is, in pixels.
const NARROWEST_PLOT_PX: f64 = 560.0;
const CHAR_PX: f64 = 6.0;

/// Whether `label` fits a band `fraction` of the plot wide, at the narrowest plot.
fn fits(label: &str, fraction: f64) -> bool {
    let needed = label.chars().count() as f64 * CHAR_PX + 8.0;
    fraction * NARROWEST_PLOT_PX >= needed
}

/// A led piece's short name: its id, or its address.
fn label_of(p: &ControllerPiece) -> String {
    match (p.leader_id, &p.leader_address) {
        (Some(id), _) => id.to_string(),
        (None, Some(address)) => address.clone(),
        (None, None) => "?".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(leader_id: Option<i32>, epoch: Option<i32>, from: i64, to: i64) -> ControllerPiece {
        ControllerPiece {
            epoch,
            from_timestamp: format!("t{from}"),
            to_timestamp: format!("t{to}"),
            to_source: SourceName::MetadataLog,
            to_frame: None,
            to_how: Some(Evidence::Batch),
            ..ControllerPiece::sample(leader_id, 0, (from, to))
        }
    }

    #[test]
    fn a_band_per_piece_titled_with_its_bounds_and_unknown_ones_hatched() {
        let pieces = [
            piece(Some(3001), Some(4), 100, 108),
            piece(None, None, 108, 110),
            piece(Some(3002), Some(5), 110, 120),
        ];
        assert_eq!(
            times(&pieces),
            [(100.0, 108.0), (108.0, 110.0), (110.0, 120.0)]
        );
        let mut s = String::new();
        draw(&mut s, &pieces, (90.0, 130.0), 8.0);
        assert_eq!(s.matches("<g class=\"controller led\">").count(), 2);
        assert_eq!(s.matches("<g class=\"controller unknown\">").count(), 1);
        assert!(s.contains("controller 3001 proven to lead in epoch 4 from t100 (a BeginQuorumEpoch request (the leader&#39;s) in frame 4) to t108 (a batch the leader appended to the metadata log)"), "{s}");
        assert!(s.contains(">leader 3002 epoch 5</text>"));
        assert!(s.contains("fill=\"url(#hatch)\""));
        // two seconds of forty: too narrow for `unknown`
        assert!(s.contains(">?</text>"), "{s}");
        // the first band from 25% (100 s of 90..130) for 20%
        assert!(s.contains("<rect x=\"25.00%\" y=\"8.0\" width=\"20.00%\""));
    }

    #[test]
    fn a_band_too_narrow_for_its_label_gets_a_shorter_one_or_none() {
        // 40 s across: 10 s is 140 px at the narrowest, 1 s 14 px, 0.1 s 1.4 px
        let pieces = [
            piece(Some(3001), Some(4), 100, 110),
            piece(Some(3002), Some(5), 110, 111),
            piece(Some(3003), Some(6), 111, 111),
        ];
        let mut s = String::new();
        draw(&mut s, &pieces, (90.0, 130.0), 8.0);
        assert!(s.contains(">leader 3001 epoch 4</text>"), "{s}");
        assert!(
            !s.contains("3002 e5<") && !s.contains(">leader 3002"),
            "{s}"
        );
        assert_eq!(
            s.matches("<text").count(),
            2,
            "the lane's name and one label: {s}"
        );
        assert!(fits("3002 e5", 0.25) && !fits("leader 3002 epoch 5", 0.1));
    }
}
