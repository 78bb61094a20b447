//! Host copies on all cores, which is how batches go into and out of pinned staging (one
//! core copies about 10 GB/s; PCIe carries 50).

use rayon::prelude::*;

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
