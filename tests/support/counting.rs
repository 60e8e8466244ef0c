//! A global allocator that counts the bytes each thread holds on the heap (what std's
//! allocator is asked for, without malloc's headers), so that a test measures what one
//! structure costs while other tests run in other threads. Included by the budget tests
//! with `#[path = "support/counting.rs"] mod counting;`.

struct Counting;

thread_local! {
    static HELD: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

#[allow(unsafe_code)] // a global allocator is an unsafe trait: System's, counted
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = HELD.try_with(|h| h.set(h.get() + layout.size() as isize));
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        let _ = HELD.try_with(|h| h.set(h.get() - layout.size() as isize));
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let grown = new_size as isize - layout.size() as isize;
        let _ = HELD.try_with(|h| h.set(h.get() + grown));
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The bytes this thread holds on the heap now, from an arbitrary start: differences
/// between two calls are what was allocated between them.
pub fn held_now() -> isize {
    HELD.with(|h| h.get())
}
