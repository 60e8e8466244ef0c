//! Command line: the clap definition as typed, and the validated [`Options`] built from
//! it: the library's [`Config`] and what only the binary uses (format, destination, gates).

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::Parser;

use crate::analysis::SlowRule;
use crate::config::Config;
use crate::gate::Condition;
use crate::kafka::{KafkaConfig, KeepRaw};
use crate::report::filter::{Filter, TimeBound};

/// The two modes: captures (with or without metadata logs beside them), or metadata logs
/// read alone.
pub const USAGE: &str = "pidshark [OPTIONS] <CAPTURE>...
       pidshark [OPTIONS] --metadata-log <PATH>...";

/// What is said when neither mode's input is given.
pub const NO_INPUT: &str = "no input: give capture files (`-` reads standard input, `-r FILE` \
works too), or --metadata-log PATH to read a controller's metadata log alone";

/// Examples shown by `--help` (and `-h` points to them).
const EXAMPLES: &str = "\
Examples:
  pidshark capture.pcap                       the JSON report on standard output
  pidshark --format text capture.pcap         a summary for the terminal
  pidshark -r capture.pcapng -o report.json   tshark's -r works too
  pidshark cap*.pcap.gz                       rotated files, read as one capture in time order
  tcpdump -w - port 9093 | pidshark -         from a live capture on standard input
  pidshark --format ndjson capture.pcap | jq -c 'select(.type == \"exchange\" and .status != \"complete\")'
  pidshark capture.pcap -o report.json --expect golden.json --fail-on pid_block_overlap,error
  pidshark --list-kinds                       every diagnostic kind, its severity and meaning
  pidshark --metadata-log kraft-data/ --format text   a controller's metadata log read alone";

const EXIT_STATUS: &str = "\
Exit status: 0 when a report was written and no --fail-on condition held and --expect found \
no difference (also when the reader of the output closed it early, as `head` does); 1 when \
the report was made but a --fail-on condition held or --expect found differences (named \
on stderr; with a gate, a reader that closes the output early does not cut the run short, \
so the gate judges the whole capture); 2 when the command line is refused (no input, a value \
outside an option's meaning, options that do not go together), a capture could not be read \
(missing, empty, a directory, not a pcap/pcapng file), a metadata log is none (its first \
batch no Kafka record batch), the --expect file could not be read, or the report could not \
be written, with one line on stderr naming the file or option and the reason.

The report's fields, diagnostic kinds and exit codes are described in docs/report-format.md \
(in the source repository), and its JSON Schema is printed by --schema.";

/// Finds Kafka AllocateProducerIds (API key 67) exchanges in packet captures and writes
/// a JSON report (format version 1).
#[derive(Debug, Parser)]
#[command(
    name = "pidshark",
    version,
    override_usage = USAGE,
    after_help = "Each option in full, the examples and the exit status: pidshark --help",
    after_long_help = format!("{EXAMPLES}\n\n{EXIT_STATUS}")
)]
pub struct Args {
    /// Capture files (pcap, pcapng, gzip or not); `-` reads standard input.
    ///
    /// Several files are read as one capture, in the time order of their first packets.
    #[arg(value_name = "CAPTURE", help_heading = "Input")]
    pub captures: Vec<String>,

