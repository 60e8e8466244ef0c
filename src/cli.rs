//! Command line: the clap definition as typed, and the validated [`Config`] built from it.

use std::path::PathBuf;

use clap::Parser;

use crate::kafka::KafkaConfig;

/// Finds Kafka AllocateProducerIds (API key 67) exchanges in packet captures and writes
/// a JSON report (format version 1).
#[derive(Debug, Parser)]
#[command(
    name = "pidshark",
    version,
    after_help = "Exit status: 0 when a report was written; 2 when a capture could not be read \
                  (missing, empty, a directory, not a pcap/pcapng file) or the report could not \
                  be written, with one line on stderr naming the file and the reason."
)]
pub struct Args {
    /// Capture files (pcap or pcapng), read as one capture in the order given; `-` reads
    /// standard input.
    #[arg(required = true, value_name = "CAPTURE")]
    pub captures: Vec<String>,

    /// Write the report to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// One-line JSON instead of indented.
    #[arg(long)]
    pub compact: bool,

    /// Treat TCP port P as a Kafka server port, whatever the bytes look like (repeatable).
    /// Without it, every connection whose first message is a plausible Kafka request is
    /// taken as Kafka.
    #[arg(long = "port", value_name = "P")]
    pub ports: Vec<u16>,
}

/// What a run needs, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub inputs: Vec<String>,
    pub output: Option<PathBuf>,
    pub compact: bool,
    pub kafka: KafkaConfig,
}

impl Config {
    /// A configuration with defaults for reading `inputs`.
    pub fn for_inputs(inputs: Vec<String>) -> Self {
        Self {
            inputs,
            output: None,
            compact: false,
            kafka: KafkaConfig::default(),
        }
    }
}

impl From<Args> for Config {
    fn from(args: Args) -> Self {
        let mut ports = args.ports;
        ports.sort_unstable();
        ports.dedup();
        Self {
            inputs: args.captures,
            output: args.output,
            compact: args.compact,
            kafka: KafkaConfig {
                ports,
                ..KafkaConfig::default()
            },
        }
    }
}
