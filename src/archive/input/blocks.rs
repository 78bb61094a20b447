//! Memory for the blocks a raw file is read into, used again once the batch made of a
//! block is dropped. A fresh allocation of a block's size comes from the kernel as
//! untouched pages, and the first write to each 4 KiB page faults: on a 16-core host
//! that held reading a file from the page cache to about 1.5 GB/s however many threads
//! read, where a reused buffer takes the copy alone.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Weak};

use arrow::buffer::Buffer;

/// Idle blocks kept for reuse: a file pipeline holds a block being read, two being
/// compressed and one handed between them.
const MOST_IDLE: usize = 4;

type Idle = Mutex<Vec<Vec<u64>>>;

/// Blocks lent as the memory of Arrow buffers, each back in the pool when its last
/// buffer is dropped.
#[derive(Default)]
pub(super) struct Blocks {
    idle: Arc<Idle>,
}

/// A block being filled, before it becomes a [`Buffer`].
pub(super) struct Block {
    /// 8-byte words, so that the buffer is aligned for every fixed-width type.
    words: Vec<u64>,
    len: usize,
    idle: Weak<Idle>,
}

impl Blocks {
    /// A block of `len` bytes: an idle one with room, else a new one.
    pub(super) fn take(&self, len: usize) -> Block {
        let needed = len.div_ceil(8);
        let reused = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.iter()
                .position(|w| w.len() >= needed)
                .map(|at| idle.swap_remove(at))
        };
        Block {
            words: reused.unwrap_or_else(|| vec![0; needed]),
            len,
            idle: Arc::downgrade(&self.idle),
        }
    }
}

impl Block {
    /// The block's bytes, to be written before [`Block::into_buffer`]. A reused block
    /// holds an earlier block's bytes until then.
    pub(super) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the words are `words.len() * 8 >= len` initialised bytes owned by this
        // block; u8 has no alignment or validity requirement.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }

    /// The block as an Arrow buffer, without a copy; its memory goes back to the pool
    /// when the buffer (and every slice of it) is dropped.
    pub(super) fn into_buffer(mut self) -> Buffer {
        let len = self.len;
        let ptr = self.as_mut_slice().as_mut_ptr();
        let owner: Arc<dyn arrow::alloc::Allocation> = Arc::new(Returned {
            words: std::mem::take(&mut self.words),
            idle: std::mem::take(&mut self.idle),
        });
        // SAFETY: `ptr .. ptr + len` is the words' allocation, which `owner` keeps alive
        // and unchanged (moving a Vec does not move its heap memory) as long as any
        // buffer on it.
        unsafe { Buffer::from_custom_allocation(NonNull::new_unchecked(ptr), len, owner) }
    }
}

/// A block's memory while Arrow buffers use it.
struct Returned {
    words: Vec<u64>,
    idle: Weak<Idle>,
}

impl Drop for Returned {
    fn drop(&mut self) {
        if let Some(idle) = self.idle.upgrade() {
            let mut idle = idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MOST_IDLE {
                idle.push(std::mem::take(&mut self.words));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_buffer_gives_its_memory_to_the_next_block() {
        let blocks = Blocks::default();
        let mut block = blocks.take(100);
        block.as_mut_slice().copy_from_slice(&[7; 100]);
        let buffer = block.into_buffer();
        assert_eq!(buffer.as_slice(), &[7; 100]);
        assert_eq!(buffer.as_ptr().align_offset(8), 0);
        let first = buffer.as_ptr();
        // While the buffer lives, a new block gets other memory.
        let mut other = blocks.take(100);
        assert_ne!(other.as_mut_slice().as_ptr(), first);
        drop(buffer);
        // Then a smaller block reuses it; a larger one cannot.
        assert_ne!(blocks.take(1000).as_mut_slice().as_ptr(), first);
        assert_eq!(blocks.take(50).as_mut_slice().as_ptr(), first);
    }

    #[test]
    fn slices_keep_the_memory_until_the_last_is_dropped() {
        let blocks = Blocks::default();
        let mut block = blocks.take(64);
        block.as_mut_slice().copy_from_slice(&[1; 64]);
        let buffer = block.into_buffer();
        let slice = buffer.slice(8);
        drop(buffer);
        assert_eq!(blocks.idle.lock().unwrap().len(), 0);
        assert_eq!(slice.as_slice(), &[1; 56]);
        drop(slice);
        assert_eq!(blocks.idle.lock().unwrap().len(), 1);
    }

    #[test]
    fn buffers_outlive_the_pool() {
        let blocks = Blocks::default();
        let mut block = blocks.take(16);
        block.as_mut_slice().copy_from_slice(&[3; 16]);
        let buffer = block.into_buffer();
        drop(blocks);
        assert_eq!(buffer.as_slice(), &[3; 16]);
    }
}
