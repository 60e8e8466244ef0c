//! BrokerRegistration (key 62), versions 0-4, all flexible: a broker tells the active
//! controller its id and listeners when it starts; the answer gives its broker epoch.
//!
//! Request: BrokerId int32, ClusterId string, IncarnationId uuid, Listeners [{Name, Host,
//! Port uint16, SecurityProtocol int16}], then Features, Rack, IsMigratingZkBroker (v1+),
//! LogDirs (v2+), PreviousBrokerEpoch (v3+), which are not read. v4 changes no field.
//! Response: ThrottleTimeMs int32, ErrorCode int16, BrokerEpoch int64.

use super::{Wire, BROKER_REGISTRATION};
use crate::kafka::reader::DecodeError;
use crate::kafka::tables::ErrorCode;

/// What a BrokerRegistration request says about where its broker listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerListeners {
    pub broker_id: i32,
    /// Every listener, client-facing or inter-broker alike: `name` tells which.
    pub listeners: Vec<Listener>,
}

/// One of a broker's listeners, as configured (`host` may be a name, not an address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// Kafka's SecurityProtocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL.
    pub security_protocol: i16,
}

/// The controller's answer to a BrokerRegistration request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationReply {
    pub error_code: ErrorCode,
    /// The broker epoch assigned, -1 when none was.
    pub broker_epoch: i64,
}

/// The broker id and listeners of a BrokerRegistration request (`message` starts at the
/// request header); the fields after the listeners are not read.
pub fn broker_registration_request(message: &[u8]) -> Result<BrokerListeners, DecodeError> {
    let (mut w, _) = Wire::request(message, &[BROKER_REGISTRATION])?;
    let broker_id = w.i32("BrokerId")?;
    w.skip_string("ClusterId")?;
    w.uuid("IncarnationId")?;
    let count = w.array_len("Listeners")?;
    let mut listeners = Vec::new(); // grows with what is read, not with the count
    for _ in 0..count {
        listeners.push(Listener {
            name: w.string("Listeners.Name")?,
            host: w.string("Listeners.Host")?,
            port: w.u16("Listeners.Port")?,
            security_protocol: w.i16("Listeners.SecurityProtocol")?,
        });
        w.tags()?;
    }
    Ok(BrokerListeners {
        broker_id,
        listeners,
    })
}

/// The answer of a BrokerRegistration response of `version` (`message` starts at the
/// response header); every byte must be read.
pub fn broker_registration_response(
    message: &[u8],
    version: i16,
) -> Result<RegistrationReply, DecodeError> {
    let mut w = Wire::response(message, BROKER_REGISTRATION, version)?;
    w.i32("ThrottleTimeMs")?;
    let error_code = ErrorCode(w.i16("ErrorCode")?);
    let broker_epoch = w.i64("BrokerEpoch")?;
    w.tags()?;
    w.r.finish()?;
    Ok(RegistrationReply {
        error_code,
        broker_epoch,
    })
}

#[cfg(test)]
mod tests {
    use super::super::wire::Msg;
    use super::*;

    fn request(version: i16) -> Vec<u8> {
        Msg::request(BROKER_REGISTRATION, version)
            .i32(2)
            .string("cluster-x")
            .uuid(0xab)
            .array(2)
            .string("PLAINTEXT")
            .string("10.0.0.2")
            .u16(19101)
            .i16(0)
            .tags()
            .string("CONTROLLER")
            .string("broker-2.example")
            .u16(65535)
            .i16(1)
            .tags()
            // Features: one, then a rack; never read.
            .array(1)
            .string("metadata.version")
            .i16(1)
            .i16(27)
            .tags()
            .nullable_string(None)
            .bytes
    }

    fn expected() -> BrokerListeners {
        BrokerListeners {
            broker_id: 2,
            listeners: vec![
                Listener {
                    name: "PLAINTEXT".into(),
                    host: "10.0.0.2".into(),
                    port: 19101,
                    security_protocol: 0,
                },
                Listener {
                    name: "CONTROLLER".into(),
                    host: "broker-2.example".into(),
                    port: 65535,
                    security_protocol: 1,
                },
            ],
        }
    }

    #[test]
    fn reads_listeners_of_every_version() {
        for version in 0..=4 {
            assert_eq!(
                broker_registration_request(&request(version)),
                Ok(expected()),
                "v{version}"
            );
        }
        assert!(broker_registration_request(&request(5)).is_err());
    }

    #[test]
    fn a_request_cut_before_its_last_listener_ends_fails_short() {
        let whole = request(4);
        let listeners_end = whole.len() - 24; // Features (23 bytes) and Rack (1) follow
        assert_eq!(
            broker_registration_request(&whole[..listeners_end]),
            Ok(expected())
        );
        for cut in 0..listeners_end {
            let err = broker_registration_request(&whole[..cut]).unwrap_err();
            assert!(matches!(err, DecodeError::Short { .. }), "cut {cut}: {err}");
        }
    }

    #[test]
    fn a_lying_listener_count_is_refused_before_allocating() {
        let bytes = Msg::request(BROKER_REGISTRATION, 4)
            .i32(2)
            .string("c")
            .uuid(0)
            .uvarint(u32::MAX)
            .bytes;
        let err = broker_registration_request(&bytes).unwrap_err();
        assert!(
            matches!(err, DecodeError::Short { field: "Listeners", needed, .. } if needed == u32::MAX as usize - 1),
            "{err}"
        );
    }

    #[test]
    fn reads_the_broker_epoch_of_an_answer() {
        let answer = |version| {
            Msg::response(BROKER_REGISTRATION, version)
                .i32(0)
                .i16(0)
                .i64(21)
                .tags()
                .bytes
        };
        let reply = RegistrationReply {
            error_code: ErrorCode::NONE,
            broker_epoch: 21,
        };
        for version in 0..=4 {
            assert_eq!(
                broker_registration_response(&answer(version), version),
                Ok(reply)
            );
        }
        let whole = answer(4);
        for cut in 0..whole.len() {
            assert!(
                broker_registration_response(&whole[..cut], 4).is_err(),
                "cut {cut}"
            );
        }
        let mut longer = whole;
        longer.push(0);
        assert!(matches!(
            broker_registration_response(&longer, 4),
            Err(DecodeError::Trailing { .. })
        ));
    }
}
