//! The capture files that can be read again where a packet lay ([`Recall`]): regular
//! files read as they are, each by a handle of its own beside the one read ahead.

use std::fs::File;
use std::sync::Mutex;

use crate::packet_ref::{FileSpot, Recall};

/// Capture files kept open to be read again at most. Each stays open to the end of the
/// run (a connection's last bytes may lie in a file the merge has finished), so a merge
/// of many rotated files would otherwise hold a descriptor for each, up to the process's
/// limit; the files past these are read as before, their long deliveries copied.
pub const MAX_KEPT: usize = 64;

/// The capture files kept open to be read again, by their index in `captures[]`.
#[derive(Debug, Default)]
pub struct Reread {
    files: Mutex<Vec<Option<File>>>,
}

impl Reread {
    /// Keeps `file` (capture `index`) to be read again; `false` where that cannot be done
    /// (a platform without positioned reads, or [`MAX_KEPT`] files kept already), and then
    /// its bytes must not be given spots.
    pub fn keep(&self, index: usize, file: File) -> bool {
        if !cfg!(unix) {
            return false;
        }
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if files.iter().flatten().count() >= MAX_KEPT {
            return false;
        }
        if files.len() <= index {
            files.resize_with(index + 1, || None);
        }
        match files.get_mut(index) {
            Some(slot) => {
                *slot = Some(file);
                true
            }
            None => false,
        }
    }
}

impl Recall for Reread {
    fn recall(&self, spot: FileSpot, into: &mut [u8]) -> bool {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let Some(Some(file)) = files.get(spot.capture()) else {
            return false;
        };
        read_at(file, spot.offset(), into)
    }
}

#[cfg(unix)]
fn read_at(file: &File, offset: u64, into: &mut [u8]) -> bool {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(into, offset).is_ok()
}

#[cfg(not(unix))]
fn read_at(_file: &File, _offset: u64, _into: &mut [u8]) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn reads_a_kept_file_again_where_asked_and_nothing_else() {
        let mut tmp = tempfile::NamedTempFile::new().expect("a temporary file");
        tmp.write_all(b"0123456789").expect("written");
        let reread = Reread::default();
        let kept = reread.keep(2, tmp.reopen().expect("reopened"));
        assert_eq!(kept, cfg!(unix));
        let mut got = [0u8; 4];
        let spot = FileSpot::new(2, 3).expect("a spot");
        assert_eq!(reread.recall(spot, &mut got), cfg!(unix));
        if cfg!(unix) {
            assert_eq!(&got, b"3456");
        }
        // past the end, and a file not kept
        let past = FileSpot::new(2, 8).expect("a spot");
        assert!(!reread.recall(past, &mut got));
        let other = FileSpot::new(1, 0).expect("a spot");
        assert!(!reread.recall(other, &mut got));
    }

    #[test]
    fn only_so_many_files_are_kept_open() {
        let tmp = tempfile::NamedTempFile::new().expect("a temporary file");
        let reread = Reread::default();
        let kept = (0..MAX_KEPT + 3)
            .filter(|i| reread.keep(*i, tmp.reopen().expect("reopened")))
            .count();
        assert_eq!(kept, if cfg!(unix) { MAX_KEPT } else { 0 });
    }
}
