//! The timeline of the HTML page, plain SVG: time across, producer ids up, a bar per block
//! in its broker's colour; overlaps and regressions outlined in the error colour (dashed,
//! so not by colour alone) over the ids concerned; gaps hatched; error responses and
//! requests without an answer as triangles on the time axis. Every mark has a `<title>`
//! with its facts, which is also the chart's text alternative.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::bins::{Cell, Held, OneByOne, Placed};
use super::esc;
use crate::report::model::PidFinding;

/// Blocks drawn one by one; past them the timeline draws columns of time instead.
pub const MAX_DRAWN: usize = 4000;
/// Error and no-answer marks drawn one by one; past them, in columns too.
pub const MAX_MARKS: usize = 4000;

/// A block as drawn.
pub struct Drawn {
    pub broker: i32,
    pub start: i64,
    pub end: i64,
    /// Seconds since the epoch, of the response.
    pub at: f64,
    /// Request and response frames.
    pub frames: (u64, u64),
    pub time: String,
}

/// An error response or a request without an answer.
pub struct Mark {
    pub broker: Option<i32>,
    pub at: f64,
    pub time: String,
    pub what: String,
    pub frame: u64,
}

/// A broker's blocks in one column of time.
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
            held: Held::one(b.at, b.time, b.frames.1),
        }
    }
}

impl Placed<i32> for Drawn {
    fn at(&self) -> f64 {
        self.at
    }
    fn series(&self) -> i32 {
        self.broker
    }
}

impl Placed<Option<i32>> for Mark {
    fn at(&self) -> f64 {
        self.at
    }
    fn series(&self) -> Option<i32> {
        self.broker
    }
}

impl From<Mark> for Held {
    fn from(m: Mark) -> Self {
        Self::one(m.at, m.time, m.frame)
    }
}

/// The timeline: blocks and failed requests one by one, or once there are too many, in
/// columns of time per broker.
pub struct Chart {
    blocks: OneByOne<Drawn, i32, BlockBin>,
    marks: OneByOne<Mark, Option<i32>, Held>,
    /// Blocks and marks met, and the times and highest id among them.
    block_count: u64,
    mark_count: u64,
    span: (f64, f64),
    /// The times of the span, as the report writes them.
    span_times: Option<(String, String)>,
    /// The lowest and highest ids among the blocks (the y axis spans them).
    ids: Option<(i64, i64)>,
    brokers: std::collections::BTreeSet<i32>,
    pub findings: Vec<PidFinding>,
}

impl Default for Chart {
    fn default() -> Self {
        Self {
            blocks: OneByOne::new(MAX_DRAWN),
            marks: OneByOne::new(MAX_MARKS),
            block_count: 0,
            mark_count: 0,
            span: (f64::INFINITY, f64::NEG_INFINITY),
            span_times: None,
            ids: None,
            brokers: Default::default(),
            findings: Vec::new(),
        }
    }
}

/// Series met past this many are drawn in the fallback colour, not remembered.
pub const MAX_BROKERS: usize = 1000;

/// Opens a chart: a `<figure>` with an `<svg>` of the page's own (only the SVG namespace
/// is named) whose `<title>` is its text alternative.
pub fn open_figure(s: &mut String, id: &str, (width, height): (f64, f64), title: &str) {
    let _ = writeln!(
        s,
        "<figure><svg id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-labelledby=\"{id}-title\"><title id=\"{id}-title\">{}</title>",
        esc(title)
    );
}

/// Okabe and Ito's colours, told apart with the common colour blindnesses.
const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
];
const ERROR: &str = "#c0392b";
/// Height of a row of the legend.
const LEGEND_ROW: f64 = 16.0;
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 60.0;

struct Scale {
    t0: f64,
    t1: f64,
    /// The ids at the bottom and the top of the axis.
    low_id: f64,
    top_id: f64,
}

impl Scale {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.t0) / (self.t1 - self.t0) * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, id: f64) -> f64 {
        HEIGHT - BOTTOM - (id - self.low_id) / (self.top_id - self.low_id) * (HEIGHT - TOP - BOTTOM)
    }
}

