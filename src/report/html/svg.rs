//! The timeline of the HTML page, plain SVG: time across, producer ids up, a bar per block
//! in its broker's colour; overlaps and regressions outlined in the error colour (dashed,
//! so not by colour alone) over the ids concerned; gaps hatched; error responses and
//! requests without an answer as triangles on the time axis. Every mark has a `<title>`
//! with its facts, which is also the chart's text alternative.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::esc;
use crate::report::model::PidFinding;

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

#[derive(Default)]
pub struct Chart {
    pub blocks: Vec<Drawn>,
    /// Blocks past those drawn.
    pub not_drawn: u64,
    pub marks: Vec<Mark>,
    pub findings: Vec<PidFinding>,
}

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
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 60.0;

struct Scale {
    t0: f64,
    t1: f64,
    top_id: f64,
}

impl Scale {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.t0) / (self.t1 - self.t0) * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, id: f64) -> f64 {
        HEIGHT - BOTTOM - id / self.top_id * (HEIGHT - TOP - BOTTOM)
    }
}

impl Chart {
    fn scale(&self) -> Scale {
        let times = self
            .blocks
            .iter()
            .map(|b| b.at)
            .chain(self.marks.iter().map(|m| m.at));
        let (t0, t1) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
            (a.min(t), b.max(t))
        });
        let (t0, t1) = if t0.is_finite() { (t0, t1) } else { (0.0, 1.0) };
        let pad = ((t1 - t0) * 0.02).max(1e-3);
        let top_id = self.blocks.iter().map(|b| b.end).max().unwrap_or(0).max(1) as f64 * 1.05;
        Scale {
            t0: t0 - pad,
            t1: t1 + pad,
            top_id,
        }
    }

    pub fn colours(&self) -> BTreeMap<i32, &'static str> {
        let mut brokers: Vec<i32> = self.blocks.iter().map(|b| b.broker).collect();
        brokers.extend(self.marks.iter().filter_map(|m| m.broker));
        brokers.sort_unstable();
        brokers.dedup();
        brokers
            .into_iter()
            .enumerate()
            .map(|(i, b)| (b, PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#444")))
            .collect()
    }

    /// The whole chart, a `<figure>` with the SVG and what was left out.
    pub fn svg(&self) -> String {
        let mut s = String::new();
        if self.blocks.is_empty() && self.marks.is_empty() {
            return "<p id=\"timeline\">No block was granted, and no request failed.</p>\n".into();
        }
        let scale = self.scale();
        let colours = self.colours();
        let title = format!(
            "Producer-ID blocks over time: {} blocks drawn, {} failed requests",
            self.blocks.len(),
            self.marks.len()
        );
        open_figure(&mut s, "timeline", (WIDTH, HEIGHT), &title);
        let _ = writeln!(
            s,
            "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#888\" stroke-width=\"2\"/></pattern></defs>"
        );
        self.axes(&mut s, &scale);
        for b in &self.blocks {
            let colour = colours.get(&b.broker).copied().unwrap_or("#444");
            let (y0, y1) = (scale.y(b.start as f64), scale.y(b.end as f64 + 1.0));
            let _ = writeln!(
                s,
                "<rect class=\"block\" x=\"{:.1}\" y=\"{:.1}\" width=\"5\" height=\"{:.1}\" fill=\"{colour}\"><title>broker {}: ids {}..={}, frames {} and {}, {}</title></rect>",
                scale.x(b.at) - 2.5,
                y1,
                (y0 - y1).max(1.0),
                b.broker,
                b.start,
                b.end,
                b.frames.0,
                b.frames.1,
                esc(&b.time)
            );
        }
        self.findings_marks(&mut s, &scale);
        for m in &self.marks {
            let colour = m
                .broker
                .and_then(|b| colours.get(&b).copied())
                .unwrap_or("#444");
            let (x, y) = (scale.x(m.at), HEIGHT - BOTTOM + 4.0);
            let broker = m.broker.map_or("?".to_owned(), |b| b.to_string());
            let _ = writeln!(
                s,
                "<path class=\"failed\" d=\"M{:.1} {y:.1} l5 9 h-10 z\" fill=\"{colour}\" stroke=\"{ERROR}\"><title>broker {broker}: {} (frame {}, {})</title></path>",
                x,
                esc(&m.what),
                m.frame,
                esc(&m.time)
            );
        }
        self.legend(&mut s, &colours);
        s.push_str("</svg>\n");
        if self.not_drawn > 0 {
            let _ = writeln!(
                s,
                "<figcaption>The first {} blocks are drawn; {} later ones are not (the JSON report lists every block).</figcaption>",
                self.blocks.len(),
                self.not_drawn
            );
        }
        s.push_str("</figure>\n");
        s
    }

    fn axes(&self, s: &mut String, scale: &Scale) {
        let (x0, x1, y0) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM);
        let _ = writeln!(
            s,
            "<g class=\"axes\" stroke=\"#333\"><line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\"/><line x1=\"{x0}\" y1=\"{TOP}\" x2=\"{x0}\" y2=\"{y0}\"/></g>"
        );
        let top = scale.top_id / 1.05;
        for id in [0.0, top / 2.0, top] {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}</text>",
                x0 - 6.0,
                scale.y(id) + 4.0,
                id
            );
        }
        let first = self.blocks.first().map(|b| b.time.as_str());
        let last = self.blocks.last().map(|b| b.time.as_str());
        if let (Some(first), Some(last)) = (first, last) {
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
            let fact = |name: &str| match f.facts.get(name) {
                Some(crate::diag::Fact::Int(v)) => Some(*v as f64),
                Some(crate::diag::Fact::Uint(v)) => Some(*v as f64),
                _ => None,
            };
            let Some(frame) = fact("frame") else { continue };
            let Some(at) = self.blocks.iter().find(|b| b.frames.1 as f64 == frame) else {
                continue;
            };
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
                scale.x(at.at) - 6.5,
                y1,
                (y0 - y1).max(2.0),
                f.kind,
                esc(&f.message)
            );
        }
    }

    fn legend(&self, s: &mut String, colours: &BTreeMap<i32, &'static str>) {
        let mut x = LEFT;
        let y = 12.0;
        for (broker, colour) in colours {
            let _ = write!(
                s,
                "<rect class=\"legend\" x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{y}\">broker {broker}</text>",
                y - 9.0,
                x + 14.0
            );
            x += 80.0;
        }
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"{ERROR}\" stroke-dasharray=\"4 2\"/><text x=\"{}\" y=\"{y}\">overlap or regression</text><path d=\"M{} {} l5 9 h-10 z\" fill=\"#fff\" stroke=\"{ERROR}\"/><text x=\"{}\" y=\"{y}\">error or no answer</text>",
            y - 9.0,
            x + 14.0,
            x + 170.0,
            y - 9.0,
            x + 180.0
        );
    }
}
