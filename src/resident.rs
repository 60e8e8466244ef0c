//! What the operating system says this process holds: the figure the memory budget
//! promises to bound, beside what the stages charge themselves.
//!
//! The stages charge what they allocate, but the allocator keeps the room they give back
//! on its free lists, split among live neighbours, so the process can hold half as much
//! again as is charged (measured with `mallinfo2` on many connections each growing and
//! shrinking its tables: 56 MiB in use, 38 MiB free inside the heap). The tracker looks at
//! the resident figure now and then and sheds when it grows past the budget.

/// How the process gives its allocator's free pages back to the system: set once by the
/// binary, which owns the allocator (glibc's `malloc_trim`); the library only says when.
static GIVE_BACK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Sets how the allocator's free pages are given back ([`give_back`]); only the first
/// call counts.
pub fn give_back_with(give_back: fn()) {
    let _ = GIVE_BACK.set(give_back);
}

/// Gives the allocator's free pages back to the system, where the process said how.
/// Room freed between live allocations stays resident until then: on many connections
/// growing and shrinking their tables, half the resident figure.
pub fn give_back() {
    if let Some(give_back) = GIVE_BACK.get() {
        give_back();
    }
}

/// Bytes of this process resident in memory now (`VmRSS`), where the system says.
pub fn resident_bytes() -> Option<usize> {
    status_kib("VmRSS:").map(|kib| kib.saturating_mul(1024))
}

/// The most this process has had resident (`VmHWM`), in KiB, where the system says.
pub fn peak_kib() -> Option<usize> {
    status_kib("VmHWM:")
}

/// A line of `/proc/self/status` in KiB.
fn status_kib(field: &str) -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the child process that measures alone.
    const CHILD: &str = "PIDSHARK_RESIDENT_CHILD";

    /// The figure is the whole process's: measured in a child process running only
    /// [`a_live_allocation_measured_alone`], so that no other test allocating or freeing
    /// beside it (any number of test threads) moves the figure it bounds.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_live_allocation_shows_in_the_resident_figure() {
        let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "resident::tests::a_live_allocation_measured_alone",
                "--exact",
                "--include-ignored",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("1 passed"), "{stdout}");
    }

    #[test]
    #[ignore = "run alone, in a child process, by a_live_allocation_shows_in_the_resident_figure"]
    #[cfg(target_os = "linux")]
    fn a_live_allocation_measured_alone() {
        assert!(std::env::var_os(CHILD).is_some(), "run by its parent test");
        let before = resident_bytes().expect("Linux says");
        // Seen by the optimizer as used: a release build would leave it out otherwise.
        let held = std::hint::black_box(vec![1u8; 64 << 20]);
        let during = resident_bytes().expect("Linux says");
        assert!(during >= before + (60 << 20), "{before} then {during}");
        assert!(peak_kib().expect("Linux says") * 1024 >= during);
        drop(held);
    }
}
