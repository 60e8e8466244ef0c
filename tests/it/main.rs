//! Integration tests: the binary on committed fixtures and on synthetic captures.

mod common;

mod cli;
mod contract;
mod golden;
mod properties;
mod synthetic;
pub mod truth;
pub mod variants;
mod wireshark;
