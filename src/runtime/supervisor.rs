//! Worker processes, from lcp's side (SPEC §8): starting them, handing each call to
//! one, enforcing time limits and cancellation, and turning a worker's death into
//! one failed call that names the cause.
//!
//! A call takes a worker (an idle one first, so CPU-bound calls spread over the
//! cores; a new one while there are fewer than `workers`; else the least busy one
//! already in the call's workspace; else it waits), takes one of that worker's idle
//! connections (or opens one), writes the job and reads frames until the result.
//! What the tool asks of the host (SPEC §9: a confirmation, the user, the model)
//! arrives as an [`FromWorker::Ask`] and is answered on the calling thread with the
//! call's [`Callbacks`]; its progress and log records arrive as one-way
//! [`FromWorker::Notify`] frames. What the tool prints arrives as it prints it, so it
//! survives the worker.
//!
//! Each worker has a watcher thread blocked on its control socket: when the worker
//! dies, the socket ends, and the watcher reaps the process (never a zombie), takes
//! it out of the pool and starts a replacement if no worker is left. With a standby
//! ([`WorkerSettings::standby`]) the pool also keeps one idle worker started ahead of
//! need, so the call after a crash runs at once in the worker that stood by.
//!
//! When a call runs out of time or is cancelled, the worker is asked to stop it (an
//! exception in the tool's thread); if the call has not ended [`GRACE`] later, its
//! worker is killed with its process group.
//!
//! Must never: block a call on another worker's call, or leave a process behind
//! when the pool is dropped.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::channel::{self, Connection};
use super::engine::{self, Job, WirePath};
use super::host_objects::{Callbacks, HostAnswer, HostRequest, Notice};
use super::memory::MemoryCgroup;
use super::sandbox::Sandbox;
use super::{Cancel, Carried, Outcome, ToolResult, WorkerSettings};
use crate::sync;

/// How long a call that was told to stop gets before its worker is ended.
const GRACE: Duration = Duration::from_millis(500);
/// How often a call that can be cancelled looks at its flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// The descriptor number a worker finds its control socket at when it starts.
pub(crate) const CONTROL_FD: i32 = 3;
/// A call that no worker could take (each one died before it got the job).
const NO_WORKER: &str = "no worker process could take the call; see lcp's standard error";
/// The argument that makes the program a worker.
pub(crate) const WORKER_ARGUMENT: &str = "__worker";

/// What lcp sends on a worker's control socket.
#[derive(Serialize, Deserialize)]
pub(crate) enum Control {
    /// The first message: how to set up the engine.
    Hello(engine::Settings),
    /// A new call connection: the descriptor comes with the message.
    Open,
    /// Stop the call with this id.
    Stop(u64),
    /// Call `set_confirm_handler` again on the loaded libraries.
    Rebind,
}

/// What a worker sends on its control socket.
#[derive(Serialize, Deserialize)]
pub(crate) enum Report {
    /// The answer to [`Control::Hello`]: the engine runs.
    Ready,
    /// The answer to [`Control::Hello`]: the engine could not start.
    Failed(String),
    /// The call with this id is ending the process (a fatal signal in its thread, or
    /// the tool's own `os._exit`): the worker's other calls were not at fault.
    Crashing(u64),
}

/// What lcp sends on a call connection.
#[derive(Serialize, Deserialize)]
pub(crate) enum ToWorker {
    /// A job, and the files whose modules to drop before it: every change not yet
    /// known to be applied, each with its sequence number (the worker applies each
    /// number once, whichever of its calls brings it first).
    Call(Job, Vec<(u64, WirePath)>),
    /// The answer to the call's last [`FromWorker::Ask`].
    Answer(HostAnswer),
}

/// [`ToWorker::Call`] as it is sent: the job borrowed, the same JSON.
#[derive(Serialize)]
enum Sending<'a> {
    Call(&'a Job, &'a [(u64, WirePath)]),
}

/// Where a tool printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Stream {
    /// Standard output (`sys.stdout`, fd 1).
    Out,
    /// Standard error.
    Err,
}

impl Stream {
    /// The stream `host.py` names `"out"` or `"err"`.
    pub(crate) fn named(name: &str) -> Stream {
        if name == "out" { Stream::Out } else { Stream::Err }
    }
}

/// What a worker sends on a call connection.
#[derive(Serialize, Deserialize)]
pub(crate) enum FromWorker {
    /// Text the tool printed on one of its streams, as it printed it.
    Printed(Stream, String),
    /// The tool asks the host and waits for a [`ToWorker::Answer`] (one at a time).
    Ask(HostRequest),
    /// The tool tells the host (progress, a log record) and goes on.
    Notify(Notice),
    /// The call's result, with how it ended.
    Done(Carried),
}

/// The worker processes of every pool of this process, by pid: the children a
/// subreaper lcp keeps when it ends what it adopted. Process-wide, as being a
/// subreaper is.
static WORKER_PIDS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

/// Where lcp adopts orphans (`lcp serve`, `lcp call`), ends those a dead worker's
/// tools left (SPEC §17: none outlives its worker's lcp).
fn end_orphans() {
    if super::process_tree::is_subreaper() {
        super::process_tree::end_adopted(|pid| sync::lock(&WORKER_PIDS).contains(&pid));
    }
}

