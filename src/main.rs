//! `pidshark`: parse arguments, run the library, write the report, check `--expect` and
//! `--fail-on`, map the outcome to an exit code (0 clean, 1 a check failed, 2 fatal).
//!
//! Closed pipes are no failure: nothing written to stderr may panic (see [`say!`]), and a
//! reader that closes standard output early ends the run with 0, unless a gate is set,
//! which then still judges the whole capture (see [`Gated`]).

// deny, not forbid: `allocator` sets one glibc option, the binary's only unsafe call
#![deny(unsafe_code)]
// issue 41: no function in src/ over 120 lines (clippy.toml sets the bound)
#![warn(clippy::too_many_lines)]

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use clap::{CommandFactory, Parser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pidshark::cli::{Args, ColorChoice, Format, Mode, Options, SchemaOf};
use pidshark::report::csv::CsvSink;
use pidshark::report::html::HtmlSink;
use pidshark::report::json::{JsonSink, NdjsonSink};
use pidshark::report::model;
use pidshark::report::out::ReportOut;
use pidshark::report::sink::Sink;
use pidshark::report::text::TextSink;
use pidshark::report::tree::TreeSink;
use pidshark::{expect, gate, Error};

/// Writes one line on stderr, like `eprintln!`, but a closed stderr (`2>&1 | head -c 10`)
/// is ignored instead of a panic: the exit code still says how the run went.
macro_rules! say {
    ($($arg:tt)*) => {
        say_line(format_args!($($arg)*))
    };
}

fn say_line(line: fmt::Arguments<'_>) {
    let mut stderr = io::stderr().lock();
    let _ = stderr
        .write_fmt(line)
        .and_then(|()| stderr.write_all(b"\n"));
}

/// Bytes of report gathered before each write to the `-o` file or standard output: a
/// report of hundreds of megabytes in 8 KiB writes (`BufWriter`'s default) spent a
/// system call per 8 KiB on the thread that finishes the report.
const OUTPUT_BUFFER: usize = 256 << 10;

/// Where the output goes: the `-o` file or standard output, [`Gated`] when a gate is set.
fn open_output(options: &Options, progress: Option<&Progress>) -> (Box<dyn ReportOut>, PathBuf) {
    let (out, path): (Box<dyn ReportOut>, PathBuf) = match &options.output {
        Some(path) => (Box::new(LazyFile::new(path.clone())), path.clone()),
        // Not locked: the report is written from the output thread.
        None => {
            let stdout = ClearsProgress {
                out: unbuffered_stdout(),
                progress: progress.filter(|_| io::stdout().is_terminal()).cloned(),
            };
            (
                Box::new(BufWriter::with_capacity(OUTPUT_BUFFER, stdout)),
                "<stdout>".into(),
            )
        }
    };
    let gated = !options.fail_on.is_empty() || options.expect.is_some();
    if gated {
        (Box::new(Gated { out, closed: false }), path)
    } else {
        (out, path)
    }
}

/// The output of a run with a gate (`--fail-on`, `--expect`). When its reader goes away
/// early (`| grep -q`, `| head`) the rest of the report is dropped unwritten and the run
/// goes on, so that the gate judges the whole capture: a closed pipe never turns a gate
/// that holds into exit 0. Without a gate the closed pipe is the sink's error and ends
/// the run early, with exit 0.
struct Gated {
    out: Box<dyn ReportOut>,
    /// The reader has gone: nothing more is written.
    closed: bool,
}

/// A reader that has gone: what it was not given is no error.
fn is_closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

impl Gated {
    /// `write` on the output unless its reader has gone; a write that finds it gone
    /// says `done`, as one that went through would.
    fn unless_closed<T>(
        &mut self,
        done: T,
        write: impl FnOnce(&mut dyn ReportOut) -> io::Result<T>,
    ) -> io::Result<T> {
        if self.closed {
            return Ok(done);
        }
        match write(&mut *self.out) {
            Err(e) if is_closed_pipe(&e) => {
                self.closed = true;
                Ok(done)
            }
            other => other,
        }
    }
}

impl Write for Gated {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.unless_closed(buf.len(), |out| out.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.unless_closed((), |out| out.flush())
    }
}

impl ReportOut for Gated {
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        self.unless_closed((), |out| out.copy_from(file, len))
    }
}

/// The `-o` file, created when the first byte is written: a run that fails before it
/// writes anything leaves no empty report behind.
struct LazyFile {
    path: PathBuf,
    file: Option<BufWriter<File>>,
}

