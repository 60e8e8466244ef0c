//! Whether a file is a metadata log at all, judged by its first batch as a capture is
//! judged by its header: a Kafka record batch of magic 2 whose CRC-32C holds. Anything
//! else (a text file, a capture, a `quorum-state` file) is refused with the reason rather
//! than read as a log whose every byte is a problem.

use std::io::{self, Read};

/// Bytes of a batch up to its CRC: base offset, length, leader epoch, magic, CRC.
const HEAD: usize = 21;
/// A batch's length counts the bytes after its length field; the smallest batch (no
/// records) has 49.
const MIN_BATCH_LEN: i64 = 49;

/// `Ok(Err(why))` when the file's first batch is not a Kafka record batch; a file cut
/// inside its first batch passes (what it holds is the reading's to say).
pub fn check(r: &mut impl Read, len: u64) -> io::Result<Result<(), String>> {
    if len == 0 {
        return Ok(Ok(()));
    }
    let mut head = [0u8; HEAD];
    if len < HEAD as u64 {
        return Ok(Err(format!(
            "not a metadata log: {len} bytes, fewer than a record batch's header"
        )));
    }
    r.read_exact(&mut head)?;
    let [.., magic, c0, c1, c2, c3] = head;
    if magic != 2 {
        return Ok(Err(format!(
            "not a metadata log: its first bytes are no Kafka record batch (magic {magic}; a log's batches have 2)"
        )));
    }
    let batch_len = i64::from(i32::from_be_bytes([head[8], head[9], head[10], head[11]]));
    if batch_len < MIN_BATCH_LEN {
        return Ok(Err(format!(
            "not a metadata log: its first batch says it is {batch_len} bytes long, less than any batch"
        )));
    }
    let end = 12 + batch_len as u64;
    if end > len {
        return Ok(Ok(()));
    }
    let crc = u32::from_be_bytes([c0, c1, c2, c3]);
    let mut left = end - HEAD as u64;
    let mut computed = 0;
    let mut chunk = [0u8; 8192];
    while left > 0 {
        let n = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
        let part = chunk.get_mut(..n).unwrap_or_default();
        r.read_exact(part)?;
        computed = crc32c::crc32c_append(computed, part);
        left -= n as u64;
    }
    Ok(match computed == crc {
        true => Ok(()),
        false => Err(format!(
            "not a metadata log: its first batch fails its CRC-32C check (header {crc:#010x}, bytes {computed:#010x})"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(bytes: &[u8]) -> Result<(), String> {
        check(&mut &bytes[..], bytes.len() as u64).unwrap()
    }

    #[test]
    fn a_real_segment_passes_and_other_files_are_told_apart() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join("fixtures/kafka-real/4.4.0-steady.metadata/101");
        let segment = std::fs::read(dir.join("00000000000000000000.log")).unwrap();
        assert_eq!(checked(&segment), Ok(()));
        assert_eq!(checked(&[]), Ok(()));
        // cut inside its first batch: for the reading to report
        assert_eq!(checked(&segment[..30]), Ok(()));
        let mut flipped = segment;
        flipped[40] ^= 1;
        assert!(checked(&flipped).unwrap_err().contains("CRC-32C"));
        let text = b"root:x:0:0:root:/root:/bin/bash\n".repeat(4);
        assert!(checked(&text).unwrap_err().contains("magic"));
        let capture = std::fs::read(root.join("fixtures/seed-v0.pcap")).unwrap();
        assert!(checked(&capture)
            .unwrap_err()
            .contains("no Kafka record batch"));
        assert!(checked(b"short").unwrap_err().contains("fewer than"));
    }
}
