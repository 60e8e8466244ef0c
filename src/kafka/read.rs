//! One delivery of a connection being read: fed to its direction's framer, whose frame
//! handler ([`RequestSide`] for the client, [`ResponseSide`] for the server) puts what it
//! finds in the connection's outbox. What the delivery showed comes back as a [`Found`],
//! for the connection's state to be decided on.

use std::num::NonZeroU64;

use super::conn::{ApisRead, LastRequest, Parts, Stage, Streams};
use super::framing::{FrameHandler, Framer, GapEffect};
use super::header::{response_correlation_id, RequestPrefix, RESPONSE_PREFIX_LEN};
use super::message::{Endpoints, Outbox, Tally};
use super::produce::RequestReader;
use super::sides::{Probe, RequestSide, ResponseSide, Side};
use super::tables::ApiKey;
use super::trial::Trial;
use super::waiting::Waiting;
use super::KafkaConfig;
use super::KafkaFramer;
use crate::diag::obs;
use crate::diag::{Diagnostics, FramingLost, NamedCode, Observation};
use crate::packet_ref::PacketRef;
use crate::tcp::assembler::Delivery;
use crate::tcp::{ConnInfo, Dir};

/// What one delivery showed about its connection.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    /// The packet that brought it.
    pub at: PacketRef,
    /// The direction read as the client's.
    pub client: Dir,
    /// What the client side's handler found, when the delivery was the client's.
    pub probe: Option<Probe>,
    /// The server sent a size prefix Kafka cannot have.
    pub server_bad_size: bool,
    /// The outbox's tally before the delivery.
    pub before: Tally,
}

pub fn endpoints(info: &ConnInfo, client: Dir) -> Endpoints {
    Endpoints {
        connection: info.index,
        client: info.source(client),
        server: info.destination(client),
    }
}

/// What the frame handlers of a connection write to.
struct Sink<'a> {
    config: &'a KafkaConfig,
    waiting: &'a mut Waiting,
    out: &'a mut Outbox,
    diags: &'a mut Diagnostics,
    ends: Endpoints,
}

impl Sink<'_> {
    fn requests<'s>(
        &'s mut self,
        last_request: &'s mut LastRequest,
        apis: &'s mut ApisRead,
        stage: Stage,
    ) -> RequestSide<'s> {
        RequestSide {
            config: self.config,
            waiting: self.waiting,
            out: self.out,
            ends: self.ends,
            diags: self.diags,
            last_request,
            apis,
            stage,
            probe: Probe::default(),
        }
    }

    fn responses(&mut self) -> ResponseSide<'_> {
        ResponseSide {
            config: self.config,
            waiting: self.waiting,
            out: self.out,
            ends: self.ends,
            diags: self.diags,
            bad_size: false,
            resynced_at: None,
        }
    }
}

/// Feeds `delivery`, in direction `dir`, to that direction's framer.
pub fn read(
    config: &KafkaConfig,
    parts: Parts<'_>,
    info: &ConnInfo,
    dir: Dir,
    delivery: Delivery<'_>,
) -> Found {
    let Parts {
        stage,
        client,
        last_request,
        apis,
        streams,
        out,
        diags,
    } = parts;
    let before = out.tally;
    let at = delivery.at();
    let Streams {
        framers,
        pending,
        rescanned_at,
        server_loss,
    } = streams;
    let [from_initiator, from_responder] = &mut **framers;
    let (framer, other) = match dir {
        Dir::FromInitiator => (from_initiator, from_responder),
        Dir::FromResponder => (from_responder, from_initiator),
    };
    let was_lost = framer.is_lost();
    let mut sink = Sink {
        config,
        waiting: pending,
        out,
        diags,
        ends: endpoints(info, client),
    };
    let (gap, probe, server_bad_size) = if dir == client {
        if matches!(delivery, Delivery::Gap { .. }) {
            apis.client_lost();
        }
        let mut handler = sink.requests(last_request, apis, stage);
        let gap = feed(framer, delivery, &mut handler);
        let probe = handler.probe;
        if framer.is_lost() {
            apis.client_lost();
        }
        // New requests may be what responses held while resynchronising wait for.
        let registered = sink.waiting.registered();
        if other.is_lost() && stage != Stage::Searching && registered != *rescanned_at {
            *rescanned_at = registered;
            other.rescan(&mut sink.responses());
        }
        (gap, Some(probe), false)
    } else {
        let (gap, bad_size) = read_responses(&mut sink, framer, server_loss, delivery);
        (gap, None, bad_size)
    };
    if let Some((GapEffect::Lost { frame_lost }, len, gap_at)) = gap {
        if !was_lost {
            let side = if dir == client {
                Side::Client
            } else {
                Side::Server
            };
            framing_lost(sink.diags, info, side, (len, gap_at), frame_lost);
        }
    }
    Found {
        at,
        client,
        probe,
        server_bad_size,
        before,
    }
}

