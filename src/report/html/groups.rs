//! Which brokers the charts tell apart: up to a dozen, each its own colour; past a dozen,
//! the [`NAMED`] with the most trouble (failed requests and findings, then requests) and
//! one grey for all the others. Bounded whatever the cluster: a key of a dozen entries,
//! and the broker table says which colour each broker has.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::esc;
use crate::report::model::Report;

/// Colours told apart, the first seven Okabe and Ito's (safe with the common colour
/// blindnesses), then five of Paul Tol's.
pub const PALETTE: [&str; 12] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#882255",
    "#117733", "#332288", "#999933", "#44AA99",
];
/// The brokers not told apart.
pub const OTHER: &str = "#9a9a9a";
/// Brokers with a colour of their own when there are more than [`PALETTE`] has.
pub const NAMED: usize = PALETTE.len() - 1;

/// A series of the charts: a broker with its own colour (by rank), or the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Named(usize),
    Other,
}

/// A broker's trouble, by which brokers are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Trouble {
    /// Error responses, requests without an answer, and findings about it.
    pub faults: u64,
    pub requests: u64,
}

pub struct Groups {
    /// Every broker of the report, most trouble first (then by id).
    pub ranked: Vec<(i32, Trouble)>,
    /// Those with a colour of their own, and their rank among them.
    named: BTreeMap<i32, usize>,
    /// Brokers of the report without a colour of their own.
    pub others: usize,
}

impl Groups {
    /// `kept_apart`: the brokers the charts held apart (only those can be named).
    pub fn new(report: &Report, kept_apart: impl Fn(i32) -> bool) -> Self {
        let mut findings = BTreeMap::<i32, u64>::new();
        for f in &report.producer_id_blocks.findings {
            if let Some(b) = f.broker_id {
                *findings.entry(b).or_default() += 1;
            }
        }
        let mut ranked: Vec<(i32, Trouble)> = report
            .summary
            .brokers
            .iter()
            .map(|(id, b)| {
                let errors = b.error_responses();
                let faults = errors
                    + b.unanswered
                    + b.response_unknown
                    + findings.get(id).copied().unwrap_or(0);
                let trouble = Trouble {
                    faults,
                    requests: b.requests,
                };
                (*id, trouble)
            })
            .collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let room = if ranked.len() <= PALETTE.len() {
            PALETTE.len()
        } else {
            NAMED
        };
        let named: BTreeMap<i32, usize> = ranked
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| kept_apart(*id))
            .take(room)
            .enumerate()
            .map(|(rank, id)| (id, rank))
            .collect();
        let others = ranked.len() - named.len();
        Self {
            ranked,
            named,
            others,
        }
    }

    /// No broker told apart: every series grey.
    #[cfg(test)]
    pub fn none() -> Self {
        Self {
            ranked: Vec::new(),
            named: BTreeMap::new(),
            others: 0,
        }
    }

    pub fn of(&self, broker: Option<i32>) -> Group {
        broker
            .and_then(|b| self.named.get(&b))
            .map_or(Group::Other, |rank| Group::Named(*rank))
    }

    pub fn colour(&self, group: Group) -> &'static str {
        match group {
            Group::Named(rank) => PALETTE.get(rank).copied().unwrap_or(OTHER),
            Group::Other => OTHER,
        }
    }

    /// The brokers with a colour of their own, by rank.
    pub fn named(&self) -> Vec<i32> {
        let mut named: Vec<(usize, i32)> = self.named.iter().map(|(b, r)| (*r, *b)).collect();
        named.sort_unstable();
        named.into_iter().map(|(_, b)| b).collect()
    }

    /// What a series is called on the page.
    pub fn name(&self, group: Group) -> String {
        match group {
            Group::Named(rank) => self
                .named()
                .get(rank)
                .map_or("broker ?".into(), |b| format!("broker {b}")),
            Group::Other => self.others_name(),
        }
    }

    fn others_name(&self) -> String {
        match self.others {
            0 => "broker not known".into(),
            1 => "1 other broker".into(),
            n => format!("other {n} brokers"),
        }
    }

    /// The key of the charts' colours, as HTML: a dozen entries at most.
    pub fn key(&self, s: &mut String, more: &str) {
        s.push_str("<p class=\"key\">");
        for broker in self.named() {
            let colour = self.colour(self.of(Some(broker)));
            let _ = write!(
                s,
                "<span><i style=\"background:{colour}\"></i>broker {broker}</span> "
            );
        }
        if self.others > 0 {
            let _ = write!(
                s,
                "<span><i style=\"background:{OTHER}\"></i>{}</span> ",
                esc(&self.others_name())
            );
        }
        s.push_str(more);
        s.push_str("</p>\n");
    }

    /// Why these brokers have colours, when not every broker has one.
    pub fn why(&self) -> Option<String> {
        (self.others > 0).then(|| {
            format!(
                "The {} brokers are more than a dozen: the {} with the most failed requests and findings (then requests) have a colour each, the other {} are grey; the broker table gives each broker's.",
                self.ranked.len(),
                self.named.len(),
                self.others
            )
        })
    }
}
