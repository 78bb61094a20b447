//! A counting global allocator: the harness reads the peak of live heap bytes and the
//! largest single request while one input is decoded, and compares them with the input's
//! bound. Requests above a hard ceiling are refused (null), so a decoder that asks for a
//! claimed size fails here instead of taking the machine's memory; the request is still
//! recorded, and the harness reports it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);
static CEILING: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The input being decoded (target index, input number), for the refusal message.
pub static TARGET: AtomicUsize = AtomicUsize::new(0);
pub static INPUT: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    fn admit(size: usize) -> bool {
        LARGEST.fetch_max(size, Relaxed);
        let ceiling = CEILING.load(Relaxed);
        if size <= ceiling {
            return true;
        }
        // An infallible allocation aborts after this: say which input it was, without
        // allocating (a fixed buffer, formatted in place).
        use std::io::Write;
        let mut buf = [0u8; 160];
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        let _ = writeln!(
            cursor,
            "fuzz: refused an allocation of {size} bytes (bound {ceiling}) in target {} input {}",
            TARGET.load(Relaxed),
            INPUT.load(Relaxed)
        );
        let end = cursor.position() as usize;
        let _ = std::io::stderr().write_all(&buf[..end]);
        false
    }

    fn grew(size: usize) {
        let live = LIVE.fetch_add(size, Relaxed) + size;
        PEAK.fetch_max(live, Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Self::admit(layout.size()) {
            return std::ptr::null_mut();
        }
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            Self::grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Self::admit(layout.size()) {
            return std::ptr::null_mut();
        }
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            Self::grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !Self::admit(new_size) {
            return std::ptr::null_mut();
        }
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            if new_size >= layout.size() {
                Self::grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        new
    }
}

/// Starts measuring one input: the peak and largest request restart from now, and no
/// single request above `ceiling` bytes is served.
pub fn start(ceiling: usize) -> usize {
    let live = LIVE.load(Relaxed);
    PEAK.store(live, Relaxed);
    LARGEST.store(0, Relaxed);
    CEILING.store(ceiling, Relaxed);
    live
}

/// The peak of live bytes above `base` since [`start`], and the largest single request.
pub fn finish(base: usize) -> (usize, usize) {
    CEILING.store(usize::MAX, Relaxed);
    (
        PEAK.load(Relaxed).saturating_sub(base),
        LARGEST.load(Relaxed),
    )
}
