//! The timeline of the HTML page, plain SVG as wide as the window: time across (as a
//! percentage of the width, so the marks follow the window without stretching any text),
//! producer ids up (pixels); a bar per block in its broker's colour; overlaps and
//! regressions outlined in the error colour (dashed, so not by colour alone) over the ids
//! concerned; gaps hatched; error responses and requests without an answer as triangles
//! on the time axis. Every mark has a `<title>` with its facts, which is also the chart's
//! text alternative.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::bins::{Cell, Held, OneByOne, Placed};
use super::groups::Groups;
use super::{esc, lane};
use crate::diag::Kind;
use crate::report::model::{ControllerPiece, PidFinding};
use crate::timestamp::Timestamp;

/// Blocks drawn one by one; past them the timeline draws columns of time instead.
pub const MAX_DRAWN: usize = 4000;
/// Error and no-answer marks drawn one by one; past them, in columns too.
pub const MAX_MARKS: usize = 4000;
/// Overlaps, regressions and gaps outlined; the findings table lists them all.
pub const MAX_OUTLINES: usize = 1000;

/// A block as drawn.
pub struct Drawn {
    pub broker: i32,
    /// The broker when the charts keep it apart.
    pub series: Option<i32>,
    pub start: i64,
    pub end: i64,
    /// Seconds since the epoch, of the response.
    pub at: f64,
    /// Request and response frames.
    pub frames: (u64, u64),
    pub time: Timestamp,
}

/// An error response or a request without an answer.
pub struct Mark {
    pub broker: Option<i32>,
    pub series: Option<i32>,
    pub at: f64,
    pub time: Timestamp,
    pub what: String,
    pub frame: u64,
}

/// A broker's blocks in one column of time.
#[derive(Clone)]
pub struct BlockBin {
    held: Held,
    start: i64,
    end: i64,
}

impl Cell for BlockBin {
    fn merge(&mut self, other: Self) {
        self.held.merge(other.held);
        self.start = self.start.min(other.start);
        self.end = self.end.max(other.end);
    }
}

impl From<Drawn> for BlockBin {
    fn from(b: Drawn) -> Self {
        Self {
            start: b.start,
            end: b.end,
            held: Held::one(b.time, b.frames.1),
        }
    }
}

impl Placed<Option<i32>> for Drawn {
    fn at(&self) -> f64 {
        self.at
    }
    fn series(&self) -> Option<i32> {
        self.series
    }
}

impl Placed<Option<i32>> for Mark {
    fn at(&self) -> f64 {
        self.at
    }
    fn series(&self) -> Option<i32> {
        self.series
    }
}

impl From<Mark> for Held {
    fn from(m: Mark) -> Self {
        Self::one(m.time, m.frame)
    }
}

/// The timeline: blocks and failed requests one by one, or once there are too many, in
/// columns of time per broker.
pub struct Chart {
    blocks: OneByOne<Drawn, Option<i32>, BlockBin>,
    marks: OneByOne<Mark, Option<i32>, Held>,
    /// Blocks and marks met, and the times and highest id among them.
    block_count: u64,
    mark_count: u64,
    span: (f64, f64),
    /// The lowest and highest ids among the blocks (the y axis spans them).
    ids: Option<(i64, i64)>,
    pub findings: Vec<PidFinding>,
    /// Drawn in a lane above the blocks when there are any.
    pub controllers: Vec<ControllerPiece>,
    /// Blocks, by response frame, that the page links to: their bars get an id.
    pub anchored: BTreeSet<u64>,
}

impl Default for Chart {
    fn default() -> Self {
        Self {
            blocks: OneByOne::new(MAX_DRAWN),
            marks: OneByOne::new(MAX_MARKS),
            block_count: 0,
            mark_count: 0,
            span: (f64::INFINITY, f64::NEG_INFINITY),
            ids: None,
            findings: Vec::new(),
            controllers: Vec::new(),
            anchored: BTreeSet::new(),
        }
    }
}

/// Opens a chart's `<svg>`, as wide as the page (only the SVG namespace is named), whose
/// `<title>` is its text alternative.
pub fn open_svg(s: &mut String, id: &str, height: f64, title: &str) {
    let _ = writeln!(
        s,
        "<svg id=\"{id}\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" height=\"{height}\" role=\"img\" aria-labelledby=\"{id}-title\"><title id=\"{id}-title\">{}</title>",
        esc(title)
    );
}

/// A position across, as an SVG percentage of the width.
pub fn pct(fraction: f64) -> String {
    format!("{:.2}%", (fraction * 100.0).clamp(-1.0, 101.0))
}

