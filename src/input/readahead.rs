//! Reading ahead on a thread of its own: the input's bytes are copied out of the kernel
//! (and inflated, for gzip) while the capture thread parses the ones before them. On a
//! 1 GiB capture of large messages this takes pidshark from 0.29 s to 0.19 s, below a
//! single-threaded read of every packet (`docs/performance.md`).
//!
//! At most `BLOCKS` blocks of `BLOCK` bytes exist, so memory stays small and fixed. Each
//! block is one `read` of the input: a pipe's bytes are handed on as they arrive, not
//! held until a block fills.

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Bytes asked of the input per read.
const BLOCK: usize = 256 << 10;
/// Blocks read ahead of the parser.
const AHEAD: usize = 8;
/// Blocks in all: those waiting, the one being filled and the one being parsed.
const BLOCKS: usize = AHEAD + 2;

/// What the reading thread sends: bytes, the end of the input, or why it stopped.
enum Chunk {
    Bytes(Vec<u8>),
    End,
    Failed(io::Error),
}

/// A reader whose input is read on another thread, `AHEAD` blocks ahead.
pub struct ReadAhead {
    rx: mpsc::Receiver<Chunk>,
    /// Blocks read, going back to be filled again.
    spent: mpsc::SyncSender<Vec<u8>>,
    block: Vec<u8>,
    at: usize,
    finished: bool,
    /// Why the reading thread could not start, for the first read to say.
    not_started: Option<io::Error>,
    /// When set, the input is treated as ended (nobody wants more of it).
    stop: Option<Arc<AtomicBool>>,
    /// The reading thread, joined when the reader is dropped (see [`Drop`]).
    thread: Option<std::thread::JoinHandle<()>>,
    /// A second handle on the file read, when its bytes are read as they lie in it.
    again: Option<std::fs::File>,
}

/// How long a dropped reader waits for its thread to end: one read of a file or of
/// bytes in memory. A thread still waiting on a live input (a pipe with nothing to
/// read) is left to end at its next read, as the process would.
const JOIN_WAIT: Duration = Duration::from_millis(500);

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // Without a receiver and a return channel the thread's next send fails, and it
        // returns.
        let (spent, _) = mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.spent, spent));
        let (_, rx) = mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.rx, rx));
        let Some(thread) = self.thread.take() else {
            return;
        };
        let deadline = Instant::now() + JOIN_WAIT;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}

impl ReadAhead {
    pub fn new<R: Read + Send + 'static>(mut input: R) -> Self {
        let (tx, rx) = mpsc::sync_channel(AHEAD);
        let (spent, refill) = mpsc::sync_channel::<Vec<u8>>(BLOCKS);
        let started = std::thread::Builder::new()
            .name("pidshark-read".into())
            .spawn(move || {
                let mut allocated = 0;
                loop {
                    // A fixed set of blocks goes round: a new one only while there are fewer
                    // than the queue can hold, then each waits for one to come back.
                    let spare = if allocated < BLOCKS {
                        refill.try_recv().ok()
                    } else {
                        refill.recv().ok()
                    };
                    let mut block = spare.unwrap_or_else(|| {
                        allocated += 1;
                        Vec::with_capacity(BLOCK)
                    });
                    block.resize(BLOCK, 0);
                    let chunk = loop {
                        match input.read(&mut block) {
                            Ok(0) => break Chunk::End,
                            Ok(n) => {
                                block.truncate(n);
                                break Chunk::Bytes(block);
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => break Chunk::Failed(e),
                        }
                    };
                    let more = matches!(chunk, Chunk::Bytes(_));
                    // The reader was dropped (the capture ended early): nothing more to do.
                    if tx.send(chunk).is_err() || !more {
                        return;
                    }
                }
            });
        let (thread, not_started) = match started {
            Ok(thread) => (Some(thread), None),
            Err(e) => (None, Some(e)),
        };
        Self {
            rx,
            spent,
            block: Vec::new(),
            at: 0,
            finished: false,
            not_started,
            stop: None,
            thread,
            again: None,
        }
    }
}

