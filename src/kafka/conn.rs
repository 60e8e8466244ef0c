//! Kafka state of one TCP connection. Each state owns what only it needs, as quinn-proto's
//! connection state does, so no field can disagree with the state: a connection being
//! probed has its framers and its trial, one read as Kafka has no trial, one given up
//! holds nothing.
//!
//! ```text
//! Unknown --first data--> Searching | Probing | Kafka (--port) | NotKafka
//! Searching | Probing --a request head--> OnTrial --proven--> Kafka
//! Searching | Probing | OnTrial --refuted, or the connection ends--> NotKafka
//! Unknown | Searching | Probing --TLS--> Encrypted
//! ```
//!
//! [`super::Dissector`] decides when a connection moves; the moves that only rearrange
//! what a state owns are here.

use std::num::NonZeroU64;

use super::allocate_producer_ids::{reads_as_block, LONGEST_BLOCK_ANSWER};
use super::framing::{Framer, MAX_HEAD_LEN};
use super::header::{response_correlation_id, REQUEST_HEAD_PREFIX_LEN, RESPONSE_PREFIX_LEN};
use super::message::Outbox;
use super::tables::ApiKey;
use super::trial::Trial;
use super::waiting::Waiting;
use super::KafkaFramer;
use super::MALLOC_OVERHEAD;
use crate::diag::Diagnostics;
use crate::tcp::Dir;

/// Kafka state of one TCP connection.
#[derive(Debug, Default)]
pub struct KafkaConn {
    /// Changed only by the methods below (`move_to_*`, `put_on_trial`, `prove`).
    state: State,
}

/// API key and correlation id of a connection's last request, to check candidate request
/// heads against.
pub type LastRequest = Option<(ApiKey, i32)>;

/// `client`, `last_request` and `apis` sit in each variant rather than in [`Streams`]:
/// there they share a word with the tag, and the state of every connection stays 152
/// bytes.
#[derive(Debug, Default)]
pub(super) enum State {
    /// No data seen yet.
    #[default]
    Unknown,
    /// Picked up mid-stream with nothing to tell the client: both directions look for a
    /// request head, and the first to show one is the client. What its frames give is
    /// held in the trial.
    Searching {
        last_request: LastRequest,
        apis: ApisRead,
        trial: Box<Trial>,
        streams: Streams,
    },
    /// The client is known (handshake seen, or guessed from the ports); its first
    /// request head will tell whether this is Kafka. What its frames give is held in the
    /// trial.
    Probing {
        client: Dir,
        last_request: LastRequest,
        apis: ApisRead,
        trial: Box<Trial>,
        streams: Streams,
    },
    /// Its first request head read as Kafka: every frame is read strictly, and held in
    /// the trial until enough of them prove it Kafka or one refutes it.
    OnTrial {
        client: Dir,
        last_request: LastRequest,
        apis: ApisRead,
        trial: Box<Trial>,
        streams: Streams,
    },
    /// Read as Kafka (counted in `kafka_connections`): its frames go to the report.
    Kafka {
        client: Dir,
        last_request: LastRequest,
        apis: ApisRead,
        streams: Streams,
    },
    /// Given up as not Kafka (and said so); nothing more is read.
    NotKafka,
    /// Given up as TLS (and said so); nothing more is read.
    Encrypted,
}

/// The two directions of a connection being read, and what ties them together.
#[derive(Debug)]
pub(super) struct Streams {
    /// Framers by direction (`Dir::idx`).
    pub framers: Box<[KafkaFramer; 2]>,
    pub pending: Waiting,
    /// `pending.registered()` when the server side was last searched again.
    pub rescanned_at: u64,
    /// The last frame where bytes of the server's stream were lost or passed over.
    /// Frames are numbered from 1 (as Wireshark's): the niche keeps the state at 152 bytes.
    pub server_loss: Option<NonZeroU64>,
}

/// The APIs of a connection's requests, as far as read: whether it carried producer ids.
/// One byte of flags, so that it shares a word with the state's tag.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ApisRead(u8);

impl ApisRead {
    /// A request was read.
    const ANY: u8 = 1;
    /// A request of an API producer ids travel in was read (AllocateProducerIds,
    /// InitProducerId, EndTxn).
    const PRODUCER_IDS: u8 = 2;
    /// Bytes of the client's stream were lost or passed over: a request may be unread.
    const CLIENT_LOST: u8 = 4;

    pub fn note(&mut self, api: ApiKey) {
        self.0 |= Self::ANY;
        if api.carries_producer_ids() {
            self.0 |= Self::PRODUCER_IDS;
        }
    }

