//! Pairing: requests and responses of one connection, matched by correlation id.
//!
//! Every request registers its correlation id with its API key and version; a response
//! is matched by its correlation id (responses carry no API key) and counted under its
//! request's API. AllocateProducerIds requests keep their decoded fields until their
//! response arrives or the connection ends, and then become [`Exchange`]s.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;

use crate::capture::Timestamp;
use crate::diag::{Diagnostics, Kind};
use crate::kafka::allocate_producer_ids::{Request, Response};
use crate::kafka::header::RequestPrefix;
use crate::kafka::tables::ApiKey;

/// Where a Kafka message sat in the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageMeta {
    /// Packet that completed the message.
    pub frame: u64,
    /// Packet that carried its first byte.
    pub first_frame: u64,
    pub timestamp: Timestamp,
    /// Bytes on the wire, size prefix included.
    pub size: u64,
}

/// The two ends of a Kafka connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    pub connection: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
}

/// One AllocateProducerIds request and, if captured, its response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub endpoints: Endpoints,
    pub correlation_id: i32,
    pub api_version: i16,
    pub request_meta: MessageMeta,
    pub request: Request,
    pub response: Option<(MessageMeta, Response)>,
    /// Without a response: whether the capture may hold it in bytes it lost (or the
    /// request was given up before it could come), so that it is not known to be
    /// unanswered.
    pub response_unknown: bool,
}

/// Where an exchange stands in the report and in every output: by request frame, then
/// connection, then correlation id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExchangeOrder {
    pub request_frame: u64,
    pub connection: u64,
    pub correlation_id: i32,
}

impl Exchange {
    pub fn order(&self) -> ExchangeOrder {
        ExchangeOrder {
            request_frame: self.request_meta.frame,
            connection: self.endpoints.connection,
            correlation_id: self.correlation_id,
        }
    }
}

#[derive(Debug)]
struct Pending {
    seq: u64,
    /// Packet that completed the request.
    frame: u64,
    api_key: ApiKey,
    api_version: i16,
    /// Decoded request, for AllocateProducerIds only.
    allocate: Option<Box<(MessageMeta, Request)>>,
    /// Heap the decoded request holds (see [`request_cost`]).
    cost: usize,
}

/// Heap a decoded request holds while it waits: its box, client id, tagged fields and
/// raw bytes, at their allocated sizes.
fn request_cost(req: &Request) -> usize {
    let tagged = |fields: &Option<Vec<crate::kafka::reader::TaggedField>>| {
        fields.as_ref().map_or(0, |f| {
            f.capacity() * size_of::<crate::kafka::reader::TaggedField>()
                + f.iter().map(|t| t.data.capacity()).sum::<usize>()
        })
    };
    size_of::<(MessageMeta, Request)>()
        + req
            .client_id
            .as_ref()
            .and_then(Option::as_ref)
            .map_or(0, String::capacity)
        + tagged(&req.header_tagged_fields)
        + tagged(&req.tagged_fields)
        + req.raw.capacity()
}

/// Requests one connection may have waiting by default before the oldest is forgotten.
/// Requests that are never answered (Produce with acks=0) would otherwise grow without end.
pub const MAX_PENDING_PER_CONNECTION: usize = 4096;

/// Requests of one connection still waiting for their response.
#[derive(Debug, Default)]
pub struct PendingRequests {
    by_correlation_id: HashMap<i32, Pending, foldhash::fast::RandomState>,
    /// Correlation ids in the order their requests were registered, with the request's
    /// sequence number so a re-used id is not mistaken for its older namesake.
    order: VecDeque<(i32, u64)>,
    registered: u64,
    evicted: u64,
    /// Sum of the waiting requests' [`Pending::cost`].
    decoded_bytes: usize,
}

/// Per-API frame counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ApiCounts {
    pub requests: u64,
    pub responses: u64,
}

/// Everything pairing learns over the whole capture.
#[derive(Debug)]
pub struct Pairing {
    pub exchanges: Vec<Exchange>,
    pub api_counts: BTreeMap<ApiKey, ApiCounts>,
    pub unmatched_responses: u64,
    /// Requests one connection may have waiting before the oldest is given up.
    pub max_pending: usize,
}