/// The server's delivery; notes where its bytes may have lost an answer. Returns what a
/// gap did, and whether a size prefix Kafka cannot have came.
fn read_responses(
    sink: &mut Sink<'_>,
    framer: &mut KafkaFramer,
    server_loss: &mut Option<NonZeroU64>,
    delivery: Delivery<'_>,
) -> (Option<(GapEffect, u64, PacketRef)>, bool) {
    let at = delivery.at();
    let (is_gap, is_data) = (
        matches!(delivery, Delivery::Gap { .. }),
        matches!(delivery, Delivery::Data(..)),
    );
    let mut handler = sink.responses();
    let gap = feed(framer, delivery, &mut handler);
    // Server bytes lost here, or held unframed while framing is searched for: an answer
    // may be among them.
    let held_unframed = is_data && framer.is_lost();
    if is_gap || handler.bad_size || handler.resynced_at.is_some() || held_unframed {
        *server_loss = Some(super::conn::loss_at(at.frame));
    }
    (gap, handler.bad_size)
}

/// A connection found Kafka while both its directions were tried as the client: the
/// other one, `other`, carries responses, and the bytes it holds may answer the requests
/// just found, so they are read again as responses.
pub fn reread_as_responses(
    config: &KafkaConfig,
    ends: Endpoints,
    other: &mut KafkaFramer,
    waiting: &mut Waiting,
    trial: &mut Trial,
) {
    let tried = std::mem::replace(other, Framer::new(RESPONSE_PREFIX_LEN));
    *other = tried.retarget(RESPONSE_PREFIX_LEN);
    let mut sink = Sink {
        config,
        waiting,
        out: &mut trial.out,
        diags: &mut trial.diags,
        ends,
    };
    other.rescan(&mut sink.responses());
}

/// Passes one delivery to a framer; for a gap, returns what it did with its length and place.
fn feed(
    framer: &mut KafkaFramer,
    delivery: Delivery<'_>,
    handler: &mut impl FrameHandler<Reader = RequestReader>,
) -> Option<(GapEffect, u64, PacketRef)> {
    match delivery {
        Delivery::Data(bytes, at) => {
            framer.push(bytes, at, handler);
            None
        }
        Delivery::Gap { len, at } => Some((framer.gap(len, at, handler), len, at)),
        Delivery::Fin(_) => {
            framer.end_of_stream(handler);
            None
        }
        // Reported by the TCP stage; the bytes kept are the first ones.
        Delivery::Conflict { .. } | Delivery::Unread { .. } => None,
    }
}

/// A gap lost the framing of one side's stream.
fn framing_lost(
    diags: &mut Diagnostics,
    info: &ConnInfo,
    side: Side,
    (len, at): (u64, PacketRef),
    frame_lost: bool,
) {
    let what = Observation::KafkaFramingLost(FramingLost::Gap {
        side,
        gap_bytes: len,
        inside_head: frame_lost,
    });
    diags.add(Some(info.index), at, what);
}

/// At the end of a Kafka connection: a diagnostic for each side whose stream ended
/// inside a message, naming the message's API where its head shows it (a response's by
/// the request it answers, from `pending`).
pub fn report_unfinished(
    framers: &[KafkaFramer; 2],
    pending: &Waiting,
    client: Dir,
    ends: Endpoints,
    diags: &mut Diagnostics,
) {
    for dir in [client, client.reverse()] {
        let side = if dir == client {
            Side::Client
        } else {
            Side::Server
        };
        if let Some((len, first, prefix)) = framers.get(dir.idx()).and_then(Framer::unfinished) {
            let (api, correlation_id) = match side {
                Side::Client => RequestPrefix::parse(prefix)
                    .ok()
                    .map_or((None, None), |h| (Some(h.api_key), Some(h.correlation_id))),
                Side::Server => {
                    let corr = response_correlation_id(prefix).ok();
                    let api = corr.and_then(|c| pending.answered_request(c));
                    (api.map(|(api, _)| api), corr)
                }
            };
            let name = api.map(ApiKey::name);
            let what = Observation::KafkaFrameIncomplete(obs::KafkaFrameIncomplete {
                side,
                bytes: u64::from(len),
                api: api
                    .zip(name.as_deref())
                    .map(|(api, name)| NamedCode { code: api.0, name }),
                correlation_id,
                carries_producer_ids: api.is_some_and(ApiKey::carries_producer_ids),
            });
            diags.add(Some(ends.connection), first, what);
        }
    }
}
