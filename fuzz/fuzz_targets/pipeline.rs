//! The whole pipeline on arbitrary bytes as a capture file (pcap, pcapng, gzip...).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut config = pidshark::Config::for_inputs(Vec::new());
    // small caps, so that the fuzzer reaches them
    config.max_held_len = 64 * 1024;
    config.max_connections = 64;
    // Through the read-ahead thread, as files and standard input are read.
    let reader: Box<dyn std::io::Read + Send> = Box::new(pidshark::readahead::ReadAhead::new(
        std::io::Cursor::new(data.to_vec()),
    ));
    if let Ok(report) = pidshark::run_readers(
        &config,
        vec![("fuzz".to_owned(), reader)],
        &mut pidshark::report::sink::Collect::default(),
    ) {
        // the tree view decodes the kept bytes again; it must cope with whatever was kept
        let _ = pidshark::report::tree::render(&report);
    }
});
