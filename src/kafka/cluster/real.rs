//! Real Kafka messages from the committed captures.
