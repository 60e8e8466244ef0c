//! CreateTopics responses (API key 19): the id Kafka gave each topic it created
//! (version 7+), so that a Produce request of version 13, which names topics by id, can be
//! told by name even when no Metadata response of the capture names it.

use super::{Wire, CREATE_TOPICS};
use crate::kafka::reader::DecodeError;

/// The topics a CreateTopics response of `version` says were created, each with its id
/// (version 7+; none before), read to the message's end. A topic refused with an error,
/// or given the all-zero id (Kafka's "none"), is left out.
pub fn create_topics_response(
    message: &[u8],
    version: i16,
) -> Result<Vec<([u8; 16], String)>, DecodeError> {
    let mut w = Wire::response(message, CREATE_TOPICS, version)?;
    if version >= 2 {
        w.i32("ThrottleTimeMs")?;
    }
    let mut created = Vec::new();
    for _ in 0..w.array_len("Topics")? {
        let name = w.string("Topics.Name")?;
        let id = (version >= 7)
            .then(|| w.uuid("Topics.TopicId"))
            .transpose()?;
        let error = w.i16("Topics.ErrorCode")?;
        if version >= 1 {
            w.nullable_string("Topics.ErrorMessage")?;
        }
        if version >= 5 {
            w.i32("Topics.NumPartitions")?;
            w.i16("Topics.ReplicationFactor")?;
            configs(&mut w)?;
        }
        // tag 0, TopicConfigErrorCode, is not needed
        w.tags()?;
        if let Some(id) = id.filter(|id| *id != [0; 16] && error == 0) {
            created.push((id, name));
        }
    }
    w.tags()?;
    w.r.finish()?;
    Ok(created)
}

/// A created topic's `Configs` (version 5+, nullable), passed over.
fn configs(w: &mut Wire<'_>) -> Result<(), DecodeError> {
    for _ in 0..w.nullable_array_len("Topics.Configs")?.unwrap_or(0) {
        w.skip_string("Configs.Name")?;
        w.nullable_string("Configs.Value")?;
        w.bool("Configs.ReadOnly")?;
        w.i8("Configs.ConfigSource")?;
        w.bool("Configs.IsSensitive")?;
        w.tags()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::wire::Msg;
    use super::*;

    /// A response of `version`: topic "orders" created (id all 7s, with one config), and
    /// "taken" refused with TOPIC_ALREADY_EXISTS (36).
    fn response(version: i16) -> Vec<u8> {
        let mut m = Msg::response(CREATE_TOPICS, version);
        if version >= 2 {
            m = m.i32(0);
        }
        m = m.array(2);
        for (name, error, fill) in [("orders", 0, 7), ("taken", 36, 9)] {
            m = m.string(name);
            if version >= 7 {
                m = m.uuid(fill);
            }
            m = m.i16(error);
            if version >= 1 {
                m = m.nullable_string((error != 0).then_some("exists"));
            }
            if version >= 5 {
                m = m.i32(3).i16(2);
                m = match error {
                    0 => m
                        .array(1)
                        .string("cleanup.policy")
                        .nullable_string(Some("delete"))
                        .bool(false)
                        .i8(5)
                        .bool(false)
                        .tags(),
                    // null configs
                    _ => m.uvarint(0),
                };
                m = m.tagged(&[(0, vec![0, 0])]);
            }
        }
        m.tags().bytes
    }

    #[test]
    fn every_version_gives_the_created_topics_ids_from_version_7() {
        for version in 0..=7 {
            let created = create_topics_response(&response(version), version)
                .unwrap_or_else(|e| panic!("v{version}: {e}"));
            let expected = match version {
                7 => vec![([7; 16], "orders".to_owned())],
                _ => Vec::new(),
            };
            assert_eq!(created, expected, "v{version}");
        }
    }

    #[test]
    fn a_cut_or_overlong_response_is_an_error() {
        let whole = response(7);
        for cut in 0..whole.len() {
            assert!(
                matches!(
                    create_topics_response(&whole[..cut], 7),
                    Err(DecodeError::Short { .. })
                ),
                "cut at {cut}"
            );
        }
        let mut longer = whole;
        longer.push(0);
        assert!(create_topics_response(&longer, 7).is_err());
    }
}