impl Default for Pairing {
    fn default() -> Self {
        Self {
            exchanges: Vec::new(),
            api_counts: BTreeMap::new(),
            unmatched_responses: 0,
            max_pending: MAX_PENDING_PER_CONNECTION,
        }
    }
}

impl PendingRequests {
    /// Requests registered so far: changes whenever one is added.
    pub fn registered(&self) -> u64 {
        self.registered
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.by_correlation_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_correlation_id.is_empty()
    }

    /// Heap held for the waiting requests: the tables at their allocated sizes and the
    /// decoded AllocateProducerIds requests.
    pub fn held_bytes(&self) -> usize {
        self.by_correlation_id.capacity() * (size_of::<(i32, Pending)>() + 1)
            + self.order.capacity() * size_of::<(i32, u64)>()
            + self.decoded_bytes
    }

    fn remove(&mut self, correlation_id: i32) -> Option<Pending> {
        let p = self.by_correlation_id.remove(&correlation_id)?;
        self.decoded_bytes = self.decoded_bytes.saturating_sub(p.cost);
        Some(p)
    }
}

impl Pairing {
    /// Puts exchanges in report order: by request frame, then connection, then
    /// correlation id.
    pub fn sort_exchanges(&mut self) {
        self.exchanges.sort_by_key(Exchange::order);
    }

    /// A request frame. `allocate` is the decoded AllocateProducerIds request, if it is one.
    pub fn request(
        &mut self,
        pending: &mut PendingRequests,
        ends: Endpoints,
        prefix: RequestPrefix,
        meta: MessageMeta,
        allocate: Option<Request>,
        diags: &mut Diagnostics,
    ) {
        self.api_counts.entry(prefix.api_key).or_default().requests += 1;
        pending.registered += 1;
        let cost = allocate.as_ref().map_or(0, request_cost);
        pending.decoded_bytes += cost;
        let entry = Pending {
            seq: pending.registered,
            frame: meta.frame,
            api_key: prefix.api_key,
            api_version: prefix.api_version,
            allocate: allocate.map(|req| Box::new((meta, req))),
            cost,
        };
        pending
            .order
            .push_back((prefix.correlation_id, pending.registered));
        if let Some(old) = pending
            .by_correlation_id
            .insert(prefix.correlation_id, entry)
        {
            pending.decoded_bytes = pending.decoded_bytes.saturating_sub(old.cost);
            diags.push(
                Kind::DuplicateCorrelationId,
                Some(ends.connection),
                Some(meta.frame),
                format!(
                    "{} request reuses correlation id {} while an earlier {} request with that id is still unanswered; the earlier one is reported as unanswered",
                    prefix.api_key, prefix.correlation_id, old.api_key
                ),
            );
            // Which of the two a later answer is for cannot be told.
            self.unanswered(ends, prefix.correlation_id, old, true);
        }
        let max_pending = self.max_pending.max(1);
        if pending.len() > max_pending {
            if pending.evicted == 0 {
                diags.push(
                    Kind::PendingLimit,
                    Some(ends.connection),
                    Some(meta.frame),
                    format!(
                        "more than {max_pending} requests are waiting for a response on this connection; the oldest are given up (AllocateProducerIds ones are reported as unanswered)"
                    ),
                );
            }
            self.give_up_oldest(pending, ends, max_pending);
        }
        // Forget answered ids so the queue stays about as short as the map.
        if pending.order.len() > 2 * max_pending {
            let live = &pending.by_correlation_id;
            pending
                .order
                .retain(|(corr, seq)| live.get(corr).is_some_and(|p| p.seq == *seq));
        }
        while pending.order.front().is_some_and(|(corr, seq)| {
            pending.by_correlation_id.get(corr).map(|p| p.seq) != Some(*seq)
        }) {
            pending.order.pop_front();
        }
    }

