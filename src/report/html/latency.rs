//! The latency charts of the HTML page, plain SVG: each complete exchange's latency over
//! time (a dot per exchange, in its broker's colour, on a logarithmic scale), and their
//! distribution (a bar per power-of-two bin of microseconds) with the report's p50, p90
//! and p99 marked. Bounded: at most [`MAX_DOTS`] dots; the bins count every exchange.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::svg::open_figure;
use crate::report::model::Latency;

/// Dots drawn; past them the page says how many were not.
pub const MAX_DOTS: usize = 4000;
/// Bins of the distribution: 2^0 .. 2^40 microseconds.
const BINS: usize = 41;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 50.0;

pub struct Latencies {
    /// (seconds since the epoch of the request, latency µs, broker)
    dots: Vec<(f64, f64, Option<i32>)>,
    not_drawn: u64,
    bins: [u64; BINS],
}

impl Default for Latencies {
    fn default() -> Self {
        Self {
            dots: Vec::new(),
            not_drawn: 0,
            bins: [0; BINS],
        }
    }
}

fn bin(us: f64) -> usize {
    let b = if us <= 1.0 { 0.0 } else { us.log2().floor() };
    (b as usize).min(BINS - 1)
}

impl Latencies {
    pub fn add(&mut self, at: f64, us: f64, broker: Option<i32>) {
        if !us.is_finite() {
            return;
        }
        if let Some(count) = self.bins.get_mut(bin(us)) {
            *count += 1;
        }
        if self.dots.len() < MAX_DOTS {
            self.dots.push((at, us, broker));
        } else {
            self.not_drawn += 1;
        }
    }

    /// Both charts, or a sentence when no exchange completed.
    pub fn svg(&self, colours: &BTreeMap<i32, &'static str>, summary: Option<&Latency>) -> String {
        if self.dots.is_empty() {
            return "<p id=\"latency\">No exchange completed: no latency to draw.</p>\n".into();
        }
        let mut s = String::new();
        self.over_time(&mut s, colours);
        self.distribution(&mut s, summary);
        s
    }

    fn over_time(&self, s: &mut String, colours: &BTreeMap<i32, &'static str>) {
        let (t0, t1) = self
            .dots
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), d| {
                (a.min(d.0), b.max(d.0))
            });
        let span = (t1 - t0).max(1e-3);
        let top = self
            .dots
            .iter()
            .map(|d| d.1)
            .fold(1.0f64, f64::max)
            .log10()
            .ceil()
            .max(1.0);
        let x = |t: f64| LEFT + (t - t0) / span * (WIDTH - LEFT - RIGHT);
        let y = |us: f64| HEIGHT - BOTTOM - us.max(1.0).log10() / top * (HEIGHT - TOP - BOTTOM);
        let title = format!(
            "Latency of {} complete exchanges over time, logarithmic",
            self.dots.len()
        );
        open_figure(s, "latency-over-time", (WIDTH, HEIGHT), &title);
        axes(s, "time of the request", "latency (µs, log)");
        for decade in 0..=top as u32 {
            let us = 10f64.powi(decade as i32);
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{us}</text>",
                LEFT - 6.0,
                y(us) + 4.0
            );
        }
        for (at, us, broker) in &self.dots {
            let colour = broker
                .and_then(|b| colours.get(&b).copied())
                .unwrap_or("#444");
            let who = broker.map_or("?".to_owned(), |b| b.to_string());
            let _ = writeln!(
                s,
                "<circle class=\"latency\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{colour}\"><title>broker {who}: {us} µs</title></circle>",
                x(*at),
                y(*us)
            );
        }
        s.push_str("</svg>\n");
        if self.not_drawn > 0 {
            let _ = writeln!(
                s,
                "<figcaption>The first {} exchanges are drawn; {} later ones are not.</figcaption>",
                self.dots.len(),
                self.not_drawn
            );
        }
        s.push_str("</figure>\n");
    }

    fn distribution(&self, s: &mut String, summary: Option<&Latency>) {
        let first = self.bins.iter().position(|c| *c > 0).unwrap_or(0);
        let last = self.bins.iter().rposition(|c| *c > 0).unwrap_or(0);
        let most = self.bins.iter().copied().max().unwrap_or(1).max(1) as f64;
        let n = (last - first + 1) as f64;
        let width = (WIDTH - LEFT - RIGHT) / n;
        let x = |us: f64| LEFT + ((us.max(1.0).log2()) - first as f64) / n * (WIDTH - LEFT - RIGHT);
        let title =
            "Distribution of the latencies, in bins doubling in width, with p50, p90 and p99";
        open_figure(s, "latency-distribution", (WIDTH, HEIGHT), title);
        axes(s, "latency (µs, bins doubling in width)", "exchanges");
        for (i, count) in self.bins.iter().enumerate().take(last + 1).skip(first) {
            if *count == 0 {
                continue;
            }
            let h = *count as f64 / most * (HEIGHT - TOP - BOTTOM);
            let (lo, hi) = (1u64 << i, 1u64 << (i + 1));
            let _ = writeln!(
                s,
                "<rect class=\"bin\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#0072B2\"><title>{count} exchanges from {lo} to {hi} µs</title></rect>",
                LEFT + (i - first) as f64 * width + 1.0,
                HEIGHT - BOTTOM - h,
                (width - 2.0).max(1.0)
            );
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{lo}</text>",
                LEFT + (i - first) as f64 * width,
                HEIGHT - BOTTOM + 14.0
            );
        }
        if let Some(l) = summary {
            for (name, us, dash) in [
                ("p50", l.p50, "2 2"),
                ("p90", l.p90, "6 2"),
                ("p99", l.p99, "10 3"),
            ] {
                let px = x(us).clamp(LEFT, WIDTH - RIGHT);
                // labels near the right edge read leftwards
                let (lx, anchor) = if px > WIDTH - 160.0 {
                    (px - 3.0, "end")
                } else {
                    (px + 3.0, "start")
                };
                let _ = writeln!(
                    s,
                    "<line class=\"percentile\" x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#c0392b\" stroke-dasharray=\"{dash}\"><title>{name}: {us} µs</title></line><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{name} {us} µs</text>",
                    HEIGHT - BOTTOM,
                    lx,
                    TOP + 10.0 + match name { "p50" => 0.0, "p90" => 12.0, _ => 24.0 }
                );
            }
        }
        s.push_str("</svg></figure>\n");
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
