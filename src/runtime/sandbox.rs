//! The declarations a worker's kernel enforces (SPEC §18): every worker writes only
//! in its workspace, its scratch folder, the system's temp folder and `[sandbox]
//! writable`; a tool declared `read_only: true` runs in a worker that can write only in
//! its own scratch folder (Landlock), one declared `open_world: false` in a worker that
//! cannot open an `AF_INET`/`AF_INET6` socket (seccomp); all with `no_new_privs`.
//!
//! Owns: which sandbox a tool's declarations ask for ([`Sandbox::of`]), and putting a
//! worker process into it (`enter`) on its main thread, before Python starts and
//! before any other thread exists, so that everything the worker runs is inside.
//!
//! Must never: let a worker run tools of a sandbox it could not enter (entering fails
//! the worker's start, naming what the kernel lacks), or loosen a sandbox once entered
//! (the kernel allows neither).

#[cfg(feature = "python")]
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::policy::Declared;

/// The declarations a worker enforces: tools of one sandbox share workers, never
/// with tools of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Sandbox {
    /// `read_only: true`: writes only in the worker's scratch folder.
    #[serde(default)]
    pub read_only: bool,
    /// `open_world: false`: no network sockets.
    #[serde(default)]
    pub offline: bool,
}

impl Sandbox {
    /// The sandbox `declared` asks for.
    pub fn of(declared: &Declared) -> Sandbox {
        Sandbox { read_only: declared.read_only == Some(true), offline: declared.open_world == Some(false) }
    }

    /// Whether it confines nothing.
    pub fn is_open(&self) -> bool {
        !self.read_only && !self.offline
    }

    /// The declarations it enforces, as they are written (`read_only`, `open_world`).
    pub fn enforced(&self) -> Vec<&'static str> {
        [(self.read_only, "read_only"), (self.offline, "open_world")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect()
    }
}

/// Whether this process runs its tools in itself (`--in-process`): then nothing is
/// enforced, and [`enforced`] says so.
static IN_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that this process runs its tools in itself, where no declaration is enforced.
pub fn run_in_process() {
    IN_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The declarations of `declared` that lcp's workers enforce on this machine: those
/// a sandbox exists for, where the kernel has its mechanism; none once this process
/// runs its tools in itself ([`run_in_process`]). A build without the `python` feature
/// says the same as the default build (it describes tools as that build runs them).
pub fn enforced(declared: &Declared) -> Vec<&'static str> {
    if IN_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        return Vec::new();
    }
    let sandbox = Sandbox::of(declared);
    let offered = kernel();
    sandbox
        .enforced()
        .into_iter()
        .filter(|name| match *name {
            "read_only" => offered.landlock,
            _ => offered.seccomp,
        })
        .collect()
}

/// What this machine's kernel lacks of the sandbox's mechanisms, a sentence each
/// (empty on a kernel with Landlock and seccomp).
pub fn kernel_gaps() -> Vec<String> {
    let offered = kernel();
    let mut gaps = Vec::new();
    if !offered.landlock {
        gaps.push(
            "this kernel has no Landlock: workers' writes are not confined, and tools declaring read_only are \
             refused (`[sandbox] require = false` runs them unconfined)"
                .to_string(),
        );
    }
    if !offered.seccomp {
        gaps.push(
            "this kernel has no seccomp: tools declaring open_world: false are refused \
             (`[sandbox] require = false` runs them with their network)"
                .to_string(),
        );
    }
    gaps
}

#[derive(Clone, Copy)]
struct Offered {
    landlock: bool,
    seccomp: bool,
}

