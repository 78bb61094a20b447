//! Removing a directory and everything in it from a signal handler, where neither
//! allocation nor `readdir` may be used: only system calls (`openat`, `getdents64`,
//! `unlinkat`, `lseek`, `close`), with buffers on the stack and a bounded depth.

use std::ffi::c_char;

/// Directory levels below the top that are entered; what is deeper stays.
#[cfg(target_os = "linux")]
const MOST_DEPTH: u32 = 8;
/// Readings of one directory: entries another thread made while it was read, or that
/// the reading skipped as entries went, are found by the next.
#[cfg(target_os = "linux")]
const PASSES: u32 = 4;

/// Removes the directory `path` and what it holds, as far as it can; failures are
/// ignored (the process is ending). Async-signal-safe.
///
/// # Safety
/// `path` must point to a NUL-terminated string.
pub(super) unsafe fn remove_tree(path: *const c_char) {
    // Again while it is there: another thread may have made a file in a directory
    // after that directory's last reading.
    #[cfg(target_os = "linux")]
    for _ in 0..PASSES {
        // SAFETY: as this function's.
        unsafe {
            remove_at(libc::AT_FDCWD, path, MOST_DEPTH);
            if libc::faccessat(libc::AT_FDCWD, path, libc::F_OK, libc::AT_SYMLINK_NOFOLLOW) != 0 {
                break;
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    // SAFETY: as this function's; without getdents64 only an empty directory goes.
    unsafe {
        libc::rmdir(path)
    };
}

/// Removes `name` in the directory `parent`: a file or link at once, a directory after
/// what it holds (`depth` more levels entered).
#[cfg(target_os = "linux")]
unsafe fn remove_at(parent: libc::c_int, name: *const c_char, depth: u32) {
    // SAFETY: plain system calls on a NUL-terminated name and descriptors opened here;
    // getdents64 writes within the buffer it is given, whose records are read within the
    // length it returned.
    unsafe {
        if libc::unlinkat(parent, name, 0) == 0 {
            return;
        }
        // Only a directory fails with EISDIR; anything else cannot be removed.
        if *libc::__errno_location() != libc::EISDIR || depth == 0 {
            return;
        }
        let dir = libc::openat(
            parent,
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        // u64s: each record starts 8-byte aligned, as the kernel writes them.
        let mut buffer = [0u64; 256];
        for _ in 0..PASSES {
            let mut found = false;
            libc::lseek(dir, 0, libc::SEEK_SET);
            loop {
                let read = libc::syscall(
                    libc::SYS_getdents64,
                    dir,
                    buffer.as_mut_ptr(),
                    std::mem::size_of_val(&buffer),
                );
                if read <= 0 {
                    break;
                }
                let bytes = buffer.as_ptr().cast::<u8>();
                let mut at = 0usize;
                while at < read as usize {
                    // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
                    // d_type u8, then the NUL-terminated name.
                    let record = bytes.add(at);
                    let length = std::ptr::read_unaligned(record.add(16).cast::<u16>());
                    let entry = record.add(19).cast::<c_char>();
                    if !is_dot_or_dot_dot(entry) {
                        found = true;
                        remove_at(dir, entry, depth - 1);
                    }
                    if length == 0 {
                        break;
                    }
                    at += usize::from(length);
                }
            }
            if !found {
                break;
            }
        }
        libc::close(dir);
        libc::unlinkat(parent, name, libc::AT_REMOVEDIR);
    }
}

/// Whether the NUL-terminated `name` is `.` or `..`.
#[cfg(target_os = "linux")]
unsafe fn is_dot_or_dot_dot(name: *const c_char) -> bool {
    // SAFETY: `name` is NUL-terminated, so each byte read is at or before its NUL.
    unsafe {
        *name == b'.' as c_char
            && (*name.add(1) == 0 || (*name.add(1) == b'.' as c_char && *name.add(2) == 0))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_tree_is_removed_with_its_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("top");
        for sub in ["a/b/c", "d"] {
            std::fs::create_dir_all(top.join(sub)).unwrap();
        }
        // More entries than one reading of the buffer holds.
        for i in 0..300 {
            std::fs::write(top.join("d").join(format!("part-{i}.parquet")), b"x").unwrap();
        }
        std::fs::write(top.join("a/b/c/deep"), b"y").unwrap();
        std::os::unix::fs::symlink(dir.path(), top.join("link")).unwrap();
        let kept = dir.path().join("kept");
        std::fs::write(&kept, b"z").unwrap();
        let path = std::ffi::CString::new(top.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        unsafe { remove_tree(path.as_ptr()) };
        assert!(
            !top.exists(),
            "{:?}",
            std::fs::read_dir(&top).map(|d| d.count())
        );
        // The link went, not what it pointed to.
        assert!(kept.exists());
    }
}