    /// A capture file, as tshark's `-r` takes it.
    ///
    /// Repeatable; read with the CAPTUREs.
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        help_heading = "Input"
    )]
    pub read: Vec<String>,

    /// Treat TCP port P as a Kafka server port (repeatable).
    ///
    /// Connections to P are read as Kafka whatever their bytes look like. Without it,
    /// every connection whose first message is a plausible Kafka request is taken as Kafka.
    #[arg(long = "port", value_name = "P", value_parser = parse_port, help_heading = "Input")]
    pub ports: Vec<u16>,

    /// How far apart, in milliseconds, two files' clocks may put the same packet.
    ///
    /// Several files are merged by time, as mergecap merges them; a packet found in two
    /// of them (same connection, sequence numbers, flags and bytes) within MS of each
    /// other is read once and counted in `duplicate_packets`. Across files, a message is
    /// taken to come after another only when later by more than MS.
    #[arg(long, value_name = "MS", default_value = "5", value_parser = parse_clock_skew, help_heading = "Input")]
    pub clock_skew: u64,

    /// A KRaft controller's metadata log, compared with the capture (repeatable).
    ///
    /// A `__cluster_metadata-0` directory (its segments, and its latest snapshot) or a
    /// single `.log` or `.checkpoint` file. Its committed ProducerIdsRecords are compared
    /// with the blocks delivered on the wire (`pid_block_not_committed`,
    /// `pid_block_not_delivered`, `pid_block_mismatch`) and listed in `metadata_log`.
    /// Given without a capture, the log alone is reported. Several logs (one per
    /// controller) are merged by offset.
    #[arg(long = "metadata-log", value_name = "PATH", help_heading = "Input")]
    pub metadata_logs: Vec<String>,

    /// How far apart, in milliseconds, the metadata log's clock and the capture's may be.
    ///
    /// A record appended more than MS after the response that delivered its block is a
    /// `pid_block_mismatch`; times the log covers are widened by MS.
    #[arg(long, value_name = "MS", default_value = "1000", value_parser = clap::value_parser!(u32).range(0..=3_600_000), help_heading = "Input")]
    pub log_clock_skew: u32,

    /// Write the report to FILE instead of standard output (`-`: standard output).
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,

    /// Output format.
    ///
    /// Each is described in docs/report-format.md, "Formats".
    #[arg(long, value_enum, default_value_t = Format::Json, help_heading = "Output")]
    pub format: Format,

    /// One-line JSON instead of indented.
    #[arg(long, help_heading = "Output")]
    pub compact: bool,

    /// Leave `producer_ids.entries` out of the JSON report (and the `producer_id` lines
    /// out of ndjson).
    ///
    /// Every InitProducerId exchange is an entry: on a busy cluster they are nearly all
    /// of the report (52,150 entries, 97% of a 39 MB report). `producer_ids.summary` still
    /// counts them, the findings still name the producers an overlap reaches, and the
    /// verdict is the same. For `--format json` and `ndjson` only.
    #[arg(long, help_heading = "Output")]
    pub no_producer_entries: bool,

    /// In `--format text`, list every exchange.
    ///
    /// Without it the text report lists only those worth a look: error responses,
    /// requests without an answer, slow responses.
    #[arg(long, help_heading = "Output")]
    pub all: bool,

    /// Colour in `--format text`.
    ///
    /// `auto`: when writing to a terminal and `NO_COLOR` is unset.
    #[arg(long, alias = "colour", value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto, help_heading = "Output")]
    pub color: ColorChoice,

    /// No progress display.
    ///
    /// Without it, one is shown on stderr when stderr is a terminal: a bar for files, a
    /// spinner with the bytes read and the rate for standard input.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// After the report, print the run's time and peak memory on stderr.
    ///
    /// The peak is the process's own high-water mark (`VmHWM`, Linux), read as it ends:
    /// what to compare with `--max-memory`.
    #[arg(long, help_heading = "Output")]
    pub stats: bool,

    /// Print the JSON Schema of the report, or of an ndjson line, and exit.
    #[arg(long, exclusive = true, help_heading = "Output", value_name = "OF",
          num_args = 0..=1, default_missing_value = "report")]
    pub schema: Option<SchemaOf>,

    /// Print every diagnostic kind with its severity and meaning, and exit.
    #[arg(long, exclusive = true, help_heading = "Output")]
    pub list_kinds: bool,

    /// Print the completion script for SHELL and exit.
    ///
    /// For example `pidshark --completions bash >
    /// ~/.local/share/bash-completion/completions/pidshark`.
    #[arg(
        long,
        exclusive = true,
        value_name = "SHELL",
        help_heading = "Installation"
    )]
    pub completions: Option<clap_complete::Shell>,

    /// Print the manual page (roff) and exit.
    ///
    /// For example `pidshark --man > ~/.local/share/man/man1/pidshark.1`.
    #[arg(long, exclusive = true, help_heading = "Installation")]
    pub man: bool,

    /// Only the exchanges (and blocks) of broker ID.
    ///
    /// Filters apply to every format's exchanges and blocks; the summary, the findings and
    /// the diagnostics still describe the whole capture, and the report names the filters.
    #[arg(long, value_name = "ID", help_heading = "Filters")]
    pub broker: Option<i32>,

    /// Only the exchanges of connection N (Wireshark's `tcp.stream`).
    #[arg(long, value_name = "N", help_heading = "Filters")]
    pub connection: Option<u64>,

    /// Only exchanges requested at TIME or later.
    ///
    /// TIME is RFC 3339 (`2026-11-29T13:54:58Z`, any offset) or seconds after the
    /// capture's first packet (`12.5`), as Wireshark's `frame.time_relative`.
    #[arg(long, value_name = "TIME", value_parser = TimeBound::parse, help_heading = "Filters")]
    pub since: Option<TimeBound>,

    /// Only exchanges requested at TIME or earlier (as --since).
    #[arg(long, value_name = "TIME", value_parser = TimeBound::parse, help_heading = "Filters")]
    pub until: Option<TimeBound>,

    /// Only exchanges without a NONE answer read whole.
    ///
    /// Error responses, requests without an answer, and messages that did not decode.
    #[arg(long, help_heading = "Filters")]
    pub errors_only: bool,

    /// Only the exchange with a message in frame N; `--format tree` draws that message.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Filters")]
    pub frame: Option<u64>,

    /// Responses slower than MS milliseconds are `pid_slow_response`.
    ///
    /// Default: slower than 10 times the capture's median latency and than 100 ms.
    #[arg(long, value_name = "MS", value_parser = parse_slow_ms, allow_negative_numbers = true, help_heading = "Analysis")]
    pub slow_ms: Option<f64>,

    /// Exit 1 after writing the report if COND holds (repeatable, or comma-separated).
    ///
    /// COND is a diagnostic kind (see --list-kinds), a severity (`warning`: any warning or
    /// error), `error-response` (a non-NONE error code), `unanswered`, a verdict code
    /// (`incomplete_capture`: the verdict is that one) or `not-correct` (the verdict is
    /// neither `correct` nor `correct_with_warnings`, nor for a metadata log alone
    /// `committed_blocks_consistent` or `committed_blocks_gap`). Judged on the whole
    /// capture, whatever the filters.
    #[arg(long, value_name = "COND", value_delimiter = ',', value_parser = ConditionParser, hide_possible_values = true, help_heading = "CI gates")]
    pub fail_on: Vec<Condition>,

    /// Exit 1 if the exchanges differ from those of the report in FILE.
    ///
    /// FILE is a golden file, a report written before; each difference is listed on stderr.
    #[arg(long, value_name = "FILE", help_heading = "CI gates")]
    pub expect: Option<PathBuf>,

    /// Out-of-order bytes held per connection direction.
    ///
    /// Past it the hole they wait for is declared lost (`tcp_gap`). Bytes, or with K, M or
    /// G (powers of 1024), as every SIZE.
    #[arg(long, value_name = "SIZE", default_value = "4M", value_parser = parse_size, help_heading = "Limits")]
    pub max_buffer: usize,

    /// Memory budget for what the input makes pidshark hold.
    ///
    /// Out-of-order segments, messages being read, framing searches, waiting requests: past
    /// it the connections holding most give up what they hold (`memory_limit`).
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_size, help_heading = "Limits")]
    pub max_memory: usize,

    /// Open connections tracked at once.
    ///
    /// Past it the least recently active is forgotten (`connection_limit`). Two to four
    /// times as many closed ones are remembered.
    #[arg(long, value_name = "N", default_value_t = crate::tcp::DEFAULT_MAX_CONNECTIONS, help_heading = "Limits")]
    pub max_connections: usize,

    /// Requests waiting for a response per connection.
    ///
    /// Past it the oldest is given up (`pending_limit`; Produce with acks=0 is never
    /// answered).
    #[arg(long, value_name = "N", default_value_t = crate::kafka::waiting::MAX_PENDING_PER_CONNECTION, help_heading = "Limits")]
    pub max_pending: usize,

    /// Threads that reassemble and decode connections (0: the cores the reading and
    /// output threads leave, at least 1; at most 256).
    ///
    /// The capture is read on one thread and its connections spread over these; the
    /// report is the same whatever the number. 1 does that work on the reading thread.
    /// `--max-connections` and `--max-memory` are shared out among them, less what is
    /// in flight between the threads (about 768 KiB a worker): where a limit is
    /// reached, which connection is given up can differ.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(0..=256), help_heading = "Limits")]
    pub threads: u16,

    /// Largest capture record (pcapng block) read.
    ///
    /// A larger one is `capture_corrupt`, and reading that file stops there.
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = parse_size, help_heading = "Limits")]
    pub max_record: usize,

    /// Largest Kafka frame believed.
    ///
    /// A larger size prefix is `kafka_frame_too_large` (Kafka's own default
    /// `socket.request.max.bytes` is 100 MiB).
    #[arg(long, value_name = "SIZE", default_value = "100M", value_parser = parse_size, help_heading = "Limits")]
    pub max_frame: usize,
}

