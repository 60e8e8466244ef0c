//! The whole pipeline on arbitrary bytes as a capture file (pcap, pcapng, gzip...), into
//! every format's sink at once.
#![no_main]

use std::io;

use libfuzzer_sys::fuzz_target;
use pidshark::pairing::ClusterEvent;
use pidshark::report::csv::CsvSink;
use pidshark::report::html::HtmlSink;
use pidshark::report::json::{JsonSink, NdjsonSink};
use pidshark::report::model::Report;
use pidshark::report::sink::{Analysed, Collect, Needs, Sink};
use pidshark::report::text::TextSink;
use pidshark::report::tree::TreeSink;

/// Hands everything to each of its sinks.
struct Tee(Vec<Box<dyn Sink>>);

impl Sink for Tee {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: self.0.iter().any(|s| s.needs().blocks_in_report),
            raw_messages: self
                .0
                .iter()
                .map(|s| s.needs().raw_messages)
                .max()
                .unwrap_or_default(),
        }
    }
    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        for sink in &mut self.0 {
            sink.exchange(analysed.clone())?;
        }
        Ok(())
    }
    fn cluster(&mut self, ev: &ClusterEvent) -> io::Result<()> {
        for sink in &mut self.0 {
            sink.cluster(ev)?;
        }
        Ok(())
    }
    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        for sink in &mut self.0 {
            sink.finish(report)?;
        }
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let mut config = pidshark::Config::for_inputs(Vec::new());
    // small caps, so that the fuzzer reaches them
    config.max_held_len = 64 * 1024;
    config.max_connections = 64;
    // a third of the inputs on one thread, the rest spread over two or three workers
    config.threads = 1 + data.len() % 3;
    // the tree view decodes the kept bytes again; it must cope with whatever was kept
    config.kafka.keep_raw = pidshark::kafka::KeepRaw::Every;
    // Through the read-ahead thread, as files and standard input are read.
    let reader: Box<dyn std::io::Read + Send> = Box::new(pidshark::input::ReadAhead::new(
        std::io::Cursor::new(data.to_vec()),
    ));
    let out = || -> Box<dyn io::Write + Send> { Box::new(io::sink()) };
    let mut tee = Tee(vec![
        Box::new(JsonSink::new(true, out())),
        Box::new(NdjsonSink::new(out())),
        Box::new(TextSink::new(true, out())),
        Box::new(TreeSink::new(out())),
        Box::new(CsvSink::exchanges(out())),
        Box::new(CsvSink::blocks(out())),
        Box::new(CsvSink::producers(out())),
        Box::new(HtmlSink::new(out())),
        Box::new(Collect::default()),
    ]);
    let _ = pidshark::run_readers(&config, vec![("fuzz".to_owned(), reader)], &mut tee);
});
