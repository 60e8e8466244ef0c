//! Produce (API key 0): the writes. A request carries, per topic and partition, record
//! batches whose headers name the producer id, epoch and base sequence the broker's
//! producer state judges them by; the response says per partition what the broker did
//! with them. Requests are read as their bytes pass ([`request::RequestReader`]): the
//! records are never held.

pub mod batch;
pub mod request;
pub mod response;

#[cfg(test)]
mod tests;

pub use batch::BatchHeader;
pub use request::{Request, RequestReader};
pub use response::Response;

use super::MALLOC_OVERHEAD;

/// Heap a vector's buffer takes.
fn vec_bytes<T>(v: &Vec<T>) -> usize {
    match v.capacity() {
        0 => 0,
        n => n * size_of::<T>() + MALLOC_OVERHEAD,
    }
}