pub const ERROR: &str = "#c0392b";
const HEIGHT: f64 = 392.0;
const TOP: f64 = 8.0;
/// The least height of an overlap, regression or gap drawn, in pixels.
const MIN_FAULT_PX: f64 = 6.0;
/// The time axis.
const BOTTOM: f64 = 330.0;

struct Scale {
    t0: f64,
    t1: f64,
    /// The ids at the bottom and the top of the axis.
    low_id: f64,
    top_id: f64,
    /// The plot's top and its time axis, pixels (below the controller lane, if any).
    top: f64,
    bottom: f64,
}

impl Scale {
    fn x(&self, t: f64) -> String {
        pct((t - self.t0) / (self.t1 - self.t0))
    }
    fn y(&self, id: f64) -> f64 {
        self.bottom - (id - self.low_id) / (self.top_id - self.low_id) * (self.bottom - self.top)
    }
}

impl Chart {
    fn saw(&mut self, at: f64) {
        if at.is_finite() {
            self.span = (self.span.0.min(at), self.span.1.max(at));
        }
    }

    pub fn add_block(&mut self, block: Drawn) {
        self.block_count += 1;
        let (low, top) = self.ids.get_or_insert((block.start, block.end));
        (*low, *top) = ((*low).min(block.start), (*top).max(block.end));
        self.saw(block.at);
        self.blocks.add(block, self.span);
    }

    pub fn add_mark(&mut self, mark: Mark) {
        self.mark_count += 1;
        self.saw(mark.at);
        self.marks.add(mark, self.span);
    }

    /// Whether the block granted in this response frame has a bar of its own (not in a
    /// column of time, nor filtered out), which a link can point to.
    pub fn draws_block(&self, response_frame: u64) -> bool {
        self.blocks
            .each()
            .iter()
            .any(|b| b.frames.1 == response_frame)
    }

    /// The pixels the controller lane takes above the plot.
    fn lane_height(&self) -> f64 {
        match self.controllers.is_empty() {
            true => 0.0,
            false => lane::HEIGHT,
        }
    }

    fn scale(&self) -> Scale {
        // the controllers' times too, so that the lane shares the blocks' axis
        let lane = lane::times(&self.controllers);
        let span = lane
            .iter()
            .flat_map(|(from, to)| [*from, *to])
            .filter(|t| t.is_finite())
            .fold(self.span, |(a, b), t| (a.min(t), b.max(t)));
        let (t0, t1) = if span.0.is_finite() { span } else { (0.0, 1.0) };
        let pad = ((t1 - t0) * 0.02).max(1e-3);
        // from a little below the lowest id to a little above the highest (ids are never
        // below 0)
        let (low, top) = self.ids.unwrap_or((0, 1));
        let (low, top) = (low as f64, (top as f64).max(low as f64 + 1.0));
        let margin = (top - low) * 0.05;
        Scale {
            t0: t0 - pad,
            t1: t1 + pad,
            low_id: (low - margin).max(0.0),
            top_id: top + margin,
            top: TOP + self.lane_height(),
            bottom: BOTTOM + self.lane_height(),
        }
    }

    /// The whole chart, a `<figure>` with its key, the SVG and what was aggregated;
    /// `filtered`: it holds only the exchanges the filters let through.
    pub fn svg(&self, groups: &Groups, filtered: bool) -> String {
        let mut s = String::new();
        if self.block_count == 0 && self.mark_count == 0 && self.controllers.is_empty() {
            return match filtered {
                true => "<p id=\"timeline\">No block was granted, and no request failed, in the exchanges shown.</p>\n",
                false => "<p id=\"timeline\">No block was granted, and no request failed.</p>\n",
            }
            .into();
        }
        let scale = self.scale();
        let how = if self.blocks.bins().is_some() {
            "in columns of time per broker"
        } else {
            "each drawn"
        };
        let mut title = format!(
            "Producer-ID blocks over time: {} blocks, {how}; {} failed requests",
            self.block_count, self.mark_count
        );
        let mut key = "<span><i class=\"outline\"></i>overlap or regression</span> <span><i class=\"hatch\"></i>gap</span> <span><b class=\"tri\">▲</b>error or no answer</span>".to_owned();
        if !self.controllers.is_empty() {
            let led = self
                .controllers
                .iter()
                .filter(|p| p.state == crate::analysis::controllers::pieces::PieceState::Led)
                .count();
            let unknown = self.controllers.len() - led;
            let spans = |n: usize| match n {
                1 => "1 span".to_owned(),
                n => format!("{n} spans"),
            };
            title += &format!(
                "; above them, {} of a controller proven to lead the quorum and {} where who led is unknown",
                spans(led),
                spans(unknown)
            );
            key += " <span><i class=\"lane\"></i>controller proven leading, and its epoch</span> <span><i class=\"hatch\"></i>leader unknown</span>";
        }
        s.push_str("<figure class=\"chart\">\n");
        groups.key(&mut s, &key);
        open_svg(&mut s, "timeline", HEIGHT + self.lane_height(), &title);
        let _ = writeln!(
            s,
            "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#888\" stroke-width=\"2\"/></pattern><path id=\"tri\" d=\"M0 0 l5 9 h-10 z\" stroke=\"{ERROR}\"/></defs>"
        );
        self.axes(&mut s, &scale);
        if !self.controllers.is_empty() {
            lane::draw(&mut s, &self.controllers, (scale.t0, scale.t1), TOP);
        }
        self.draw_blocks(&mut s, &scale, groups);
        self.findings_marks(&mut s, &scale);
        self.draw_marks(&mut s, &scale, groups);
        s.push_str("</svg>\n");
        self.caption(&mut s, groups);
        s.push_str("</figure>\n");
        s
    }