/// A pipe for a worker's own output: lcp's end first (close-on-exec), the worker's second.
fn log_pipe() -> std::io::Result<(std::fs::File, OwnedFd)> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `ends`, owned by nothing else.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just made above.
    unsafe { Ok((std::fs::File::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1]))) }
}

/// Copies what worker `pid` prints to lcp's stderr, a line at a time, each marked
/// `lcp: worker PID: ` with its control characters escaped, until the worker and
/// everything it started have closed the pipe.
fn relay_log(log: std::fs::File, pid: u32) {
    let relay = move || {
        use std::io::{BufRead, Write};
        let mut lines = std::io::BufReader::new(log);
        let mut line = Vec::new();
        while lines.read_until(b'\n', &mut line).is_ok_and(|read| read > 0) {
            let text = String::from_utf8_lossy(&line);
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let _ = writeln!(std::io::stderr().lock(), "lcp: worker {pid}: {}", crate::shown::line(text));
            line.clear();
        }
    };
    let _ = std::thread::Builder::new().name(format!("lcp-worker-log-{pid}")).spawn(relay);
}

/// A confined worker's own folder in the system's temp folder: made here, private
/// (mode 0700), under a name nobody could have made before (`create_dir` refuses one
/// that exists, a link included).
fn scratch_folder() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut random = [0u8; 12];
    // SAFETY: getrandom writes at most `random.len()` bytes into it.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if got != random.len() as isize {
        return Err(std::io::Error::other("the system gave no randomness for the scratch folder's name"));
    }
    let name: String = random.iter().map(|byte| format!("{byte:02x}")).collect();
    let path = std::env::temp_dir().join(format!("lcp-scratch-{name}"));
    std::fs::DirBuilder::new().mode(0o700).create(&path)?;
    Ok(path)
}

/// The worker pools of one runtime, one for each sandbox and folder it may write in
/// (SPEC §18): a tool's call runs only in a worker of its own sandbox that may write
/// in its workspace, and workers are never shared across sandboxes. A pool is made on
/// the first call that needs it.
pub(crate) struct Pools {
    settings: WorkerSettings,
    engine: engine::Settings,
    /// The system's temp folder, and the working directory a call without a
    /// workspace runs in: read once, not on every call.
    temp: PathBuf,
    here: PathBuf,
    /// Whether they are closed, and each pool by its sandbox and the folder its
    /// workers write in.
    pools: Mutex<(bool, PoolsByPlace)>,
}

type PoolsByPlace = std::collections::HashMap<(Sandbox, PathBuf), Arc<Pool>>;

impl Pools {
    pub(crate) fn new(settings: WorkerSettings, engine: engine::Settings) -> Result<Pools, String> {
        if !settings.program.is_file() {
            return Err(format!("{}: the worker program does not exist", settings.program.display()));
        }
        let temp = std::env::temp_dir();
        let here = std::env::current_dir().unwrap_or_else(|_| temp.clone());
        Ok(Pools { settings, engine, temp, here, pools: Mutex::new((false, Default::default())) })
    }

    /// The pool of `sandbox` whose workers may write in `workspace` (the process's
    /// working directory when `None`; a workspace in the system's temp folder is
    /// writable for every worker, so all of them share one pool), made now if new.
    fn pool(&self, sandbox: Sandbox, workspace: Option<&Path>) -> Result<Arc<Pool>, String> {
        let place = match workspace {
            Some(dir) if dir.starts_with(&self.temp) => &self.temp,
            Some(dir) => dir,
            None => &self.here,
        };
        let mut pools = sync::lock(&self.pools);
        if pools.0 {
            return Err("the runtime is shutting down".to_string());
        }
        let key = (sandbox, place.to_path_buf());
        if let Some(pool) = pools.1.get(&key) {
            return Ok(Arc::clone(pool));
        }
        let mut writable = vec![WirePath(key.1.clone()), WirePath(self.temp.clone())];
        writable.extend(self.engine.writable.iter().cloned());
        let engine = engine::Settings { sandbox, writable, ..self.engine.clone() };
        let pool = Arc::new(Pool::new(self.settings.clone(), engine)?);
        pools.1.insert(key, Arc::clone(&pool));
        Ok(pool)
    }

    fn each(&self) -> Vec<Arc<Pool>> {
        sync::lock(&self.pools).1.values().cloned().collect()
    }

    /// Starts one worker for tools that declare nothing, writing in `workspace`, in
    /// the background (see [`Pool::warm_up`]).
    pub(crate) fn warm_up(&self, workspace: Option<&Path>) {
        if let Ok(pool) = self.pool(Sandbox::default(), workspace) {
            pool.warm_up();
        }
    }

    /// Runs a job in a worker of its sandbox (see [`Pool::run`]).
    pub(crate) fn run(
        &self,
        job: &Job,
        callbacks: Callbacks,
        timeout: Option<Duration>,
        cancel: Option<&Cancel>,
    ) -> ToolResult {
        match self.pool(job.sandbox, job.workspace.as_deref()) {
            Ok(pool) => pool.run(job, callbacks, timeout, cancel),
            Err(err) => ToolResult::failure(err),
        }
    }

    /// See [`Pool::forget`].
    pub(crate) fn forget(&self, files: Vec<WirePath>) {
        for pool in self.each() {
            pool.forget(files.clone());
        }
    }

    /// See [`Pool::rebind`].
    pub(crate) fn rebind(&self) {
        for pool in self.each() {
            pool.rebind();
        }
    }

