//! What this machine's memory allows, for checks that refuse work which cannot fit
//! before it starts (allocations past it would abort the process or wake the OOM killer).

/// Physical memory in bytes, where it can be read (`MemTotal` of `/proc/meminfo` on
/// Linux); `None` elsewhere, and the callers then do not check.
pub fn physical_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
