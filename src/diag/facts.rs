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

/// A value written as a fact: numbers as themselves, addresses as `ip:port`, sides and
/// kinds by name, an API by its key.
pub trait IntoFact {
    fn fact(self) -> Fact;
}

macro_rules! into_fact_by_from {
    ($($from:ty => $via:ty),* $(,)?) => {
        $(impl IntoFact for $from {
            fn fact(self) -> Fact {
                Fact::from(<$via>::from(self))
            }
        })*
    };
}

into_fact_by_from! {
    i16 => i64, i32 => i64, i64 => i64,
    u16 => u64, u32 => u64, u64 => u64,
    f64 => f64, bool => bool, &str => &str, String => String,
}

impl IntoFact for std::net::SocketAddr {
    fn fact(self) -> Fact {
        Fact::Text(self.to_string())
    }
}

impl IntoFact for std::net::IpAddr {
    fn fact(self) -> Fact {
        Fact::Text(self.to_string())
    }
}

impl IntoFact for super::Side {
    fn fact(self) -> Fact {
        self.name().into()
    }
}

impl IntoFact for super::NamedCode<'_> {
    fn fact(self) -> Fact {
        i64::from(self.code).into()
    }
}

impl IntoFact for super::Kind {
    fn fact(self) -> Fact {
        self.as_str().into()
    }
}

impl<T: IntoFact + Copy> IntoFact for &T {
    fn fact(self) -> Fact {
        (*self).fact()
    }
}

/// No facts yet, for [`facts!`] to push to one by one (`field?` pushes only some).
pub fn none() -> super::Facts {
    Vec::with_capacity(8)
}

/// The facts named by the fields they come from, in order: `field` is the fact `field`,
/// `field?` the same when it is `Some`, and `"name" => value` a fact the fields do not
/// hold as such.
macro_rules! facts {
    (@push $facts:ident;) => {};
    (@push $facts:ident; $name:literal => $value:expr $(, $($rest:tt)*)?) => {
        $facts.push(($name, $crate::diag::facts::IntoFact::fact($value)));
        facts!(@push $facts; $($($rest)*)?);
    };
    (@push $facts:ident; $field:ident ? $(, $($rest:tt)*)?) => {
        if let Some(value) = $field {
            $facts.push((stringify!($field), $crate::diag::facts::IntoFact::fact(value)));
        }
        facts!(@push $facts; $($($rest)*)?);
    };
    (@push $facts:ident; $field:ident $(, $($rest:tt)*)?) => {
        $facts.push((stringify!($field), $crate::diag::facts::IntoFact::fact($field)));
        facts!(@push $facts; $($($rest)*)?);
    };
    ($($rest:tt)*) => {{
        let mut facts = $crate::diag::facts::none();
        facts!(@push facts; $($rest)*);
        facts
    }};
}
pub(crate) use facts;