    /// Ends every worker of every pool and waits for each; later calls fail.
    pub(crate) fn close(&self) {
        let pools = {
            let mut pools = sync::lock(&self.pools);
            pools.0 = true;
            pools.1.values().cloned().collect::<Vec<_>>()
        };
        for pool in pools {
            pool.close();
        }
    }
}

/// The worker processes of one runtime.
pub(crate) struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    settings: WorkerSettings,
    engine: engine::Settings,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    slots: Vec<Slot>,
    /// Workers being started.
    starting: usize,
    /// Of those, the ones started in the background, to join the pool idle.
    background: usize,
    /// Calls waiting for a worker.
    waiting: usize,
    /// The processes of the workers being started, before they say they are ready:
    /// closing the pool ends them too, so none outlives it while Python starts.
    launching: Vec<Arc<Worker>>,
    closed: bool,
}

struct Slot {
    worker: Arc<Worker>,
    calls: usize,
    /// The workspace of the calls running in it.
    workspace: Option<PathBuf>,
    /// A call in it is being stopped, and the worker may be ended: no new call goes there.
    draining: bool,
}

struct Worker {
    pid: libc::pid_t,
    control: OwnedFd,
    /// A confined worker's scratch folder, removed once it ended.
    scratch: Option<PathBuf>,
    /// Its memory cgroup, removed once it ended.
    cgroup: Mutex<Option<MemoryCgroup>>,
    /// Files whose modules it must drop before its next calls, by sequence number:
    /// sent with every call until a call that carried them has come back.
    stale: Mutex<Vec<(u64, WirePath)>>,
    idle: Mutex<Vec<Connection>>,
    /// Why lcp ended it, when it did.
    ended_by_lcp: Mutex<Option<String>>,
    /// How it ended, once reaped.
    end: Mutex<Option<End>>,
    /// The calls it runs now.
    running: Mutex<Vec<Running>>,
    /// Once it died and its watcher read all it said: the call that said it crashed
    /// it, and the calls that ran then.
    death: Mutex<Option<Death>>,
    dead: Condvar,
}

/// A call running in a worker: a second handle of its connection, to end the
/// connection when the worker dies (a process the tool forked may hold the worker's
/// end open for long after).
struct Running {
    id: u64,
    function: String,
    stream: Option<UnixStream>,
}

/// What a worker's watcher learned of its death.
#[derive(Clone, Default)]
struct Death {
    /// The call that said it crashed the process.
    crasher: Option<u64>,
    /// The calls running when it died: id and function.
    calls: Vec<(u64, String)>,
}

/// How a call in a worker went: its result, or a failure that may be run again in
/// another worker (the job never reached this one, or another call's crash ended it).
enum Attempt {
    Done(ToolResult),
    Again(ToolResult),
}

/// How a worker process ended.
#[derive(Debug, Clone, Copy)]
enum End {
    Exited(i32),
    Signaled(i32),
    /// `waitpid` failed: someone else reaped it.
    Unknown,
}

impl Pool {
    pub(crate) fn new(mut settings: WorkerSettings, engine: engine::Settings) -> Result<Pool, String> {
        settings.workers = settings.workers.max(1);
        if !settings.program.is_file() {
            return Err(format!("{}: the worker program does not exist", settings.program.display()));
        }
        let inner = Inner { settings, engine, state: Mutex::default(), changed: Condvar::new() };
        Ok(Pool { inner: Arc::new(inner) })
    }

    /// Starts one worker in the background, unless one is running or starting.
    pub(crate) fn warm_up(&self) {
        self.inner.warm_up();
    }

    /// Runs a job in a worker; `timeout` and `cancel` stop it, ending the worker if
    /// it does not stop by itself.
    pub(crate) fn run(
        &self,
        job: &Job,
        callbacks: Callbacks,
        timeout: Option<Duration>,
        cancel: Option<&Cancel>,
    ) -> ToolResult {
        // A worker that died between calls cannot take the job, and one that another
        // call crashed ends it: the next worker runs it.
        let mut failure = ToolResult::failure(NO_WORKER);
        for _ in 0..3 {
            let worker = match self.inner.take(job.workspace.as_deref()) {
                Ok(worker) => worker,
                Err(err) => return ToolResult::failure(err),
            };
            self.inner.keep_standby();
            let attempt = self.inner.run_in(&worker, job, &callbacks, timeout, cancel);
            self.inner.give_back(&worker);
            match attempt {
                Attempt::Done(result) => return result,
                Attempt::Again(result) => {
                    self.inner.retire(&worker);
                    failure = result;
                }
            }
        }
        failure
    }

    /// Every worker drops the modules of these files, before its next call.
    pub(crate) fn forget(&self, files: Vec<WirePath>) {
        // Process-wide: a worker only compares the numbers it was given, so any
        // increasing count serves every pool.
        static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let sequence = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        for slot in &self.inner.lock().slots {
            sync::lock(&slot.worker.stale).extend(files.iter().map(|file| (sequence, file.clone())));
        }
    }

    /// Every worker calls `set_confirm_handler` again on its loaded libraries.
    pub(crate) fn rebind(&self) {
        self.inner.broadcast(&Control::Rebind);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.close();
    }
}

