//! Bounds on what a user may ask of the machine, sized by the machine: a mistyped count
//! gets a clear error instead of minutes spent spawning threads or gigabytes of buffers.

/// The most worker threads or query partitions: 16 per core, at least 256.
pub fn most_workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(16, |n| n.get());
    (cores * 16).max(256)
}