impl ReadAhead {
    /// Ends the input early once `stop` is set: a live capture on standard input would
    /// otherwise be read on after the output has gone.
    pub fn stop_when(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// `again`: a handle on the file this reads, offset for offset, to read it again
    /// by ([`Blocks::take_reread`]).
    pub fn read_again_by(mut self, again: Option<std::fs::File>) -> Self {
        self.again = again;
        self
    }
}

/// How often a wait for input looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);

impl ReadAhead {
    /// The next chunk; a stop while waiting for one (a quiet live input) is the end.
    fn next_chunk(&mut self) -> Result<Chunk, mpsc::RecvError> {
        let Some(stop) = &self.stop else {
            return self.rx.recv();
        };
        loop {
            match self.rx.recv_timeout(STOP_POLL) {
                Ok(chunk) => return Ok(chunk),
                Err(mpsc::RecvTimeoutError::Timeout) if stop.load(Ordering::Relaxed) => {
                    return Ok(Chunk::End)
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(mpsc::RecvError),
            }
        }
    }
}

/// Input handed over a block at a time and lent in place: records are parsed where the
/// bytes were read into, with no copy into a parser's buffer of its own.
pub trait Blocks: Send {
    /// Moves on to the next block of input: `false` at the end (then and after, the
    /// current block is empty). The block before it is given back.
    fn advance(&mut self) -> io::Result<bool>;
    /// The block moved to last (empty before the first `advance`).
    fn current(&self) -> &[u8];
    /// A handle on the file these blocks are, offset for offset, to read it again at
    /// a packet's spot; `None` for what cannot be read again (standard input, gzip).
    fn take_reread(&mut self) -> Option<std::fs::File> {
        None
    }
}

impl<B: Blocks + ?Sized> Blocks for Box<B> {
    fn advance(&mut self) -> io::Result<bool> {
        (**self).advance()
    }
    fn current(&self) -> &[u8] {
        (**self).current()
    }
    fn take_reread(&mut self) -> Option<std::fs::File> {
        (**self).take_reread()
    }
}

impl Blocks for ReadAhead {
    fn advance(&mut self) -> io::Result<bool> {
        self.at = 0;
        if let Some(e) = self.not_started.take() {
            self.finished = true;
            return Err(io::Error::other(format!(
                "cannot start the thread that reads ahead: {e}"
            )));
        }
        let stopped = self
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed));
        if self.finished || stopped {
            self.finished = true;
            self.block.clear();
            return Ok(false);
        }
        let chunk = self.next_chunk();
        let next = match chunk {
            Ok(Chunk::Bytes(block)) => block,
            Ok(Chunk::End) => Vec::new(),
            Ok(Chunk::Failed(e)) => {
                self.finished = true;
                self.block.clear();
                return Err(e);
            }
            Err(_) => {
                self.finished = true;
                self.block.clear();
                return Err(io::Error::other("the read-ahead thread stopped"));
            }
        };
        let spent = std::mem::replace(&mut self.block, next);
        // (The first is the empty placeholder, not one of the ring's blocks.)
        if spent.capacity() > 0 {
            let _ = self.spent.try_send(spent);
        }
        self.finished = self.block.is_empty();
        Ok(!self.finished)
    }

    fn current(&self) -> &[u8] {
        &self.block
    }

    fn take_reread(&mut self) -> Option<std::fs::File> {
        self.again.take()
    }
}

/// Any reader as [`Blocks`], a block per `read` into a buffer of its own (for inputs read
/// on the parsing thread: benchmarks, the timestamp peeked before a file is read).
pub struct ReadBlocks<R> {
    input: R,
    block: Vec<u8>,
    finished: bool,
}

impl<R: Read + Send> ReadBlocks<R> {
    pub fn new(input: R) -> Self {
        Self {
            input,
            block: Vec::new(),
            finished: false,
        }
    }
}

impl<R: Read + Send> Blocks for ReadBlocks<R> {
    fn advance(&mut self) -> io::Result<bool> {
        if self.finished {
            return Ok(false);
        }
        self.block.resize(BLOCK, 0);
        loop {
            match self.input.read(&mut self.block) {
                Ok(n) => {
                    self.block.truncate(n);
                    self.finished = n == 0;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.block.clear();
                    self.finished = true;
                    return Err(e);
                }
            }
        }
    }

    fn current(&self) -> &[u8] {
        &self.block
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.block.len() {
            if !self.advance()? {
                return Ok(0);
            }
        }
        let waiting = self.block.get(self.at..).unwrap_or_default();
        let n = waiting.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), waiting.get(..n)) {
            to.copy_from_slice(from);
        }
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes a few at a time, then fails if told to.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
        fail_at_end: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.at == self.data.len() {
                if self.fail_at_end {
                    return Err(io::Error::other("disk on fire"));
                }
                return Ok(0);
            }
            let n = self.step.min(buf.len()).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn every_byte_arrives_in_order_whatever_the_read_sizes() {
        for (len, step, read) in [
            (0, 1, 10),
            (5 * BLOCK + 17, BLOCK, 4096),
            (300_000, 999, 1 << 20),
        ] {
            let input = Trickle {
                data: data(len),
                at: 0,
                step,
                fail_at_end: false,
            };
            let mut ahead = ReadAhead::new(input);
            let mut out = Vec::new();
            let mut buf = vec![0; read];
            loop {
                let n = ahead.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            assert_eq!(out, data(len), "len {len}, step {step}, reads of {read}");
            assert_eq!(ahead.read(&mut buf).unwrap(), 0, "the end stays the end");
        }
    }

    #[test]
    fn an_error_comes_after_the_bytes_read_before_it() {
        let input = Trickle {
            data: data(1000),
            at: 0,
            step: 300,
            fail_at_end: true,
        };
        let mut ahead = ReadAhead::new(input);
        let mut out = Vec::new();
        let err = ahead.read_to_end(&mut out).unwrap_err();
        assert_eq!(err.to_string(), "disk on fire");
        assert_eq!(out, data(1000));
    }

    /// Says when it is dropped, which happens on the reading thread as it ends.
    struct Flagged(io::Cursor<Vec<u8>>, Arc<AtomicBool>);

    impl Read for Flagged {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Drop for Flagged {
        fn drop(&mut self) {
            self.1.store(true, Ordering::SeqCst);
        }
    }

    /// A reader dropped early, or at the end, has ended its thread (no thread outlives it
    /// to keep its record past the process's leak check).
    #[test]
    fn a_dropped_reader_has_ended_its_thread() {
        for read_first in [0, 1, 3] {
            let gone = Arc::new(AtomicBool::new(false));
            let input = Flagged(io::Cursor::new(vec![7u8; 4 * BLOCK]), Arc::clone(&gone));
            let mut reader = ReadAhead::new(input);
            for _ in 0..read_first {
                reader.advance().unwrap();
            }
            drop(reader);
            assert!(gone.load(Ordering::SeqCst), "after {read_first} blocks");
        }
    }
}
