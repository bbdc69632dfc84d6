//! What a worker's sandbox refused, and to whom (SPEC §18, issue: a refusal in a
//! subprocess is explained): a tool's `sh -c 'echo hi > out.txt'` under `read_only`, or
//! its `curl` under `open_world: false`, fails inside the subprocess with a bare
//! `Permission denied`; the call's result says which declaration refused what.
//!
//! How: the worker's seccomp program hands the system calls that a sandbox refuses or
//! may refuse to a listener thread of the worker (`SECCOMP_RET_USER_NOTIF`), whatever
//! process of the worker's tree makes them. A socket of a family other than `AF_UNIX`
//! (offline worker) and a metadata change or special file (read-only worker) are
//! answered with the error there; a call that writes (opens for writing, makes,
//! removes, renames, links, truncates) goes on to the kernel, which lets Landlock
//! decide, and is recorded when its path is outside the places the worker may write
//! in. The records of a call's span are given to its result.
//!
//! Owns: the listener thread, the records, and reading a refused call's path from the
//! process that made it (`/proc/PID/mem`).
//!
//! Must never: let a call through that the sandbox refuses (a refusal is the
//! listener's answer, or, when the listener is gone, the kernel's `ENOSYS`), block on
//! anything a tool holds, or call into Python.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::sandbox::Sandbox;

/// What the sandbox refused, as it is told in a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A socket of a family other than `AF_UNIX` (`open_world: false`).
    Socket { process: String, family: i32 },
    /// A change of a file's metadata or a special file (`read_only`).
    Metadata { process: String, call: &'static str, path: String },
    /// A write outside the places the worker may write in (Landlock).
    Write { process: String, path: String },
}

impl Refusal {
    /// What was refused, whoever tried it.
    fn what(&self) -> (u8, &str, i32) {
        match self {
            Refusal::Socket { family, .. } => (0, "", *family),
            Refusal::Metadata { call, path, .. } => (1, path.as_str(), call.len() as i32),
            Refusal::Write { path, .. } => (2, path.as_str(), 0),
        }
    }

    /// The sentence a result carries for `tool` in `sandbox`.
    pub(crate) fn told(&self, tool: &str, sandbox: Sandbox) -> String {
        match self {
            Refusal::Socket { process, family } => format!(
                "`{tool}` declares open_world: false: the sandbox refused {process} a network socket ({})",
                family_name(*family)
            ),
            Refusal::Metadata { process, call, path } => {
                format!("`{tool}` declares read_only: the sandbox refused {process} `{call}` of {path}")
            }
            Refusal::Write { process, path } if sandbox.read_only => {
                format!("`{tool}` declares read_only: the sandbox refused {process} a write to {path}")
            }
            Refusal::Write { process, path } => format!(
                "`{tool}` may write only in its workspace, the temp folder and [sandbox] writable: the sandbox \
                 refused {process} a write to {path}"
            ),
        }
    }
}

fn family_name(family: i32) -> String {
    match family {
        libc::AF_INET => "AF_INET".into(),
        libc::AF_INET6 => "AF_INET6".into(),
        libc::AF_PACKET => "AF_PACKET".into(),
        libc::AF_NETLINK => "AF_NETLINK".into(),
        other => format!("address family {other}"),
    }
}

/// The records, numbered; at most [`KEPT`] of the newest. Process-wide, as the
/// seccomp filter whose notifications the listener reads is.
static RECORDS: Mutex<Vec<(u64, Refusal)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);
const KEPT: usize = 64;

/// Where the records stand now: what a call started at sees after it with [`since`].
pub(crate) fn mark() -> u64 {
    NEXT.load(Ordering::Acquire)
}

/// The refusals recorded since `mark` (those of every process of the worker's tree
/// while the call ran: a worker runs the calls of one workspace and sandbox), each
/// thing refused once (the first process that tried it named).
pub(crate) fn since(mark: u64) -> Vec<Refusal> {
    let records = crate::sync::lock(&RECORDS);
    let mut seen: Vec<Refusal> = Vec::new();
    for (_, refusal) in records.iter().filter(|(n, _)| *n >= mark) {
        if !seen.iter().any(|earlier| earlier.what() == refusal.what()) {
            seen.push(refusal.clone());
        }
    }
    seen
}