impl Chart {
    fn saw(&mut self, at: f64, time: &str, broker: Option<i32>) {
        if at.is_finite() {
            let times = self
                .span_times
                .get_or_insert_with(|| (time.to_owned(), time.to_owned()));
            if at < self.span.0 {
                times.0 = time.to_owned();
            }
            if at > self.span.1 {
                times.1 = time.to_owned();
            }
            self.span = (self.span.0.min(at), self.span.1.max(at));
        }
        if let Some(b) = broker {
            if self.brokers.len() < MAX_BROKERS {
                self.brokers.insert(b);
            }
        }
    }

    pub fn add_block(&mut self, block: Drawn) {
        self.block_count += 1;
        let (low, top) = self.ids.get_or_insert((block.start, block.end));
        (*low, *top) = ((*low).min(block.start), (*top).max(block.end));
        self.saw(block.at, &block.time, Some(block.broker));
        self.blocks.add(block, self.span);
    }

    pub fn add_mark(&mut self, mark: Mark) {
        self.mark_count += 1;
        self.saw(mark.at, &mark.time, mark.broker);
        self.marks.add(mark, self.span);
    }

    /// Blocks met, drawn or not.
    pub fn blocks(&self) -> u64 {
        self.block_count
    }

    fn scale(&self) -> Scale {
        let (t0, t1) = if self.span.0.is_finite() {
            self.span
        } else {
            (0.0, 1.0)
        };
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
        }
    }

    pub fn colours(&self) -> BTreeMap<i32, &'static str> {
        self.brokers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                (
                    *b,
                    PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#444"),
                )
            })
            .collect()
    }

    /// The whole chart, a `<figure>` with the SVG and what was aggregated.
    pub fn svg(&self) -> String {
        let mut s = String::new();
        if self.block_count == 0 && self.mark_count == 0 {
            return "<p id=\"timeline\">No block was granted, and no request failed.</p>\n".into();
        }
        let scale = self.scale();
        let colours = self.colours();
        let how = if self.blocks.bins().is_some() {
            "in columns of time per broker"
        } else {
            "each drawn"
        };
        let title = format!(
            "Producer-ID blocks over time: {} blocks, {how}; {} failed requests",
            self.block_count, self.mark_count
        );
        let mut legend = String::new();
        let above = self.legend(&mut legend, &colours);
        open_figure(&mut s, "timeline", (WIDTH, HEIGHT + above), &title);
        s.push_str(&legend);
        let _ = writeln!(s, "<g transform=\"translate(0 {above})\">");
        let _ = writeln!(
            s,
            "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#888\" stroke-width=\"2\"/></pattern></defs>"
        );
        self.axes(&mut s, &scale);
        let colour = |broker: Option<i32>| {
            broker
                .and_then(|b| colours.get(&b).copied())
                .unwrap_or("#444")
        };
        for b in self.blocks.each() {
            let (y0, y1) = (scale.y(b.start as f64), scale.y(b.end as f64 + 1.0));
            let _ = writeln!(
                s,
                "<rect class=\"block\" x=\"{:.1}\" y=\"{:.1}\" width=\"5\" height=\"{:.1}\" fill=\"{}\"><title>broker {}: ids {}..={}, frames {} and {}, {}</title></rect>",
                scale.x(b.at) - 2.5,
                y1,
                (y0 - y1).max(1.0),
                colour(Some(b.broker)),
                b.broker,
                b.start,
                b.end,
                b.frames.0,
                b.frames.1,
                esc(&b.time)
            );
        }
        if let Some(bins) = self.blocks.bins() {
            for (from, to, broker, b) in bins.cells() {
                let (x0, x1) = (scale.x(from), scale.x(to));
                let (y0, y1) = (scale.y(b.start as f64), scale.y(b.end as f64 + 1.0));
                let _ = writeln!(
                    s,
                    "<rect class=\"block-bin\" x=\"{x0:.1}\" y=\"{y1:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" fill-opacity=\"0.7\"><title>broker {broker}: {} blocks, ids {}..={}, response frames {} to {}, {} to {}</title></rect>",
                    (x1 - x0 - 0.5).max(1.0),
                    (y0 - y1).max(1.0),
                    colour(Some(broker)),
                    b.held.count,
                    b.start,
                    b.end,
                    b.held.frames.0,
                    b.held.frames.1,
                    esc(&b.held.first.1),
                    esc(&b.held.last.1)
                );
            }
        }
        self.findings_marks(&mut s, &scale);
        let y = HEIGHT - BOTTOM + 4.0;
        for m in self.marks.each() {
            let broker = m.broker.map_or("?".to_owned(), |b| b.to_string());
            let _ = writeln!(
                s,
                "<path class=\"failed\" d=\"M{:.1} {y:.1} l5 9 h-10 z\" fill=\"{}\" stroke=\"{ERROR}\"><title>broker {broker}: {} (frame {}, {})</title></path>",
                scale.x(m.at),
                colour(m.broker),
                esc(&m.what),
                m.frame,
                esc(&m.time)
            );
        }
        if let Some(bins) = self.marks.bins() {
            for (from, to, broker, m) in bins.cells() {
                let who = broker.map_or("?".to_owned(), |b| b.to_string());
                let _ = writeln!(
                    s,
                    "<path class=\"failed-bin\" d=\"M{:.1} {y:.1} l5 9 h-10 z\" fill=\"{}\" stroke=\"{ERROR}\"><title>broker {who}: {} failed requests (error or no answer), frames {} to {}, {} to {}</title></path>",
                    (scale.x(from) + scale.x(to)) / 2.0,
                    colour(broker),
                    m.count,
                    m.frames.0,
                    m.frames.1,
                    esc(&m.first.1),
                    esc(&m.last.1)
                );
            }
        }
        s.push_str("</g></svg>\n");
        self.caption(&mut s);
        s.push_str("</figure>\n");
        s
    }

    /// What the chart aggregated or left out, in words.
    fn caption(&self, s: &mut String) {
        let mut said = Vec::new();
        if let Some(bins) = self.blocks.bins() {
            said.push(format!(
                "The {} blocks are more than {MAX_DRAWN}, so each bar is one broker's blocks in a column of {}, from their lowest id to their highest; its title counts them.",
                self.block_count,
                seconds(bins.width())
            ));
            if bins.not_drawn > 0 {
                said.push(format!("{} blocks are not drawn.", bins.not_drawn));
            }
        }
        if let Some(bins) = self.marks.bins() {
            said.push(format!(
                "The {} failed requests are more than {MAX_MARKS}, so each triangle is one broker's in a column of {}; its title counts them.",
                self.mark_count,
                seconds(bins.width())
            ));
            if bins.not_drawn > 0 {
                said.push(format!("{} failed requests are not drawn.", bins.not_drawn));
            }
        }
        if !said.is_empty() {
            said.push("The JSON report lists every one.".into());
            let _ = writeln!(s, "<figcaption>{}</figcaption>", said.join(" "));
        }
    }

    fn axes(&self, s: &mut String, scale: &Scale) {
        let (x0, x1, y0) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM);
        let _ = writeln!(
            s,
            "<g class=\"axes\" stroke=\"#333\"><line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\"/><line x1=\"{x0}\" y1=\"{TOP}\" x2=\"{x0}\" y2=\"{y0}\"/></g>"
        );
        let (low, top) = self.ids.unwrap_or((0, 1));
        let (low, top) = (low as f64, top as f64);
        for id in [low, (low + top) / 2.0, top] {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}</text>",
                x0 - 6.0,
                scale.y(id) + 4.0,
                id
            );
        }
        if let Some((first, last)) = &self.span_times {
            let _ = writeln!(
                s,
                "<text x=\"{x0}\" y=\"{:.1}\">{}</text><text x=\"{x1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                y0 + 28.0,
                esc(first),
                y0 + 28.0,
                esc(last)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">time of the response (UTC)</text>\
             <text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">producer id</text>",
            (x0 + x1) / 2.0,
            HEIGHT - 8.0,
            (TOP + y0) / 2.0
        );
    }

    /// Overlaps and regressions outlined over the ids concerned, at the block that showed
    /// them; gaps hatched.
    fn findings_marks(&self, s: &mut String, scale: &Scale) {
        for f in &self.findings {
            let fact = |name: &str| f.facts.get(name).and_then(crate::diag::Fact::as_f64);
            let at = f.unix_time.seconds();
            let (from, to, class) = match f.kind {
                "pid_block_overlap" => (fact("ids_start"), fact("ids_end"), "overlap"),
                "pid_block_regression" => (fact("start"), fact("other_end"), "regression"),
                "pid_block_gap" => (fact("ids_start"), fact("ids_end"), "gap"),
                _ => continue,
            };
            let (Some(from), Some(to)) = (from, to) else {
                continue;
            };
            let (y0, y1) = (scale.y(from), scale.y(to + 1.0));
            let style = if class == "gap" {
                "fill=\"url(#hatch)\" stroke=\"#888\"".to_owned()
            } else {
                format!(
                    "fill=\"none\" stroke=\"{ERROR}\" stroke-width=\"2\" stroke-dasharray=\"4 2\""
                )
            };
            let _ = writeln!(
                s,
                "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"13\" height=\"{:.1}\" {style}><title>{}: {}</title></rect>",
                scale.x(at) - 6.5,
                y1,
                (y0 - y1).max(2.0),
                f.kind,
                esc(&f.message)
            );
        }
    }

    /// The timeline's legend: the brokers' colours, then the shapes of the faults.
    fn legend(&self, s: &mut String, colours: &BTreeMap<i32, &'static str>) -> f64 {
        let faults = vec![
            (
                170.0,
                format!("<rect width=\"10\" height=\"10\" y=\"-9\" fill=\"none\" stroke=\"{ERROR}\" stroke-dasharray=\"4 2\"/>"),
                "overlap or regression".into(),
            ),
            (
                150.0,
                format!("<path d=\"M5 -9 l5 9 h-10 z\" fill=\"#fff\" stroke=\"{ERROR}\"/>"),
                "error or no answer".into(),
            ),
        ];
        legend(s, colours, faults)
    }
}

