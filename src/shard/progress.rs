//! How far the merger is, for the threads that feed it to wait on: what is handed to it
//! and not yet sent on, and the packet every worker has passed.
//!
//! Waiting is on a condition variable that the merger signals only while someone
//! waits, so that a run which never waits pays two atomic reads a part.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Exchanges handed to the merger and not yet sent on (as `part_bytes` reckons them:
/// those on the channel and those the merger holds) before the capture thread waits to
/// hand out the next epoch, and a worker ahead of the slowest waits before its next
/// segment: the slowest then catches up. A burst (a packet that gives up thousands of
/// waiting requests) is held once, not once per worker and epoch in flight. A
/// sixteenth of `--max-memory`, from 1 to 4 MiB: it is charged to the budget.
pub(super) fn held_limit(max_memory: usize) -> u64 {
    (max_memory as u64 / 16).clamp(1 << 20, 4 << 20)
}

#[derive(Debug, Default)]
pub(super) struct Progress {
    /// [`held_limit`].
    limit: u64,
    /// Handed to the merger and not yet sent on, as `part_bytes` reckons it.
    held: AtomicU64,
    /// The packet every worker has passed: what came before it is sent on.
    passed: AtomicU64,
    /// The merger returned (or panicked, which its join reports): nothing is waited on.
    ended: AtomicBool,
    /// Threads waiting on `changed`, so that the merger signals only when one is.
    waiting: AtomicUsize,
    lock: Mutex<()>,
    changed: Condvar,
}

impl Progress {
    pub(super) fn new(limit: u64) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Whether so much is handed to the merger that those feeding it should wait.
    pub(super) fn over(&self) -> bool {
        self.held.load(Ordering::SeqCst) > self.limit && !self.ended.load(Ordering::SeqCst)
    }

    /// The packet every worker has passed.
    pub(super) fn passed(&self) -> u64 {
        self.passed.load(Ordering::SeqCst)
    }

    /// A worker hands the merger `bytes` more.
    pub(super) fn handed(&self, bytes: u64) {
        self.held.fetch_add(bytes, Ordering::SeqCst);
    }

    /// The merger sent `bytes` on and every worker has passed `passed`.
    pub(super) fn sent(&self, bytes: u64, passed: u64) {
        let _ = self
            .held
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| {
                Some(h.saturating_sub(bytes))
            });
        self.passed.store(passed, Ordering::SeqCst);
        self.signal();
    }

    /// The merger is gone: nobody waits on it any more.
    pub(super) fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.signal();
    }

    /// Waits while `blocked` holds, woken by the merger's next [`Progress::sent`].
    pub(super) fn wait_while(&self, blocked: impl Fn(&Self) -> bool) {
        if !blocked(self) {
            return;
        }
        // a waiter counts itself under the lock before it looks, and the merger looks
        // at the count after it changes the state: either the waiter sees the change,
        // or the merger sees the waiter and signals once it sleeps
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while blocked(self) {
            guard = self
                .changed
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    fn signal(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.changed.notify_all();
        }
    }
}

/// Marks the merger ended when it returns or unwinds.
pub(super) struct Ended<'a>(pub(super) &'a Progress);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const LIMIT: u64 = 1 << 20;

    /// Progress over its limit, and a thread waiting on it.
    fn over_with_a_waiter() -> (Arc<Progress>, std::thread::JoinHandle<()>) {
        let progress = Arc::new(Progress::new(LIMIT));
        progress.handed(LIMIT + 1);
        let waiting = Arc::clone(&progress);
        let waiter = std::thread::spawn(move || waiting.wait_while(Progress::over));
        (progress, waiter)
    }

    #[test]
    fn a_waiter_wakes_once_the_merger_sends_on() {
        let (progress, waiter) = over_with_a_waiter();
        progress.sent(LIMIT + 1, 10);
        waiter.join().expect("the waiter returns");
        assert!(!progress.over());
        assert_eq!(progress.passed(), 10);
    }

    #[test]
    fn nobody_waits_on_an_ended_merger() {
        let (progress, waiter) = over_with_a_waiter();
        drop(Ended(&progress));
        waiter.join().expect("the waiter returns");
    }
}
