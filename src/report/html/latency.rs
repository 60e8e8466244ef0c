//! The latency charts of the HTML page, plain SVG: each complete exchange's latency over
//! time (a dot per exchange, in its broker's colour, on a logarithmic scale; past
//! [`MAX_DOTS`], a line per broker and column of time from its least to its most), their
//! distribution (a bar per power-of-two bin of microseconds) with the report's p50, p90
//! and p99 marked, and the same per broker in small multiples with the broker's p50 and
//! p99. Bounded by the columns and brokers, whatever the capture holds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::bins::{Cell, Held, OneByOne, Placed};
use super::esc;
use super::svg::open_figure;
use crate::report::model::{Broker, Latency};

/// Dots drawn; past them the chart draws columns of time.
pub const MAX_DOTS: usize = 4000;
/// Brokers with a distribution of their own; past them the page says how many more.
const MAX_SMALL_MULTIPLES: usize = 24;
/// Bins of the distribution: 2^0 .. 2^40 microseconds.
const BINS: usize = 41;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 50.0;

/// A complete exchange's latency.
pub struct Dot {
    /// Seconds since the epoch, of the request.
    pub at: f64,
    pub us: f64,
    pub broker: Option<i32>,
    /// The request's time as the report writes it, and its frame.
    pub time: String,
    pub frame: u64,
}

/// A broker's latencies in one column of time.
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
        self.broker
    }
}

impl From<Dot> for Spread {
    fn from(d: Dot) -> Self {
        Self {
            least: d.us,
            most: d.us,
            held: Held::one(d.at, d.time, d.frame),
        }
    }
}