impl Pool {
    /// Ends every worker and waits for each (no zombie); later calls fail.
    pub(crate) fn close(&self) {
        let (slots, launching) = {
            let mut state = self.inner.lock();
            state.closed = true;
            (std::mem::take(&mut state.slots), std::mem::take(&mut state.launching))
        };
        let workers = slots.into_iter().map(|slot| slot.worker).chain(launching);
        for worker in workers {
            worker.kill("the runtime was dropped");
            worker.reap();
        }
        // A worker between its spawn and its place in the pool is ended by the thread
        // starting it, which now sees the pool closed: wait for those threads, or the
        // process may exit before they do and leave the worker behind.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut state = self.inner.lock();
        while state.starting > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = sync::wait_timeout(&self.inner.changed, state, left);
        }
        drop(state);
        end_orphans();
    }
}

impl Inner {
    /// Starts one worker in the background, unless one is running or starting.
    fn warm_up(self: &Arc<Self>) {
        self.start_idle_if(|state| state.slots.is_empty() && state.starting == 0);
    }

    /// With a standby, starts one worker in the background when none is idle or
    /// starting and there is room for one more.
    fn keep_standby(self: &Arc<Self>) {
        if self.settings.standby {
            self.start_idle_if(|state| {
                let idle = state.slots.iter().any(|slot| slot.calls == 0 && !slot.draining);
                let room = state.slots.len() + state.starting < self.settings.workers;
                !idle && state.starting == 0 && room
            });
        }
    }

