//! A worker process (SPEC §8): `lcp __worker`, started by lcp's supervisor, never by
//! a person.
//!
//! It finds its control socket at fd 3, moves it out of reach of fds 0–2 (and of any
//! subprocess), starts the engine with the settings lcp sends, claims fd 1 for the
//! capture, and says it is ready. Then its main thread serves the control socket:
//! each new call connection gets a thread that runs the jobs sent on it, one after
//! the other; a stop request raises the timeout exception in the call's thread. When
//! the control socket ends (lcp went away or ended the pool) the process exits at
//! once, whatever its tools are doing.
//!
//! Must never: write to lcp's protocol streams (it has none of them), or outlive the
//! lcp that started it.

use std::cell::Cell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::channel::{self, Connection};
use super::engine::{self, Engine, WirePath};
use super::host_objects::{Callbacks, Host, HostAnswer, HostRequest, Notice, Offered, refused};
use super::supervisor::{CONTROL_FD, Control, FromWorker, Report, Stream, ToWorker, WORKER_ARGUMENT};
use super::{Outcome, capture, process_tree, python, refusals};
use crate::discovery::registry::FastMap;
use crate::sync;

/// Whether the process was started as a worker (its first argument says so).
pub fn is_worker_invocation() -> bool {
    std::env::args_os().nth(1).is_some_and(|arg| arg == WORKER_ARGUMENT)
}

/// Serves as a worker process until lcp goes away. A host binary that is its own
/// worker program ([`super::WorkerSettings::program`]) calls this first thing when
/// [`is_worker_invocation`] says so.
pub fn main() -> ExitCode {
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor number; a failure means there is none.
    let raw = unsafe { libc::fcntl(CONTROL_FD, libc::F_DUPFD_CLOEXEC, 10) };
    if raw < 0 {
        eprintln!("lcp: `{WORKER_ARGUMENT}` is started by lcp itself, with its channel on fd {CONTROL_FD}");
        return ExitCode::from(2);
    }
    // SAFETY: `raw` was just made; fd 3 is closed so a tool cannot find the channel there.
    let control = unsafe {
        libc::close(CONTROL_FD);
        OwnedFd::from_raw_fd(raw)
    };
    process_tree::become_subreaper();
    let mut buffer = Vec::new();
    let settings = match channel::recv_packet::<Control>(&control, &mut buffer) {
        Ok(Some((Control::Hello(settings), _))) => settings,
        _ => return ExitCode::from(2),
    };
    // Into its sandbox before Python starts, and before any other thread exists.
    let scratch = settings.scratch.as_ref().map_or_else(std::env::temp_dir, |scratch| scratch.0.clone());
    let mut settings = settings;
    let writable: Vec<std::path::PathBuf> = settings.writable.iter().map(|dir| dir.0.clone()).collect();
    let writable: Vec<&std::path::Path> = writable.iter().map(std::path::PathBuf::as_path).collect();
    let entered = if settings.unconfined {
        settings.sandbox = super::sandbox::Sandbox::default();
        Ok(false)
    } else {
        super::sandbox::enter(settings.sandbox, &scratch, &writable, settings.require)
    };
    match entered {
        Ok(confined) => settings.confined = confined,
        Err(err) => {
            let _ = channel::send_packet(&control, &Report::Failed(err), None);
            return ExitCode::from(2);
        }
    }
    let links: Links = Arc::default();
    let printing = Arc::clone(&links);
    let printed = Box::new(move |call: u64, stream: &str, text: &str| printed(&printing, call, stream, text));
    let engine = match Engine::start(settings, Some(printed)) {
        Ok(engine) => engine,
        Err(err) => {
            let _ = channel::send_packet(&control, &Report::Failed(format!("cannot start Python: {err}")), None);
            return ExitCode::from(2);
        }
    };
    // `main` never returns once the worker serves (the process ends with `_exit`), so
    // what the worker keeps lives as long as its call threads.
    let worker: &'static Worker = Box::leak(Box::new(Worker {
        engine,
        links,
        running: AtomicUsize::new(0),
        retiring: AtomicBool::new(false),
        applied: Mutex::new(0),
        sweeping: Mutex::new(()),
        started: AtomicUsize::new(0),
        sweeper: OnceLock::new(),
    }));
    let engine = &worker.engine;
    // From here on fd 1 belongs to the capture: what tools write there is theirs.
    let _stdout = capture::claim();
    if channel::send_packet(&control, &Report::Ready, None).is_err() {
        return ExitCode::from(2);
    }
    CONTROL.store(control.as_raw_fd(), Ordering::Release);
    install_crash_notes();
    python::set_exit_hook(note_crash);
    loop {
        match channel::recv_packet::<Control>(&control, &mut buffer) {
            Ok(Some((Control::Open, Some(fd)))) => {
                let stream = UnixStream::from(fd);
                let _ = std::thread::Builder::new().name("lcp-call".into()).spawn(move || worker.serve(stream));
            }
            Ok(Some((Control::Stop(id), _))) => {
                // Stopping needs the interpreter, which the call may be holding.
                let _ = std::thread::Builder::new().name("lcp-stop".into()).spawn(move || engine::stop(id));
            }
            Ok(Some((Control::Rebind, _))) => {
                let _ = std::thread::Builder::new().name("lcp-rebind".into()).spawn(move || {
                    for problem in engine.rebind() {
                        eprintln!("{problem}");
                    }
                });
            }
            Ok(Some(_)) => {}
            // lcp is gone, or ended the pool: nothing here may outlive it.
            Ok(None) | Err(_) => {
                process_tree::end_own_descendants();
                // SAFETY: ends the process at once, without running Python's finalisation.
                unsafe { libc::_exit(0) }
            }
        }
    }
}

