//! Zeroed byte buffers whose allocation may fail (lengths may come from untrusted
//! streams), backed by huge pages when large.

/// Buffers from this size on are asked for huge pages.
const HUGE_FROM: usize = 8 << 20;

/// A zeroed buffer of `len` bytes, or `None` when the allocator refuses it (never an
/// abort: lengths may come from untrusted streams). Large buffers are mapped lazily by
/// the allocator, so only the pages actually written cost memory; they are asked to be
/// backed by huge pages, so the parallel copies that first touch them fault 2 MiB at a
/// time instead of 4 KiB (outputs of many megabytes are written once, and page faults
/// are a large part of writing them).
pub fn try_zeroed(len: usize) -> Option<Vec<u8>> {
    if len == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len).ok()?;
    // SAFETY: `layout` has a non-zero size; a null result is handled; the allocation is
    // handed to a Vec with the same length, capacity and (byte) alignment, whose
    // deallocation uses the same layout.
    let buffer = unsafe {
        let ptr = std::alloc::alloc_zeroed(layout);
        if ptr.is_null() {
            return None;
        }
        Vec::from_raw_parts(ptr, len, len)
    };
    #[cfg(target_os = "linux")]
    if len >= HUGE_FROM {
        const HUGE: usize = 2 << 20;
        let start = (buffer.as_ptr() as usize).div_ceil(HUGE) * HUGE;
        let end = (buffer.as_ptr() as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: advice on whole huge pages inside the buffer's own allocation; it
            // changes how the pages are backed, never their contents (still zeros).
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    Some(buffer)
}

/// [`try_zeroed`] for sizes the caller trusts (its own inputs' worst cases).
pub fn zeroed(len: usize) -> Vec<u8> {
    try_zeroed(len).unwrap_or_else(|| vec![0u8; len])
}
