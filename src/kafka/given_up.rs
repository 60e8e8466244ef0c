//! Connections the Kafka stage gives up on, out loud: why one is not read as Kafka (with
//! the `--port` that would read it anyway, when its bytes did look like Kafka), and what
//! showed that one is TLS.

use super::tls;
use super::trial::{PROVING_ANSWERS, PROVING_REQUESTS};
use crate::diag::obs;
use crate::diag::{Diagnostics, Observation};
use crate::packet_ref::PacketRef;
use crate::tcp::{ConnInfo, Dir};

/// Why a connection's bytes were not read as Kafka.
#[derive(Debug, Clone, Copy)]
pub enum NotKafka {
    /// With the handshake captured, the server sent the first bytes; `response_head`:
    /// they start like a Kafka response (a size Kafka accepts).
    ServerSpokeFirst { response_head: bool },
    /// The client's first message is no Kafka request.
    FirstMessage,
    /// Picked up mid-stream, and no request head was found in a window of bytes.
    NoRequestHead,
    /// The connection ended before its bytes showed Kafka framing either way.
    Undecided,
    /// On trial, a later request head is not a plausible one counting up.
    TrialHead,
    /// On trial, the server sent a size prefix Kafka cannot have.
    TrialAnswerSize,
    /// On trial, the server answered a request this connection did not send.
    TrialAnswer,
    /// It ended (or the capture did) while on trial: its frames read as Kafka, but too
    /// few to prove it.
    TrialUnproven,
}

impl NotKafka {
    /// A short name of the reason, for the diagnostic's facts.
    fn name(self) -> &'static str {
        match self {
            Self::ServerSpokeFirst { .. } => "server_spoke_first",
            Self::FirstMessage => "first_message",
            Self::NoRequestHead => "no_request_head",
            Self::Undecided => "undecided",
            Self::TrialHead => "trial_head",
            Self::TrialAnswerSize => "trial_answer_size",
            Self::TrialAnswer => "trial_answer",
            Self::TrialUnproven => "trial_unproven",
        }
    }

    fn reason(self) -> String {
        match self {
            Self::ServerSpokeFirst { .. } => "with its handshake captured, the server sent the first bytes, which a Kafka server never does (or the capture holds only the server's direction)".into(),
            Self::FirstMessage => "the client's first message is not a Kafka request header (a known API key and version, a sane size and client id length)".into(),
            Self::NoRequestHead => "it was picked up mid-stream and no Kafka request head was found in more bytes of either direction than the largest frame (--max-frame)".into(),
            Self::Undecided => "it ended before its bytes showed a Kafka request head".into(),
            Self::TrialHead => format!("its first frames read as Kafka, but a later request head is not a Kafka one whose correlation id counts up (before {PROVING_REQUESTS} requests or {PROVING_ANSWERS} answers proved it), as in a ZooKeeper session"),
            Self::TrialAnswerSize => format!("its first frames read as Kafka, but the server then sent a size prefix Kafka cannot have (before {PROVING_ANSWERS} answers proved it)"),
            Self::TrialAnswer => format!("its first frames read as Kafka, but the server then answered a correlation id that no request waiting for an answer carried, before {PROVING_ANSWERS} answers proved it (Kafka answers no Produce request sent with acks 0)"),
            Self::TrialUnproven => format!("its frames read as Kafka, but it ended (or the capture did) before {PROVING_ANSWERS} answers, {PROVING_REQUESTS} requests or an answered ApiVersions request proved it, as a short ZooKeeper session does; its frames are not counted"),
        }
    }

    /// What would have to be true for `--port` to read the connection as Kafka, when its
    /// bytes did look like Kafka frames; `None` when they did not, and `--port` would
    /// only misread them.
    fn port_would_help_if(self) -> Option<&'static str> {
        match self {
            Self::ServerSpokeFirst {
                response_head: true,
            } => Some("if the capture holds only the server's side of a Kafka connection (its first bytes start like a Kafka response)"),
            Self::TrialHead => Some("if it is Kafka from a client that does not number its requests in order"),
            Self::TrialAnswerSize => Some("if it is Kafka and that size prefix is damage in the capture"),
            Self::TrialAnswer => Some("if it is Kafka and that answer is to a request the capture lost"),
            Self::TrialUnproven => Some("if it is a short Kafka session"),
            Self::ServerSpokeFirst {
                response_head: false,
            }
            | Self::FirstMessage
            | Self::NoRequestHead
            | Self::Undecided => None,
        }
    }
}

/// The `not_kafka` diagnostic: the reason, and `server_port` for `--port`.
pub fn report_not_kafka(
    info: &ConnInfo,
    at: PacketRef,
    why: NotKafka,
    server_port: u16,
    diags: &mut Diagnostics,
) {
    let what = Observation::NotKafka(obs::NotKafka {
        initiator: info.initiator,
        responder: info.responder,
        reason: why.name(),
        explanation: &why.reason(),
        port_would_help_if: why.port_would_help_if(),
        server_port,
    });
    diags.add(Some(info.index), at, what);
}

/// The `tls_encrypted` diagnostic: what was seen, on which port, and the server name the
/// client asked for when its ClientHello says.
pub fn report_encrypted(
    info: &ConnInfo,
    client: Dir,
    at: PacketRef,
    seen: &tls::Seen,
    diags: &mut Diagnostics,
) {
    let (client, server) = (info.source(client), info.destination(client));
    let server_name = match seen {
        tls::Seen::ClientHello { server_name } => server_name.as_deref(),
        _ => None,
    };
    let what = Observation::TlsEncrypted(obs::TlsEncrypted {
        client,
        server,
        seen: seen.name(),
        seen_described: seen.describe(),
        server_name,
    });
    diags.add(Some(info.index), at, what);
}