    fn draw_blocks(&self, s: &mut String, scale: &Scale, groups: &Groups) {
        for b in self.blocks.each() {
            let (y0, y1) = (scale.y(b.start as f64), scale.y(b.end as f64 + 1.0));
            let id = match self.anchored.contains(&b.frames.1) {
                true => format!(" id=\"block-{}\"", b.frames.1),
                false => String::new(),
            };
            let _ = writeln!(
                s,
                "<rect class=\"block\"{id} x=\"{}\" y=\"{:.1}\" width=\"4\" height=\"{:.1}\" fill=\"{}\"><title>broker {}: ids {}..={}, frames {} and {}, {}</title></rect>",
                scale.x(b.at),
                y1,
                (y0 - y1).max(1.0),
                groups.colour(groups.of(b.series)),
                b.broker,
                b.start,
                b.end,
                b.frames.0,
                b.frames.1,
                b.time.to_rfc3339()
            );
        }
        let Some(bins) = self.blocks.bins() else {
            return;
        };
        let grouped = bins.grouped(|series| groups.of(series));
        // the grey first, then the named from the least trouble: the most on top
        let mut cells: Vec<_> = grouped.cells().collect();
        cells.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.total_cmp(&b.0)));
        for (from, to, group, b) in cells {
            let (y0, y1) = (scale.y(b.start as f64), scale.y(b.end as f64 + 1.0));
            let width = (to - from) / (scale.t1 - scale.t0);
            let _ = writeln!(
                s,
                "<rect class=\"block-bin\" x=\"{}\" y=\"{y1:.1}\" width=\"{}\" height=\"{:.1}\" fill=\"{}\" fill-opacity=\"0.75\"><title>{}: {} blocks, ids {}..={}, response frames {} to {}, {} to {}</title></rect>",
                scale.x(from),
                pct(width * 0.9),
                (y0 - y1).max(1.0),
                groups.colour(group),
                groups.name(group),
                b.held.count,
                b.start,
                b.end,
                b.held.frames.0,
                b.held.frames.1,
                b.held.first.to_rfc3339(),
                b.held.last.to_rfc3339()
            );
        }
    }

    fn draw_marks(&self, s: &mut String, scale: &Scale, groups: &Groups) {
        let y = scale.bottom + 4.0;
        for m in self.marks.each() {
            let broker = m.broker.map_or("?".to_owned(), |b| b.to_string());
            let _ = writeln!(
                s,
                "<use class=\"failed\" href=\"#tri\" x=\"{}\" y=\"{y:.1}\" fill=\"{}\"><title>broker {broker}: {} (frame {}, {})</title></use>",
                scale.x(m.at),
                groups.colour(groups.of(m.series)),
                esc(&m.what),
                m.frame,
                m.time.to_rfc3339()
            );
        }
        let Some(bins) = self.marks.bins() else {
            return;
        };
        let grouped = bins.grouped(|series| groups.of(series));
        for (from, to, group, m) in grouped.cells() {
            let _ = writeln!(
                s,
                "<use class=\"failed-bin\" href=\"#tri\" x=\"{}\" y=\"{y:.1}\" fill=\"{}\"><title>{}: {} failed requests (error or no answer), frames {} to {}, {} to {}</title></use>",
                scale.x((from + to) / 2.0),
                groups.colour(group),
                groups.name(group),
                m.count,
                m.frames.0,
                m.frames.1,
                m.first.to_rfc3339(),
                m.last.to_rfc3339()
            );
        }
    }

    /// What the chart aggregated or left out, in words.
    fn caption(&self, s: &mut String, groups: &Groups) {
        let mut said = Vec::new();
        if let Some(bins) = self.blocks.bins() {
            said.push(format!(
                "The {} blocks are more than {MAX_DRAWN}, so each bar is one broker's blocks (or the grey brokers') in a column of {}, from their lowest id to their highest; its title counts them.",
                self.block_count,
                seconds(bins.width())
            ));
            if bins.not_drawn > 0 {
                said.push(format!(
                    "{} blocks have no time to draw them at.",
                    bins.not_drawn
                ));
            }
        }
        if let Some(bins) = self.marks.bins() {
            said.push(format!(
                "The {} failed requests are more than {MAX_MARKS}, so each triangle is one broker's (or the grey brokers') in a column of {}; its title counts them.",
                self.mark_count,
                seconds(bins.width())
            ));
            if bins.not_drawn > 0 {
                said.push(format!(
                    "{} failed requests have no time to draw them at.",
                    bins.not_drawn
                ));
            }
        }
        let outlined = self.outlined().count();
        if outlined > MAX_OUTLINES {
            said.push(format!(
                "The first {MAX_OUTLINES} of {outlined} overlaps, regressions and gaps are outlined; the findings below count them all."
            ));
        }
        said.extend(groups.why());
        if !said.is_empty() {
            said.push("The JSON report lists every one.".into());
            let _ = writeln!(s, "<figcaption>{}</figcaption>", said.join(" "));
        }
    }

    fn axes(&self, s: &mut String, scale: &Scale) {
        time_axis(
            s,
            (scale.t0, scale.t1),
            (scale.top, scale.bottom),
            "the response",
        );
        let (low, top) = self.ids.unwrap_or((0, 1));
        let (low, top) = (low as f64, top as f64);
        for id in [low, (low + top) / 2.0, top] {
            let _ = writeln!(
                s,
                "<text x=\"-6\" y=\"{:.1}\" text-anchor=\"end\">{:.0}</text>",
                scale.y(id) + 4.0,
                id
            );
        }
        let _ = writeln!(
            s,
            "<text transform=\"translate(-68 {:.1}) rotate(-90)\" text-anchor=\"middle\">producer id</text>",
            (scale.top + scale.bottom) / 2.0
        );
    }

    /// The findings the timeline outlines.
    fn outlined(&self) -> impl Iterator<Item = &PidFinding> {
        self.findings.iter().filter(|f| {
            matches!(
                f.kind,
                Kind::PidBlockOverlap | Kind::PidBlockRegression | Kind::PidBlockGap
            )
        })
    }

    /// Overlaps and regressions outlined over the ids concerned, at the block that showed
    /// them; gaps hatched.
    fn findings_marks(&self, s: &mut String, scale: &Scale) {
        // one marker where several faults are drawn at one place (an overlap is often a
        // regression too)
        let mut marked = BTreeSet::new();
        for f in self.outlined().take(MAX_OUTLINES) {
            let at = f.unix_time.seconds();
            let class = match f.kind {
                Kind::PidBlockOverlap => "overlap",
                Kind::PidBlockRegression => "regression",
                _ => "gap",
            };
            let Some(ids) = f.ids else {
                continue;
            };
            let (from, to) = (ids.start as f64, ids.end as f64);
            // at least a few pixels tall, centred on its ids, however long the axis: a
            // one-id overlap on an axis of 12,000 ids is the fault the page exists to show
            let (y0, y1) = (scale.y(from), scale.y(to + 1.0));
            let height = (y0 - y1).max(MIN_FAULT_PX);
            let (mid, top) = ((y0 + y1) / 2.0, (y0 + y1 - height) / 2.0);
            let gap = f.kind == Kind::PidBlockGap;
            let style = if gap {
                "fill=\"url(#hatch)\" stroke=\"#888\"".to_owned()
            } else {
                format!(
                    "fill=\"none\" stroke=\"{ERROR}\" stroke-width=\"2\" stroke-dasharray=\"4 2\""
                )
            };
            let _ = writeln!(
                s,
                "<rect class=\"{class}\" x=\"{}\" y=\"{top:.1}\" width=\"13\" height=\"{height:.1}\" transform=\"translate(-6.5 0)\" {style}><title>{}: {}</title></rect>",
                scale.x(at),
                f.kind,
                esc(&f.message)
            );
            if !gap && marked.insert((scale.x(at), (mid / 12.0).round() as i64)) {
                // a marker beside it, for the eye to find it at any zoom
                let _ = writeln!(
                    s,
                    "<text class=\"fault-marker\" x=\"{}\" dx=\"8\" y=\"{:.1}\" fill=\"{ERROR}\"><title>{}</title>◀</text>",
                    scale.x(at),
                    mid + 4.0,
                    f.kind
                );
            }
        }
    }
}

