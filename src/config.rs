//! What a run of the library reads and how: the inputs, the limits that bound what the
//! input makes pidshark hold, the analysis's rules and the filters of the exchanges shown.
//! How the report is written (format, destination, gates) is the binary's business
//! (`cli::Options`).

use crate::analysis::SlowRule;
use crate::kafka::KafkaConfig;
use crate::report::filter::Filter;

/// Out-of-order bytes held per direction before a hole is declared lost.
pub const DEFAULT_MAX_HELD_LEN: usize = 4 << 20;

/// Default `--log-clock-skew`: a second between the metadata log's clock and the capture's.
pub const DEFAULT_LOG_CLOCK_SKEW_MS: i64 = 1000;

/// What [`crate::run`] needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    /// Capture files, read as one in time order; `-` is standard input.
    pub inputs: Vec<String>,
    /// Which exchanges the output shows (the analysis sees them all).
    pub filter: Filter,
    pub kafka: KafkaConfig,
    /// Out-of-order bytes held per direction.
    pub max_held_len: usize,
    /// Open connections tracked at once.
    pub max_connections: usize,
    /// Budget for what the input holds.
    pub max_memory: usize,
    /// Largest capture record read.
    pub max_record: usize,
    /// Threads the connections' work is spread over; 1 does it on the reading thread.
    pub threads: usize,
    /// How far apart two files' timestamps of one packet may be, in nanoseconds.
    pub clock_skew_ns: u64,
    /// Controllers' metadata logs to compare with the captures (`--metadata-log`).
    pub metadata_logs: Vec<String>,
    /// How far apart the metadata log's clock and the captures' may be, in milliseconds.
    pub log_clock_skew_ms: i64,
    pub slow: SlowRule,
    /// Blocks of producer ids compared one by one before older ones are folded into
    /// ranges (bounds the analysis's memory).
    pub max_recent_blocks: usize,
}

impl Config {
    /// A configuration with defaults for reading `inputs`.
    pub fn for_inputs(inputs: Vec<String>) -> Self {
        Self {
            inputs,
            filter: Filter::default(),
            kafka: KafkaConfig::default(),
            max_held_len: DEFAULT_MAX_HELD_LEN,
            max_connections: crate::tcp::DEFAULT_MAX_CONNECTIONS,
            max_memory: crate::tcp::DEFAULT_MAX_MEMORY,
            max_record: crate::capture::MAX_RECORD_BUFFER,
            threads: 1,
            clock_skew_ns: crate::copies::DEFAULT_CLOCK_SKEW_NS,
            metadata_logs: Vec::new(),
            log_clock_skew_ms: DEFAULT_LOG_CLOCK_SKEW_MS,
            slow: SlowRule::Default,
            max_recent_blocks: crate::analysis::MAX_TRACKED_BLOCKS,
        }
    }
}
