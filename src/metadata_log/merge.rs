//! Records from every file read -> one log in offset order. In: each record as an
//! [`Item`] (its place, a fingerprint of its bytes, what it says). Out: the counts and the
//! kept blocks, registrations and leader changes of [`MetadataLog`], each block's `start`
//! taken from the block before it. With several paths the same record at the same place
//! counts once; different records at one place keep the higher leader epoch's and are a
//! [`LogProblem::Divergent`]. With one path nothing can repeat, and records are counted
//! as they come; with several, every record's place and fingerprint is held until the end.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use super::metadata::{control_name, record_name, Decoded};
use super::{
    CommittedBlock, EpochBatches, LeaderChange, LogProblem, MetadataLog, RecordPlace, Registration,
};

/// Where a record sorts: its log offset; then log records before a snapshot's (whose
/// offset is the snapshot's last), then the record's offset inside the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub offset: i64,
    pub in_snapshot: bool,
    pub inner: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    Metadata {
        api_key: u32,
        decoded: Decoded,
    },
    /// `leader`: a LeaderChange's leader id and voters.
    Control {
        ty: i16,
        leader: Option<super::metadata::LeaderAndVoters>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub key: Key,
    /// A hash of the record's key and value: equal records, equal fingerprints.
    pub fingerprint: u64,
    pub place: RecordPlace,
    pub what: What,
}

impl Item {
    fn name(&self) -> String {
        match &self.what {
            What::Metadata { api_key, .. } => record_name(*api_key),
            What::Control { ty, .. } => control_name(*ty),
        }
    }
}

pub struct Merger {
    /// Several paths: records held by place until [`Merger::finish`].
    held: Option<BTreeMap<Key, Item>>,
    paths: Vec<String>,
    divergent: Vec<LogProblem>,
    max_kept: usize,
    records_by_type: BTreeMap<String, u64>,
    control_records: BTreeMap<String, u64>,
    blocks: Vec<(Key, CommittedBlock)>,
    registrations: Vec<(Key, Registration)>,
    unregistrations: Vec<(Key, (i32, RecordPlace))>,
    leader_changes: Vec<(Key, LeaderChange)>,
    epochs: BTreeMap<i32, EpochBatches>,
    not_kept: u64,
}

impl Merger {
    pub fn new(several: bool, max_kept: usize) -> Self {
        Self {
            held: several.then(BTreeMap::new),
            paths: Vec::new(),
            divergent: Vec::new(),
            max_kept,
            records_by_type: BTreeMap::new(),
            control_records: BTreeMap::new(),
            blocks: Vec::new(),
            registrations: Vec::new(),
            unregistrations: Vec::new(),
            leader_changes: Vec::new(),
            epochs: BTreeMap::new(),
            not_kept: 0,
        }
    }

    /// A segment's batch, appended by the leader of `epoch` at `time_ms`.
    pub fn batch(&mut self, epoch: i32, time_ms: i64) {
        if epoch < 0 {
            return;
        }
        let seen = self.epochs.entry(epoch).or_insert(EpochBatches {
            first_ms: time_ms,
            last_ms: time_ms,
            batches: 0,
        });
        seen.first_ms = seen.first_ms.min(time_ms);
        seen.last_ms = seen.last_ms.max(time_ms);
        seen.batches += 1;
        if self.epochs.len() > super::MAX_EPOCHS {
            self.epochs.pop_first();
        }
    }

    /// The index of a file about to be read, for its records' places.
    pub fn add_file(&mut self, path: &str) -> usize {
        self.paths.push(path.to_string());
        self.paths.len() - 1
    }

    fn describe(&self, item: &Item) -> String {
        let path = self
            .paths
            .get(item.place.file_idx)
            .map_or("?", String::as_str);
        format!(
            "{} in {path} (leader epoch {})",
            item.name(),
            item.place.leader_epoch
        )
    }