/// What the kernel offers, asked once.
fn kernel() -> Offered {
    static OFFERED: std::sync::OnceLock<Offered> = std::sync::OnceLock::new();
    *OFFERED.get_or_init(|| {
        // SAFETY: `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`
        // only returns the kernel's Landlock ABI version (or fails).
        let abi =
            unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, 1u32) };
        // SAFETY: PR_GET_SECCOMP reads this thread's seccomp mode; it fails where the
        // kernel has no seccomp.
        let seccomp = unsafe { libc::prctl(libc::PR_GET_SECCOMP) } >= 0;
        Offered { landlock: abi >= 1, seccomp }
    })
}

#[cfg(feature = "python")]
/// Puts this process into `sandbox`: a read-only worker writes only in `scratch`,
/// any other only there and in `writable` (its workspace, the system's temp folder,
/// `[sandbox] writable`). Call it on the main thread before any other thread starts.
/// Where the kernel lacks a mechanism, a declaration that needs it fails when
/// `require` is set; the writes of a worker that declares nothing stay unconfined.
/// Returns whether its writes are confined.
pub(crate) fn enter(sandbox: Sandbox, scratch: &Path, writable: &[&Path], require: bool) -> Result<bool, String> {
    let mut places = vec![scratch];
    places.extend(DEVICES.iter().map(Path::new));
    if !sandbox.read_only {
        places.extend(writable);
    }
    let confined = match writes_only_in(&places) {
        Err(err) if sandbox.read_only && require => return Err(err),
        Err(_) => false,
        Ok(()) => true,
    };
    if sandbox.offline {
        match no_network_sockets() {
            Err(err) if require => return Err(err),
            Err(_) | Ok(()) => {}
        }
    }
    Ok(confined)
}

/// The devices a program writes to as if they were nowhere.
#[cfg(feature = "python")]
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/shm"];

#[cfg(feature = "python")]
/// Landlock: every write (creating, changing, removing, renaming a file anywhere) is
/// refused but beneath `writable`; reading is left alone.
fn writes_only_in(writable: &[&Path]) -> Result<(), String> {
    use landlock::{ABI, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules};
    let abi = ABI::V5;
    let lacking = |err: &dyn std::fmt::Display| format!("writes cannot be confined: Landlock: {err}");
    let status = Ruleset::default()
        .handle_access(AccessFs::from_write(abi))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(writable, AccessFs::from_write(abi))))
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|err| lacking(&err))?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(lacking(&"this kernel does not offer it")),
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
    }
}

#[cfg(feature = "python")]
/// seccomp: `socket(AF_INET | AF_INET6, …)` fails with `EACCES`, and so does
/// `io_uring_setup` (its rings could open sockets without the system call); Unix
/// sockets, lcp's own channel among them, keep working.
fn no_network_sockets() -> Result<(), String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let lacking = |err: &dyn std::fmt::Display| format!("open_world: false cannot be enforced: seccomp: {err}");
    let family = |family: i32| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64)
            .and_then(|condition| SeccompRule::new(vec![condition]))
    };
    let rules = [libc::AF_INET, libc::AF_INET6].into_iter().map(family).collect::<Result<Vec<_>, _>>();
    let rules = rules.map_err(|err| lacking(&err))?;
    let arch = std::env::consts::ARCH.try_into().map_err(|err| lacking(&err))?;
    let filter = SeccompFilter::new(
        [(libc::SYS_socket, rules), (libc::SYS_io_uring_setup, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|err| lacking(&err))?;
    let program: BpfProgram = filter.try_into().map_err(|err: seccompiler::BackendError| lacking(&err))?;
    seccompiler::apply_filter(&program).map_err(|err| lacking(&err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_is_what_the_tool_declares_and_nothing_else() {
        let declared = |read_only, open_world| Declared { read_only, open_world, ..Declared::default() };
        assert!(Sandbox::of(&declared(None, None)).is_open());
        assert!(Sandbox::of(&declared(Some(false), Some(true))).is_open());
        let both = Sandbox::of(&declared(Some(true), Some(false)));
        assert_eq!(both, Sandbox { read_only: true, offline: true });
        assert_eq!(both.enforced(), ["read_only", "open_world"]);
    }
}
