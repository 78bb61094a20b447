//! Many buffers in one allocation: how a batch's outputs come back from the calls that
//! allocate them (one `Vec` for the batch, not one per buffer).

use std::ops::Range;

/// Buffers one after another in one allocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    bytes: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

impl Packed {
    /// Room for buffers of `capacities` bytes, zeroed (large allocations are mapped lazily,
    /// so the pages are first touched by whoever fills them: the parallel copies); `None`
    /// when the allocator refuses it.
    pub(crate) fn with_capacities(capacities: &[usize]) -> Option<Self> {
        let mut at = 0;
        let ranges = capacities
            .iter()
            .map(|&c| {
                at += c;
                at - c..at
            })
            .collect();
        Some(Packed {
            bytes: crate::memory::try_zeroed(at)?,
            ranges,
        })
    }

    /// Every buffer's whole room, to be written.
    pub(crate) fn slots_mut(&mut self) -> Vec<&mut [u8]> {
        let mut slots = Vec::with_capacity(self.ranges.len());
        let mut rest = self.bytes.as_mut_slice();
        let mut consumed = 0;
        for range in &self.ranges {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(range.start - consumed);
            let (slot, tail) = tail.split_at_mut(range.len());
            slots.push(slot);
            rest = tail;
            consumed = range.end;
        }
        slots
    }

    /// Buffers of `sizes` one after another at the start of `bytes` (the rest dropped).
    pub(crate) fn from_sizes(mut bytes: Vec<u8>, sizes: &[usize]) -> Self {
        let mut at = 0;
        let ranges = sizes
            .iter()
            .map(|&size| {
                at += size;
                at - size..at
            })
            .collect();
        bytes.truncate(at);
        Packed { bytes, ranges }
    }

    /// Number of buffers.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Buffer `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        &self.bytes[self.ranges[i].clone()]
    }

    /// Every buffer, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.ranges.iter().map(|r| &self.bytes[r.clone()])
    }

    /// Every buffer as a slice (the inputs of a next batched call).
    pub fn to_refs(&self) -> Vec<&[u8]> {
        self.iter().collect()
    }

    /// Each buffer's range in [`Self::bytes`].
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// All buffers' bytes, one after another.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes (for a batch of one: the buffer).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Every buffer as its own `Vec` (copies; for callers that keep buffers apart).
    pub fn into_vecs(self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }
}