impl LazyFile {
    fn new(path: PathBuf) -> Self {
        Self { path, file: None }
    }

    fn file(&mut self) -> io::Result<&mut BufWriter<File>> {
        match &mut self.file {
            Some(file) => Ok(file),
            slot => Ok(slot.insert(BufWriter::with_capacity(
                OUTPUT_BUFFER,
                File::create(&self.path)?,
            ))),
        }
    }
}

impl ReportOut for LazyFile {
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        self.file()?.copy_from(file, len)
    }
}

impl Write for LazyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// The sink for the format asked for. With `--expect` the exchanges are kept to be
/// compared, so JSON is written from the whole report (the same bytes).
fn sink_for(options: &Options, out: Box<dyn ReportOut>) -> Box<dyn Sink> {
    match options.format {
        Format::Ndjson => Box::new(NdjsonSink::new(out).producer_entries(options.producer_entries)),
        Format::Json => Box::new(
            JsonSink::to_output(!options.compact, out).producer_entries(options.producer_entries),
        ),
        Format::Tree => Box::new(TreeSink::new(out).only_frame(options.config.filter.frame)),
        Format::Csv => Box::new(CsvSink::exchanges(out)),
        Format::CsvBlocks => Box::new(CsvSink::blocks(out)),
        Format::CsvProducers => Box::new(CsvSink::producers(out)),
        Format::CsvWrites => Box::new(CsvSink::writes(out)),
        Format::CsvCommitted => Box::new(CsvSink::committed(out)),
        Format::Html => Box::new(HtmlSink::new(out)),
        Format::Text => {
            let colour = use_colour(options.color, options.output.is_none());
            Box::new(TextSink::new(colour, out).listing_all(options.all_exchanges))
        }
    }
}