/// When `--format text` is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// `--fail-on`'s values: parsed by [`Condition::parse`], whose error names the nearest
/// condition and lists them all; offered to shell completion as every condition name.
#[derive(Debug, Clone, Copy)]
struct ConditionParser;

impl TypedValueParser for ConditionParser {
    type Value = Condition;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Condition, clap::Error> {
        Condition::parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            Condition::names().map(clap::builder::PossibleValue::new),
        ))
    }
}

/// A TCP port, `1` to `65535`, saying so when given anything else (`--port kafka`).
fn parse_port(text: &str) -> Result<u16, String> {
    text.trim()
        .parse::<u16>()
        .ok()
        .filter(|port| *port != 0)
        .ok_or_else(|| format!("--port takes a TCP port number 1-65535 (e.g. 9092), not {text:?}"))
}

/// Milliseconds (a fraction allowed, up to a minute) as nanoseconds.
/// A latency in milliseconds: a finite number, zero or more (`-5` and `nan` are
/// mistakes, not rules; `-5` reaches here, not clap's "did you mean `-- -5`").
fn parse_slow_ms(text: &str) -> Result<f64, String> {
    let ms: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of milliseconds"))?;
    if !ms.is_finite() || ms < 0.0 {
        return Err(format!(
            "`{text}`: a latency is a finite number of milliseconds, 0 or more"
        ));
    }
    Ok(ms)
}

