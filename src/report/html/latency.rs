//! The latency charts of the HTML page, plain SVG as wide as the window: each complete
//! exchange's latency over time (a dot per exchange, in its broker's colour, on a
//! logarithmic scale; past [`MAX_DOTS`], a line per broker and column of time from its
//! least to its most), their distribution (a bar per power-of-two bin of microseconds)
//! with the report's p50, p90 and p99 marked, and the same per broker told apart in small
//! multiples with the broker's p50 and p99 (and one for the grey brokers together).
//! Bounded by the columns and the dozen series, whatever the capture holds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::bins::{Cell, Held, OneByOne, Placed};
use super::esc;
use super::groups::{Group, Groups};
use super::svg::{open_svg, pct, seconds, time_axis, ERROR};
use crate::report::model::{Broker, Latency};
use crate::timestamp::Timestamp;

/// Dots drawn; past them the chart draws columns of time.
pub const MAX_DOTS: usize = 4000;
/// Bins of the distribution: 2^0 .. 2^40 microseconds.
const BINS: usize = 41;

const HEIGHT: f64 = 262.0;
const TOP: f64 = 8.0;
/// Rows of the percentile labels, apart by more than a label's height.
const LABEL_STEP: f64 = 15.0;
/// The x axis.
const BOTTOM: f64 = 200.0;

/// A complete exchange's latency.
pub struct Dot {
    /// Seconds since the epoch, of the request.
    pub at: f64,
    pub us: f64,
    pub broker: Option<i32>,
    /// The broker when the charts keep it apart.
    pub series: Option<i32>,
    /// The request's time and frame.
    pub time: Timestamp,
    pub frame: u64,
}

/// A broker's latencies in one column of time.
#[derive(Clone)]
pub struct Spread {
    /// Frames: of the requests.
    held: Held,
    least: f64,
    most: f64,
}

impl Cell for Spread {
    fn merge(&mut self, other: Self) {
        self.held.merge(other.held);
        self.least = self.least.min(other.least);
        self.most = self.most.max(other.most);
    }
}

impl Placed<Option<i32>> for Dot {
    fn at(&self) -> f64 {
        self.at
    }
    fn series(&self) -> Option<i32> {
        self.series
    }
}

impl From<Dot> for Spread {
    fn from(d: Dot) -> Self {
        Self {
            least: d.us,
            most: d.us,
            held: Held::one(d.time, d.frame),
        }
    }
}

pub struct Latencies {
    dots: OneByOne<Dot, Option<i32>, Spread>,
    count: u64,
    span: Option<(f64, f64)>,
    most: f64,
    bins: Bins,
    per_broker: BTreeMap<i32, Bins>,
}

impl Default for Latencies {
    fn default() -> Self {
        Self {
            dots: OneByOne::new(MAX_DOTS),
            count: 0,
            span: None,
            most: 0.0,
            bins: Bins::default(),
            per_broker: BTreeMap::new(),
        }
    }
}

/// Exchanges by power-of-two bin of microseconds.
#[derive(Clone)]
struct Bins([u64; BINS]);

impl Default for Bins {
    fn default() -> Self {
        Self([0; BINS])
    }
}

impl Bins {
    fn add(&mut self, us: f64) {
        if let Some(count) = self.0.get_mut(bin(us)) {
            *count += 1;
        }
    }

    /// The first and last bins that count anything.
    fn range(&self) -> (usize, usize) {
        let first = self.0.iter().position(|c| *c > 0).unwrap_or(0);
        let last = self.0.iter().rposition(|c| *c > 0).unwrap_or(0);
        (first, last)
    }
}

fn bin(us: f64) -> usize {
    let b = if us <= 1.0 { 0.0 } else { us.log2().floor() };
    (b as usize).min(BINS - 1)
}