pub struct Latencies {
    dots: OneByOne<Dot, Option<i32>, Spread>,
    count: u64,
    span: Option<(f64, f64)>,
    /// The first and last requests' times, as the report writes them.
    span_times: (String, String),
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
            span_times: Default::default(),
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
        let Dot { at, us, broker, .. } = dot;
        if !us.is_finite() || !at.is_finite() {
            return;
        }
        self.count += 1;
        self.bins.add(us);
        if let Some(b) = broker {
            if self.per_broker.len() < super::svg::MAX_BROKERS || self.per_broker.contains_key(&b) {
                self.per_broker.entry(b).or_default().add(us);
            }
        }
        let span = self.span.get_or_insert_with(|| {
            self.span_times = (dot.time.clone(), dot.time.clone());
            (at, at)
        });
        if at < span.0 {
            self.span_times.0 = dot.time.clone();
        }
        if at > span.1 {
            self.span_times.1 = dot.time.clone();
        }
        *span = (span.0.min(at), span.1.max(at));
        self.most = self.most.max(us);
        let span = *span;
        self.dots.add(dot, span);
    }

    /// The charts, or a sentence when no exchange completed.
    pub fn svg(
        &self,
        colours: &BTreeMap<i32, &'static str>,
        summary: Option<&Latency>,
        brokers: &BTreeMap<i32, Broker>,
    ) -> String {
        if self.count == 0 {
            return "<p id=\"latency\">No exchange completed: no latency to draw.</p>\n".into();
        }
        let mut s = String::new();
        self.over_time(&mut s, colours);
        self.distribution(&mut s, summary);
        self.small_multiples(&mut s, colours, brokers);
        s
    }

    fn over_time(&self, s: &mut String, colours: &BTreeMap<i32, &'static str>) {
        let (t0, t1) = self.span.unwrap_or((0.0, 1.0));
        let span = (t1 - t0).max(1e-3);
        let top = self.most.max(1.0).log10().ceil().max(1.0);
        let x = |t: f64| LEFT + (t - t0) / span * (WIDTH - LEFT - RIGHT);
        let y = |us: f64| HEIGHT - BOTTOM - us.max(1.0).log10() / top * (HEIGHT - TOP - BOTTOM);
        let how = if self.dots.bins().is_some() {
            "a line per broker and column of time, from the least to the most"
        } else {
            "a dot each"
        };
        let title = format!(
            "Latency of {} complete exchanges over time, logarithmic: {how}",
            self.count
        );
        let mut legend = String::new();
        let above = super::svg::legend(&mut legend, colours, Vec::new());
        open_figure(s, "latency-over-time", (WIDTH, HEIGHT + above), &title);
        s.push_str(&legend);
        let _ = writeln!(s, "<g transform=\"translate(0 {above})\">");
        axes(s, "time of the request (UTC)", "latency (µs, log)");
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{:.1}\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            HEIGHT - BOTTOM + 16.0,
            esc(&self.span_times.0),
            WIDTH - RIGHT,
            HEIGHT - BOTTOM + 16.0,
            esc(&self.span_times.1)
        );
        for decade in 0..=top as u32 {
            let us = 10f64.powi(decade as i32);
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{us}</text>",
                LEFT - 6.0,
                y(us) + 4.0
            );
        }
        let colour = |broker: &Option<i32>| {
            broker
                .and_then(|b| colours.get(&b).copied())
                .unwrap_or("#444")
        };
        let who = |broker: &Option<i32>| broker.map_or("?".to_owned(), |b| b.to_string());
        for Dot {
            at,
            us,
            broker,
            time,
            ..
        } in self.dots.each()
        {
            let _ = writeln!(
                s,
                "<circle class=\"latency\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"><title>broker {}: {us} µs, {}</title></circle>",
                x(*at),
                y(*us),
                colour(broker),
                who(broker),
                esc(time)
            );
        }
        if let Some(spreads) = self.dots.bins() {
            for (from, to, broker, sp) in spreads.cells() {
                let (top, bottom) = (y(sp.most), y(sp.least));
                let _ = writeln!(
                    s,
                    "<rect class=\"latency-bin\" x=\"{:.1}\" y=\"{:.1}\" width=\"2\" height=\"{:.1}\" fill=\"{}\"><title>broker {}: {} exchanges of {} to {} µs, requests in frames {} to {}, {} to {}</title></rect>",
                    (x(from) + x(to)) / 2.0 - 1.0,
                    top - 1.0,
                    bottom - top + 2.0,
                    colour(&broker),
                    who(&broker),
                    sp.held.count,
                    sp.least,
                    sp.most,
                    sp.held.frames.0,
                    sp.held.frames.1,
                    esc(&sp.held.first.1),
                    esc(&sp.held.last.1)
                );
            }
        }
        s.push_str("</g></svg>\n");
        if let Some(spreads) = self.dots.bins() {
            let _ = writeln!(
                s,
                "<figcaption>The {} exchanges are more than {MAX_DOTS}, so each line spans one broker's latencies in a column of time; its title counts them.{} The JSON report lists every one.</figcaption>",
                self.count,
                if spreads.not_drawn > 0 {
                    format!(" {} are not drawn.", spreads.not_drawn)
                } else {
                    String::new()
                }
            );
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
            size: (WIDTH, HEIGHT),
            range: self.bins.range(),
            colour: "#0072B2",
        };
        plot.draw(s, title, &self.bins, &lines);
        s.push_str("</svg></figure>\n");
    }

    /// One small distribution per broker, on the same bins as the whole, with the
    /// broker's p50 and p99 from the report's broker table.
    fn small_multiples(
        &self,
        s: &mut String,
        colours: &BTreeMap<i32, &'static str>,
        brokers: &BTreeMap<i32, Broker>,
    ) {
        if self.per_broker.len() < 2 {
            return; // the whole is the one broker's
        }
        s.push_str("<h3>Per broker</h3>\n<div class=\"multiples\">\n");
        for (broker, bins) in self.per_broker.iter().take(MAX_SMALL_MULTIPLES) {
            let lines: Vec<(&str, f64)> = brokers
                .get(broker)
                .and_then(|b| b.latency_us)
                .map(|l| vec![("p50", l.p50), ("p99", l.p99)])
                .unwrap_or_default();
            let plot = Histogram {
                id: format!("latency-broker-{broker}"),
                size: (SMALL_WIDTH, SMALL_HEIGHT),
                range: self.bins.range(),
                colour: colours.get(broker).copied().unwrap_or("#444"),
            };
            let title = format!("Broker {broker}: distribution of its latencies, with p50 and p99");
            plot.draw(s, &title, bins, &lines);
            let _ = writeln!(
                s,
                "<text x=\"{LEFT}\" y=\"14\" font-weight=\"bold\">broker {broker}</text></svg></figure>"
            );
        }
        s.push_str("</div>\n");
        let more = self.per_broker.len().saturating_sub(MAX_SMALL_MULTIPLES);
        if more > 0 {
            let _ = writeln!(
                s,
                "<p>And {more} more brokers, not drawn: the table below has their p50 and p99.</p>"
            );
        }
    }
}