/// One call connection, seen from the worker: jobs are read on it between calls,
/// and answers to what the call asks during one; frames go out from any thread.
struct Link {
    reader: Mutex<Connection>,
    writer: Mutex<(UnixStream, Vec<u8>)>,
    /// Held from a question to its answer: a call's threads ask one at a time, so
    /// each answer is read by the thread that asked.
    asking: Mutex<()>,
}

impl Link {
    fn send(&self, frame: &FromWorker) -> std::io::Result<()> {
        let mut writer = sync::lock(&self.writer);
        let (stream, out) = &mut *writer;
        channel::encode(out, frame)?;
        channel::send_all(stream, out)
    }
}

/// The control socket, for [`note_crash`]; -1 until the worker is ready. Process-wide
/// because a fatal signal's handler reads it, and a handler can reach nothing else.
static CONTROL: AtomicI32 = AtomicI32::new(-1);

thread_local! {
    /// The call this thread runs (0: none), for [`note_crash`], which runs on the
    /// thread a fatal signal hit.
    static CURRENT_CALL: Cell<u64> = const { Cell::new(0) };
}

/// The link of each call running here, by call id, for what its tool prints.
type Links = Arc<Mutex<FastMap<u64, Arc<Link>>>>;

/// What a worker keeps while it serves: its engine and the state of its calls.
struct Worker {
    engine: Engine,
    links: Links,
    /// Calls running here now.
    running: AtomicUsize,
    /// A tool closed one of fds 0–2: the worker ends once its calls are done.
    retiring: AtomicBool,
    /// The last change (see [`ToWorker::Call`]) whose modules this worker dropped.
    applied: Mutex<u64>,
    /// Held while the worker ends what its tools left running; a call starts only
    /// outside it.
    sweeping: Mutex<()>,
    /// Counts the calls started, so a sweep knows no call came and went meanwhile.
    started: AtomicUsize,
    /// The sweeping thread's queue, made with the first sweep.
    sweeper: OnceLock<Mutex<std::sync::mpsc::Sender<usize>>>,
}

/// Signals that end the process from the thread that caused them.
const FATAL_SIGNALS: [libc::c_int; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGABRT];

