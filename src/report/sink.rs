//! Where the report goes: every output format is a [`Sink`]. The run hands a sink each
//! exchange once it is analysed (with the block it granted), in the order exchanges
//! complete, on the output thread; then, once the captures are read, the rest of the
//! report. Formats that must order what they write hold it (the JSON formats in
//! [`super::spill`], off the heap past a bound), not the run.

use std::io::{self, Write};

use super::model::Report;
use super::{exchange, producer_id_entry};
use crate::analysis::writes::WriteJudged;
use crate::analysis::{Block, Placed};
use crate::kafka::KeepRaw;
use crate::pairing::{ClusterEvent, Exchange, Granting, WriteExchange};

/// What the run prepares for a sink.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// The report handed to [`Sink::finish`] lists every block (a sink that takes each
    /// block as it comes does not need the analysis to keep them too).
    pub blocks_in_report: bool,
    /// Which decoded messages keep their bytes as captured (`--format tree` draws them),
    /// which no other format pays for.
    pub raw_messages: KeepRaw,
}

/// An exchange of any paired API, with what the analysis made of it. A new API is a new
/// variant: every format's `match` then says where it must be drawn, and a sink that
/// wraps another hands on all of them with one call.
#[derive(Debug, Clone)]
pub enum Analysed<'a> {
    /// An AllocateProducerIds exchange and the block it granted, if it granted one. Lent,
    /// not given: what it holds on the heap goes back to the capture thread, which
    /// allocated it, to be freed there (see [`crate::worker::consume`]).
    Allocate(&'a Exchange, Option<&'a Block>),
    /// An exchange that may grant a producer id and epoch (InitProducerId, EndTxn) and
    /// what the analysis knows of the id it granted. Formats that do not list producers
    /// count them from the report's summary.
    Producer(&'a Granting, &'a Placed),
}

impl Needs {
    /// What a format that takes each exchange as it comes needs: neither the blocks in
    /// the report nor any message's bytes.
    pub const STREAMED: Self = Self {
        blocks_in_report: false,
        raw_messages: KeepRaw::Nothing,
    };
}

/// One output of a run.
pub trait Sink: Send {
    fn needs(&self) -> Needs;
    /// An exchange, analysed, in the order exchanges complete.
    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()>;
    /// A cluster message whose facts were read (a Vote, a BrokerHeartbeat...), as it
    /// comes; only the tree draws them, from their bytes ([`Needs::raw_messages`]).
    fn cluster(&mut self, _ev: &ClusterEvent) -> io::Result<()> {
        Ok(())
    }
    /// A Produce exchange and what became of each of its batches, in the request's
    /// order, as exchanges complete; only the formats that list writes take them.
    fn write(&mut self, _ex: &WriteExchange, _judged: &WriteJudged) -> io::Result<()> {
        Ok(())
    }
    /// The rest of the report, once the captures are read: its `exchanges` are empty, its
    /// blocks listed only when [`Needs::blocks_in_report`]. A sink that keeps the
    /// exchanges puts them in.
    fn finish(&mut self, report: &mut Report) -> io::Result<()>;
}

/// Keeps every exchange, for a report that holds them all (the library's
/// [`crate::report()`], `--expect`, and the formats written from the whole report).
#[derive(Debug, Default)]
pub struct Collect {
    kept: Vec<Exchange>,
    producers: Vec<(Granting, Placed)>,
}

impl Sink for Collect {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: true,
            raw_messages: KeepRaw::Nothing,
        }
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        match analysed {
            Analysed::Allocate(ex, _) => self.kept.push(ex.clone()),
            Analysed::Producer(px, placed) => self.producers.push((px.clone(), placed.clone())),
        }
        Ok(())
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        let mut kept = std::mem::take(&mut self.kept);
        kept.sort_by_key(Exchange::order);
        report.exchanges = kept.iter().map(exchange).collect();
        let mut producers = std::mem::take(&mut self.producers);
        producers.sort_by_key(|(px, _)| px.order());
        report.producer_ids.entries = producers
            .iter()
            .map(|(px, placed)| producer_id_entry(px, placed))
            .collect();
        Ok(())
    }
}

/// Hands each exchange, in the report's form, to a function and keeps none: memory does
/// not grow with the number of exchanges.
pub struct Each<F>(pub F);

impl<F> Sink for Each<F>
where
    F: FnMut(&super::model::Exchange) -> io::Result<()> + Send,
{
    fn needs(&self) -> Needs {
        Needs::STREAMED
    }

    /// The library's callback takes AllocateProducerIds exchanges only.
    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        match analysed {
            Analysed::Allocate(ex, _) => (self.0)(&exchange(ex)),
            Analysed::Producer(_, _) => Ok(()),
        }
    }

    fn finish(&mut self, _report: &mut Report) -> io::Result<()> {
        Ok(())
    }
}

/// The whole report through serde_json at the end, every exchange held: what the
/// streaming JSON sink must equal (`tests/it/serialized.rs`).
pub struct Rendered {
    collect: Collect,
    pretty: bool,
    out: Box<dyn Write + Send>,
}

impl Rendered {
    pub fn new(pretty: bool, out: Box<dyn Write + Send>) -> Self {
        Self {
            collect: Collect::default(),
            pretty,
            out,
        }
    }
}

impl Sink for Rendered {
    fn needs(&self) -> Needs {
        self.collect.needs()
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        self.collect.exchange(analysed)
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        self.collect.finish(report)?;
        let out = &mut self.out;
        if self.pretty {
            serde_json::to_writer_pretty(&mut *out, report)?;
        } else {
            serde_json::to_writer(&mut *out, report)?;
        }
        out.write_all(b"\n")?;
        out.flush()
    }
}
