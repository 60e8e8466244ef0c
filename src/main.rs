//! `pidshark`: parse arguments, run the library, write the report, map the outcome to an
//! exit code (0 report written, 2 fatal error).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::Parser;
use pidshark::cli::Args;
use pidshark::{Config, Error};

fn write_report(config: &Config, report: &pidshark::report::model::Report) -> Result<(), Error> {
    let (mut out, path): (Box<dyn Write>, _) = match &config.output {
        Some(path) => {
            let file = File::create(path).map_err(|source| Error::Write {
                path: path.clone(),
                source,
            })?;
            (Box::new(BufWriter::new(file)), path.clone())
        }
        None => (
            Box::new(BufWriter::new(io::stdout().lock())),
            "<stdout>".into(),
        ),
    };
    let result = if config.compact {
        serde_json::to_writer(&mut out, report)
    } else {
        serde_json::to_writer_pretty(&mut out, report)
    };
    result
        .map_err(io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|source| Error::Write { path, source })
}

fn main() -> ExitCode {
    let config = Config::from(Args::parse());
    let outcome = pidshark::run(&config).and_then(|report| write_report(&config, &report));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("pidshark: {err}");
            ExitCode::from(2)
        }
    }
}
