//! A block's columns kept on a GPU, compressed: the streams of the values parts of its
//! selectable columns uploaded once and decoded there by every later selection, so that
//! nothing of them crosses PCIe again. Resident bytes are bounded per GPU (half of its
//! memory, the rest left to the codecs' working buffers); past the bound a block stays
//! on the host and its streams are uploaded by each selection.

use std::ops::Range;
use std::sync::Mutex;

use cudarc::driver::{CudaSlice, CudaView};

use super::values_part;
use crate::column::CompressedColumn;
use crate::gpu::{Gpu, GpuError};
use crate::{Error, Result};

/// Resident bytes per GPU ordinal.
static HELD: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A block's selectable columns' compressed streams in the memory of one GPU.
pub struct ResidentColumns {
    ordinal: usize,
    streams: CudaSlice<u8>,
    /// Each column's stream in `streams`, for the selectable ones.
    at: Vec<Option<Range<usize>>>,
    bytes: usize,
}

impl ResidentColumns {
    /// The ordinal of the GPU they live on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Column `k`'s stream, when it is resident.
    pub fn stream(&self, k: usize) -> Option<CudaView<'_, u8>> {
        let range = self.at.get(k)?.clone()?;
        Some(self.streams.slice(range))
    }
}

impl Drop for ResidentColumns {
    fn drop(&mut self) {
        if let Ok(mut held) = HELD.lock()
            && let Some(bytes) = held.get_mut(self.ordinal)
        {
            *bytes = bytes.saturating_sub(self.bytes);
        }
    }
}

impl std::fmt::Debug for ResidentColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentColumns")
            .field("ordinal", &self.ordinal)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// Resident bytes allowed on `gpu`: half its memory (4 GiB when the driver does not say
/// how much it has).
fn resident_bound(gpu: &Gpu) -> usize {
    let total = match gpu.info().memory_bytes {
        0 => gpu
            .context()
            .bind_to_thread()
            .ok()
            .and_then(|()| cudarc::driver::result::mem_get_info().ok())
            .map_or(0, |(_, total)| total),
        total => total as usize,
    };
    match total {
        0 => 4 << 30,
        total => total / 2,
    }
}

/// Uploads the compressed streams of `columns`' selectable columns to `gpu`; `None` when
/// none is selectable, or the GPU's bound for resident bytes or its memory has no room
/// for them.
pub fn make_resident(gpu: &Gpu, columns: &[&CompressedColumn]) -> Result<Option<ResidentColumns>> {
    let mut joined = Vec::new();
    let mut at = Vec::with_capacity(columns.len());
    for column in columns {
        at.push(values_part(column).map(|part| {
            let start = joined.len().div_ceil(8) * 8;
            joined.resize(start, 0);
            joined.extend_from_slice(&part.bytes);
            start..joined.len()
        }));
    }
    if joined.is_empty() {
        crate::trace::line(|| "resident columns: none of the block's columns is selectable".into());
        return Ok(None);
    }
    let ordinal = gpu.info().ordinal;
    let bound = resident_bound(gpu);
    let bytes = joined.len();
    {
        let mut held = HELD
            .lock()
            .map_err(|_| Error::format("resident bytes poisoned"))?;
        if held.len() <= ordinal {
            held.resize(ordinal + 1, 0);
        }
        if held[ordinal] + bytes > bound {
            crate::trace::line(|| {
                format!(
                    "resident columns: {bytes} bytes more would pass the bound of {bound} on GPU {ordinal}"
                )
            });
            return Ok(None);
        }
        held[ordinal] += bytes;
    }
    // Counted before the upload, so concurrent uploads cannot pass the bound together.
    let uploaded = gpu.stream().map_err(Error::from).and_then(|stream| {
        let streams = stream
            .clone_htod(&joined)
            .map_err(|e| GpuError::driver("upload of resident columns", e))?;
        stream
            .synchronize()
            .map_err(|e| GpuError::driver("upload of resident columns", e))?;
        Ok(streams)
    });
    let streams = match uploaded {
        Ok(streams) => streams,
        Err(e) => {
            // The GPU is full (or failing, which the selection will then say): the block
            // stays on the host.
            crate::trace::line(|| format!("resident columns not uploaded: {e}"));
            if let Ok(mut held) = HELD.lock() {
                held[ordinal] -= bytes;
            }
            return Ok(None);
        }
    };
    crate::trace::line(|| format!("resident columns: {bytes} bytes on GPU {ordinal}"));
    Ok(Some(ResidentColumns {
        ordinal,
        streams,
        at,
        bytes,
    }))
}