fn parse_clock_skew(text: &str) -> Result<u64, String> {
    let ms: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of milliseconds"))?;
    if !(0.0..=60_000.0).contains(&ms) {
        return Err(format!(
            "`{text}`: the clock skew is 0 to 60000 milliseconds"
        ));
    }
    Ok((ms * 1e6).round() as u64)
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

/// What a run does: print one of the things a user installs or reads beside the report
/// (clap lets at most one of those options through: each is `exclusive`), or the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Schema(SchemaOf),
    Completions(clap_complete::Shell),
    Man,
    ListKinds,
    Report,
}

impl Args {
    /// The mode the options choose.
    pub fn mode(&self) -> Mode {
        match (self.schema, self.completions) {
            (Some(of), _) => Mode::Schema(of),
            (None, Some(shell)) => Mode::Completions(shell),
            _ if self.man => Mode::Man,
            _ if self.list_kinds => Mode::ListKinds,
            _ => Mode::Report,
        }
    }
}

/// What `--schema` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaOf {
    /// The JSON report (`schema/report-v1.schema.json`).
    Report,
    /// A line of `--format ndjson` (`schema/ndjson-v1.schema.json`).
    Ndjson,
}

/// Output formats; all come from the same decoded data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The report: one JSON object (format version 1).
    Json,
    /// A line per exchange as it completes and per block it granted, a line per
    /// producer id granted, per finding, then one with the rest of the report; each
    /// line's `type` says which.
    Ndjson,
    /// Each AllocateProducerIds, InitProducerId and EndTxn message (with --frame, the
    /// message in that frame, whatever its API) as a tree of its fields with wire types,
    /// offsets and sizes, then its bytes.
    Tree,
    /// The post-mortem for a terminal: the verdict first, a screenful or two.
    Text,
    /// A row per exchange (RFC 4180).
    Csv,
    /// A row per producer-id block (RFC 4180).
    CsvBlocks,
    /// A row per InitProducerId exchange: which client got which producer id (RFC 4180).
    CsvProducers,
    /// A row per record batch of every Produce request: its producer id, epoch and
    /// sequences, and what became of it (appended, a retry, not appended, refused...)
    /// (RFC 4180).
    CsvWrites,
    /// A row per block the metadata log (`--metadata-log`) commits, with how it stands
    /// against the capture (RFC 4180).
    CsvCommitted,
    /// One self-contained page (use with -o report.html).
    Html,
}