impl Latencies {
    pub fn add(&mut self, dot: Dot) {
        let Dot { at, us, series, .. } = dot;
        if !us.is_finite() || !at.is_finite() {
            return;
        }
        self.count += 1;
        self.bins.add(us);
        if let Some(b) = series {
            self.per_broker.entry(b).or_default().add(us);
        }
        let span = self.span.get_or_insert((at, at));
        *span = (span.0.min(at), span.1.max(at));
        self.most = self.most.max(us);
        let span = *span;
        self.dots.add(dot, span);
    }

    /// The charts, or a sentence when no exchange completed; `filtered`: they hold only
    /// the exchanges the filters let through.
    pub fn svg(
        &self,
        groups: &Groups,
        summary: Option<&Latency>,
        brokers: &BTreeMap<i32, Broker>,
        filtered: bool,
    ) -> String {
        if self.count == 0 {
            return match filtered {
                true => "<p id=\"latency\">No exchange shown completed: no latency to draw.</p>\n",
                false => "<p id=\"latency\">No exchange completed: no latency to draw.</p>\n",
            }
            .into();
        }
        let mut s = String::new();
        self.over_time(&mut s, groups);
        self.distribution(&mut s, summary);
        self.small_multiples(&mut s, groups, brokers);
        s
    }

    fn over_time(&self, s: &mut String, groups: &Groups) {
        let (t0, t1) = self.span.unwrap_or((0.0, 1.0));
        let pad = ((t1 - t0) * 0.02).max(1e-3);
        let (t0, t1) = (t0 - pad, t1 + pad);
        let top = self.most.max(1.0).log10().ceil().max(1.0);
        let x = |t: f64| pct((t - t0) / (t1 - t0));
        let y = |us: f64| BOTTOM - us.max(1.0).log10() / top * (BOTTOM - TOP);
        let how = if self.dots.bins().is_some() {
            "a line per broker and column of time, from the least to the most"
        } else {
            "a dot each"
        };
        let title = format!(
            "Latency of {} complete exchanges over time, logarithmic: {how}",
            self.count
        );
        s.push_str("<figure class=\"chart\">\n");
        groups.key(s, "");
        open_svg(s, "latency-over-time", HEIGHT, &title);
        time_axis(s, (t0, t1), (TOP, BOTTOM), "the request");
        let _ = writeln!(
            s,
            "<text transform=\"translate(-68 {:.1}) rotate(-90)\" text-anchor=\"middle\">latency (µs, log)</text>",
            (TOP + BOTTOM) / 2.0
        );
        for decade in 0..=top as u32 {
            let us = 10f64.powi(decade as i32);
            let _ = writeln!(
                s,
                "<text x=\"-6\" y=\"{:.1}\" text-anchor=\"end\">{us}</text>",
                y(us) + 4.0
            );
        }
        let who = |broker: &Option<i32>| broker.map_or("?".to_owned(), |b| b.to_string());
        for d in self.dots.each() {
            let _ = writeln!(
                s,
                "<circle class=\"latency\" cx=\"{}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"><title>broker {}: {} µs, {}</title></circle>",
                x(d.at),
                y(d.us),
                groups.colour(groups.of(d.series)),
                who(&d.broker),
                d.us,
                d.time.to_rfc3339()
            );
        }
        if let Some(spreads) = self.dots.bins() {
            let grouped = spreads.grouped(|series| groups.of(series));
            let mut cells: Vec<_> = grouped.cells().collect();
            cells.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.total_cmp(&b.0)));
            for (from, to, group, sp) in cells {
                let (top, bottom) = (y(sp.most), y(sp.least));
                let _ = writeln!(
                    s,
                    "<rect class=\"latency-bin\" x=\"{}\" y=\"{:.1}\" width=\"2\" height=\"{:.1}\" fill=\"{}\"><title>{}: {} exchanges of {} to {} µs, requests in frames {} to {}, {} to {}</title></rect>",
                    x((from + to) / 2.0),
                    top - 1.0,
                    bottom - top + 2.0,
                    groups.colour(group),
                    groups.name(group),
                    sp.held.count,
                    sp.least,
                    sp.most,
                    sp.held.frames.0,
                    sp.held.frames.1,
                    sp.held.first.to_rfc3339(),
                    sp.held.last.to_rfc3339()
                );
            }
        }
        s.push_str("</svg>\n");
        let mut said = Vec::new();
        if let Some(spreads) = self.dots.bins() {
            said.push(format!(
                "The {} exchanges are more than {MAX_DOTS}, so each line spans one broker's latencies (or the grey brokers') in a column of {}; its title counts them.",
                self.count,
                seconds(spreads.width())
            ));
            if spreads.not_drawn > 0 {
                said.push(format!(
                    "{} have no time to draw them at.",
                    spreads.not_drawn
                ));
            }
            said.push("The JSON report lists every one.".into());
        }
        if !said.is_empty() {
            let _ = writeln!(s, "<figcaption>{}</figcaption>", said.join(" "));
        }
        s.push_str("</figure>\n");
    }

    fn distribution(&self, s: &mut String, summary: Option<&Latency>) {
        let lines: Vec<(&str, f64)> = summary
            .map(|l| vec![("p50", l.p50), ("p90", l.p90), ("p99", l.p99)])
            .unwrap_or_default();
        let title =
            "Distribution of the latencies, in bins doubling in width, with p50, p90 and p99";
        let plot = Histogram {
            id: "latency-distribution".into(),
            height: HEIGHT,
            range: self.bins.range(),
            colour: "#0072B2",
            small: false,
        };
        s.push_str("<figure class=\"chart\">\n");
        plot.draw(s, title, &self.bins, &lines);
        s.push_str("</svg></figure>\n");
    }

    /// One small distribution per broker told apart, on the same bins as the whole, with
    /// the broker's p50 and p99 from the report's broker table; then the grey brokers'
    /// together (the whole less those drawn).
    fn small_multiples(&self, s: &mut String, groups: &Groups, brokers: &BTreeMap<i32, Broker>) {
        if self.per_broker.len() < 2 {
            return; // the whole is the one broker's
        }
        s.push_str("<h3>Per broker</h3>\n<div class=\"multiples\">\n");
        let mut rest = self.bins.clone();
        for broker in groups.named() {
            let Some(bins) = self.per_broker.get(&broker) else {
                continue; // no exchange of its completed
            };
            for (all, own) in rest.0.iter_mut().zip(bins.0) {
                *all -= own;
            }
            let lines: Vec<(&str, f64)> = brokers
                .get(&broker)
                .and_then(|b| b.latency_us)
                .map(|l| vec![("p50", l.p50), ("p99", l.p99)])
                .unwrap_or_default();
            let title = format!("Broker {broker}: distribution of its latencies, with p50 and p99");
            let colour = groups.colour(groups.of(Some(broker)));
            self.small(
                s,
                (
                    &format!("latency-broker-{broker}"),
                    &title,
                    &format!("broker {broker}"),
                ),
                bins,
                &lines,
                colour,
            );
        }
        if groups.others > 0 && rest.0.iter().any(|n| *n > 0) {
            let name = groups.name(Group::Other);
            let title = format!("The {name}: distribution of their latencies together");
            self.small(
                s,
                ("latency-brokers-other", &title, &name),
                &rest,
                &[],
                groups.colour(Group::Other),
            );
        }
        s.push_str("</div>\n");
    }

    /// A small multiple named `name` above it (not in the plot, where the axis labels
    /// and percentiles are).
    fn small(
        &self,
        s: &mut String,
        (id, title, name): (&str, &str, &str),
        bins: &Bins,
        lines: &[(&str, f64)],
        colour: &'static str,
    ) {
        let plot = Histogram {
            id: id.to_owned(),
            height: SMALL_HEIGHT,
            range: self.bins.range(),
            colour,
            small: true,
        };
        let _ = writeln!(
            s,
            "<figure class=\"chart small\">\n<figcaption class=\"who\">{}</figcaption>",
            esc(name)
        );
        plot.draw(s, title, bins, lines);
        s.push_str("</svg></figure>\n");
    }
}

