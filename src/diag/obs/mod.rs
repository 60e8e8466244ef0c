//! The observations of each kind: its values as the fields of a struct, and its facts and
//! sentence written from them, side by side. [`super::Observation`] has a variant per kind.

mod committed;
mod findings;
mod kafka;
mod limits;
mod wire;
mod writes;

pub use committed::*;
pub use findings::*;
pub use kafka::*;
pub use limits::*;
pub use wire::*;
pub use writes::*;
