//! Where a GPU pipeline's outputs go on the host: the caller's buffers, or one buffer
//! receiving the outputs one after another. Ordinary memory receives each step's output
//! through pinned staging, scattered from there with all cores; pinned memory (a pinned
//! buffer, or the pinned pool's) receives it straight from the device.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use crate::gpu::copy_to_host;
use crate::memory::parallel_copy_pairs;

/// The host destination of a batch's outputs.
pub(crate) enum Sink<'a, 'b> {
    /// Output `i` goes to `outputs[i]` (ordinary memory, through pinned staging).
    Buffers(&'a mut [&'b mut [u8]]),
    /// Output `i` goes to `out[ranges[i]]`, pinned memory the device writes directly (a
    /// buffer of the pinned pool, whose ranges become Arrow buffers).
    Region {
        out: &'a mut [u8],
        ranges: Vec<Range<usize>>,
    },
    /// Outputs one after another in `out`; `starts[i]` is where output `i` begins, set
    /// when it is known. `staged`: ordinary memory, written through pinned staging; else
    /// pinned memory, written by the device directly.
    Packed {
        out: &'a mut [u8],
        starts: Vec<usize>,
        staged: bool,
    },
}

impl<'a, 'b> Sink<'a, 'b> {
    /// Outputs one after another in pinned memory.
    pub(crate) fn pinned(out: &'a mut [u8], count: usize) -> Self {
        Sink::Packed {
            out,
            starts: vec![0; count],
            staged: false,
        }
    }

    /// Outputs one after another in ordinary memory.
    pub(crate) fn packed(out: &'a mut [u8], count: usize) -> Self {
        Sink::Packed {
            out,
            starts: vec![0; count],
            staged: true,
        }
    }

    /// Whether step outputs come back through staging (and [`Self::scatter`]).
    pub(crate) fn staged(&self) -> bool {
        match self {
            Sink::Buffers(_) => true,
            Sink::Region { .. } => false,
            Sink::Packed { staged, .. } => *staged,
        }
    }

    /// Prepares decoding into outputs of known lengths `lens`: a packed sink's outputs
    /// start one after another; the others' must have exactly those lengths.
    pub(crate) fn expect_outputs(
        &mut self,
        lens: &[usize],
        codec: &'static str,
    ) -> crate::codec::Result<()> {
        let mut at = 0;
        for (i, len) in lens.iter().enumerate() {
            self.set_start(i, at);
            at += len;
        }
        let have: Option<Vec<usize>> = match self {
            Sink::Buffers(outputs) => Some(outputs.iter().map(|o| o.len()).collect()),
            Sink::Region { ranges, .. } => Some(ranges.iter().map(Range::len).collect()),
            Sink::Packed { .. } => None,
        };
        for (i, (output, &len)) in have.iter().flatten().zip(lens).enumerate() {
            if *output != len {
                return Err(crate::codec::CodecError::invalid(
                    codec,
                    format!("output {i} holds {output} bytes, its stream decodes to {len}"),
                ));
            }
        }
        Ok(())
    }

    /// Sets where output `i` begins in a packed sink (ignored for buffers).
    pub(crate) fn set_start(&mut self, i: usize, at: usize) {
        if let Sink::Packed { starts, .. } = self {
            starts[i] = at;
        }
    }

    /// Output `i`, from its first byte (the rest of the buffer for a packed sink).
    pub(crate) fn output(&mut self, i: usize) -> &mut [u8] {
        match self {
            Sink::Buffers(outputs) => outputs[i],
            Sink::Region { out, ranges } => &mut out[ranges[i].clone()],
            Sink::Packed { out, starts, .. } => &mut out[starts[i]..],
        }
    }

    /// The pinned buffer from `at` on, for the device to write (`None` when staged).
    pub(crate) fn packed_from(&mut self, at: usize) -> Option<&mut [u8]> {
        match self {
            Sink::Packed {
                out, staged: false, ..
            } => Some(&mut out[at..]),
            _ => None,
        }
    }

