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

// Without the `python` feature no worker runs: only the listings' `offered` is built;
// the rest is built with it.

#[cfg(feature = "python")]
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::policy::{Declared, Enforcement};

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
    #[cfg(feature = "python")]
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

/// The declarations this machine's kernel can have workers keep (SPEC §18): those a
/// sandbox exists for, where the kernel has its mechanism. A host that runs its tools
/// in sandboxed workers gives this to its listings ([`crate::policy::Enforcement`]);
/// one that runs them in itself, or unconfined, gives none.
pub fn offered() -> Enforcement {
    let offered = kernel();
    Enforcement { read_only: offered.landlock, offline: offered.seccomp }
}

/// The declarations a runtime of `config` has the kernel keep (SPEC §18), for its
/// host's listings: what the kernel [`offered`] when tools run in sandboxed workers,
/// none when they run in the host's process or unconfined.
#[cfg(feature = "python")]
pub fn enforcement(config: &crate::host::config::runtime::RuntimeConfig) -> Enforcement {
    use crate::host::config::runtime::Isolation;
    match &config.isolation {
        Isolation::Workers(workers) if workers.sandboxed => offered(),
        Isolation::Workers(_) | Isolation::InProcess => Enforcement::default(),
    }
}

/// What this machine's kernel lacks of the sandbox's mechanisms, a sentence each
/// (empty on a kernel with Landlock and seccomp).
#[cfg(feature = "python")]
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
    if offered.landlock && !offered.scopes {
        gaps.push(
            "this kernel's Landlock has no scopes (ABI 6, Linux 6.12): workers can signal other processes of lcp's \
             user"
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
    /// Landlock's signal and abstract-socket scopes (ABI 6): what workers are told.
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    scopes: bool,
    seccomp: bool,
}

/// What the kernel offers, asked once: it is the same for the whole process.
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
        Offered { landlock: abi >= 1, scopes: abi >= 6, seccomp }
    })
}

/// Puts this process into `sandbox`: a read-only worker writes only in `scratch`,
/// any other only there and in `writable` (its workspace, the system's temp folder,
/// `[sandbox] writable`). Call it on the main thread before any other thread starts.
///
/// In this order: namespaces of its own where the kernel lets this process make them
/// (a mount namespace with a private `/dev/shm`, and for `open_world: false` an empty
/// network namespace; a user namespace first when lcp is not root), `no_new_privs`,
/// every capability dropped (bounding and ambient sets too), Landlock (writes, and
/// signals to processes outside the worker's own tree), then seccomp (a read-only
/// worker changes no file's metadata and makes no special file; an offline one opens
/// no socket but `AF_UNIX`). Where the kernel lacks a mechanism, a declaration that
/// needs it fails when `require` is set; the writes of a worker that declares nothing
/// stay unconfined. Returns whether its writes are confined.
#[cfg(feature = "python")]
pub(crate) fn enter(sandbox: Sandbox, scratch: &Path, writable: &[&Path], require: bool) -> Result<bool, String> {
    let own_shm = namespaces(sandbox.offline);
    let mut places = vec![scratch];
    places.extend(DEVICES.iter().map(Path::new));
    if !sandbox.read_only {
        places.extend(writable);
        if own_shm {
            places.push(Path::new(SHM));
        }
    }
    no_new_privileges()?;
    drop_capabilities()?;
    let confined = match writes_only_in(&places, sandbox.offline) {
        Err(err) if sandbox.read_only && require => return Err(err),
        Err(_) => false,
        Ok(()) => true,
    };
    match seccomp(sandbox, confined, &places) {
        Err(err) if require => Err(err),
        Err(_) | Ok(()) => Ok(confined),
    }
}

/// The devices a program writes to as if they were nowhere.
#[cfg(feature = "python")]
const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// Where POSIX shared memory lives: a worker's own, or none it may write.
#[cfg(feature = "python")]
const SHM: &str = "/dev/shm";

/// Makes this process's own mount namespace, with a private tmpfs on `/dev/shm` (its
/// pages counted as the worker's, gone with it), and, when `offline`, its own empty
/// network namespace. As root (with `CAP_SYS_ADMIN`) directly; otherwise inside a user
/// namespace of its own that maps only this process's user and group. Anything the
/// kernel refuses is left out: then `/dev/shm` is not writable, and the network is
/// closed by seccomp alone. Returns whether the worker has a `/dev/shm` of its own.
#[cfg(feature = "python")]
fn namespaces(offline: bool) -> bool {
    let flags = libc::CLONE_NEWNS | if offline { libc::CLONE_NEWNET } else { 0 };
    // SAFETY: unshare, getuid and getgid only change or read this process's own
    // namespaces and ids; the process has one thread (the caller's contract).
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut unshared = unsafe { libc::unshare(flags) } == 0;
    if !unshared && unsafe { libc::unshare(libc::CLONE_NEWUSER | flags) } == 0 {
        // Maps this process's ids onto themselves: it stays who it was, with no
        // capability outside (and, once they are dropped below, none inside).
        let mapped = std::fs::write("/proc/self/setgroups", "deny").is_ok()
            && std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).is_ok()
            && std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).is_ok();
        unshared = mapped;
    }
    unshared && private_shm()
}

