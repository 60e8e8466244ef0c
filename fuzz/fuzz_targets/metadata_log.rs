//! The `__cluster_metadata` reader on arbitrary bytes, as a segment or a snapshot. The
//! first byte chooses: bit 0 a snapshot's name, bit 1 small limits, bit 2 the CRCs fixed
//! up first (so mutations get past the CRC into codecs, records and metadata records).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pidshark::metadata_log::{read_bytes, Limits};

/// Writes each whole batch's CRC-32C as the bytes give it.
fn fix_crcs(bytes: &mut [u8]) {
    let mut pos = 0usize;
    while let Some(len) = bytes.get(pos + 8..pos + 12) {
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        let Ok(len) = usize::try_from(len) else { return };
        let end = pos + 12 + len;
        if len < 49 || end > bytes.len() {
            return;
        }
        let crc = crc32c::crc32c(&bytes[pos + 21..end]);
        bytes[pos + 17..pos + 21].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = rest.to_vec();
    if mode & 4 != 0 {
        fix_crcs(&mut bytes);
    }
    let name = if mode & 1 != 0 {
        "00000000000000000100-0000000002.checkpoint"
    } else {
        "00000000000000000000.log"
    };
    let limits = if mode & 2 != 0 {
        Limits {
            max_batch_len: 512,
            max_inflated_len: 1024,
            max_kept: 2,
        }
    } else {
        Limits {
            max_batch_len: 1 << 20,
            max_inflated_len: 4 << 20,
            max_kept: 1 << 10,
        }
    };
    let log = read_bytes(name, &bytes, limits);
    assert!(log.files.iter().all(|f| f.read_len <= f.len));
    assert!(log.blocks.len() + log.registrations.len() <= limits.max_kept);
    assert!(log.blocks.windows(2).all(|w| w[0].place.offset <= w[1].place.offset));
});