/// What the command line asks for, validated: the library's [`Config`] and how the binary
/// writes and checks the report.
#[derive(Debug, Clone)]
pub struct Options {
    pub config: Config,
    pub output: Option<PathBuf>,
    pub compact: bool,
    /// `--no-producer-entries`.
    pub producer_entries: bool,
    pub format: Format,
    pub color: ColorChoice,
    /// `--format text` lists every exchange.
    pub all_exchanges: bool,
    pub fail_on: Vec<Condition>,
    pub expect: Option<PathBuf>,
}

impl From<Args> for Options {
    fn from(args: Args) -> Self {
        let mut ports = args.ports;
        ports.sort_unstable();
        ports.dedup();
        let mut inputs = args.read;
        inputs.extend(args.captures);
        let config = Config {
            inputs,
            filter: Filter {
                broker: args.broker,
                connection: args.connection,
                since: args.since,
                until: args.until,
                errors_only: args.errors_only,
                frame: args.frame,
            },
            kafka: KafkaConfig {
                ports,
                max_frame_len: u32::try_from(args.max_frame).unwrap_or(u32::MAX),
                // the tree's sink asks for the messages' bytes (Needs::raw_messages)
                keep_raw: KeepRaw::Nothing,
                max_pending: args.max_pending,
                // the pipeline asks for every message when it watches a frame
                list_every_message: false,
            },
            max_held_len: args.max_buffer,
            max_connections: args.max_connections,
            max_memory: args.max_memory,
            max_record: args.max_record,
            threads: crate::shard::threads(usize::from(args.threads)),
            clock_skew_ns: args.clock_skew,
            metadata_logs: args.metadata_logs,
            log_clock_skew_ms: i64::from(args.log_clock_skew),
            slow: args.slow_ms.map_or(SlowRule::Default, SlowRule::Millis),
            max_recent_blocks: crate::analysis::MAX_TRACKED_BLOCKS,
        };
        Self {
            config,
            // `-o -` is standard output, as `-` is standard input: not a file named `-`
            output: args
                .output
                .filter(|path| path.as_os_str() != crate::input::STANDARD_STREAM),
            compact: args.compact,
            producer_entries: !args.no_producer_entries,
            format: args.format,
            color: args.color,
            all_exchanges: args.all,
            fail_on: args.fail_on,
            expect: args.expect,
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
