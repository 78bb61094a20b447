//! Blocks kept on a GPU from the moment a table holds them: the compressed streams of
//! their fixed-width columns are uploaded when the table is loaded or inserted into
//! ([`Residence`]), so that no query pays the upload. Each partition's blocks go to one
//! GPU of the placement, in turn, so that a scan's partition decodes on the GPU that
//! holds its blocks.

use std::sync::Arc;

use rayon::prelude::*;

use super::Block;
use super::options::{CompressOptions, Residence};
use crate::column::CompressedColumn;
use crate::column::select::make_resident;
use crate::gpu::Gpu;
use crate::{Error, Result};

/// An error when `options` ask for blocks on a GPU and their placement has none.
pub(super) fn check(options: &CompressOptions) -> Result<()> {
    if options.residence == Residence::Gpu && options.placement.gpus().is_empty() {
        return Err(Error::Usage(
            "residence 'gpu' needs a GPU, and the table's placement has none (backend cpu, or no usable GPU)"
                .into(),
        ));
    }
    Ok(())
}

/// The GPU the blocks of partition `partition` live on under `options`, if any.
pub(super) fn gpu_of_partition(
    options: &CompressOptions,
    partition: usize,
) -> Option<&'static Gpu> {
    if options.residence == Residence::Host {
        return None;
    }
    let gpus = options.placement.gpus();
    (!gpus.is_empty()).then(|| &gpus[partition % gpus.len()])
}

/// Uploads the blocks of `placed` (each with its partition) to their partitions' GPUs;
/// a block the GPU has no room for stays on the host.
pub(super) fn upload(placed: &[(usize, Arc<Block>)], options: &CompressOptions) {
    placed.par_iter().for_each(|(partition, block)| {
        if let Some(gpu) = gpu_of_partition(options, *partition) {
            block.resident.get_or_init(|| {
                let columns: Vec<&CompressedColumn> = block.columns.iter().collect();
                make_resident(gpu, &columns).ok().flatten()
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Placement;

    #[test]
    fn residence_gpu_needs_a_gpu_and_host_keeps_blocks_off_it() {
        let on_cpu = |residence| CompressOptions {
            placement: Placement::CPU,
            residence,
            ..CompressOptions::default()
        };
        let error = check(&on_cpu(Residence::Gpu)).unwrap_err().to_string();
        assert!(error.contains("residence 'gpu' needs a GPU"), "{error}");
        assert!(check(&on_cpu(Residence::Auto)).is_ok());
        assert!(check(&on_cpu(Residence::Host)).is_ok());
        assert!(gpu_of_partition(&on_cpu(Residence::Auto), 3).is_none());
        if let Ok(gpus) = Gpu::all()
            && !gpus.is_empty()
        {
            let on_gpus = |residence| CompressOptions {
                placement: Placement::on_all(gpus),
                residence,
                ..CompressOptions::default()
            };
            assert!(gpu_of_partition(&on_gpus(Residence::Host), 0).is_none());
            let first = gpu_of_partition(&on_gpus(Residence::Auto), 0).unwrap();
            let again = gpu_of_partition(&on_gpus(Residence::Auto), gpus.len()).unwrap();
            assert_eq!(first.info().ordinal, again.info().ordinal);
        }
    }
}