    /// Queues the copies of pieces of `device` straight into a pinned sink: each piece is
    /// `(output, offset in it, range of device)`. Pieces that continue one another both
    /// on the device and in the sink cross in one copy (a batch of many small outputs
    /// would otherwise cost a driver call each).
    pub(crate) fn copy_from_device(
        &mut self,
        stream: &Arc<CudaStream>,
        device: &CudaSlice<u8>,
        pieces: &[(usize, usize, Range<usize>)],
        codec: &'static str,
    ) -> crate::codec::Result<()> {
        let (out, places): (&mut [u8], Vec<usize>) = match self {
            Sink::Packed {
                out,
                starts,
                staged: false,
            } => (
                out,
                pieces.iter().map(|(i, at, _)| starts[*i] + at).collect(),
            ),
            Sink::Region { out, ranges } => {
                let places = pieces
                    .iter()
                    .map(|(i, at, _)| ranges[*i].start + at)
                    .collect();
                (out, places)
            }
            _ => {
                return Err(crate::codec::CodecError::invalid(
                    codec,
                    "device copies into a staged sink",
                ));
            }
        };
        let mut k = 0;
        while k < pieces.len() {
            let (place, from) = (places[k], pieces[k].2.start);
            let mut len = pieces[k].2.len();
            let mut next = k + 1;
            while next < pieces.len()
                && places[next] == place + len
                && pieces[next].2.start == from + len
            {
                len += pieces[next].2.len();
                next += 1;
            }
            let target = out.get_mut(place..place + len).ok_or_else(|| {
                crate::codec::CodecError::invalid(codec, "output piece beyond the sink")
            })?;
            copy_to_host(stream, &device.slice(from..from + len), target)?;
            k = next;
        }
        Ok(())
    }

    /// Copies staged pieces, `(output, offset in it, bytes)`, to their places on all cores
    /// (a pinned sink received them directly: nothing to do).
    pub(crate) fn scatter(&mut self, pieces: &[(usize, usize, &[u8])]) {
        // Targets as (absolute place, bytes) in one address space per variant, sorted so
        // that the destination can be split into disjoint slices in one pass.
        let mut pairs = Vec::with_capacity(pieces.len());
        match self {
            Sink::Packed { staged: false, .. } | Sink::Region { .. } => {}
            Sink::Packed { out, starts, .. } => {
                let mut wanted: Vec<(usize, &[u8])> = pieces
                    .iter()
                    .map(|&(i, at, bytes)| (starts[i] + at, bytes))
                    .collect();
                wanted.sort_by_key(|&(at, _)| at);
                split_targets(out, wanted, &mut pairs);
            }
            Sink::Buffers(outputs) => {
                let mut by_output: Vec<Vec<(usize, &[u8])>> = vec![Vec::new(); outputs.len()];
                for &(i, at, bytes) in pieces {
                    by_output[i].push((at, bytes));
                }
                for (output, mut wanted) in outputs.iter_mut().zip(by_output) {
                    wanted.sort_by_key(|&(at, _)| at);
                    split_targets(output, wanted, &mut pairs);
                }
            }
        }
        crate::trace::count(crate::trace::Counter::Scatter, || {
            parallel_copy_pairs(pairs)
        });
    }
}

/// Splits `dst` into the disjoint targets of `wanted` (sorted by place), pairing each
/// with its bytes.
fn split_targets<'d, 's>(
    dst: &'d mut [u8],
    wanted: Vec<(usize, &'s [u8])>,
    pairs: &mut Vec<(&'s [u8], &'d mut [u8])>,
) {
    let mut rest = dst;
    let mut consumed = 0;
    for (at, bytes) in wanted {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(at - consumed);
        let (target, tail) = tail.split_at_mut(bytes.len());
        pairs.push((bytes, target));
        rest = tail;
        consumed = at + bytes.len();
    }
}
