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
