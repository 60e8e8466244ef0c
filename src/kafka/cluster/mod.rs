//! Facts about the cluster from its own messages: the addresses brokers serve on
//! (BrokerRegistration requests, Metadata and DescribeCluster responses), which brokers
//! talk to the active controller (BrokerHeartbeat requests) and who leads
//! the KRaft quorum in which epoch (Vote, BeginQuorumEpoch and EndQuorumEpoch requests
//! and responses).
//!
//! Each decoder takes one message (the frame without its 4-byte size prefix, so it starts
//! at the request or response header), reads only as far as the facts it returns and
//! gives them or the first [`DecodeError`], whose offsets count from the message's first
//! byte. A message cut short (by the capture, or a prefix of a large Metadata response)
//! fails with [`DecodeError::Short`]; nothing is guessed and nothing panics. No I/O, no
//! diagnostics: the pipeline decides what the facts mean.
//!
//! Schemas: Apache Kafka's `clients/src/main/resources/common/message/*.json` (trunk at
//! 1eb7644, October 2024); the versions added since (Metadata v13, DescribeCluster v2's
//! IsFenced, Vote v2's PreVote, BrokerRegistration v4) from twmb/franz-go's
//! `generate/definitions` (adb3a18, 2026). Real Kafka 3.9.1 and 4.4.0 messages from the
//! committed captures, decoded by Kafka's own classes, check them (`real.rs`).

mod brokers;
mod fetch;
mod heartbeat;
mod quorum;
#[cfg(test)]
mod real;
mod registration;
mod topics;
#[cfg(test)]
mod wire;

pub use brokers::{describe_cluster_response, metadata_response, BrokerEndpoint, BrokersSeen};
pub use fetch::{fetch_request, ReplicaFetch, METADATA_FETCH_MAX_LEN};
pub use heartbeat::{broker_heartbeat_request, Heartbeat};
pub use quorum::{quorum_request, quorum_response, NodeEndpoint, QuorumMessage, QuorumPartition};
pub use registration::{
    broker_registration_request, broker_registration_response, BrokerListeners, Listener,
    RegistrationReply,
};
pub use topics::create_topics_response;

use super::reader::{DecodeError, Reader};
use super::tables::ApiKey;
use super::trace;

pub const FETCH: ApiKey = ApiKey(1);
pub const METADATA: ApiKey = ApiKey(3);
pub const CREATE_TOPICS: ApiKey = ApiKey(19);
pub const VOTE: ApiKey = ApiKey(52);
pub const BEGIN_QUORUM_EPOCH: ApiKey = ApiKey(53);
pub const END_QUORUM_EPOCH: ApiKey = ApiKey(54);
pub const DESCRIBE_CLUSTER: ApiKey = ApiKey(60);
pub const BROKER_REGISTRATION: ApiKey = ApiKey(62);
pub const BROKER_HEARTBEAT: ApiKey = ApiKey(63);

/// The newest version of each API whose schema the decoders here follow (which versions
/// are flexible is Kafka's table's, `tables.rs`).
pub fn newest_decoded(api: ApiKey) -> Option<i16> {
    match api {
        FETCH => Some(18),
        METADATA => Some(13),
        CREATE_TOPICS => Some(7),
        VOTE | DESCRIBE_CLUSTER | BROKER_HEARTBEAT => Some(2),
        BEGIN_QUORUM_EPOCH | END_QUORUM_EPOCH => Some(1),
        BROKER_REGISTRATION => Some(4),
        _ => None,
    }
}

/// Whether this module decodes `version` of `api` (requests and responses alike).
pub fn decodes(api: ApiKey, version: i16) -> bool {
    newest_decoded(api).is_some_and(|newest| (0..=newest).contains(&version))
}

/// A cursor that reads strings, arrays and tagged fields the way `version` of an API
/// writes them: compact with tagged fields when flexible, int16/int32 lengths when not.
struct Wire<'a> {
    r: Reader<'a>,
    version: i16,
    flexible: bool,
}

impl<'a> Wire<'a> {
    /// A request of `api` (one of `apis`, all sharing one decoder) past its header (v2
    /// when flexible, else v1). Says which API it was.
    fn request(message: &'a [u8], apis: &[ApiKey]) -> Result<(Self, ApiKey), DecodeError> {
        let mut r = Reader::new(message);
        let key = trace::read(&mut r, ("request_api_key", "int16"), |r| {
            r.i16("request_api_key")
        })?;
        let api = ApiKey(key);
        if !apis.contains(&api) {
            return Err(DecodeError::Invalid {
                field: "request_api_key",
                offset: 0,
                reason: format!("{key} ({}) is not decoded here", api.name()),
            });
        }
        let version = trace::read(&mut r, ("request_api_version", "int16"), |r| {
            r.i16("request_api_version")
        })?;
        let mut wire = Self::at(r, api, version, ("request_api_version", 2))?;
        wire.i32("correlation_id")?;
        // int16 in both header versions
        wire.traced(("client_id", "string (not read)"), |r| {
            r.skip_string("client_id")
        })?;
        wire.tags()?;
        Ok((wire, api))
    }

    /// A response of `version` of `api` past its header (v1 when flexible, else v0).
    fn response(message: &'a [u8], api: ApiKey, version: i16) -> Result<Self, DecodeError> {
        let from_request = ("api_version (of the request)", 0);
        let mut wire = Self::at(Reader::new(message), api, version, from_request)?;
        wire.i32("correlation_id")?;
        wire.tags()?;
        Ok(wire)
    }

