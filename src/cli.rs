//! Command line: the clap definition as typed, and the validated [`Config`] built from it.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use clap::Parser;

use crate::analysis::SlowRule;
use crate::gate::Condition;
use crate::kafka::KafkaConfig;

/// Finds Kafka AllocateProducerIds (API key 67) exchanges in packet captures and writes
/// a JSON report (format version 1).
#[derive(Debug, Parser)]
#[command(
    name = "pidshark",
    version,
    after_help = "Exit status: 0 when a report was written and no --fail-on condition held and \
                  --expect found no difference; 1 when the report was written but a --fail-on \
                  condition held or --expect found differences (named on stderr); 2 when a \
                  capture could not be read (missing, empty, a directory, not a pcap/pcapng \
                  file), the --expect file could not be read, or the report could not be \
                  written, with one line on stderr naming the file and the reason.\n\n\
                  The report's fields, diagnostic kinds and exit codes are described in \
                  docs/report-format.md (in the source repository), and its JSON Schema is \
                  printed by --schema."
)]
pub struct Args {
    /// Capture files (pcap or pcapng), read as one capture in the order given; `-` reads
    /// standard input.
    #[arg(required_unless_present = "schema", value_name = "CAPTURE")]
    pub captures: Vec<String>,

    /// Write the report to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// One-line JSON instead of indented.
    #[arg(long)]
    pub compact: bool,

    /// Output format: `json` (the report), `ndjson` (one line per exchange as it
    /// completes, then a summary line), `tree` (each message's fields and bytes, like the
    /// seed document) or `text` (a summary for a terminal).
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,

    /// Treat TCP port P as a Kafka server port, whatever the bytes look like (repeatable).
    /// Without it, every connection whose first message is a plausible Kafka request is
    /// taken as Kafka.
    #[arg(long = "port", value_name = "P")]
    pub ports: Vec<u16>,

    /// Out-of-order bytes held per connection direction while waiting for a hole to
    /// fill; past it the hole is declared lost (`tcp_gap`). Bytes, or with K, M or G
    /// (powers of 1024).
    #[arg(long, value_name = "SIZE", default_value = "4M", value_parser = parse_size)]
    pub max_buffer: usize,

    /// Memory budget for what the input makes pidshark hold (out-of-order segments, messages
    /// being read, framing searches, waiting requests); past it the connections holding
    /// most give up what they hold (`memory_limit`). Bytes, or with K, M or G.
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_size)]
    pub max_memory: usize,

    /// Open connections tracked at once; past it the least recently active is forgotten
    /// (`connection_limit`). Two to four times as many closed ones are remembered.
    #[arg(long, value_name = "N", default_value_t = crate::tcp::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,

    /// Requests waiting for a response per connection before the oldest is given up
    /// (`pending_limit`; Produce with acks=0 is never answered).
    #[arg(long, value_name = "N", default_value_t = crate::kafka::waiting::MAX_PENDING_PER_CONNECTION)]
    pub max_pending: usize,

    /// Largest capture record (pcapng block) read; a larger one is `capture_corrupt`
    /// and reading that file stops there.
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = parse_size)]
    pub max_record: usize,

    /// Largest Kafka frame believed; a larger size prefix is `kafka_frame_too_large`
    /// (Kafka's own default `socket.request.max.bytes` is 100 MiB).
    #[arg(long, value_name = "SIZE", default_value = "100M", value_parser = parse_size)]
    pub max_frame: usize,

    /// Report AllocateProducerIds responses slower than MS milliseconds
    /// (`pid_slow_response`). Default: slower than 10 times the capture's median latency
    /// and than 100 ms.
    #[arg(long, value_name = "MS")]
    pub slow_ms: Option<f64>,

    /// After writing the report, exit 1 if COND holds: a diagnostic kind, a severity
    /// (`warning`: any warning or error), `error-response` (a non-NONE error code) or
    /// `unanswered`. Repeatable or comma-separated.
    #[arg(long, value_name = "COND", value_delimiter = ',', value_parser = Condition::parse)]
    pub fail_on: Vec<Condition>,

    /// After writing the report, compare its exchanges with those of the report in FILE
    /// (a golden file) and exit 1, listing the differences on stderr, if they differ.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,

    /// No progress bar (one is shown on stderr only when it is a terminal).
    #[arg(short, long)]
    pub quiet: bool,

    /// Print the JSON Schema of the report and exit.
    #[arg(long, exclusive = true)]
    pub schema: bool,
}

/// `4096`, `64K`, `4M`, `1G` (also `KiB`, `MiB`, `GiB`): a byte count.
fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        other => return Err(format!("unknown size unit {other:?} (use K, M or G)")),
    };
    let value: usize = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size"))?;
    value
        .checked_mul(1usize << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Output formats; all come from the same decoded data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Ndjson,
    Tree,
    Text,
}

/// What a run needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub inputs: Vec<String>,
    pub output: Option<PathBuf>,
    pub compact: bool,
    pub format: Format,
    pub kafka: KafkaConfig,
    /// Out-of-order bytes held per direction.
    pub max_held_len: usize,
    /// Open connections tracked at once.
    pub max_connections: usize,
    /// Budget for what the input holds.
    pub max_memory: usize,
    /// Largest capture record read.
    pub max_record: usize,
    pub slow: SlowRule,
    pub fail_on: Vec<Condition>,
    pub expect: Option<PathBuf>,
    /// Blocks of producer ids compared one by one before older ones are folded into
    /// ranges (bounds the analysis's memory).
    pub max_recent_blocks: usize,
    /// Counts capture bytes read, for a progress display.
    pub bytes_read: Option<Arc<AtomicU64>>,
}

impl Config {
    /// A configuration with defaults for reading `inputs`.
    pub fn for_inputs(inputs: Vec<String>) -> Self {
        Self {
            inputs,
            output: None,
            compact: false,
            format: Format::Json,
            kafka: KafkaConfig::default(),
            max_held_len: crate::DEFAULT_MAX_HELD_LEN,
            max_connections: crate::tcp::DEFAULT_MAX_CONNECTIONS,
            max_memory: crate::tcp::DEFAULT_MAX_MEMORY,
            max_record: crate::capture::MAX_RECORD_BUFFER,
            slow: SlowRule::Default,
            fail_on: Vec::new(),
            expect: None,
            max_recent_blocks: crate::analysis::MAX_TRACKED_BLOCKS,
            bytes_read: None,
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
            format: args.format,
            kafka: KafkaConfig {
                ports,
                max_frame_len: u32::try_from(args.max_frame).unwrap_or(u32::MAX),
                keep_raw: args.format == Format::Tree,
                max_pending: args.max_pending,
            },
            max_held_len: args.max_buffer,
            max_connections: args.max_connections,
            max_memory: args.max_memory,
            max_record: args.max_record,
            slow: args.slow_ms.map_or(SlowRule::Default, SlowRule::Millis),
            fail_on: args.fail_on,
            expect: args.expect,
            max_recent_blocks: crate::analysis::MAX_TRACKED_BLOCKS,
            bytes_read: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("4M"), Ok(4 << 20));
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("4X").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }
}