/// The axes' lines, and a time axis under the plot (`top..bottom` pixels) over `t0..t1`
/// seconds: a gridline and a label at each tick, and what the time is of.
pub fn time_axis(s: &mut String, (t0, t1): (f64, f64), (top, bottom): (f64, f64), of: &str) {
    s.push_str("<g class=\"axes\" stroke=\"#333\">");
    let _ = write!(
        s,
        "<line x1=\"0\" y1=\"{bottom}\" x2=\"100%\" y2=\"{bottom}\"/><line x1=\"0\" y1=\"{top}\" x2=\"0\" y2=\"{bottom}\"/>"
    );
    let ticks = super::ticks::ticks(t0, t1);
    for (t, _) in &ticks {
        let x = pct((t - t0) / (t1 - t0));
        let _ = write!(
            s,
            "<line x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{:.1}\" stroke=\"#ddd\"/>",
            bottom + 4.0
        );
    }
    s.push_str("</g>\n");
    for (t, label) in &ticks {
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            pct((t - t0) / (t1 - t0)),
            bottom + 26.0
        );
    }
    let day = ticks
        .first()
        .and_then(|(t, _)| time::OffsetDateTime::from_unix_timestamp(t.floor() as i64).ok())
        .map(|d| format!(", {}", d.date()))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "<text x=\"50%\" y=\"{:.1}\" text-anchor=\"middle\">time of {of} (UTC{day})</text>",
        bottom + 52.0
    );
}