    /// `r` reading `version` of `api`; `(field, offset)` says where the version came from.
    fn at(
        r: Reader<'a>,
        api: ApiKey,
        version: i16,
        (field, offset): (&'static str, usize),
    ) -> Result<Self, DecodeError> {
        match api.flexible_from() {
            Some(flexible_from) if decodes(api, version) => Ok(Self {
                r,
                version,
                flexible: version >= flexible_from,
            }),
            _ => Err(DecodeError::Invalid {
                field,
                offset,
                reason: format!("{} version {version} has no schema here", api.name()),
            }),
        }
    }

    /// One read of the cursor, recorded for the tree when it asks ([`trace`]).
    fn traced<T: std::fmt::Debug>(
        &mut self,
        field_and_wire: (&'static str, &'static str),
        read: impl FnOnce(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Result<T, DecodeError> {
        trace::read(&mut self.r, field_and_wire, read)
    }

    fn i8(&mut self, field: &'static str) -> Result<i8, DecodeError> {
        self.traced((field, "int8"), |r| r.i8(field))
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        self.traced((field, "int16"), |r| r.i16(field))
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.traced((field, "uint16"), |r| r.u16(field))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.traced((field, "int32"), |r| r.i32(field))
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.traced((field, "int64"), |r| r.i64(field))
    }

    fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        self.traced((field, "bool"), |r| r.bool(field))
    }

    fn uuid(&mut self, field: &'static str) -> Result<[u8; 16], DecodeError> {
        self.traced((field, "uuid"), |r| r.uuid(field))
    }

    fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        if self.flexible {
            self.traced((field, "compact_string"), |r| r.compact_string(field))
        } else {
            self.traced((field, "string"), |r| r.string(field))
        }
    }

    fn nullable_string(&mut self, field: &'static str) -> Result<Option<String>, DecodeError> {
        if self.flexible {
            self.traced((field, "compact_nullable_string"), |r| {
                r.compact_nullable_string(field)
            })
        } else {
            self.traced((field, "nullable_string"), |r| r.nullable_string(field))
        }
    }

    fn skip_string(&mut self, field: &'static str) -> Result<(), DecodeError> {
        if self.flexible {
            self.traced((field, "compact_string (not read)"), |r| {
                r.skip_compact_string(field)
            })
        } else {
            self.traced((field, "string (not read)"), |r| r.skip_string(field))
        }
    }

    /// The length of an array the schema does not allow to be null.
    fn array_len(&mut self, field: &'static str) -> Result<usize, DecodeError> {
        let at = self.r.position();
        let len = if self.flexible {
            self.traced((field, "compact array length"), |r| {
                r.compact_array_len(field)
            })?
        } else {
            self.traced((field, "array length"), |r| r.array_len(field))?
        };
        len.ok_or(DecodeError::Invalid {
            field,
            offset: at,
            reason: "null where an array is required".into(),
        })
    }

    /// The length of an array the schema allows to be null: `None` for null.
    fn nullable_array_len(&mut self, field: &'static str) -> Result<Option<usize>, DecodeError> {
        if self.flexible {
            self.traced((field, "compact nullable array length"), |r| {
                r.compact_array_len(field)
            })
        } else {
            self.traced((field, "nullable array length"), |r| r.array_len(field))
        }
    }

    /// Passes over a struct's tagged fields (none in rigid versions).
    fn tags(&mut self) -> Result<(), DecodeError> {
        self.tags_with(|_, _| Ok(false))
    }

    /// A struct's tagged fields: `each` gets every tag with a cursor over its data alone
    /// and says whether it read it, which must then be all of it. Errors' offsets are
    /// made the message's. None in rigid versions.
    fn tags_with(
        &mut self,
        mut each: impl FnMut(u32, &mut Self) -> Result<bool, DecodeError>,
    ) -> Result<(), DecodeError> {
        if !self.flexible {
            return Ok(());
        }
        let version = self.version;
        self.r.tagged_slices(|tag, data, at| {
            let mut inner = Self {
                r: Reader::new(data),
                version,
                flexible: true,
            };
            match each(tag, &mut inner) {
                Ok(true) => inner.r.finish(),
                Ok(false) => Ok(()),
                Err(err) => Err(err),
            }
            .map_err(|err| err.shifted(at))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_agree_with_the_api_table() {
        for api in [
            FETCH,
            METADATA,
            CREATE_TOPICS,
            VOTE,
            BEGIN_QUORUM_EPOCH,
            END_QUORUM_EPOCH,
            DESCRIBE_CLUSTER,
            BROKER_REGISTRATION,
            BROKER_HEARTBEAT,
        ] {
            // a version the table gains needs its schema read before it is decoded
            let info = api.info().expect("in the table");
            let newest = newest_decoded(api).expect("decoded");
            assert_eq!(*info.request_versions.end(), newest, "{}", info.name);
            assert!(decodes(api, 0) && decodes(api, newest) && !decodes(api, newest + 1));
        }
        assert!(!decodes(ApiKey(67), 0));
    }

    #[test]
    fn a_request_of_another_api_or_an_unknown_version_is_refused() {
        let other = wire::Msg::request(ApiKey(67), 0).bytes;
        let err = Wire::request(&other, &[VOTE]).err().expect("refused");
        assert!(err.to_string().contains("AllocateProducerIds"), "{err}");
        let newer = wire::Msg::request(VOTE, 3).bytes;
        let err = Wire::request(&newer, &[VOTE]).err().expect("refused");
        assert!(
            matches!(err, DecodeError::Invalid { offset: 2, .. }),
            "{err}"
        );
        let err = Wire::response(&[0, 0, 0, 1], METADATA, -1)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("version -1"), "{err}");
    }
}