/// Whether the text report is coloured: as `--color` says; for `auto`, when writing to
/// standard output that is a terminal and `NO_COLOR` is unset (<https://no-color.org>).
fn use_colour(choice: ColorChoice, to_stdout: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            to_stdout
                && io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

/// Reads the `--expect` file before anything runs, so a bad path fails fast.
fn read_expected(options: &Options) -> Result<Option<expect::Golden>, Error> {
    let Some(path) = &options.expect else {
        return Ok(None);
    };
    let fail = |reason: String| Error::Expect {
        path: path.clone(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    expect::Golden::parse(&text).map(Some).map_err(fail)
}

/// The format's sink, alone or checked against `--expect`.
enum Output {
    Plain(Box<dyn Sink>),
    Checked(Box<expect::Check>),
}

/// Runs everything; `Ok(true)` when every check passed.
fn run(options: &Options, progress: Option<&Progress>) -> Result<bool, Error> {
    let expected = read_expected(options)?;
    let (out, path) = open_output(options, progress);
    let sink = sink_for(options, out);
    let mut output = match expected {
        Some(golden) => Output::Checked(Box::new(expect::Check::new(golden, sink))),
        None => Output::Plain(sink),
    };
    let sink: &mut dyn Sink = match &mut output {
        Output::Plain(sink) => sink.as_mut(),
        Output::Checked(check) => check.as_mut(),
    };
    let report = match progress {
        Some(progress) => pidshark::run_counting(&options.config, sink, &progress.count),
        None => pidshark::run(&options.config, sink),
    };
    let report = report.map_err(|e| match e {
        Error::Output { source } => Error::Write { path, source },
        other => other,
    })?;
    let mut passed = true;
    if let (Output::Checked(check), Some(golden_path)) = (&output, &options.expect) {
        let differences = check.differences();
        if !differences.is_empty() {
            say!(
                "pidshark: the exchanges or findings differ from {} in {} place(s):",
                golden_path.display(),
                differences.len()
            );
            for line in differences {
                say!("  {line}");
            }
            passed = false;
        }
    }
    let failing = gate::failing(&options.fail_on, &report);
    if !failing.is_empty() {
        let list: Vec<String> = failing.iter().map(|(c, n)| format!("{c} ({n})")).collect();
        say!("pidshark: --fail-on conditions hold: {}", list.join(", "));
        passed = false;
    }
    Ok(passed)
}

/// The progress display on stderr, drawn by a ticker thread until it is cleared.
#[derive(Clone)]
struct Progress {
    bar: ProgressBar,
    /// The capture bytes the run has read.
    count: Arc<AtomicU64>,
    /// Set when cleared; the ticker draws only while holding it unset, so that no tick
    /// redraws the bar after it was erased.
    cleared: Arc<Mutex<bool>>,
}

impl Progress {
    /// Erases the display and stops the ticker's drawing; once is enough.
    fn clear(&self) {
        let mut cleared = self.cleared.lock().unwrap_or_else(PoisonError::into_inner);
        if !*cleared {
            *cleared = true;
            self.bar.finish_and_clear();
        }
    }
}

/// The progress display, when stderr is a terminal and `--quiet` is not given; it counts
/// the bytes the run reads.
fn progress(options: &Options, quiet: bool) -> Option<(Progress, std::thread::JoinHandle<()>)> {
    if quiet || !io::stderr().is_terminal() {
        return None;
    }
    // Standard input or a pipe has no size to fill a bar to: a spinner, bytes and rate.
    let sizes: Option<Vec<u64>> = options
        .config
        .inputs
        .iter()
        .map(|p| {
            // `-` is standard input, whatever file of that name the directory holds
            let path = Some(p).filter(|p| p.as_str() != pidshark::input::STANDARD_STREAM)?;
            std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len())
        })
        .collect();
    let count = Arc::new(AtomicU64::new(0));
    let bar = ProgressBar::with_draw_target(
        sizes.as_ref().map(|s| s.iter().sum()),
        ProgressDrawTarget::stderr(),
    );
    let template = match sizes {
        Some(_) => "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        None => "{spinner} {bytes} read, {binary_bytes_per_sec}",
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // Drawn once now, so that even a run shorter than a tick shows where it started.
    bar.tick();
    let progress = Progress {
        bar,
        count,
        cleared: Arc::new(Mutex::new(false)),
    };
    let p = progress.clone();
    let ticker = std::thread::spawn(move || loop {
        {
            let cleared = p.cleared.lock().unwrap_or_else(PoisonError::into_inner);
            if *cleared {
                break;
            }
            p.bar.set_position(p.count.load(Ordering::Relaxed));
            p.bar.tick();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    });
    Some((progress, ticker))
}

/// Standard output on the terminal that shows the progress display: the display is
/// erased before the report's first byte, so that the two never share a line.
struct ClearsProgress {
    out: Box<dyn ReportOut>,
    progress: Option<Progress>,
}

/// Standard output without std's line buffering: a duplicate of its descriptor as a file
/// (the same open file, so the same offset and append mode). std's `Stdout` searches every
/// buffer written for its last newline, some 4% of a control capture's instructions with
/// `--compact`, and the `BufWriter` in front of it buffers already; a sink that streams
/// (ndjson) flushes it itself.
fn unbuffered_stdout() -> Box<dyn ReportOut> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = io::stdout().as_fd().try_clone_to_owned() {
            return Box::new(File::from(fd));
        }
    }
    Box::new(io::stdout())
}

impl ClearsProgress {
    /// The progress display cleared, once, before the report's first byte.
    fn clear_progress(&mut self) {
        if let Some(progress) = self.progress.take() {
            progress.clear();
        }
    }
}

impl ReportOut for ClearsProgress {
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        self.clear_progress();
        self.out.copy_from(file, len)
    }
}

impl Write for ClearsProgress {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.clear_progress();
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Options that each parse but mean nothing together, said in one line with what is
/// allowed: an option the chosen format would ignore, a format that needs an input not
/// given, time bounds the wrong way round.
fn conflict(args: &Args) -> Option<String> {
    use pidshark::report::filter::TimeBound;
    if args.no_producer_entries && !matches!(args.format, Format::Json | Format::Ndjson) {
        return Some(
            "--no-producer-entries leaves entries out of --format json and ndjson only".into(),
        );
    }
    if args.all && args.format != Format::Text {
        return Some(
            "--all lists every exchange in --format text only (the other formats list every one already)".into(),
        );
    }
    if args.format == Format::CsvCommitted && args.metadata_logs.is_empty() {
        return Some(
            "--format csv-committed lists the blocks a metadata log commits: give one with --metadata-log DIR".into(),
        );
    }
    let reversed = match (args.since, args.until) {
        (Some(TimeBound::AfterStart(a)), Some(TimeBound::AfterStart(b))) => a > b,
        (Some(TimeBound::At(a)), Some(TimeBound::At(b))) => a.as_nanos() > b.as_nanos(),
        _ => false,
    };
    reversed.then(|| "--since is after --until: no exchange can be in between (give the earlier time to --since)".into())
}

/// Prints `text` on standard output; a reader that closed it early is no failure.
fn print_quietly(text: &str) -> ExitCode {
    match io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if !is_closed_pipe(&e) => {
            say!("pidshark: <stdout>: {e}");
            ExitCode::from(2)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// `--list-kinds`: every diagnostic kind, its severity and meaning, one line each.
fn kinds_table() -> String {
    use pidshark::diag::Kind;
    let width = Kind::ALL
        .iter()
        .map(|k| k.as_str().len())
        .max()
        .unwrap_or(0);
    let mut table = format!("{:width$}  {:8} meaning\n", "kind", "severity");
    for kind in Kind::ALL {
        let meaning = kind.meaning();
        let severity = kind.severity().as_str();
        table.push_str(&format!(
            "{:width$}  {severity:8} {meaning}\n",
            kind.as_str()
        ));
    }
    table
}

/// How the process's allocator is tuned: the process, not the library, owns that choice.
mod allocator {
    /// Keeps glibc's mmap threshold at its initial 128 KiB. By default glibc raises the
    /// threshold to the size of each mapped block freed (up to 32 MiB), after which the
    /// tables that double as connections arrive (a connection table of 10 MiB, its
    /// predecessors of 5 and 2.5) are carved from the heap, and the holes they leave
    /// stay resident under small allocations: at a budget of 64 MiB on 20,000 hostile
    /// connections, 93-95 MiB resident against 80-82 with the threshold fixed
    /// (`tests/budget_kafka.rs`), for the same speed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn tune() {
        const MMAP_THRESHOLD: libc::c_int = 128 * 1024;
        // SAFETY: mallopt only sets a parameter of the allocator, before any thread starts;
        // a refusal (0) leaves glibc's default, which is only less frugal.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
        pidshark::resident::give_back_with(give_back);
    }

    /// Gives glibc's free pages inside the heap back to the system (`malloc_trim`):
    /// glibc returns only the heap's top on its own, and room freed between live
    /// allocations stays resident. The memory budget calls it when the process grows
    /// past the budget: on 2,000 connections of 4,000 never-answered requests each at
    /// 16 MiB, the whole report written, a peak of 49 MiB without it, 30 MiB with it.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn give_back() {
        // SAFETY: malloc_trim only hands free pages back; every allocation stays valid.
        #[allow(unsafe_code)]
        unsafe {
            libc::malloc_trim(0);
        }
    }

    /// Other allocators do not keep a moving threshold.
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn tune() {}
}

fn main() -> ExitCode {
    allocator::tune();
    let args = Args::parse();
    match args.mode() {
        Mode::Schema(SchemaOf::Report) => return print_quietly(&model::schema()),
        Mode::Schema(SchemaOf::Ndjson) => return print_quietly(&model::ndjson_schema()),
        Mode::Completions(shell) => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Args::command(), "pidshark", &mut script);
            return print_quietly(&String::from_utf8_lossy(&script));
        }
        Mode::Man => {
            let mut page = Vec::new();
            if let Err(e) = clap_mangen::Man::new(Args::command()).render(&mut page) {
                say!("pidshark: cannot make the manual page: {e}");
                return ExitCode::from(2);
            }
            return print_quietly(&String::from_utf8_lossy(&page));
        }
        Mode::ListKinds => return print_quietly(&kinds_table()),
        Mode::Report => {}
    }
    if args.captures.is_empty() && args.read.is_empty() && args.metadata_logs.is_empty() {
        Args::command()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                pidshark::cli::NO_INPUT,
            )
            .exit();
    }
    if let Some(conflict) = conflict(&args) {
        Args::command()
            .error(clap::error::ErrorKind::ArgumentConflict, conflict)
            .exit();
    }
    let (quiet, stats) = (args.quiet, args.stats);
    let started = std::time::Instant::now();
    let options = Options::from(args);
    let shown = progress(&options, quiet);
    let outcome = run(&options, shown.as_ref().map(|(p, _)| p));
    if let Some((progress, ticker)) = shown {
        progress.clear();
        let _ = ticker.join();
    }
    if stats {
        let peak =
            pidshark::resident::peak_kib().map_or("unknown".to_owned(), |kib| format!("{kib} KiB"));
        say!(
            "pidshark: stats: {:.3} s, peak memory {peak}",
            started.elapsed().as_secs_f64()
        );
    }
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        // The reader closed the output (`| head`): it has what it wanted; nothing to say.
        Err(Error::Write { source, .. }) if is_closed_pipe(&source) => ExitCode::SUCCESS,
        Err(err) => {
            say!("pidshark: {err}");
            ExitCode::from(2)
        }
    }
}