    pub fn client_lost(&mut self) {
        self.0 |= Self::CLIENT_LOST;
    }

    /// Every request was read, and none was of an API that carries producer ids: what
    /// is said of this connection's wire is not about producer ids.
    pub fn carried_no_producer_ids(self) -> bool {
        self.0 & (Self::ANY | Self::PRODUCER_IDS | Self::CLIENT_LOST) == Self::ANY
    }
}

/// Where bytes of a server's stream were lost: `frame`, or frame 1 for a frame 0 (never
/// met in a capture, whose frames count from 1), so that nothing earlier is taken as whole.
pub(super) fn loss_at(frame: u64) -> NonZeroU64 {
    NonZeroU64::new(frame).unwrap_or(NonZeroU64::MIN)
}

/// How far the Kafka stage has got with a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Read as Kafka (counted in `kafka_connections`).
    Kafka,
    /// Given up as not Kafka, with a `not_kafka` diagnostic.
    NotKafka,
    /// Given up as TLS, with a `tls_encrypted` diagnostic.
    Encrypted,
    /// Still being looked at, or on trial.
    Undecided,
}

/// Which state a connection being read is in, for the code that reads all of them alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    Searching,
    Probing,
    OnTrial,
    Kafka,
}

impl Stage {
    /// Deciding whether this is Kafka: request heads must be plausible, and a bad one
    /// ends the search.
    pub fn probing(self) -> bool {
        matches!(self, Self::Searching | Self::Probing)
    }

    /// What its frames give is held in a trial: every request head must be plausible.
    pub fn on_trial(self) -> bool {
        self != Self::Kafka
    }
}

/// A connection being read, taken apart for one delivery.
pub(super) struct Parts<'a> {
    pub stage: Stage,
    /// The direction read as the client's: while searching, the delivery's own.
    pub client: Dir,
    pub last_request: &'a mut LastRequest,
    pub apis: &'a mut ApisRead,
    pub streams: &'a mut Streams,
    /// Where what its frames give goes: the trial's while there is one, else the report's.
    pub out: &'a mut Outbox,
    pub diags: &'a mut Diagnostics,
}

fn framer_for(client: bool, resync: bool) -> KafkaFramer {
    let prefix_len = if client {
        REQUEST_HEAD_PREFIX_LEN
    } else {
        RESPONSE_PREFIX_LEN
    };
    if resync {
        Framer::resyncing(prefix_len)
    } else {
        Framer::new(prefix_len)
    }
}

impl Streams {
    fn new(framers: [KafkaFramer; 2]) -> Self {
        Self {
            framers: Box::new(framers),
            pending: Waiting::default(),
            rescanned_at: 0,
            server_loss: None,
        }
    }

    /// Streams whose client is `client`; `resync`: both start by looking for a frame head
    /// (a stream picked up midway, or one whose first bytes are lost).
    pub fn with_client(client: Dir, resync: bool) -> Self {
        let is_client = |dir: Dir| dir == client;
        Self::new([
            framer_for(is_client(Dir::FromInitiator), resync),
            framer_for(is_client(Dir::FromResponder), resync),
        ])
    }

    /// Streams picked up mid-stream whose client is not known: both look for request heads.
    pub fn both_as_client() -> Self {
        Self::new([framer_for(true, true), framer_for(true, true)])
    }

    /// The framers' box and what each holds, and the waiting requests.
    fn held_bytes(&self) -> usize {
        size_of::<[KafkaFramer; 2]>()
            + MALLOC_OVERHEAD
            + self.framers.iter().map(Framer::held_bytes).sum::<usize>()
            + self.pending.held_bytes()
    }
}

/// What a connection not given up holds: its streams, and, when its client is known,
/// that client and where its frames go (the trial's outbox while on trial; `None`: the
/// report's).
pub(super) struct Holding<'a> {
    pub streams: &'a mut Streams,
    pub client: Option<(Dir, Option<&'a mut Outbox>)>,
}

impl KafkaConn {
    pub(super) fn state(&self) -> &State {
        &self.state
    }

    /// Its state, for a connection that ends.
    pub(super) fn into_state(self) -> State {
        self.state
    }

    /// Read as Kafka from its first byte: `--port` named the side of its server.
    pub(super) fn move_to_kafka(&mut self, client: Dir, midstream: bool) {
        self.state = State::Kafka {
            client,
            last_request: None,
            apis: ApisRead::default(),
            streams: Streams::with_client(client, midstream),
        };
    }

