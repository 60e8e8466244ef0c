//! The JSON types of facts, in which [`super::Kind`] declares the facts each kind may
//! carry: what the report's schema describes for `facts` of each kind. A test holds
//! every observation's facts to that table (`observation/tests.rs`), and the schema
//! test every report's.

use super::Fact;

/// The JSON type a fact is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactType {
    /// A whole number (`Fact::Int`, `Fact::Uint`).
    Integer,
    /// A number with a fraction (`Fact::Float`).
    Number,
    Text,
    Boolean,
    /// An array of strings (`Fact::List`).
    Texts,
}

impl FactType {
    /// The type of a fact as written.
    pub fn of(fact: &Fact) -> Self {
        match fact {
            Fact::Int(_) | Fact::Uint(_) => Self::Integer,
            Fact::Float(_) => Self::Number,
            Fact::Text(_) => Self::Text,
            Fact::Bool(_) => Self::Boolean,
            Fact::List(_) => Self::Texts,
        }
    }

    /// Its JSON Schema.
    pub fn schema(self) -> serde_json::Value {
        match self {
            Self::Integer => serde_json::json!({ "type": "integer" }),
            Self::Number => serde_json::json!({ "type": "number" }),
            Self::Text => serde_json::json!({ "type": "string" }),
            Self::Boolean => serde_json::json!({ "type": "boolean" }),
            Self::Texts => serde_json::json!({ "type": "array", "items": { "type": "string" } }),
        }
    }
}