fn record(refusal: Refusal) {
    let mut records = crate::sync::lock(&RECORDS);
    records.push((NEXT.fetch_add(1, Ordering::AcqRel), refusal));
    if records.len() > KEPT {
        let extra = records.len() - KEPT;
        records.drain(..extra);
    }
}

/// System calls that change metadata or make special files, with the argument that
/// holds the path (`None`: the first argument is a descriptor).
#[cfg(target_arch = "x86_64")]
pub(super) const METADATA: [(libc::c_long, &str, PathArg); 20] = [
    (libc::SYS_chmod, "chmod", PathArg::Path(0)),
    (libc::SYS_fchmod, "fchmod", PathArg::Fd(0)),
    (libc::SYS_fchmodat, "fchmodat", PathArg::At(0, 1)),
    (libc::SYS_fchmodat2, "fchmodat2", PathArg::At(0, 1)),
    (libc::SYS_chown, "chown", PathArg::Path(0)),
    (libc::SYS_fchown, "fchown", PathArg::Fd(0)),
    (libc::SYS_lchown, "lchown", PathArg::Path(0)),
    (libc::SYS_fchownat, "fchownat", PathArg::At(0, 1)),
    (libc::SYS_utime, "utime", PathArg::Path(0)),
    (libc::SYS_utimes, "utimes", PathArg::Path(0)),
    (libc::SYS_utimensat, "utimensat", PathArg::At(0, 1)),
    (libc::SYS_futimesat, "futimesat", PathArg::At(0, 1)),
    (libc::SYS_setxattr, "setxattr", PathArg::Path(0)),
    (libc::SYS_lsetxattr, "lsetxattr", PathArg::Path(0)),
    (libc::SYS_fsetxattr, "fsetxattr", PathArg::Fd(0)),
    (libc::SYS_removexattr, "removexattr", PathArg::Path(0)),
    (libc::SYS_lremovexattr, "lremovexattr", PathArg::Path(0)),
    (libc::SYS_fremovexattr, "fremovexattr", PathArg::Fd(0)),
    (libc::SYS_mknod, "mknod", PathArg::Path(0)),
    (libc::SYS_mknodat, "mknodat", PathArg::At(0, 1)),
];

/// `setxattrat` and `removexattrat` (Linux 6.13), numbered alike on every
/// architecture, as every system call from 424 on is.
pub(super) const XATTRAT: [(libc::c_long, &str, PathArg); 2] =
    [(463, "setxattrat", PathArg::At(0, 1)), (466, "removexattrat", PathArg::At(0, 1))];

/// System calls that write, each with where its path (or paths) is, and which of its
/// arguments holds `open`'s flags (`None`: it always writes).
#[cfg(target_arch = "x86_64")]
pub(super) const WRITES: [(libc::c_long, PathArg, Option<u8>); 17] = [
    (libc::SYS_open, PathArg::Path(0), Some(1)),
    (libc::SYS_openat, PathArg::At(0, 1), Some(2)),
    (libc::SYS_creat, PathArg::Path(0), None),
    (libc::SYS_mkdir, PathArg::Path(0), None),
    (libc::SYS_mkdirat, PathArg::At(0, 1), None),
    (libc::SYS_rmdir, PathArg::Path(0), None),
    (libc::SYS_unlink, PathArg::Path(0), None),
    (libc::SYS_unlinkat, PathArg::At(0, 1), None),
    (libc::SYS_rename, PathArg::Two(PathArgOne::Path(0), PathArgOne::Path(1)), None),
    (libc::SYS_renameat, PathArg::Two(PathArgOne::At(0, 1), PathArgOne::At(2, 3)), None),
    (libc::SYS_renameat2, PathArg::Two(PathArgOne::At(0, 1), PathArgOne::At(2, 3)), None),
    (libc::SYS_link, PathArg::Path(1), None),
    (libc::SYS_linkat, PathArg::At(2, 3), None),
    (libc::SYS_symlink, PathArg::Path(1), None),
    (libc::SYS_symlinkat, PathArg::At(1, 2), None),
    (libc::SYS_truncate, PathArg::Path(0), None),
    (libc::SYS_ftruncate, PathArg::Fd(0), None),
];