const SMALL_HEIGHT: f64 = 170.0;

/// A histogram of latency bins (`range`: the first and last bin drawn).
struct Histogram {
    id: String,
    height: f64,
    range: (usize, usize),
    colour: &'static str,
    small: bool,
}

impl Histogram {
    /// Opens the `<svg>` and draws the bars, their axes and the percentile lines; the
    /// caller closes the `<svg>` (after anything of its own) and the figure.
    fn draw(&self, s: &mut String, title: &str, bins: &Bins, lines: &[(&str, f64)]) {
        let h = self.height;
        let bottom = if self.small { 36.0 } else { 50.0 };
        let (first, last) = self.range;
        let n = (last - first + 1) as f64;
        let most = bins.0.iter().copied().max().unwrap_or(1).max(1);
        let x = |us: f64| (us.max(1.0).log2() - first as f64) / n;
        open_svg(s, &self.id, h, title);
        let y0 = h - bottom;
        let _ = writeln!(
            s,
            "<g class=\"axes\" stroke=\"#333\"><line x1=\"0\" y1=\"{y0}\" x2=\"100%\" y2=\"{y0}\"/><line x1=\"0\" y1=\"{TOP}\" x2=\"0\" y2=\"{y0}\"/></g>\
             <text x=\"50%\" y=\"{:.1}\" text-anchor=\"middle\">latency (µs, bins doubling in width)</text>\
             <text x=\"-4\" y=\"{:.1}\" text-anchor=\"end\">{most}</text><text x=\"-4\" y=\"{y0}\" text-anchor=\"end\">0</text>",
            h - 6.0,
            TOP + 8.0,
        );
        if !self.small {
            let _ = writeln!(
                s,
                "<text transform=\"translate(-68 {:.1}) rotate(-90)\" text-anchor=\"middle\">exchanges</text>",
                (TOP + y0) / 2.0
            );
        }
        let label_every = if self.small {
            (n / 4.0).ceil().max(1.0) as usize
        } else {
            (n / 12.0).ceil().max(1.0) as usize
        };
        for (i, count) in bins.0.iter().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (1u64 << i, 1u64 << (i + 1));
            let bx = (i - first) as f64 / n;
            if (i - first) % label_every == 0 {
                let _ = writeln!(
                    s,
                    "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"middle\">{lo}</text>",
                    pct(bx),
                    y0 + 14.0
                );
            }
            if *count == 0 {
                continue;
            }
            let bh = *count as f64 / most as f64 * (y0 - TOP);
            let _ = writeln!(
                s,
                "<rect class=\"bin\" x=\"{}\" y=\"{:.1}\" width=\"{}\" height=\"{bh:.1}\" fill=\"{}\"><title>{count} exchanges from {lo} to {hi} µs</title></rect>",
                pct(bx + 0.1 / n),
                y0 - bh,
                pct(0.8 / n),
                self.colour
            );
        }
        // the right edge: where the last bin ends
        let _ = writeln!(
            s,
            "<text x=\"100%\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y0 + 14.0,
            1u64 << (last + 1).min(63)
        );
        for (k, (name, us)) in lines.iter().enumerate() {
            let px = x(*us).clamp(0.0, 1.0);
            let dash = ["2 2", "6 2", "10 3"].get(k).copied().unwrap_or("2 2");
            // labels in the right half read leftwards
            let (nudge, anchor) = if px > 0.6 { (-3, "end") } else { (3, "start") };
            let _ = writeln!(
                s,
                "<line class=\"percentile\" x1=\"{x}\" y1=\"{TOP}\" x2=\"{x}\" y2=\"{y0:.1}\" stroke=\"{ERROR}\" stroke-dasharray=\"{dash}\"><title>{name}: {us} µs</title></line><text x=\"{x}\" dx=\"{nudge}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{name} {us} µs</text>",
                TOP + 10.0 + LABEL_STEP * k as f64,
                x = pct(px),
            );
        }
    }
}