    pub fn push(&mut self, item: Item) {
        let Some(held) = self.held.as_mut() else {
            self.count(item);
            return;
        };
        match held.entry(item.key) {
            Entry::Vacant(v) => {
                v.insert(item);
            }
            Entry::Occupied(mut o) => {
                if o.get().fingerprint == item.fingerprint {
                    return; // the same record, from another log
                }
                // Snapshots of one id hold one state, but each node writes its own header
                // (its own time): the first read stands for all, and no log diverged.
                if item.key.in_snapshot {
                    return;
                }
                let (kept, dropped) = if item.place.leader_epoch > o.get().place.leader_epoch {
                    let old = o.insert(item);
                    (o.get().clone(), old)
                } else {
                    (o.get().clone(), item)
                };
                let problem = LogProblem::Divergent {
                    offset: kept.key.offset,
                    kept: self.describe(&kept),
                    dropped: self.describe(&dropped),
                };
                self.divergent.push(problem);
            }
        }
    }

    fn kept_full(&self) -> bool {
        self.blocks
            .len()
            .saturating_add(self.registrations.len())
            .saturating_add(self.unregistrations.len())
            >= self.max_kept
    }

    fn count(&mut self, item: Item) {
        let name = item.name();
        let place = item.place;
        match item.what {
            What::Metadata { decoded, .. } => {
                *self.records_by_type.entry(name).or_default() += 1;
                match decoded {
                    Decoded::Other => {}
                    _ if self.kept_full() => self.not_kept += 1,
                    Decoded::Block {
                        broker_id,
                        broker_epoch,
                        next_producer_id,
                    } => self.blocks.push((
                        item.key,
                        CommittedBlock {
                            broker_id,
                            broker_epoch,
                            next_producer_id,
                            start: None,
                            place,
                            from_snapshot: item.key.in_snapshot,
                        },
                    )),
                    Decoded::Registration {
                        broker_id,
                        broker_epoch,
                        endpoints,
                    } => self.registrations.push((
                        item.key,
                        Registration {
                            broker_id,
                            broker_epoch,
                            endpoints,
                            place,
                        },
                    )),
                    Decoded::Unregistration { broker_id, .. } => {
                        self.unregistrations.push((item.key, (broker_id, place)));
                    }
                }
            }
            What::Control { leader, .. } => {
                *self.control_records.entry(name).or_default() += 1;
                if let Some((leader_id, voters)) = leader {
                    if self.leader_changes.len() >= self.max_kept {
                        self.not_kept += 1;
                    } else {
                        self.leader_changes.push((
                            item.key,
                            LeaderChange {
                                leader_id,
                                voters,
                                place,
                            },
                        ));
                    }
                }
            }
        }
    }

    /// Fills `log`'s records.
    pub fn finish(mut self, log: &mut MetadataLog) {
        if let Some(held) = self.held.take() {
            for item in held.into_values() {
                self.count(item);
            }
        }
        self.blocks.sort_by_key(|(k, _)| *k);
        self.registrations.sort_by_key(|(k, _)| *k);
        self.unregistrations.sort_by_key(|(k, _)| *k);
        self.leader_changes.sort_by_key(|(k, _)| *k);
        // a record names only the end of its block; Kafka fixes the size
        for (_, block) in &mut self.blocks {
            block.start = block
                .next_producer_id
                .checked_sub(super::PRODUCER_ID_BLOCK_SIZE)
                .filter(|start| *start >= 0);
        }
        log.records_by_type = self.records_by_type;
        log.control_records = self.control_records;
        log.blocks = self.blocks.into_iter().map(|(_, b)| b).collect();
        log.registrations = self.registrations.into_iter().map(|(_, r)| r).collect();
        log.unregistrations = self.unregistrations.into_iter().map(|(_, u)| u).collect();
        log.leader_changes = self.leader_changes.into_iter().map(|(_, l)| l).collect();
        log.epochs = self.epochs;
        log.not_kept = self.not_kept;
        log.problems.extend(self.divergent);
    }
}