    /// Its first request head, from `client`, will tell whether it is Kafka; `resync`:
    /// that head is to be searched for (mid-stream, or the client's first bytes lost).
    pub(super) fn move_to_probing(&mut self, client: Dir, resync: bool, trial: Box<Trial>) {
        self.state = State::Probing {
            client,
            last_request: None,
            apis: ApisRead::default(),
            trial,
            streams: Streams::with_client(client, resync),
        };
    }

    /// Mid-stream with nothing to tell the client: both directions search.
    pub(super) fn move_to_searching(&mut self, trial: Box<Trial>) {
        self.state = State::Searching {
            last_request: None,
            apis: ApisRead::default(),
            trial,
            streams: Streams::both_as_client(),
        };
    }

    /// Given up as not Kafka: what it held goes with the state.
    pub(super) fn move_to_not_kafka(&mut self) {
        self.state = State::NotKafka;
    }

    /// Given up as TLS: what it seemed to hold goes with the state.
    pub(super) fn move_to_encrypted(&mut self) {
        self.state = State::Encrypted;
    }

    /// What it holds, for the memory budget to shed; `None` once given up.
    pub(super) fn holding(&mut self) -> Option<Holding<'_>> {
        let (streams, client) = match &mut self.state {
            State::Searching { streams, .. } => (streams, None),
            State::Probing {
                client,
                trial,
                streams,
                ..
            }
            | State::OnTrial {
                client,
                trial,
                streams,
                ..
            } => (streams, Some((*client, Some(&mut trial.out)))),
            State::Kafka {
                client, streams, ..
            } => (streams, Some((*client, None))),
            State::Unknown | State::NotKafka | State::Encrypted => return None,
        };
        Some(Holding { streams, client })
    }

    pub fn reading(&self) -> Reading {
        match self.state {
            State::Kafka { .. } => Reading::Kafka,
            State::NotKafka => Reading::NotKafka,
            State::Encrypted => Reading::Encrypted,
            State::Unknown
            | State::Searching { .. }
            | State::Probing { .. }
            | State::OnTrial { .. } => Reading::Undecided,
        }
    }

    /// Not yet read as Kafka nor given up: TLS bytes now give it up as encrypted.
    pub(super) fn undecided(&self) -> bool {
        matches!(
            self.state,
            State::Unknown | State::Searching { .. } | State::Probing { .. }
        )
    }

    /// The parts a delivery in direction `dir` works on, what its frames give going to
    /// the report (`out`, `diags`) unless a trial holds it; `None` when it is not read
    /// (not yet, or given up).
    pub(super) fn parts<'a>(
        &'a mut self,
        dir: Dir,
        out: &'a mut Outbox,
        diags: &'a mut Diagnostics,
    ) -> Option<Parts<'a>> {
        let (stage, client, (last_request, apis), trial, streams) = match &mut self.state {
            State::Searching {
                last_request,
                apis,
                trial,
                streams,
            } => (
                Stage::Searching,
                dir,
                (last_request, apis),
                Some(trial),
                streams,
            ),
            State::Probing {
                client,
                last_request,
                apis,
                trial,
                streams,
            } => (
                Stage::Probing,
                *client,
                (last_request, apis),
                Some(trial),
                streams,
            ),
            State::OnTrial {
                client,
                last_request,
                apis,
                trial,
                streams,
            } => (
                Stage::OnTrial,
                *client,
                (last_request, apis),
                Some(trial),
                streams,
            ),
            State::Kafka {
                client,
                last_request,
                apis,
                streams,
            } => (Stage::Kafka, *client, (last_request, apis), None, streams),
            State::Unknown | State::NotKafka | State::Encrypted => return None,
        };
        let (out, diags) = match trial {
            Some(trial) => (&mut trial.out, &mut trial.diags),
            None => (out, diags),
        };
        Some(Parts {
            stage,
            client,
            last_request,
            apis,
            streams,
            out,
            diags,
        })
    }

    /// Heap the connection holds: its boxes (framers, trial) and what each holds, and its
    /// waiting requests.
    pub(super) fn held_bytes(&self) -> usize {
        let (streams, trial) = match &self.state {
            State::Searching { streams, trial, .. }
            | State::Probing { streams, trial, .. }
            | State::OnTrial { streams, trial, .. } => (streams, Some(trial)),
            State::Kafka { streams, .. } => (streams, None),
            State::Unknown | State::NotKafka | State::Encrypted => return 0,
        };
        let trial = trial.map_or(0, |t| {
            size_of::<Trial>() + MALLOC_OVERHEAD + t.out.held_bytes()
        });
        streams.held_bytes() + trial
    }

    /// Answers the connection holds that read as a block's grant (see
    /// [`reads_as_block`]) and would go with its state, given up or at its end: a
    /// trial's, framed but held out of the report, and those held unframed while framing
    /// was searched for (a capture's last answer on a connection picked up mid-stream is
    /// confirmed by nothing after it). Not answers to requests still waiting. Both
    /// directions while the client is not known.
    pub(super) fn like_blocks_held(&self) -> u64 {
        let (streams, client, trial) = match &self.state {
            State::Searching { streams, trial, .. } => (streams, None, Some(trial)),
            State::Probing {
                client,
                streams,
                trial,
                ..
            }
            | State::OnTrial {
                client,
                streams,
                trial,
                ..
            } => (streams, Some(*client), Some(trial)),
            State::Kafka {
                client, streams, ..
            } => (streams, Some(*client), None),
            State::Unknown | State::NotKafka | State::Encrypted => return 0,
        };
        let framed = trial.map_or(0, |t| t.out.counted.unmatched_like_blocks);
        let servers = match client {
            Some(client) => [Some(client.reverse()), None],
            None => [Some(Dir::FromInitiator), Some(Dir::FromResponder)],
        };
        let held = servers
            .into_iter()
            .flatten()
            .filter_map(|dir| streams.framers.get(dir.idx()))
            .flat_map(|framer| framer.held_whole_frames(LONGEST_BLOCK_ANSWER as usize))
            .filter(|frame| {
                let waited_for = response_correlation_id(frame)
                    .is_ok_and(|corr| streams.pending.request_frame(corr).is_some());
                !waited_for && reads_as_block(frame)
            })
            .count();
        framed + held as u64
    }

    /// Mid-stream probing gives up once every direction tried as the client has passed
    /// over more bytes than the largest frame and a head: a capture that starts inside a
    /// frame meets the next head within that many bytes, however big the frame. True for
    /// a connection not probing: there is nothing left to search.
    pub(super) fn searched_too_long(&self, max_frame_len: u32) -> bool {
        let reach = u64::from(max_frame_len) + MAX_HEAD_LEN as u64;
        let passed_over = |framer: &KafkaFramer| framer.resync_skipped() >= reach;
        match &self.state {
            State::Searching { streams, .. } => streams.framers.iter().all(passed_over),
            State::Probing {
                client, streams, ..
            } => streams.framers.get(client.idx()).is_none_or(passed_over),
            _ => true,
        }
    }

    /// A request head was found while probing, in direction `client`: the connection goes
    /// on trial. When it was searching, the other direction was tried as a client too and
    /// carries responses: `reread` reads what its framer holds again as such.
    pub(super) fn put_on_trial(
        &mut self,
        client: Dir,
        reread: impl FnOnce(&mut KafkaFramer, &mut Waiting, &mut Trial),
    ) {
        self.state = match std::mem::take(&mut self.state) {
            State::Searching {
                last_request,
                apis,
                mut trial,
                mut streams,
            } => {
                let Streams {
                    framers, pending, ..
                } = &mut streams;
                if let Some(other) = framers.get_mut(client.reverse().idx()) {
                    reread(other, pending, &mut trial);
                }
                State::OnTrial {
                    client,
                    last_request,
                    apis,
                    trial,
                    streams,
                }
            }
            State::Probing {
                client,
                last_request,
                apis,
                trial,
                streams,
            } => State::OnTrial {
                client,
                last_request,
                apis,
                trial,
                streams,
            },
            other => other,
        };
    }

    /// Proven Kafka: the connection is read as such, and its trial handed back for what it
    /// holds to join the report.
    pub(super) fn prove(&mut self) -> Option<Box<Trial>> {
        match std::mem::take(&mut self.state) {
            State::OnTrial {
                client,
                last_request,
                apis,
                trial,
                streams,
            } => {
                self.state = State::Kafka {
                    client,
                    last_request,
                    apis,
                    streams,
                };
                Some(trial)
            }
            other => {
                self.state = other;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every connection the TCP stage follows holds one, idle or not: large parts stay
    /// boxed. (152 bytes until the waiting requests kept a box for those given up at the
    /// budget, allocated at a connection's first shed.)
    #[test]
    fn state_of_a_connection_stays_small() {
        let size = size_of::<KafkaConn>();
        assert!(size <= 160, "a connection's Kafka state takes {size} bytes");
    }
}