/// In a new mount namespace: nothing mounted here reaches the rest of the system, and
/// `/dev/shm` is a tmpfs of this worker's, no larger than its address-space limit.
#[cfg(feature = "python")]
fn private_shm() -> bool {
    use std::ffi::CString;
    let (Ok(root), Ok(shm), Ok(tmpfs)) = (CString::new("/"), CString::new(SHM), CString::new("tmpfs")) else {
        return false;
    };
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit`.
    let size = if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0 && limit.rlim_cur != libc::RLIM_INFINITY
    {
        format!(",size={}", limit.rlim_cur)
    } else {
        String::new()
    };
    let Ok(options) = CString::new(format!("mode=1777{size}")) else { return false };
    // SAFETY: mount(2) with valid C strings; it changes only this process's own mount
    // namespace, made just before.
    unsafe {
        libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
            && libc::mount(
                tmpfs.as_ptr(),
                shm.as_ptr(),
                tmpfs.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                options.as_ptr().cast(),
            ) == 0
    }
}

/// `no_new_privs`: nothing the worker runs gains a privilege by `execve` (set-user-ID
/// programs, file capabilities), and Landlock and seccomp may be entered without one.
#[cfg(feature = "python")]
fn no_new_privileges() -> Result<(), String> {
    // SAFETY: PR_SET_NO_NEW_PRIVS changes only this process's own flag.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("cannot set no_new_privs: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Drops every capability: the bounding set (nothing a program it runs could regain),
/// the ambient set, then the effective, permitted and inheritable ones. A worker of
/// root's is then root without any of root's powers: no `chown` of another's file, no
/// `mount`, `sethostname`, raw sockets or network changes, no reading past permissions.
#[cfg(feature = "python")]
fn drop_capabilities() -> Result<(), String> {
    // SAFETY: the prctl and capset calls below change only this process's own
    // capability sets; capset is given one header and two zeroed data structs, as
    // version 3 of its interface takes.
    unsafe {
        let mut capability = 0;
        // PR_CAPBSET_DROP needs CAP_SETPCAP: a process without it has an empty
        // effective set already, and no_new_privs keeps a program from gaining one.
        while libc::prctl(libc::PR_CAPBSET_READ, capability, 0, 0, 0) >= 0 {
            libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0);
            capability += 1;
        }
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        #[repr(C)]
        struct Header {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const VERSION_3: u32 = 0x2008_0522;
        let mut header = Header { version: VERSION_3, pid: 0 };
        let data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(format!("cannot drop the worker's capabilities: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Landlock: every write (creating, changing, removing, renaming a file anywhere) is
/// refused but beneath `writable`; reading is left alone. Signals (and, when
/// `offline`, connections to abstract Unix sockets) reach only the worker's own tree
/// (ABI 6; an older kernel confines the writes alone).
#[cfg(feature = "python")]
fn writes_only_in(writable: &[&Path], offline: bool) -> Result<(), String> {
    use landlock::{
        ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
        path_beneath_rules,
    };
    let abi = ABI::V5;
    let lacking = |err: &dyn std::fmt::Display| format!("writes cannot be confined: Landlock: {err}");
    let scopes = if offline { Scope::Signal | Scope::AbstractUnixSocket } else { Scope::Signal.into() };
    let status = Ruleset::default()
        .handle_access(AccessFs::from_write(abi))
        .and_then(|ruleset| ruleset.set_compatibility(CompatLevel::BestEffort).scope(scopes))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(writable, AccessFs::from_write(abi))))
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|err| lacking(&err))?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(lacking(&"this kernel does not offer it")),
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
    }
}

/// Seccomp (SPEC §18): a read-only worker makes no metadata change and no special
/// file; an offline one opens no socket of a family but `AF_UNIX`; both lose
/// `io_uring` (its rings would do either without a system call). Where the kernel
/// lets a listener hear them (`SECCOMP_RET_USER_NOTIF`), these calls, and every write
/// of a worker whose writes Landlock confines, go to the worker's listener thread,
/// which refuses the first and records the writes Landlock will refuse
/// (`refusals.rs`), so a call's result says what was refused; else they fail with
/// `EPERM` / `EACCES`, unexplained.
#[cfg(feature = "python")]
fn seccomp(sandbox: Sandbox, confined: bool, writable: &[&Path]) -> Result<(), String> {
    use seccompiler::SeccompAction;
    let refused = refused_rules(sandbox, confined)?;
    if refused.is_empty() {
        return Ok(());
    }
    // The listener's program: seccompiler has no USER_NOTIF action, so the program is
    // made with a marked TRACE and the mark is turned into USER_NOTIF.
    const MARK: u32 = 0x1c9;
    let listened = program(refused.clone(), SeccompAction::Trace(MARK))?;
    let marked = libc::SECCOMP_RET_TRACE | MARK;
    let listened: Vec<libc::sock_filter> = listened
        .iter()
        .map(|op| {
            let is_return = op.code == (libc::BPF_RET | libc::BPF_K) as u16;
            let k = if is_return && op.k == marked { libc::SECCOMP_RET_USER_NOTIF } else { op.k };
            libc::sock_filter { code: op.code, jt: op.jt, jf: op.jf, k }
        })
        .collect();
    if let Ok(fd) = super::refusals::install(&listened) {
        let writable = writable.iter().filter_map(|place| place.canonicalize().ok()).collect();
        super::refusals::Listener { fd, sandbox, writable }.start();
        return Ok(());
    }
    // Without listeners: the refusals alone, each with its error.
    let parts = [
        (Sandbox { read_only: sandbox.read_only, offline: false }, libc::EPERM),
        (Sandbox { read_only: false, offline: sandbox.offline }, libc::EACCES),
    ];
    for (part, errno) in parts {
        let rules = refused_rules(part, false)?;
        if !rules.is_empty() {
            let program = program(rules, SeccompAction::Errno(errno as u32))?;
            seccompiler::apply_filter(&program).map_err(|err| lacking(&err))?;
        }
    }
    Ok(())
}

#[cfg(feature = "python")]
fn lacking(err: &dyn std::fmt::Display) -> String {
    format!("the sandbox cannot be entered: seccomp: {err}")
}

#[cfg(feature = "python")]
type Rules = Vec<(libc::c_long, Vec<seccompiler::SeccompRule>)>;

/// The calls `sandbox` refuses, and, when `confined` (Landlock confines its writes),
/// the calls that write, to be recorded.
#[cfg(feature = "python")]
fn refused_rules(sandbox: Sandbox, confined: bool) -> Result<Rules, String> {
    use super::refusals::{METADATA, WRITES, WRITING_FLAGS, XATTRAT};
    use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(|err| lacking(&err));
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|err| lacking(&err))
    };
    let mut rules: std::collections::BTreeMap<libc::c_long, Vec<SeccompRule>> = Default::default();
    if sandbox.read_only || sandbox.offline {
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
    }
    if sandbox.read_only {
        for (call, _, _) in METADATA.into_iter().chain(XATTRAT) {
            rules.insert(call, Vec::new());
        }
    }
    if sandbox.offline {
        for call in [libc::SYS_socket, libc::SYS_socketpair] {
            let not_unix = condition(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
            rules.insert(call, vec![rule(vec![not_unix])?]);
        }
    }
    if confined {
        for (call, _, flags) in WRITES {
            if rules.contains_key(&call) {
                continue;
            }
            let when = match flags {
                // Any one flag that writes: one rule each.
                Some(arg) => WRITING_FLAGS
                    .iter()
                    .map(|&flag| rule(vec![condition(arg, SeccompCmpOp::MaskedEq(flag), flag)?]))
                    .collect::<Result<Vec<_>, _>>()?,
                None => Vec::new(),
            };
            rules.insert(call, when);
        }
    }
    Ok(rules.into_iter().collect())
}

/// A program that takes `action` on `rules` and allows everything else.
#[cfg(feature = "python")]
fn program(rules: Rules, action: seccompiler::SeccompAction) -> Result<seccompiler::BpfProgram, String> {
    let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().map_err(|err| lacking(&err))?;
    seccompiler::SeccompFilter::new(rules.into_iter().collect(), seccompiler::SeccompAction::Allow, action, arch)
        .map_err(|err| lacking(&err))
        .and_then(|filter| filter.try_into().map_err(|err: seccompiler::BackendError| lacking(&err)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_is_what_the_tool_declares_and_nothing_else() {
        let declared = |read_only, open_world| Declared { read_only, open_world, ..Declared::default() };
        let open = Sandbox { read_only: false, offline: false };
        assert_eq!(Sandbox::of(&declared(None, None)), open);
        assert_eq!(Sandbox::of(&declared(Some(false), Some(true))), open);
        let both = Sandbox::of(&declared(Some(true), Some(false)));
        assert_eq!(both, Sandbox { read_only: true, offline: true });
        assert_eq!(both.enforced(), ["read_only", "open_world"]);
    }
}
