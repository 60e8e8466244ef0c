//! Integration tests: the binary on committed fixtures and on synthetic captures.

mod common;

mod analysis;
mod arrows;
mod browser;
mod cli;
mod contract;
mod cut_sweep;
mod filters;
mod formats;
mod frame_holds;
mod gates;
mod golden;
pub mod html;
mod incident_capture;
mod incident_real;
mod kafka_real;
mod merge;
mod noise;
mod noise_real;
mod pipes;
mod producers_output;
mod properties;
mod regression;
mod report_format;
mod schema;
mod serialized;
mod snaplen;
mod synthetic;
mod terminal;
mod tls;
pub mod truth;
mod two_hosts;
pub mod variants;
mod verdict;
mod walkthrough;
pub mod wireshark;
