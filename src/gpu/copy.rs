//! Copies: host↔device copies queued on a stream (empty ones queue nothing), and host
//! copies on all cores, which is how batches go into and out of pinned staging (one core
//! copies about 10 GB/s; PCIe carries 50).

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use rayon::prelude::*;

use super::error::{GpuError, GpuResult};

/// Queues the copy of `src` (host) into the start of `dst` (device).
pub fn copy_to_device(
    stream: &Arc<CudaStream>,
    src: &[u8],
    dst: &mut impl DevicePtrMut<u8>,
) -> GpuResult<()> {
    if src.is_empty() {
        return Ok(());
    }
    if dst.len() < src.len() {
        return Err(too_small("device", dst.len(), src.len()));
    }
    stream
        .memcpy_htod(src, dst)
        .map_err(|e| GpuError::driver("copy to device", e))
}

fn too_small(side: &str, have: usize, need: usize) -> GpuError {
    GpuError::Limit(format!(
        "copy of {need} bytes into a {side} buffer of {have}"
    ))
}

/// Queues the copy of `src` (device) into the start of `dst` (host).
pub fn copy_to_host(
    stream: &Arc<CudaStream>,
    src: &impl DevicePtr<u8>,
    dst: &mut [u8],
) -> GpuResult<()> {
    if src.len() == 0 {
        return Ok(());
    }
    if dst.len() < src.len() {
        return Err(too_small("host", dst.len(), src.len()));
    }
    stream
        .memcpy_dtoh(src, dst)
        .map_err(|e| GpuError::driver("copy to host", e))
}

/// Buffers from this size on are asked for huge pages.
const HUGE_FROM: usize = 8 << 20;

/// `dst.copy_from_slice(src)` on all cores for large copies.
pub fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    if src.len() < 2 * TASK {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(TASK)
            .zip(src.par_chunks(TASK))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// A zeroed buffer of `len` bytes, or `None` when the allocator refuses it (never an
/// abort: lengths may come from untrusted streams). Large buffers are mapped lazily by
/// the allocator, so only the pages actually written cost memory; they are asked to be
/// backed by huge pages, so the parallel copies that first touch them fault 2 MiB at a
/// time instead of 4 KiB (outputs of many megabytes are written once, and page faults
/// were a large part of writing them).
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

/// Appends `bytes` to `out`, copying with all cores when large (without first zeroing
/// the new room, which would be a serial pass of its own).
pub fn extend_parallel(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() < 2 * TASK {
        out.extend_from_slice(bytes);
        return;
    }
    out.reserve(bytes.len());
    let at = out.len();
    let base = out.as_mut_ptr() as usize;
    bytes.par_chunks(TASK).enumerate().for_each(|(k, piece)| {
        // SAFETY: the room [at, at + bytes.len()) was reserved above; each task writes
        // its own disjoint piece of it, and nothing reads it before `set_len` below.
        unsafe {
            std::ptr::copy_nonoverlapping(
                piece.as_ptr(),
                (base as *mut u8).add(at + k * TASK),
                piece.len(),
            );
        }
    });
    // SAFETY: every byte up to the new length was written above.
    unsafe { out.set_len(at + bytes.len()) };
}

/// Bytes per task of the parallel copies of pairs: small enough that a few megabytes
/// keep every core busy, large enough that a task is not all overhead.
const TASK: usize = 256 << 10;

/// Copies every `(source, destination)` pair on all cores, many small pairs or few large
/// ones: how pieces go into and out of staging buffers. Large pairs are cut into tasks of
/// 256 KiB, small ones gathered into tasks of about that size.
pub fn parallel_copy_pairs(pairs: Vec<(&[u8], &mut [u8])>) {
    let mut tasks: Vec<Vec<(&[u8], &mut [u8])>> = Vec::new();
    let mut current: Vec<(&[u8], &mut [u8])> = Vec::new();
    let mut current_bytes = 0;
    for (src, dst) in pairs {
        debug_assert_eq!(src.len(), dst.len());
        for (s, d) in src.chunks(TASK).zip(dst.chunks_mut(TASK)) {
            current_bytes += s.len();
            current.push((s, d));
            if current_bytes >= TASK {
                tasks.push(std::mem::take(&mut current));
                current_bytes = 0;
            }
        }
    }
    if !current.is_empty() {
        tasks.push(current);
    }
    if tasks.len() <= 1 {
        for task in tasks {
            for (src, dst) in task {
                dst.copy_from_slice(src);
            }
        }
        return;
    }
    tasks.into_par_iter().for_each(|task| {
        for (src, dst) in task {
            dst.copy_from_slice(src);
        }
    });
}

/// Copies `pieces` one after another into `dst` (exactly as long as they are together)
/// on all cores: how a batch of pages or blocks goes into a staging buffer.
pub fn parallel_concat(dst: &mut [u8], pieces: &[&[u8]]) {
    let mut pairs = Vec::with_capacity(pieces.len());
    let mut rest = dst;
    for piece in pieces {
        let (target, tail) = std::mem::take(&mut rest).split_at_mut(piece.len());
        pairs.push((*piece, target));
        rest = tail;
    }
    parallel_copy_pairs(pairs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenated_pieces_are_the_pieces_one_after_another() {
        let a: Vec<u8> = (0..(1 << 16) * 40 + 17).map(|i| (i % 251) as u8).collect();
        let b = b"short".to_vec();
        let c: Vec<u8> = (0..(1 << 16) * 3).map(|i| (i % 13) as u8).collect();
        let mut joined = vec![0; a.len() + b.len() + c.len()];
        parallel_concat(&mut joined, &[&a, &b, &[], &c]);
        assert_eq!(joined, [a.clone(), b, c].concat());
        let mut copy = vec![0; a.len()];
        parallel_copy(&mut copy, &a);
        assert_eq!(copy, a);
    }
}
