//! Where a report's bytes go: a writer that can also take a stretch of a file whole.
//!
//! The JSON report's long lists lie in temporary files, laid out as the report writes
//! them (`report::spill`); once the report reaches them they are copied into the output.
//! An output that is a file, a pipe or `/dev/null` takes them from the kernel
//! (`std::io::copy` picks `copy_file_range`, `sendfile` or `splice`), without a read
//! into this process and a write out again: on 2 M control packets, 376 MB.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};

/// A report's output.
pub trait ReportOut: Write + Send {
    /// Writes the next `len` bytes of `file`, from where its offset stands, after
    /// everything written before. Fails if `file` ends sooner. Where the offset is left
    /// is not said: an output that drops what it is given need not read it.
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()>;
}

/// Copies `len` bytes of `from` into `to`, the kernel's way where both are files, pipes or
/// devices that std knows (`std::io::copy`'s own choice, made on the types given).
pub fn copy_exactly<W: Write + ?Sized>(from: &mut File, len: u64, to: &mut W) -> io::Result<()> {
    let copied = io::copy(&mut from.take(len), to)?;
    if copied < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("a spilled list ended {} bytes short", len - copied),
        ));
    }
    Ok(())
}

/// Where the kernel will not copy into the file (opened to append: `>>`), the bytes go
/// through a buffer this large rather than std's 8 KiB.
const FALLBACK_BUFFER: usize = 64 << 10;

impl ReportOut for File {
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        // std copies into a `BufWriter` of a file by the kernel too, after its buffer
        let mut out = BufWriter::with_capacity(FALLBACK_BUFFER, self);
        copy_exactly(file, len, &mut out)?;
        out.flush()
    }
}

impl ReportOut for io::Stdout {
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        copy_exactly(file, len, self)
    }
}

/// What is buffered goes first, then the stretch, past the buffer.
impl<W: ReportOut> ReportOut for BufWriter<W> {
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        self.flush()?;
        self.get_mut().copy_from(file, len)
    }
}

/// Any writer as an output: a stretch of a file goes through it as bytes.
pub struct Plain(pub Box<dyn Write + Send>);

impl Write for Plain {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl ReportOut for Plain {
    fn copy_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        copy_exactly(file, len, &mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, SeekFrom};

    use super::*;

    fn file_of(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        file
    }

    /// Into a file through its buffer: the buffered bytes first, the stretch from where
    /// the source's offset stood, then what comes after, in order.
    #[test]
    fn a_stretch_goes_after_what_was_buffered_and_before_what_follows() {
        let mut source = file_of(b"0123456789");
        source.seek(SeekFrom::Start(2)).unwrap();
        let mut out = BufWriter::new(tempfile::tempfile().unwrap());
        out.write_all(b"[").unwrap();
        out.copy_from(&mut source, 5).unwrap();
        out.write_all(b"]").unwrap();
        let mut file = out.into_inner().unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        let mut written = String::new();
        file.read_to_string(&mut written).unwrap();
        assert_eq!(written, "[23456]");
        // the source's offset moved past the stretch
        assert_eq!(source.stream_position().unwrap(), 7);
    }

    /// A file opened to append (`>>`) takes no copy from the kernel: the bytes go
    /// through the process, after what it held.
    #[test]
    fn a_stretch_goes_into_a_file_opened_to_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        std::fs::write(&path, b"before;").unwrap();
        let mut out = File::options().append(true).open(&path).unwrap();
        let text: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut source = file_of(&text);
        out.copy_from(&mut source, text.len() as u64).unwrap();
        let written = std::fs::read(&path).unwrap();
        assert_eq!(&written[..7], b"before;");
        assert!(written[7..] == text[..], "the stretch differs");
    }

    #[test]
    fn a_source_that_ends_too_soon_is_an_error() {
        let mut source = file_of(b"0123");
        let mut out = Plain(Box::new(Vec::new()));
        let e = out.copy_from(&mut source, 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}