/// A column's width, in the unit that reads best.
pub fn seconds(width: f64) -> String {
    if width >= 1.0 {
        format!("{width:.1} s")
    } else if width >= 1e-3 {
        format!("{:.1} ms", width * 1e3)
    } else {
        format!("{:.1} µs", width * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp {
            secs,
            nanos: 0,
            nano: false,
        }
    }

    fn piece(leader_id: Option<i32>, epoch: i32, from: i64, to: i64) -> ControllerPiece {
        ControllerPiece::sample(leader_id, epoch, (from, to))
    }

    fn chart(controllers: Vec<ControllerPiece>) -> String {
        let mut chart = Chart::default();
        for (start, secs, frame) in [(0, 100, 19), (1000, 110, 59)] {
            chart.add_block(Drawn {
                broker: 1,
                series: None,
                start,
                end: start + 999,
                at: secs as f64,
                frames: (frame - 1, frame),
                time: at(secs),
            });
        }
        chart.controllers = controllers;
        chart.anchored.insert(59);
        chart.svg(&Groups::none(), false)
    }

    /// The `x` of the element that starts with `start`.
    fn x_of<'a>(svg: &'a str, start: &str) -> &'a str {
        let rest = &svg[svg.find(start).unwrap()..];
        let rest = &rest[rest.find(" x=\"").unwrap() + 4..];
        &rest[..rest.find('"').unwrap()]
    }

    #[test]
    fn the_controller_lane_shares_the_blocks_time_axis() {
        let svg = chart(vec![
            piece(Some(3001), 4, 90, 100),
            piece(None, 0, 100, 110),
            piece(Some(3002), 5, 110, 110),
        ]);
        assert_eq!(svg.matches("<g class=\"controller led\">").count(), 2);
        assert_eq!(svg.matches("<g class=\"controller unknown\">").count(), 1);
        assert!(svg.contains(&format!("height=\"{}\"", HEIGHT + lane::HEIGHT)));
        // the second leader's band starts where the block of its time is drawn
        assert_eq!(
            x_of(&svg, "<g class=\"controller led\"><title>controller 3002"),
            x_of(&svg, "<rect class=\"block\" id=\"block-59\"")
        );
        // the first span widens the axis to its start (90 s of 89.6..110.4, the span
        // padded by 2%)
        assert_eq!(
            x_of(&svg, "<g class=\"controller led\"><title>controller 3001"),
            "1.92%"
        );
        // only the linked block has an id
        assert_eq!(svg.matches("id=\"block-").count(), 1);
    }

    #[test]
    fn without_controllers_the_timeline_is_as_it_was() {
        let svg = chart(Vec::new());
        assert!(!svg.contains("controller"));
        assert!(svg.contains(&format!("height=\"{HEIGHT}\"")));
    }
}