/// Flags of `open` that write.
pub(super) const WRITING_FLAGS: [u64; 4] =
    [libc::O_WRONLY as u64, libc::O_RDWR as u64, libc::O_CREAT as u64, libc::O_TRUNC as u64];

/// Where a system call's path is.
#[derive(Debug, Clone, Copy)]
pub(super) enum PathArg {
    /// A path (relative to the working directory).
    Path(u8),
    /// A descriptor.
    Fd(u8),
    /// A directory descriptor and a path relative to it.
    At(u8, u8),
    /// Two paths, either of which is written (rename).
    Two(PathArgOne, PathArgOne),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum PathArgOne {
    Path(u8),
    At(u8, u8),
}

/// What the listener needs to know of its worker.
pub(super) struct Listener {
    pub(super) fd: OwnedFd,
    pub(super) sandbox: Sandbox,
    /// The places the worker may write in, resolved.
    pub(super) writable: Vec<PathBuf>,
}

impl Listener {
    /// Serves the notifications on a thread of its own until the worker ends.
    pub(super) fn start(self) {
        let _ = std::thread::Builder::new().name("lcp-sandbox".into()).spawn(move || self.serve());
    }

    fn serve(self) {
        loop {
            // SAFETY: a zeroed `seccomp_notif` is the buffer NOTIF_RECV fills.
            let mut notice: libc::seccomp_notif = unsafe { std::mem::zeroed() };
            // SAFETY: NOTIF_RECV writes one `seccomp_notif` into `notice`.
            let got = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notice) };
            if got != 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    // Interrupted, or the caller went away before it was read.
                    Some(libc::EINTR | libc::ENOENT) => continue,
                    _ => return,
                }
            }
            let (error, refusal) = self.judge(&notice);
            if let Some(refusal) = refusal {
                record(refusal);
            }
            let response = libc::seccomp_notif_resp {
                id: notice.id,
                val: 0,
                error: -error,
                flags: if error == 0 { libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32 } else { 0 },
            };
            // SAFETY: NOTIF_SEND reads one `seccomp_notif_resp`; a caller that went
            // away meanwhile makes it fail, which changes nothing.
            unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &response) };
        }
    }

    /// The error to answer the call with (0: let the kernel decide), and what to record.
    fn judge(&self, notice: &libc::seccomp_notif) -> (i32, Option<Refusal>) {
        let call = libc::c_long::from(notice.data.nr);
        let args = notice.data.args;
        let pid = notice.pid;
        if call == libc::SYS_socket || call == libc::SYS_socketpair {
            let family = args[0] as i32;
            return (libc::EACCES, Some(Refusal::Socket { process: process(pid), family }));
        }
        if call == libc::SYS_io_uring_setup {
            return (if self.sandbox.offline { libc::EACCES } else { libc::EPERM }, None);
        }
        if let Some((_, name, at)) = metadata_calls().find(|(number, _, _)| *number == call) {
            let path = self.path_of(pid, &args, at).map_or_else(|| "a file".to_string(), |p| p.display().to_string());
            return (libc::EPERM, Some(Refusal::Metadata { process: process(pid), call: name, path }));
        }
        if let Some((_, at, _)) = write_calls().find(|(number, _, _)| *number == call) {
            // A shell's look for its terminal is no write a tool meant: not told.
            let outside = self
                .paths_of(pid, &args, at)
                .into_iter()
                .find(|path| !self.may_write(path) && path != Path::new("/dev/tty"));
            let refusal =
                outside.map(|path| Refusal::Write { process: process(pid), path: path.display().to_string() });
            return (0, refusal);
        }
        (0, None)
    }

    fn paths_of(&self, pid: u32, args: &[u64; 6], at: PathArg) -> Vec<PathBuf> {
        match at {
            PathArg::Two(first, second) => [first, second]
                .into_iter()
                .filter_map(|one| match one {
                    PathArgOne::Path(index) => self.path_of(pid, args, PathArg::Path(index)),
                    PathArgOne::At(dir, index) => self.path_of(pid, args, PathArg::At(dir, index)),
                })
                .collect(),
            other => self.path_of(pid, args, other).into_iter().collect(),
        }
    }

    /// The absolute path a call names, as the calling process sees it.
    fn path_of(&self, pid: u32, args: &[u64; 6], at: PathArg) -> Option<PathBuf> {
        let (dir, path) = match at {
            PathArg::Fd(fd) => return std::fs::read_link(format!("/proc/{pid}/fd/{}", args[usize::from(fd)])).ok(),
            PathArg::Path(index) => (libc::AT_FDCWD, read_string(pid, args[usize::from(index)])?),
            PathArg::At(dir, index) => (args[usize::from(dir)] as i32, read_string(pid, args[usize::from(index)])?),
            PathArg::Two(..) => return None,
        };
        let path = PathBuf::from(path);
        if path.is_absolute() {
            return Some(path);
        }
        let base = if dir == libc::AT_FDCWD { format!("/proc/{pid}/cwd") } else { format!("/proc/{pid}/fd/{dir}") };
        Some(std::fs::read_link(base).ok()?.join(path))
    }

    /// Whether `path` is beneath a place the worker may write in: its deepest existing
    /// folder resolved (links followed, as the kernel does), the rest appended.
    fn may_write(&self, path: &Path) -> bool {
        let mut existing = path;
        let mut rest = Vec::new();
        let resolved = loop {
            if let Ok(resolved) = existing.canonicalize() {
                break resolved;
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => return true,
            }
        };
        let full = rest.iter().rev().fold(resolved, |path, name| path.join(name));
        self.writable.iter().any(|place| full.starts_with(place))
    }
}

