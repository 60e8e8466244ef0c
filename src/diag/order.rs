//! Diagnostics found in parts, on several threads, put back together in the order one
//! thread would have found them.
//!
//! With `--threads`, the capture thread and each worker collect their own
//! [`Diagnostics`], each told where in the run it is ([`Diagnostics::place_at`]): the
//! packet, the stage of that packet's work, and at the end of the capture the connection
//! being closed. [`Diagnostics::merge_in_order`] then lists them as if found in that
//! order, and lists the same ones: a part lists the first [`MAX_LISTED_PER_KIND`] of a
//! kind it found, and whatever came before the thousandth of the whole run was among
//! the first thousand of its part, so every diagnostic the whole run lists is at hand.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{Diagnostic, Diagnostics, Kind, MAX_LISTED_PER_KIND};

/// Which part of a packet's work raised a diagnostic: on one thread, the capture
/// thread's own stages (reading, decoding, IP fragments, copies) come before the
/// connection's (reassembly, Kafka, pairing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Stage {
    #[default]
    Capture,
    Connection,
}

/// Where in the run a diagnostic was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Place {
    /// Packets taken before it ([`Place::END`] once every packet is read).
    pub packet: u64,
    pub stage: Stage,
    /// At the end: the connection being closed (connections close in their order).
    pub connection: u64,
}

impl Place {
    /// Once every packet is read.
    pub const END: u64 = u64::MAX;
}

/// Where each listed diagnostic of a part was found.
#[derive(Debug, Default)]
pub(super) struct Places {
    current: Place,
    /// One per listed item.
    listed: Vec<Place>,
    /// What every part found so far, and which part this is.
    found: Option<(Arc<Found>, usize)>,
}

/// What the parts of a run found so far, kind by kind, shared between them: a part
/// need not list (only count) a diagnostic that the whole run's first
/// [`MAX_LISTED_PER_KIND`] of its kind already come before. Without it each of N
/// parts would list its own first thousand, N times what one thread holds.
#[derive(Debug)]
pub struct Found {
    /// Per part, per kind (in [`Kind::ALL`]'s order): how many of that kind the part
    /// found at packets before a packet, as `packet << COUNT_BITS | count`.
    parts: Vec<Vec<AtomicU64>>,
}

const COUNT_BITS: u32 = 16;
/// A packet past this is not published (it would not fit beside its count).
const MAX_PACKET: u64 = (1 << (64 - COUNT_BITS)) - 1;

impl Found {
    pub fn new(parts: usize) -> Arc<Self> {
        let kinds = || Kind::ALL.iter().map(|_| AtomicU64::new(0)).collect();
        Arc::new(Self {
            parts: (0..parts).map(|_| kinds()).collect(),
        })
    }

    /// Part `part` found `count` of `kind` at packets before `packet`.
    fn publish(&self, part: usize, kind: Kind, packet: u64, count: u64) {
        let slot = self.parts.get(part).and_then(|p| p.get(kind as usize));
        if let (Some(slot), true) = (slot, packet <= MAX_PACKET) {
            let count = count.min(MAX_LISTED_PER_KIND);
            slot.store(packet << COUNT_BITS | count, Ordering::Relaxed);
        }
    }

    /// How many of `kind` the parts are known to have found at packets before `packet`
    /// (each count and its packet are read together, as one word).
    fn before(&self, kind: Kind, packet: u64) -> u64 {
        let mut found = 0;
        for part in &self.parts {
            if let Some(slot) = part.get(kind as usize) {
                let word = slot.load(Ordering::Relaxed);
                if word >> COUNT_BITS <= packet {
                    found += word & ((1 << COUNT_BITS) - 1);
                }
            }
        }
        found
    }
}

impl Diagnostics {
    /// A collection for one part of the run: what it lists is placed with
    /// [`Diagnostics::place_at`], to be merged by [`Diagnostics::merge_in_order`].
    pub fn placed_part() -> Self {
        Self {
            places: Some(Box::default()),
            ..Self::default()
        }
    }

    /// A part that tells the others, through `found`, what it found (as part `part`),
    /// and lists nothing that the run's first thousand of its kind come before.
    pub fn placed_part_sharing(found: Arc<Found>, part: usize) -> Self {
        let mut diags = Self::placed_part();
        if let Some(places) = &mut diags.places {
            places.found = Some((found, part));
        }
        diags
    }

    /// Tells the other parts what this one has found so far, all of it at packets
    /// before `packet`.
    pub fn publish_found(&self, packet: u64) {
        let Some((found, part)) = self.places.as_ref().and_then(|p| p.found.as_ref()) else {
            return;
        };
        for (kind, count) in &self.counts {
            found.publish(*part, *kind, packet, *count);
        }
    }

