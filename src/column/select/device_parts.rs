//! The values parts a selection reads, decoded into one device buffer: the parts of each
//! codec and width decoded by one device-resident job (the kernels alone, no copy to the
//! host), its output moved device to device into place, stored parts uploaded as they
//! are. Every part starts at a multiple of 8, so values of any width are aligned.

use std::collections::BTreeMap;

use cudarc::driver::{CudaSlice, CudaView, DevicePtr};

use crate::codec::{CodecId, DeviceJob};
use crate::column::CompressedPart;
use crate::gpu::{Gpu, Lane, Piece, copy_to_device, gather};
use crate::{Error, Result};

/// Device memory holding decoded parts.
pub(super) struct DeviceParts {
    pub(super) values: CudaSlice<u8>,
    /// Each part's byte offset in `values`, in the order the parts were given.
    pub(super) offsets: Vec<usize>,
}

/// The name of the lane's buffer that holds the parts.
pub(super) const VALUES: &str = "select.values";

/// Decodes `parts` on `gpu` into one buffer of `lane` (give it back with
/// `Lane::put_device` under [`VALUES`]). The codecs' decoders check each stream as on
/// the host; the parts' checksums are not computed (see the module of the caller).
pub(super) fn decode_parts(
    gpu: &Gpu,
    lane: &mut Lane,
    parts: &[&CompressedPart],
    resident: &[Option<CudaView<'_, u8>>],
) -> Result<DeviceParts> {
    let mut offsets = Vec::with_capacity(parts.len());
    let mut end = 0usize;
    for part in parts {
        end = end.div_ceil(8) * 8;
        offsets.push(end);
        end += part.raw_len;
    }
    let mut values = lane.take_device(VALUES, end.max(8))?;
    // Resident stored parts, copied in one launch (destinations as offsets until then).
    let mut stored = Vec::new();
    let mut groups: BTreeMap<(CodecId, u32), Vec<usize>> = BTreeMap::new();
    for (i, part) in parts.iter().enumerate() {
        groups.entry((part.codec, part.width)).or_default().push(i);
    }
    for ((codec, _), members) in groups {
        if codec == CodecId::Stored {
            for &i in &members {
                if parts[i].bytes.len() != parts[i].raw_len {
                    return Err(Error::format(format!(
                        "a stored part of {} bytes claims {}",
                        parts[i].bytes.len(),
                        parts[i].raw_len
                    )));
                }
                let at = offsets[i];
                match resident.get(i).and_then(Option::as_ref) {
                    Some(stream) if stream.len() == parts[i].raw_len => {
                        let (src, _record) = stream.device_ptr(lane.stream());
                        stored.push(Piece {
                            src,
                            dst: at as u64,
                            len: parts[i].raw_len as u64,
                        });
                    }
                    _ => {
                        let mut place = values.slice_mut(at..at + parts[i].raw_len);
                        copy_to_device(lane.stream(), &parts[i].bytes, &mut place)?;
                    }
                }
            }
            continue;
        }
        // One job for the group; a group whose streams a job cannot take together (the
        // parameters differ) goes stream by stream.
        let group = Group {
            codec,
            parts,
            resident,
            offsets: &offsets,
        };
        let started = std::time::Instant::now();
        let decoded = group.decode(gpu, lane, &members, &mut values);
        crate::trace::line(|| {
            format!(
                "select parts: {} {codec:?} parts decoded in {:.2} ms ({})",
                members.len(),
                started.elapsed().as_secs_f64() * 1e3,
                if decoded.is_ok() {
                    "one job"
                } else {
                    "failed as one job"
                }
            )
        });
        match decoded {
            Ok(()) => {}
            Err(_) if members.len() > 1 => {
                for &i in &members {
                    group.decode(gpu, lane, &[i], &mut values)?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    let values_at = address(lane, &values, 0);
    for piece in &mut stored {
        piece.dst += values_at;
    }
    gather(gpu, lane, &stored)?;
    Ok(DeviceParts { values, offsets })
}

/// Parts of one codec, and where their outputs go.
struct Group<'a, 'v> {
    codec: CodecId,
    parts: &'a [&'a CompressedPart],
    resident: &'a [Option<CudaView<'v, u8>>],
    offsets: &'a [usize],
}

impl Group<'_, '_> {
    /// Decodes `members` of the parts with one device-resident job (from their resident
    /// streams when every one has one) and moves each output to its offset in `values`.
    fn decode(
        &self,
        gpu: &Gpu,
        lane: &mut Lane,
        members: &[usize],
        values: &mut CudaSlice<u8>,
    ) -> Result<()> {
        let parts = self.parts;
        let streams: Vec<&[u8]> = members.iter().map(|&i| &parts[i].bytes[..]).collect();
        let lens: Vec<usize> = members.iter().map(|&i| parts[i].raw_len).collect();
        let resident: Option<Vec<CudaView<'_, u8>>> = members
            .iter()
            .map(|&i| {
                self.resident
                    .get(i)
                    .and_then(|r| r.as_ref().map(|v| v.slice(..)))
            })
            .collect();
        let mut job: Box<dyn DeviceJob> = match &resident {
            Some(resident) => self
                .codec
                .device_decompressor_resident(gpu, lane, &streams, resident, &lens)?,
            None => self.codec.device_decompressor(gpu, lane, &streams, &lens)?,
        };
        let done = run_and_place(
            gpu,
            lane,
            job.as_mut(),
            members,
            &lens,
            self.offsets,
            values,
        );
        job.give_back(lane);
        done
    }
}

fn run_and_place(
    gpu: &Gpu,
    lane: &mut Lane,
    job: &mut dyn DeviceJob,
    members: &[usize],
    lens: &[usize],
    offsets: &[usize],
    values: &mut CudaSlice<u8>,
) -> Result<()> {
    let mut laps = crate::trace::Laps::start();
    job.enqueue(gpu, lane)?;
    laps.lap("enqueued");
    job.output_bytes(gpu, lane)?;
    laps.lap("checked");
    let (out, ranges) = job
        .stream_outputs()
        .ok_or_else(|| Error::Unsupported("a decoder without outputs on the device".into()))?;
    if ranges.len() != members.len() {
        return Err(Error::format(format!(
            "a device decoder gave {} outputs for {} streams",
            ranges.len(),
            members.len()
        )));
    }
    let out_at = address(lane, out, 0);
    let values_at = address(lane, values, 0);
    let mut pieces = Vec::with_capacity(members.len());
    for ((range, &len), &i) in ranges.iter().zip(lens).zip(members) {
        if range.len() != len {
            return Err(Error::Unsupported(format!(
                "a device decoder covers {} of a part's {len} bytes",
                range.len()
            )));
        }
        pieces.push(Piece {
            src: out_at + range.start as u64,
            dst: values_at + offsets[i] as u64,
            len: len as u64,
        });
    }
    // The job's buffers go back to the lane after this without a wait: whatever reuses
    // or frees them next is queued on the lane's stream, after these copies.
    gather(gpu, lane, &pieces)?;
    laps.lap("placed");
    laps.finish(|| format!("select parts run: {} parts", members.len()));
    Ok(())
}

/// The device address of byte `offset` of `values`.
pub(super) fn address(lane: &Lane, values: &CudaSlice<u8>, offset: usize) -> u64 {
    let (base, _record) = values.device_ptr(lane.stream());
    base + offset as u64
}