fn metadata_calls() -> impl Iterator<Item = (libc::c_long, &'static str, PathArg)> {
    METADATA.into_iter().chain(XATTRAT)
}

fn write_calls() -> impl Iterator<Item = (libc::c_long, PathArg, Option<u8>)> {
    WRITES.into_iter()
}

/// How a result names the process that made a call: the tool itself (a thread of the
/// worker), or `process PID (`name`)`.
fn process(pid: u32) -> String {
    if Path::new(&format!("/proc/self/task/{pid}")).exists() {
        return "the tool itself".to_string();
    }
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("process {pid} (`{}`)", name.trim_end())
}

/// A NUL-terminated string at `address` in process `pid`'s memory (at most 4 KiB).
fn read_string(pid: u32, address: u64) -> Option<OsString> {
    use std::os::unix::fs::FileExt;
    let memory = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut bytes = vec![0u8; 4096];
    let mut read = 0;
    while read < bytes.len() {
        // Page by page: a string near the end of a mapping stops at its page.
        let end = ((address + read as u64) / 4096 + 1) * 4096 - address;
        let end = (end as usize).min(bytes.len());
        match memory.read_at(&mut bytes[read..end], address + read as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(nul) = bytes[read..read + n].iter().position(|&b| b == 0) {
                    bytes.truncate(read + nul);
                    return Some(OsString::from_vec(bytes));
                }
                read += n;
            }
        }
    }
    None
}

/// Installs `program` (a seccomp BPF program whose notifications are for the
/// listener) and returns the listener's descriptor.
pub(super) fn install(program: &[libc::sock_filter]) -> Result<OwnedFd, String> {
    let prog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr().cast_mut() };
    // SAFETY: seccomp(SET_MODE_FILTER, NEW_LISTENER) reads the program and returns a
    // new descriptor (no_new_privs is set before).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(format!("seccomp: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: the kernel just made it, and it is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