    /// Starts a worker on a thread of its own, to join the pool idle, when the pool
    /// is open and `due` says one is.
    fn start_idle_if(self: &Arc<Self>, due: impl FnOnce(&State) -> bool) {
        {
            let mut state = self.lock();
            if state.closed || !due(&state) {
                return;
            }
            state.starting += 1;
            state.background += 1;
        }
        let inner = Arc::clone(self);
        let started = std::thread::Builder::new().name("lcp-worker-start".into()).spawn(move || {
            let worker = inner.start();
            let mut state = inner.lock();
            state.starting -= 1;
            state.background -= 1;
            if let Ok(worker) = worker {
                if state.closed {
                    worker.kill("the runtime is shutting down");
                    worker.reap();
                } else {
                    state.slots.push(Slot { worker, calls: 0, workspace: None, draining: false });
                }
            }
            inner.changed.notify_all();
        });
        if started.is_err() {
            let mut state = self.lock();
            state.starting -= 1;
            state.background -= 1;
            self.changed.notify_all();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        sync::lock(&self.state)
    }

    /// A worker for a call in `workspace`, counted as running it.
    fn take(self: &Arc<Self>, workspace: Option<&Path>) -> Result<Arc<Worker>, String> {
        let mut state = self.lock();
        loop {
            if state.closed {
                return Err("the runtime is shutting down".to_string());
            }
            let room = state.slots.len() + state.starting < self.settings.workers;
            let idle = state.slots.iter_mut().find(|slot| slot.calls == 0 && !slot.draining);
            if let Some(slot) = idle {
                slot.calls = 1;
                slot.workspace = workspace.map(Path::to_path_buf);
                return Ok(Arc::clone(&slot.worker));
            }
            if state.background > state.waiting {
                // A worker already starting in the background is ready sooner than a
                // new one: the call after a crash takes the standby.
                state.waiting += 1;
                state = sync::wait(&self.changed, state);
                state.waiting -= 1;
                continue;
            }
            if room {
                state.starting += 1;
                drop(state);
                let started = self.start();
                state = self.lock();
                state.starting -= 1;
                self.changed.notify_all();
                let worker = started?;
                if state.closed {
                    worker.kill("the runtime is shutting down");
                    worker.reap();
                    return Err("the runtime is shutting down".to_string());
                }
                let slot = Slot {
                    worker: Arc::clone(&worker),
                    calls: 1,
                    workspace: workspace.map(Path::to_path_buf),
                    draining: false,
                };
                state.slots.push(slot);
                return Ok(worker);
            }
            let same = state
                .slots
                .iter_mut()
                .filter(|slot| slot.workspace.as_deref() == workspace && !slot.draining)
                .min_by_key(|slot| slot.calls);
            if let Some(slot) = same {
                slot.calls += 1;
                return Ok(Arc::clone(&slot.worker));
            }
            state.waiting += 1;
            state = sync::wait(&self.changed, state);
            state.waiting -= 1;
        }
    }

    /// Marks a worker as stopping a call (no new calls), or as well again.
    fn set_draining(&self, worker: &Worker, draining: bool) {
        let mut state = self.lock();
        if let Some(slot) = state.slots.iter_mut().find(|slot| std::ptr::eq(Arc::as_ptr(&slot.worker), worker)) {
            slot.draining = draining;
        }
        if !draining && state.waiting > 0 {
            self.changed.notify_all();
        }
    }

    /// Takes a dead (or dying) worker out of the pool at once.
    fn retire(&self, worker: &Worker) {
        let mut state = self.lock();
        state.slots.retain(|slot| !std::ptr::eq(Arc::as_ptr(&slot.worker), worker));
        self.changed.notify_all();
    }

    fn give_back(&self, worker: &Arc<Worker>) {
        let mut state = self.lock();
        if let Some(slot) = state.slots.iter_mut().find(|slot| Arc::ptr_eq(&slot.worker, worker)) {
            slot.calls -= 1;
        }
        if state.waiting > 0 {
            self.changed.notify_all();
        }
    }

    fn broadcast(&self, message: &Control) {
        let workers: Vec<Arc<Worker>> = self.lock().slots.iter().map(|slot| Arc::clone(&slot.worker)).collect();
        for worker in workers {
            // A worker that cannot hear it is dying; its replacement starts clean.
            let _ = channel::send_packet(&worker.control, message, None);
        }
    }

    /// Starts a worker process and waits until its interpreter is ready.
    fn start(self: &Arc<Self>) -> Result<Arc<Worker>, String> {
        let failed = |err: &dyn std::fmt::Display| format!("cannot start a worker process: {err}");
        let (ours, theirs) = channel::control_pair().map_err(|err| failed(&err))?;
        // What the worker itself prints (fds 1 and 2 outside a call's capture) reaches
        // lcp's log through a pipe, each line marked as the worker's: never lcp's own
        // stderr, which a tool could seek in, truncate or forge lines in.
        let (log, printed) = log_pipe().map_err(|err| failed(&err))?;
        let printed_too = printed.try_clone().map_err(|err| failed(&err))?;
        let mut command = Command::new(&self.settings.program);
        command
            .args(&self.settings.arguments)
            .arg(WORKER_ARGUMENT)
            .stdin(Stdio::null())
            .stdout(Stdio::from(printed))
            .stderr(Stdio::from(printed_too));
        let mut hello = self.engine.clone();
        let scratch =
            if self.engine.sandbox.is_open() { None } else { Some(scratch_folder().map_err(|err| failed(&err))?) };
        if let Some(scratch) = &scratch {
            // Where `tempfile` and the like write: the one place a read-only tool may.
            command.env("TMPDIR", scratch);
            hello.scratch = Some(WirePath(scratch.clone()));
        }
        let channel_fd = theirs.as_raw_fd();
        let memory = self.settings.memory_limit_mib.map(|mib| mib.saturating_mul(1024 * 1024));
        // A memory cgroup counts every page the worker and its children map; without
        // one, the worker's whole address space is what is limited, and lcp's
        // allocator in it reserves little of it ahead.
        let cgroup = memory.and_then(MemoryCgroup::make);
        let limited = if cgroup.is_some() { libc::RLIMIT_DATA } else { libc::RLIMIT_AS };
        if memory.is_some() && cgroup.is_none() {
            command.env("MIMALLOC_ARENA_RESERVE", "4MiB");
        }
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (dup2, fcntl, setpgid, setrlimit).
        unsafe {
            command.pre_exec(move || {
                if channel_fd == CONTROL_FD {
                    if libc::fcntl(CONTROL_FD, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(channel_fd, CONTROL_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // No descriptor of lcp's but the three standard ones and its channel:
                // every other one closes at exec (the way std reports a failed exec
                // stays open until then).
                const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
                let first = CONTROL_FD as libc::c_uint + 1;
                if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC) != 0 {
                    for fd in first as libc::c_int..65536 {
                        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    }
                }
                // Its own process group: ending a worker ends what its tools started.
                libc::setpgid(0, 0);
                if let Some(bytes) = memory {
                    // With a cgroup, the heap's limit makes a `MemoryError` of what
                    // would otherwise be the cgroup's kill.
                    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                    libc::setrlimit(limited, &limit);
                }
                Ok(())
            });
        }
        let child = {
            // Counted as a worker from the moment it exists: never taken for an orphan.
            let mut pids = sync::lock(&WORKER_PIDS);
            let child = command.spawn().map_err(|err| {
                if let Some(scratch) = &scratch {
                    let _ = std::fs::remove_dir_all(scratch);
                }
                failed(&format!("{}: {err}", self.settings.program.display()))
            })?;
            pids.push(child.id() as libc::pid_t);
            child
        };
        drop(theirs);
        drop(command);
        relay_log(log, child.id());
        // In its cgroup before it hears its settings, so before its Python starts.
        let cgroup = cgroup.filter(|cgroup| cgroup.adopt(child.id()).is_ok());
        let worker = Arc::new(Worker {
            pid: child.id() as libc::pid_t,
            control: ours,
            scratch,
            cgroup: Mutex::new(cgroup),
            stale: Mutex::new(Vec::new()),
            idle: Mutex::new(Vec::new()),
            ended_by_lcp: Mutex::new(None),
            end: Mutex::new(None),
            running: Mutex::new(Vec::new()),
            death: Mutex::new(None),
            dead: Condvar::new(),
        });
        // `child` is reaped by `Worker::reap`, never by `Child`.
        drop(child);
        {
            let mut state = self.lock();
            if state.closed {
                drop(state);
                worker.kill("the runtime is shutting down");
                worker.reap();
                return Err("the runtime is shutting down".to_string());
            }
            state.launching.push(Arc::clone(&worker));
        }
        let started = channel::send_packet(&worker.control, &Control::Hello(hello), None)
            .map_err(|err| err.to_string())
            .and_then(|()| {
                channel::recv_packet::<Report>(&worker.control, &mut Vec::new()).map_err(|err| err.to_string())
            });
        self.lock().launching.retain(|launching| !Arc::ptr_eq(launching, &worker));
        match started {
            Ok(Some((Report::Ready, _))) => {}
            Ok(Some((Report::Crashing(_), _))) => {
                worker.kill("it could not start");
                worker.reap();
                return Err(failed(&"it crashed while starting"));
            }
            Ok(Some((Report::Failed(err), _))) => {
                worker.kill("it could not start");
                worker.reap();
                return Err(failed(&err));
            }
            Ok(None) | Err(_) => {
                worker.kill("it could not start");
                let end = worker.reap();
                return Err(failed(&format!("it {}", end.describe())));
            }
        }
        let watched = Arc::clone(&worker);
        let pool = Arc::downgrade(self);
        let watcher = std::thread::Builder::new().name(format!("lcp-worker-{}", worker.pid)).spawn(move || {
            watch(&watched, &pool);
        });
        if let Err(err) = watcher {
            worker.kill("it could not be watched");
            worker.reap();
            return Err(failed(&err));
        }
        Ok(worker)
    }

    fn run_in(
        &self,
        worker: &Worker,
        job: &Job,
        callbacks: &Callbacks,
        timeout: Option<Duration>,
        cancel: Option<&Cancel>,
    ) -> Attempt {
        let mut journal = Journal::default();
        let sent = worker.connection().and_then(|mut connection| {
            let stale = sync::lock(&worker.stale).clone();
            let stream = connection.stream().try_clone().ok();
            sync::lock(&worker.running).push(Running { id: job.id, function: job.function.clone(), stream });
            let carried = stale.iter().map(|(n, _)| *n).max();
            connection.send(&Sending::Call(job, &stale)).ok().map(|()| (connection, carried))
        });
        let attempt = match sent {
            Some((connection, carried)) => {
                let attempt = self.follow(worker, connection, &mut journal, job, callbacks, timeout, cancel);
                // The worker applied what this call carried before running it.
                if let (Attempt::Done(_), Some(carried)) = (&attempt, carried) {
                    sync::lock(&worker.stale).retain(|(n, _)| *n > carried);
                }
                attempt
            }
            None => {
                // The job never reached the worker: it is dead, and another one runs it.
                worker.kill("it could not take a call");
                worker.reap();
                Attempt::Again(ToolResult::failure(NO_WORKER))
            }
        };
        sync::lock(&worker.running).retain(|running| running.id != job.id);
        attempt
    }

    /// Reads a running call's frames until its result, stopping it when it is due.
    #[allow(clippy::too_many_arguments)]
    fn follow(
        &self,
        worker: &Worker,
        mut connection: Connection,
        journal: &mut Journal,
        job: &Job,
        callbacks: &Callbacks,
        timeout: Option<Duration>,
        cancel: Option<&Cancel>,
    ) -> Attempt {
        let deadline = timeout.map(|limit| Instant::now() + limit);
        let mut stopping: Option<(Instant, Stopped)> = None;
        loop {
            let wait = match (&stopping, cancel) {
                (Some((until, _)), _) => Some(*until),
                (None, Some(_)) => Some(channel::slice_of(deadline, CANCEL_POLL)),
                (None, None) => deadline,
            };
            match connection.recv::<FromWorker>(wait) {
                Ok(Some(FromWorker::Done(result))) => {
                    sync::lock(&worker.idle).push(connection);
                    if stopping.is_some() {
                        self.set_draining(worker, false);
                    }
                    return Attempt::Done(self.finished(result.into(), job, stopping.map(|(_, why)| why)));
                }
                Ok(Some(FromWorker::Printed(stream, text))) => journal.add(stream, &text),
                Ok(Some(FromWorker::Ask(request))) => {
                    // A worker that cannot hear the answer has died: the next read says so.
                    let _ = connection.send(&ToWorker::Answer(callbacks.answer(&request)));
                }
                Ok(Some(FromWorker::Notify(notice))) => {
                    callbacks.notify(&notice);
                }
                Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
                    let now = Instant::now();
                    match &stopping {
                        Some((until, why)) if now >= *until => {
                            worker.kill(&why.ended(&job.function));
                            return self.died(worker, job, journal, Some(*why));
                        }
                        Some(_) => {}
                        None => {
                            let why = if cancel.is_some_and(Cancel::is_cancelled) {
                                Some(Stopped::Cancelled)
                            } else if deadline.is_some_and(|deadline| now >= deadline) {
                                timeout.map(Stopped::TimedOut)
                            } else {
                                None
                            };
                            if let Some(why) = why {
                                self.set_draining(worker, true);
                                // Gently first: an exception in the tool's thread.
                                if channel::send_packet(&worker.control, &Control::Stop(job.id), None).is_err() {
                                    worker.kill(&why.ended(&job.function));
                                    return self.died(worker, job, journal, Some(why));
                                }
                                stopping = Some((now + GRACE, why));
                            }
                        }
                    }
                }
                Ok(None) | Err(_) => return self.died(worker, job, journal, stopping.map(|(_, why)| why)),
            }
        }
    }

    /// The result the worker sent, said as what happened when lcp stopped the call.
    fn finished(&self, mut result: ToolResult, job: &Job, stopped: Option<Stopped>) -> ToolResult {
        if let Some(why) = stopped {
            result.outcome = why.outcome();
            result.error = Some(format!("{} and was stopped", why.message(&job.function)));
        } else if result.outcome == Outcome::OutOfMemory
            && let Some(mib) = self.settings.memory_limit_mib
        {
            let error = result.error.get_or_insert_default();
            error.push_str(&format!(" (the tool ran out of memory: each worker may use {mib} MiB, --memory-limit)"));
        }
        result
    }

    /// The failed call of a worker that died while it ran (or was ended by lcp), or
    /// a call to run again: one whose tool declares `idempotent` or `read_only`,
    /// ended by another call (SPEC §17).
    fn died(&self, worker: &Worker, job: &Job, journal: &Journal, stopped: Option<Stopped>) -> Attempt {
        let end = worker.reap();
        self.retire(worker);
        let death = worker.death();
        let ended_by_lcp = sync::lock(&worker.ended_by_lcp).clone();
        let others: Vec<&str> =
            death.calls.iter().filter(|(id, _)| *id != job.id).map(|(_, function)| function.as_str()).collect();
        let culprit = death.crasher.filter(|id| *id != job.id).map(|id| {
            death.calls.iter().find(|(call, _)| *call == id).map_or("another call", |(_, function)| function.as_str())
        });
        let innocent = stopped.is_none() && death.crasher != Some(job.id) && (culprit.is_some() || !others.is_empty());
        let error = match (stopped, ended_by_lcp, culprit) {
            (Some(why), _, _) => format!(
                "{}; it did not stop (blocked in C code or holding the GIL), so lcp ended its worker process",
                why.message(&job.function)
            ),
            (None, _, Some(culprit)) => format!(
                "`{}` was ended by another call's crash: `{culprit}` crashed the worker process they shared (it {}); \
                 `{}` itself did nothing wrong and may be called again",
                job.function,
                end.describe(),
                job.function
            ),
            (None, Some(reason), None) => {
                format!("`{}` failed: its worker process was ended by lcp: {reason}", job.function)
            }
            (None, None, None) => {
                let mut error = format!("`{}` failed: its worker process {}", job.function, end.describe());
                if let (Some(mib), End::Signaled(_)) = (self.settings.memory_limit_mib, end) {
                    error.push_str(&format!(
                        " (the worker's memory is limited to {mib} MiB by --memory-limit; running out of it can end a process so)"
                    ));
                }
                if death.crasher != Some(job.id) && !others.is_empty() {
                    error.push_str(&format!(
                        " while it also ran `{}` (which call ended it is not known)",
                        others.join("`, `")
                    ));
                }
                error.push_str("; lcp replaces the worker, the next call runs in a new one");
                error
            }
        };
        let mut result = ToolResult::ended(stopped.map_or(Outcome::Died, Stopped::outcome), error);
        result.stdout = journal.out.clone();
        result.stderr = journal.err.clone();
        if innocent && job.rerun { Attempt::Again(result) } else { Attempt::Done(result) }
    }
}

/// Why lcp stopped a call.
#[derive(Clone, Copy)]
enum Stopped {
    TimedOut(Duration),
    Cancelled,
}

impl Stopped {
    fn outcome(self) -> Outcome {
        match self {
            Stopped::TimedOut(_) => Outcome::TimedOut,
            Stopped::Cancelled => Outcome::Cancelled,
        }
    }

    fn message(self, function: &str) -> String {
        match self {
            Stopped::TimedOut(limit) => format!("`{function}` timed out after {} s", limit.as_secs_f64()),
            Stopped::Cancelled => format!("`{function}` was cancelled"),
        }
    }

    fn ended(self, function: &str) -> String {
        match self {
            Stopped::TimedOut(_) => format!("`{function}` ran out of time and did not stop"),
            Stopped::Cancelled => format!("`{function}` was cancelled and did not stop"),
        }
    }
}

/// What a call printed so far, kept in case its worker dies.
#[derive(Default)]
struct Journal {
    out: String,
    err: String,
}

impl Journal {
    const LIMIT: usize = 1_000_000;

    fn add(&mut self, stream: Stream, text: &str) {
        let kept = match stream {
            Stream::Out => &mut self.out,
            Stream::Err => &mut self.err,
        };
        if kept.len() < Self::LIMIT {
            kept.push_str(text);
        }
    }
}

impl Worker {
    /// An idle connection, or a new one handed to the worker; `None` when the worker
    /// cannot take one (it died).
    fn connection(&self) -> Option<Connection> {
        if let Some(connection) = sync::lock(&self.idle).pop() {
            return Some(connection);
        }
        let (ours, theirs) = UnixStream::pair().ok()?;
        channel::send_packet(&self.control, &Control::Open, Some(theirs.as_raw_fd())).ok()?;
        Some(Connection::new(ours))
    }

    /// What its watcher learned of its death, once the watcher has (at most a few
    /// seconds after the process ended: a watcher that cannot say leaves it unknown).
    fn death(&self) -> Death {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut death = sync::lock(&self.death);
        while death.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Death::default();
            }
            death = sync::wait_timeout(&self.dead, death, left);
        }
        death.clone().unwrap_or_default()
    }

