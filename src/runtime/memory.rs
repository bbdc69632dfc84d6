//! A worker's memory limit (`--memory-limit`, SPEC §8, §18) that counts every page the
//! worker and what it starts map, shared memory included: a memory cgroup of the
//! worker's own where lcp may make one (cgroup v2 with the memory controller given to
//! lcp's cgroup, or v1's memory hierarchy), else the worker's address space
//! (`RLIMIT_AS`, set by the supervisor at the worker's start).
//!
//! Owns: finding where lcp may make cgroups (once), making one per worker, putting the
//! worker in it before its Python starts, removing it once the worker ended.
//!
//! Must never: move any process but a worker of lcp's, or leave a cgroup behind that
//! it made (removed when the worker is reaped).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A memory cgroup that holds one worker and all it starts.
#[derive(Debug)]
pub(super) struct MemoryCgroup {
    path: PathBuf,
}

/// Where this process may make memory cgroups, and which interface they have.
#[derive(Debug)]
struct Parent {
    path: PathBuf,
    /// The name of the file that holds a cgroup's limit: `memory.max` (v2) or
    /// `memory.limit_in_bytes` (v1).
    limit_file: &'static str,
}

impl MemoryCgroup {
    /// A new cgroup limited to `bytes`, or `None` where lcp may not make one.
    pub(super) fn make(bytes: u64) -> Option<MemoryCgroup> {
        // Process-wide, as the names it numbers are: they hold the process id.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let parent = parent()?;
        let name = format!("lcp-{}-worker-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let path = parent.path.join(name);
        std::fs::create_dir(&path).ok()?;
        let cgroup = MemoryCgroup { path };
        let limited = std::fs::write(cgroup.path.join(parent.limit_file), bytes.to_string()).is_ok();
        // v1 counts swap apart: a worker may not swap its way past the limit either.
        let swap = cgroup.path.join("memory.memsw.limit_in_bytes");
        if swap.exists() {
            let _ = std::fs::write(&swap, bytes.to_string());
        }
        limited.then_some(cgroup)
    }

    /// Puts process `pid` in it (its children follow it there).
    pub(super) fn adopt(&self, pid: u32) -> std::io::Result<()> {
        std::fs::write(self.path.join("cgroup.procs"), pid.to_string())
    }
}

impl Drop for MemoryCgroup {
    /// Removes the cgroup, once the processes in it are gone (the kernel takes a
    /// moment to let go of an ended one).
    fn drop(&mut self) {
        let began = Instant::now();
        while std::fs::remove_dir(&self.path).is_err() && began.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Where lcp may make memory cgroups, found once: below its own cgroup, on cgroup v2
/// when that cgroup hands the memory controller down (it is enabled in its
/// `cgroup.subtree_control`, or lcp may enable it there), else on v1's memory
/// hierarchy when lcp may write there.
fn parent() -> Option<&'static Parent> {
    // Process-wide, as the cgroup the process is in.
    static PARENT: OnceLock<Option<Parent>> = OnceLock::new();
    PARENT
        .get_or_init(|| {
            let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
            own.lines().find_map(|line| {
                let mut fields = line.splitn(3, ':');
                let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
                let path = path.trim_start_matches('/');
                if controllers.is_empty() {
                    let dir = Path::new("/sys/fs/cgroup").join(path);
                    let control = dir.join("cgroup.subtree_control");
                    let handed = |text: String| text.split_whitespace().any(|c| c == "memory");
                    // Only where cgroup v2 is mounted: the file is the kernel's, never made.
                    let enable = || {
                        std::fs::OpenOptions::new()
                            .write(true)
                            .open(&control)
                            .and_then(|mut file| std::io::Write::write_all(&mut file, b"+memory"))
                            .is_ok()
                    };
                    let memory = Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
                        && (std::fs::read_to_string(&control).is_ok_and(handed)
                            || (enable() && std::fs::read_to_string(&control).is_ok_and(handed)));
                    memory.then_some(Parent { path: dir, limit_file: "memory.max" })
                } else if controllers.split(',').any(|c| c == "memory") {
                    let dir = Path::new("/sys/fs/cgroup/memory").join(path);
                    let writable = dir.join("memory.limit_in_bytes").exists()
                        // SAFETY: access(2) on a NUL-terminated path checks this process's rights.
                        && std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
                            .is_ok_and(|dir| unsafe { libc::access(dir.as_ptr(), libc::W_OK) } == 0);
                    writable.then_some(Parent { path: dir, limit_file: "memory.limit_in_bytes" })
                } else {
                    None
                }
            })
        })
        .as_ref()
}
