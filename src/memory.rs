//! What this machine's memory allows, for checks that refuse work which cannot fit
//! before it starts (allocations past it would abort the process or wake the OOM killer),
//! and the one way sizes are written in options (`64k`, `512m`, `2GiB`).

/// Physical memory in bytes, where it can be read (`MemTotal` of `/proc/meminfo` on
/// Linux); `None` elsewhere, and the callers then do not check.
pub fn physical_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A byte count with an optional binary suffix: `4096`, `64k`, `512m`, `2g`, `1t` (`kb`,
/// `kib`, `MiB` and so on too); `None` when it is not one or overflows.
///
/// ```
/// use colzip::memory::parse_byte_size;
/// assert_eq!(parse_byte_size("64k"), Some(65_536));
/// assert_eq!(parse_byte_size("2GiB"), Some(2 << 30));
/// assert_eq!(parse_byte_size("lots"), None);
/// ```
pub fn parse_byte_size(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let number = lower.trim_end_matches("ib").trim_end_matches('b');
    let (digits, shift) = match number.char_indices().last() {
        Some((i, 'k')) => (&number[..i], 10),
        Some((i, 'm')) => (&number[..i], 20),
        Some((i, 'g')) => (&number[..i], 30),
        Some((i, 't')) => (&number[..i], 40),
        _ => (number, 0),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(1 << shift)
}
