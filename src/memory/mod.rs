//! What this machine's memory allows, for checks that refuse work which cannot fit
//! before it starts (allocations past it would abort the process or wake the OOM killer),
//! the one way sizes are written in options (`64k`, `512m`, `2GiB`), and this process's
//! resident memory, now ([`resident_bytes`]) and at its peak over a stretch of work
//! ([`PeakResident`]).
//! Host memory for every layer: zeroed buffers whose allocation may fail ([`try_zeroed`])
//! and copies on all cores ([`parallel_concat`] and its kin), which the CPU codecs, the
//! archive and the GPU's staging share.

mod buffers;
mod copy;

pub use buffers::{try_zeroed, zeroed};
pub use copy::{extend_parallel, parallel_concat, parallel_copy, parallel_copy_pairs};

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

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

/// This process's resident set size in bytes (the second field of `/proc/self/statm`, in
/// pages, on Linux); `None` where it cannot be read.
pub fn resident_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf only reads a configuration value.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        pages.checked_mul(u64::try_from(page).ok()?)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Hands memory that the allocator holds free back to the system (`malloc_trim` on
/// glibc; nothing elsewhere), so that a [`PeakResident`] started next does not count
/// what earlier work freed.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the heap to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The peak of [`resident_bytes`] over a stretch of work: a thread samples it every
/// `interval` from [`start`](Self::start) to [`stop`](Self::stop) (the kernel's own peak,
/// `VmHWM`, cannot be reset between stretches). A peak shorter than the interval can be
/// missed.
///
/// ```
/// use std::time::Duration;
/// use colzip::memory::PeakResident;
///
/// let sampler = PeakResident::start(Duration::from_millis(10));
/// let block = vec![1u8; 64 << 20];
/// std::thread::sleep(Duration::from_millis(50));
/// let peak = sampler.stop();
/// drop(block);
/// if cfg!(target_os = "linux") {
///     assert!(peak.unwrap() >= 64 << 20);
/// }
/// ```
pub struct PeakResident {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Option<u64>>,
}

impl PeakResident {
    /// Starts sampling every `interval`.
    pub fn start(interval: Duration) -> PeakResident {
        let (stop, stopped) = mpsc::channel();
        let first = resident_bytes();
        let thread = std::thread::spawn(move || {
            let mut peak = first;
            loop {
                let stop = !matches!(
                    stopped.recv_timeout(interval),
                    Err(mpsc::RecvTimeoutError::Timeout)
                );
                peak = peak.max(resident_bytes());
                if stop {
                    return peak;
                }
            }
        });
        PeakResident { stop, thread }
    }

    /// Stops sampling; the largest resident set size seen, `None` where it cannot be read.
    pub fn stop(self) -> Option<u64> {
        let last = resident_bytes();
        // The thread may have ended already (a send then fails): it returns all the same.
        let _ = self.stop.send(());
        let peak = self.thread.join().unwrap_or(None);
        peak.max(last)
    }
}