/// Makes a fatal signal first tell lcp which call's thread caused it (SPEC §17: a
/// crash fails only its own call), then end the process as it would have.
fn install_crash_notes() {
    extern "C" fn on_fatal_signal(_: libc::c_int) {
        note_crash();
        // SA_RESETHAND restored the default action: returning re-runs the faulting
        // instruction (or `abort` raises again), which ends the process.
    }
    for signal in FATAL_SIGNALS {
        // SAFETY: a handler that calls only async-signal-safe functions (`send`),
        // installed once before any call runs; the action struct is zeroed first.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(signal, &raw const action, std::ptr::null_mut());
        }
    }
}

/// Tells lcp that the call this thread runs is ending the process: `{"Crashing":ID}`
/// on the control socket. Async-signal-safe: no allocation, no lock, one `send`.
fn note_crash() {
    let call = CURRENT_CALL.try_with(Cell::get).unwrap_or(0);
    let control = CONTROL.load(Ordering::Acquire);
    if call == 0 || control < 0 {
        return;
    }
    let mut packet = [0u8; 40];
    let prefix = b"{\"Crashing\":";
    packet[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 20];
    let (mut rest, mut count) = (call, 0);
    while rest > 0 || count == 0 {
        digits[count] = b'0' + (rest % 10) as u8;
        rest /= 10;
        count += 1;
    }
    let mut length = prefix.len();
    for digit in digits[..count].iter().rev() {
        packet[length] = *digit;
        length += 1;
    }
    packet[length] = b'}';
    length += 1;
    // SAFETY: a send of a stack buffer on a socket this process owns.
    unsafe { libc::send(control, packet.as_ptr().cast(), length, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
}

impl Worker {
    /// Marks the modules of the changes not applied yet, before the call that brought
    /// them runs; a call that arrives on another connection at the same moment waits.
    fn apply_stale(&self, stale: Vec<(u64, WirePath)>) {
        let mut applied = sync::lock(&self.applied);
        let last = *applied;
        if let Some(newest) = stale.iter().map(|(n, _)| *n).max() {
            *applied = newest.max(last);
        }
        let fresh: Vec<WirePath> = stale.into_iter().filter(|(n, _)| *n > last).map(|(_, file)| file).collect();
        if !fresh.is_empty() {
            self.engine.drop_modules(fresh);
        }
    }

    fn serve(&'static self, stream: UnixStream) {
        let engine = &self.engine;
        let _thread_state = python::ThreadState::keep();
        let Ok(writer) = stream.try_clone() else { return };
        let link = Arc::new(Link {
            reader: Mutex::new(Connection::new(stream)),
            writer: Mutex::new((writer, Vec::new())),
            asking: Mutex::new(()),
        });
        loop {
            let next = sync::lock(&link.reader).recv::<ToWorker>(None);
            let job = match next {
                Ok(Some(ToWorker::Call(job, stale))) => {
                    self.apply_stale(stale);
                    job
                }
                Ok(Some(ToWorker::Answer(_))) => continue,
                Ok(None) | Err(_) => return,
            };
            {
                let _not_sweeping = sync::lock(&self.sweeping);
                self.running.fetch_add(1, Ordering::AcqRel);
                self.started.fetch_add(1, Ordering::AcqRel);
            }
            sync::lock(&self.links).insert(job.id, Arc::clone(&link));
            let callbacks = asking(&link, job.host);
            CURRENT_CALL.set(job.id);
            let refusals_from = refusals::mark();
            let mut result = engine.run(&job, callbacks, None, None);
            CURRENT_CALL.set(0);
            let sandbox = engine.sandbox();
            result.refused = refusals::since(refusals_from).iter().map(|r| r.told(&job.function, sandbox)).collect();
            if let Some(max) = job.max_output {
                // Cut here: lcp never reads more of an output than it may show.
                result.bound(max);
            }
            sync::lock(&self.links).remove(&job.id);
            let closed = closed_standard_streams();
            if !closed.is_empty() {
                // The process is no longer what the next call expects: it is replaced.
                self.retiring.store(true, Ordering::Release);
                result.outcome = Outcome::Died;
                result.error = Some(format!(
                    "`{}` closed its process's standard streams (fd {}); lcp replaces its worker process",
                    job.function,
                    closed.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                ));
            }
            let sent = link.send(&FromWorker::Done(result.into()));
            if self.running.fetch_sub(1, Ordering::AcqRel) == 1 {
                if self.retiring.load(Ordering::Acquire) {
                    process_tree::end_own_descendants();
                    // SAFETY: ends the process at once; lcp sees the channel end and starts another.
                    unsafe { libc::_exit(0) };
                }
                self.end_what_tools_left();
            }
            if sent.is_err() {
                return;
            }
        }
    }

    /// With no call running for a moment, every process the tools started and left (a
    /// background job, a `setsid` child adopted by this subreaper) is ended and reaped
    /// (SPEC §17), on a thread of its own: the result was sent already.
    fn end_what_tools_left(&'static self) {
        let sweeper = self.sweeper.get_or_init(|| {
            let (due, next) = std::sync::mpsc::channel::<usize>();
            let _ = std::thread::Builder::new().name("lcp-sweep".into()).spawn(move || {
                while let Ok(started) = next.recv() {
                    std::thread::sleep(IDLE_BEFORE_SWEEP);
                    let _sweeping = sync::lock(&self.sweeping);
                    let idle =
                        self.running.load(Ordering::Acquire) == 0 && self.started.load(Ordering::Acquire) == started;
                    if idle && !process_tree::children().is_empty() {
                        process_tree::end_own_descendants();
                        process_tree::reap_ended_children();
                    }
                }
            });
            Mutex::new(due)
        });
        let _ = sync::lock(sweeper).send(self.started.load(Ordering::Acquire));
    }
}

/// How long the worker stays idle before it looks for what its tools left: calls that
/// come one after another never wait for a look.
const IDLE_BEFORE_SWEEP: std::time::Duration = std::time::Duration::from_millis(20);

/// lcp, as the host of a worker's call: each request asks lcp over the call's link
/// and waits for the answer; each notice is told and the call goes on.
struct Lcp {
    link: Arc<Link>,
}

impl Host for Lcp {
    fn answer(&self, request: HostRequest) -> HostAnswer {
        let _one_at_a_time = sync::lock(&self.link.asking);
        if self.link.send(&FromWorker::Ask(request.clone())).is_err() {
            return refused(&request, "lcp could not be asked");
        }
        match sync::lock(&self.link.reader).recv::<ToWorker>(None) {
            Ok(Some(ToWorker::Answer(answer))) => answer,
            _ => refused(&request, "lcp did not answer"),
        }
    }

    fn notify(&self, notice: Notice) {
        let _ = self.link.send(&FromWorker::Notify(notice));
    }
}

/// The callbacks of a call, those lcp has for it (`offered`), each handed to lcp.
fn asking(link: &Arc<Link>, offered: Offered) -> Callbacks {
    let lcp: Arc<dyn Host> = Arc::new(Lcp { link: Arc::clone(link) });
    Callbacks::of_host(&lcp, &offered)
}

/// `host.py`'s hook: what a call prints goes to lcp at once.
fn printed(links: &Links, call: u64, stream: &str, text: &str) {
    let link = sync::lock(links).get(&call).cloned();
    if let Some(link) = link {
        let _ = link.send(&FromWorker::Printed(Stream::named(stream), text.to_string()));
    }
}

/// Which of fds 0, 1 and 2 a tool closed (one `poll`: a closed one is `POLLNVAL`).
fn closed_standard_streams() -> Vec<i32> {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: three valid `pollfd`s; a timeout of 0 only looks.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } <= 0 {
        return Vec::new();
    }
    fds.iter().filter(|fd| fd.revents & libc::POLLNVAL != 0).map(|fd| fd.fd).collect()
}