const SMALL_WIDTH: f64 = 310.0;
const SMALL_HEIGHT: f64 = 170.0;

/// A histogram of latency bins (`range`: the first and last bin drawn).
struct Histogram {
    id: String,
    size: (f64, f64),
    range: (usize, usize),
    colour: &'static str,
}

impl Histogram {
    /// Opens the figure and draws the bars, their axes and the percentile lines; the
    /// caller closes the `<svg>` (after anything of its own) and the figure.
    fn draw(&self, s: &mut String, title: &str, bins: &Bins, lines: &[(&str, f64)]) {
        let (w, h) = self.size;
        let small = w < WIDTH;
        let (left, bottom) = if small { (40.0, 36.0) } else { (LEFT, BOTTOM) };
        let (first, last) = self.range;
        let n = (last - first + 1) as f64;
        let plot_w = w - left - RIGHT;
        let most = bins.0.iter().copied().max().unwrap_or(1).max(1);
        let bar_w = plot_w / n;
        let x = |us: f64| left + (us.max(1.0).log2() - first as f64) / n * plot_w;
        open_figure(s, &self.id, self.size, title);
        let (y0, x1) = (h - bottom, w - RIGHT);
        let _ = writeln!(
            s,
            "<g class=\"axes\" stroke=\"#333\"><line x1=\"{left}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\"/><line x1=\"{left}\" y1=\"{TOP}\" x2=\"{left}\" y2=\"{y0}\"/></g>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">latency (µs, bins doubling in width)</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{most}</text><text x=\"{:.1}\" y=\"{y0}\" text-anchor=\"end\">0</text>",
            (left + x1) / 2.0,
            h - 6.0,
            left - 4.0,
            TOP + 8.0,
            left - 4.0,
        );
        if !small {
            let _ = writeln!(
                s,
                "<text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">exchanges</text>",
                (TOP + y0) / 2.0
            );
        }
        let label_every = if small {
            (n / 4.0).ceil().max(1.0) as usize
        } else {
            1
        };
        for (i, count) in bins.0.iter().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (1u64 << i, 1u64 << (i + 1));
            let bx = left + (i - first) as f64 * bar_w;
            if (i - first) % label_every == 0 {
                let _ = writeln!(
                    s,
                    "<text x=\"{bx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{lo}</text>",
                    y0 + 14.0
                );
            }
            if *count == 0 {
                continue;
            }
            let bh = *count as f64 / most as f64 * (y0 - TOP);
            let _ = writeln!(
                s,
                "<rect class=\"bin\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{}\"><title>{count} exchanges from {lo} to {hi} µs</title></rect>",
                bx + 1.0,
                y0 - bh,
                (bar_w - 2.0).max(1.0),
                self.colour
            );
        }
        // the right edge: where the last bin ends
        let _ = writeln!(
            s,
            "<text x=\"{x1:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y0 + 14.0,
            1u64 << (last + 1).min(63)
        );
        for (k, (name, us)) in lines.iter().enumerate() {
            let px = x(*us).clamp(left, x1);
            let dash = ["2 2", "6 2", "10 3"].get(k).copied().unwrap_or("2 2");
            // labels near the right edge read leftwards
            let (lx, anchor) = if px > w - 160.0 {
                (px - 3.0, "end")
            } else {
                (px + 3.0, "start")
            };
            let _ = writeln!(
                s,
                "<line class=\"percentile\" x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{y0:.1}\" stroke=\"#c0392b\" stroke-dasharray=\"{dash}\"><title>{name}: {us} µs</title></line><text x=\"{lx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{name} {us} µs</text>",
                TOP + 10.0 + 12.0 * k as f64
            );
        }
    }
}

fn axes(s: &mut String, x_label: &str, y_label: &str) {
    let (x0, x1, y0) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM);
    let _ = writeln!(
        s,
        "<g class=\"axes\" stroke=\"#333\"><line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\"/><line x1=\"{x0}\" y1=\"{TOP}\" x2=\"{x0}\" y2=\"{y0}\"/></g>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{x_label}</text><text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{y_label}</text>",
        (x0 + x1) / 2.0,
        HEIGHT - 8.0,
        (TOP + y0) / 2.0
    );
}