    /// Whether the run's first [`MAX_LISTED_PER_KIND`] of `kind` are known to come
    /// before where this part is: found (by any part) at earlier packets.
    pub(super) fn listed_elsewhere(&self, kind: Kind) -> bool {
        let Some(places) = &self.places else {
            return false;
        };
        let Some((found, _)) = &places.found else {
            return false;
        };
        found.before(kind, places.current.packet) >= MAX_LISTED_PER_KIND
    }

    /// Where the diagnostics found from now on are, in a part.
    pub fn place_at(&mut self, place: Place) {
        if let Some(places) = &mut self.places {
            places.current = place;
        }
    }

    /// Notes where the item just listed was found, in a part.
    pub(super) fn placed(&mut self) {
        if let Some(places) = &mut self.places {
            places.listed.push(places.current);
        }
    }

    /// Gives a part's connections the numbers of the whole run.
    pub fn renumber(&mut self, number: impl Fn(u64) -> u64) {
        for item in &mut self.items {
            item.connection = item.connection.map(&number);
        }
        if let Some(places) = &mut self.places {
            for place in &mut places.listed {
                if place.packet == Place::END && place.stage == Stage::Connection {
                    place.connection = number(place.connection);
                }
            }
        }
        self.open_wire = std::mem::take(&mut self.open_wire)
            .into_iter()
            .map(|((connection, kind), held)| ((number(connection), kind), held))
            .collect();
        self.lowered_connections = std::mem::take(&mut self.lowered_connections)
            .into_iter()
            .map(&number)
            .collect();
    }

    /// The parts' diagnostics as one collection: counted in all, and listed as one
    /// collection would have listed them had it found them all in the order of their
    /// places (ties in the order of `parts`, then of each part).
    pub fn merge_in_order(parts: Vec<Self>) -> Self {
        let mut merged = Self::default();
        let mut found = Vec::new();
        for (part_index, mut part) in parts.into_iter().enumerate() {
            merged.add_counts(&mut part);
            let places = part.places.take().map(|p| p.listed).unwrap_or_default();
            let mut places = places.into_iter();
            let listed = part.items.into_iter().zip(part.apis);
            for (item_index, (item, api)) in listed.enumerate() {
                // an unplaced part (none is) would sort first, as found before the run
                let place = places.next().unwrap_or_default();
                found.push(((place, part_index, item_index), api, item));
            }
        }
        found.sort_unstable_by_key(|(order, _, _)| *order);
        for (api, item) in listed_as_one(found.into_iter().map(|(_, api, item)| (api, item))) {
            merged.items.push(item);
            merged.apis.push(api);
        }
        merged
    }

    /// Adds what `part` counted, and the wire warnings it holds.
    fn add_counts(&mut self, part: &mut Self) {
        for (kind, n) in std::mem::take(&mut part.counts) {
            *self.counts.entry(kind).or_default() += n;
        }
        for (key, n) in std::mem::take(&mut part.undecoded_by_api) {
            *self.undecoded_by_api.entry(key).or_default() += n;
        }
        for (key, n) in std::mem::take(&mut part.lowered) {
            *self.lowered.entry(key).or_default() += n;
        }
        for (key, (found, shown)) in std::mem::take(&mut part.open_wire) {
            let held = self.open_wire.entry(key).or_default();
            held.0 += found;
            held.1 += shown;
        }
        self.lowered_connections
            .append(&mut part.lowered_connections);
    }
}

/// Of the items the parts listed, in the run's order, those one collection lists: the
/// first [`MAX_LISTED_PER_KIND`] of each kind, or of each API for messages not read.
/// An item a part did not list has a thousand listed ones of its kind (or API) before
/// it, so counting the listed ones alone gives each its rank in the whole run.
fn listed_as_one(
    found: impl Iterator<Item = (Option<i16>, Diagnostic)>,
) -> Vec<(Option<i16>, Diagnostic)> {
    let mut of_kind: HashMap<Kind, u64> = HashMap::new();
    let mut of_api: HashMap<(Kind, i16), u64> = HashMap::new();
    let mut listed = Vec::new();
    for (api, item) in found {
        let rank_of_kind = of_kind.entry(item.kind).or_default();
        *rank_of_kind += 1;
        let rank = match api {
            Some(api) => {
                let rank_of_api = of_api.entry((item.kind, api)).or_default();
                *rank_of_api += 1;
                *rank_of_api
            }
            None => *rank_of_kind,
        };
        if rank <= MAX_LISTED_PER_KIND {
            listed.push((api, item));
        }
    }
    listed
}

#[cfg(test)]
mod tests;