    /// Gives up the oldest waiting requests until `keep` are left (their AllocateProducerIds
    /// ones are reported with an unknown outcome: their answers may still come). Returns
    /// how many were given up.
    pub fn give_up_oldest(
        &mut self,
        pending: &mut PendingRequests,
        ends: Endpoints,
        keep: usize,
    ) -> usize {
        let mut given_up = 0;
        while pending.len() > keep {
            let Some((corr, seq)) = pending.order.pop_front() else {
                break;
            };
            if pending
                .by_correlation_id
                .get(&corr)
                .is_some_and(|p| p.seq == seq)
            {
                if let Some(old) = pending.remove(corr) {
                    pending.evicted += 1;
                    given_up += 1;
                    self.unanswered(ends, corr, old, true);
                }
            }
        }
        given_up
    }

    /// Gives up the older half of the waiting requests, and the tables' room for them.
    pub fn shed_pending(&mut self, pending: &mut PendingRequests, ends: Endpoints) -> usize {
        let given_up = self.give_up_oldest(pending, ends, pending.len() / 2);
        pending.by_correlation_id.shrink_to_fit();
        pending.order.shrink_to_fit();
        given_up
    }

    /// Frame of the waiting request with this correlation id.
    pub fn request_frame(pending: &PendingRequests, correlation_id: i32) -> Option<u64> {
        pending
            .by_correlation_id
            .get(&correlation_id)
            .map(|p| p.frame)
    }

    /// API key and version of the request a response with this correlation id answers.
    pub fn answered_request(
        pending: &PendingRequests,
        correlation_id: i32,
    ) -> Option<(ApiKey, i16)> {
        pending
            .by_correlation_id
            .get(&correlation_id)
            .map(|p| (p.api_key, p.api_version))
    }

    /// A response frame. `allocate` is the decoded response when its request was an
    /// AllocateProducerIds request.
    pub fn response(
        &mut self,
        pending: &mut PendingRequests,
        ends: Endpoints,
        correlation_id: i32,
        meta: MessageMeta,
        allocate: Option<Response>,
    ) {
        let Some(request) = pending.remove(correlation_id) else {
            self.unmatched_responses += 1;
            return;
        };
        self.api_counts
            .entry(request.api_key)
            .or_default()
            .responses += 1;
        if let (Some(boxed), Some(response)) = (request.allocate, allocate) {
            let (request_meta, decoded) = *boxed;
            self.exchanges.push(Exchange {
                endpoints: ends,
                correlation_id,
                api_version: request.api_version,
                request_meta,
                request: decoded,
                response: Some((meta, response)),
                response_unknown: false,
            });
        }
    }

    fn unanswered(
        &mut self,
        ends: Endpoints,
        correlation_id: i32,
        pending: Pending,
        unknown: bool,
    ) {
        if let Some(boxed) = pending.allocate {
            let (request_meta, request) = *boxed;
            self.exchanges.push(Exchange {
                endpoints: ends,
                correlation_id,
                api_version: pending.api_version,
                request_meta,
                request,
                response: None,
                response_unknown: unknown,
            });
        }
    }

    /// Adds what another pairing (a connection's, held until it proved Kafka) found.
    pub fn absorb(&mut self, other: Self) {
        self.exchanges.extend(other.exchanges);
        for (key, counts) in other.api_counts {
            let ours = self.api_counts.entry(key).or_default();
            ours.requests += counts.requests;
            ours.responses += counts.responses;
        }
        self.unmatched_responses += other.unmatched_responses;
    }

    /// The connection ended: AllocateProducerIds requests still waiting are unanswered,
    /// or of unknown outcome where `may_be_lost(request frame)` says the capture may have
    /// lost their response.
    pub fn close(
        &mut self,
        pending: PendingRequests,
        ends: Endpoints,
        may_be_lost: impl Fn(u64) -> bool,
    ) {
        let mut left: Vec<(i32, Pending)> = pending.by_correlation_id.into_iter().collect();
        left.sort_by_key(|(corr, _)| *corr);
        for (correlation_id, p) in left {
            let unknown = may_be_lost(p.frame);
            self.unanswered(ends, correlation_id, p, unknown);
        }
    }
}