/// A legend item: its width, its mark (drawn at its origin) and its label.
pub type LegendItem = (f64, String, String);

/// A legend above a chart of [`WIDTH`], in as many rows as it takes: each broker's
/// colour, then `more`. Returns the height it adds above the chart.
pub fn legend(s: &mut String, colours: &BTreeMap<i32, &'static str>, more: Vec<LegendItem>) -> f64 {
    let swatch =
        |colour: &str| format!("<rect width=\"10\" height=\"10\" y=\"-9\" fill=\"{colour}\"/>");
    let brokers = colours
        .iter()
        .map(|(broker, colour)| (80.0, swatch(colour), format!("broker {broker}")));
    let (mut x, mut y) = (LEFT, 12.0);
    for (width, mark, label) in brokers.chain(more) {
        if x + width > WIDTH - RIGHT && x > LEFT {
            (x, y) = (LEFT, y + LEGEND_ROW);
        }
        let _ = write!(
            s,
            "<g class=\"legend\" transform=\"translate({x} {y})\">{mark}<text x=\"14\" y=\"0\">{}</text></g>",
            esc(&label)
        );
        x += width;
    }
    s.push('\n');
    y - 12.0
}

/// A column's width, in the unit that reads best.
fn seconds(width: f64) -> String {
    if width >= 1.0 {
        format!("{width:.1} s")
    } else if width >= 1e-3 {
        format!("{:.1} ms", width * 1e3)
    } else {
        format!("{:.1} µs", width * 1e6)
    }
}