    /// Ends the worker, everything its tools started (found below it: it adopts
    /// orphans) and everything in its process group.
    fn kill(&self, reason: &str) {
        if sync::lock(&self.end).is_some() {
            return;
        }
        sync::lock(&self.ended_by_lcp).get_or_insert_with(|| reason.to_string());
        super::process_tree::end_descendants(self.pid);
        // SAFETY: plain signals to a process (group) this pool started and has not reaped.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
            libc::kill(self.pid, libc::SIGKILL);
        }
    }

    /// Waits for the process to end (a dying one gets a moment to finish dying, then
    /// is killed), once; every caller gets the same answer.
    fn reap(&self) -> End {
        let mut end = sync::lock(&self.end);
        if let Some(end) = *end {
            return end;
        }
        let waited = Instant::now();
        let status = loop {
            let mut status = 0;
            // SAFETY: waits for our own child, writing its status into `status`.
            let reaped = unsafe { libc::waitpid(self.pid, &raw mut status, libc::WNOHANG) };
            if reaped == self.pid {
                break Some(status);
            }
            if reaped < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break None;
            }
            if waited.elapsed() > Duration::from_millis(200) {
                // SAFETY: as in `kill`; then a blocking wait for the same child.
                unsafe {
                    libc::kill(-self.pid, libc::SIGKILL);
                    libc::kill(self.pid, libc::SIGKILL);
                    let mut status = 0;
                    let reaped = libc::waitpid(self.pid, &raw mut status, 0);
                    break (reaped == self.pid).then_some(status);
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        // The rest of its process group (what its tools started) goes with it.
        // SAFETY: a signal to the group of a process we started.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        sync::lock(&WORKER_PIDS).retain(|pid| *pid != self.pid);
        drop(sync::lock(&self.cgroup).take());
        if let Some(scratch) = &self.scratch {
            let _ = std::fs::remove_dir_all(scratch);
        }
        let ended = match status {
            Some(status) if libc::WIFEXITED(status) => End::Exited(libc::WEXITSTATUS(status)),
            Some(status) if libc::WIFSIGNALED(status) => End::Signaled(libc::WTERMSIG(status)),
            _ => End::Unknown,
        };
        *end = Some(ended);
        ended
    }
}

impl End {
    fn describe(self) -> String {
        match self {
            End::Exited(code) => format!("exited with status {code}"),
            End::Signaled(signal) => format!("was killed by signal {}", signal_name(signal)),
            End::Unknown => "ended".to_string(),
        }
    }
}

/// `SIGSEGV (segmentation fault)`, or the number for a signal without a name here.
fn signal_name(signal: i32) -> String {
    let (name, meaning) = match signal {
        libc::SIGSEGV => ("SIGSEGV", "segmentation fault"),
        libc::SIGABRT => ("SIGABRT", "aborted"),
        libc::SIGKILL => ("SIGKILL", "killed"),
        libc::SIGBUS => ("SIGBUS", "bus error"),
        libc::SIGFPE => ("SIGFPE", "arithmetic error"),
        libc::SIGILL => ("SIGILL", "illegal instruction"),
        libc::SIGTERM => ("SIGTERM", "terminated"),
        libc::SIGINT => ("SIGINT", "interrupted"),
        libc::SIGPIPE => ("SIGPIPE", "broken pipe"),
        libc::SIGXCPU => ("SIGXCPU", "CPU time limit exceeded"),
        libc::SIGHUP => ("SIGHUP", "hangup"),
        libc::SIGTRAP => ("SIGTRAP", "trace trap"),
        libc::SIGSYS => ("SIGSYS", "bad system call"),
        other => return format!("{other}"),
    };
    format!("{name} ({meaning})")
}

/// A worker's watcher: waits for the process to end (its pidfd; where there is none,
/// its control socket's end), noting which call said it crashed it. Then it ends the
/// connections of the calls that ran in it (a process a tool forked may hold them
/// open), reaps it, takes it out of the pool and keeps one worker warm.
fn watch(worker: &Arc<Worker>, pool: &Weak<Inner>) {
    let process = pidfd(worker.pid);
    let mut buffer = Vec::new();
    let mut crasher = None;
    let mut ended = false;
    while !ended {
        let mut fds = [
            libc::pollfd { fd: worker.control.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: process.as_ref().map_or(-1, AsRawFd::as_raw_fd), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: two valid `pollfd`s (a negative fd is ignored); no timeout.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        // Dead: what it said before dying is all in the socket, read without waiting.
        ended = fds[1].revents != 0;
        let mut read = false;
        while readable_now(&worker.control) {
            read = true;
            match channel::recv_packet::<Report>(&worker.control, &mut buffer) {
                Ok(Some((Report::Crashing(id), _))) => crasher = Some(id),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => {
                    ended = true;
                    break;
                }
            }
        }
        if !read && fds[0].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            ended = true;
        }
    }
    let calls = {
        let running = sync::lock(&worker.running);
        for call in running.iter() {
            if let Some(stream) = &call.stream {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
        running.iter().map(|call| (call.id, call.function.clone())).collect()
    };
    worker.reap();
    end_orphans();
    *sync::lock(&worker.death) = Some(Death { crasher, calls });
    worker.dead.notify_all();
    let Some(pool) = pool.upgrade() else { return };
    pool.retire(worker);
    // Keep a worker warm for the next call.
    pool.warm_up();
    pool.keep_standby();
}

/// Whether a socket has something to read now.
fn readable_now(socket: &OwnedFd) -> bool {
    let mut fd = libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid `pollfd`; a timeout of 0 only looks.
    unsafe { libc::poll(&raw mut fd, 1, 0) > 0 && fd.revents & libc::POLLIN != 0 }
}

/// A descriptor that becomes readable when the process ends (Linux 5.3 and later).
fn pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: `pidfd_open` returns a new descriptor or -1; the child is not reaped yet.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a descriptor just made and owned by nothing else.
    (fd >= 0).then(|| unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as i32) })
}
