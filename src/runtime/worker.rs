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

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use super::channel::{self, Connection};
use super::engine::{self, Engine};
use super::host_objects::{Answer, Callbacks, HostAnswer, HostRequest, Model, Notice, Offered, refused};
use super::supervisor::{CONTROL_FD, Control, FromWorker, Started, ToWorker, WORKER_ARGUMENT};
use super::{Confirmation, capture, python};
use crate::registry::FastMap;

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
    let mut buffer = Vec::new();
    let settings = match channel::recv_packet::<Control>(&control, &mut buffer) {
        Ok(Some((Control::Hello(settings), _))) => settings,
        _ => return ExitCode::from(2),
    };
    let engine = match Engine::start(settings, Some(printed)) {
        Ok(engine) => &*Box::leak(Box::new(engine)),
        Err(err) => {
            let _ = channel::send_packet(&control, &Started::Failed(format!("cannot start Python: {err}")), None);
            return ExitCode::from(2);
        }
    };
    // From here on fd 1 belongs to the capture: what tools write there is theirs.
    let _stdout = capture::claim();
    if channel::send_packet(&control, &Started::Ready, None).is_err() {
        return ExitCode::from(2);
    }
    loop {
        match channel::recv_packet::<Control>(&control, &mut buffer) {
            Ok(Some((Control::Open, Some(fd)))) => {
                let stream = UnixStream::from(fd);
                let _ = std::thread::Builder::new().name("lcp-call".into()).spawn(move || serve(engine, stream));
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
            // SAFETY: ends the process at once, without running Python's finalisation.
            Ok(None) | Err(_) => unsafe { libc::_exit(0) },
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
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (stream, out) = &mut *writer;
        channel::encode(out, frame)?;
        channel::send_all(stream, out)
    }
}

/// The link of each call running here, by call id, for what its tool prints.
static LINKS: LazyLock<Mutex<FastMap<u64, Arc<Link>>>> = LazyLock::new(Default::default);
/// Calls running here now.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
/// A tool closed one of fds 0–2: the worker ends once its calls are done.
static RETIRING: AtomicBool = AtomicBool::new(false);

fn serve(engine: &'static Engine, stream: UnixStream) {
    let _thread_state = python::ThreadState::keep();
    let Ok(writer) = stream.try_clone() else { return };
    let link = Arc::new(Link {
        reader: Mutex::new(Connection::new(stream)),
        writer: Mutex::new((writer, Vec::new())),
        asking: Mutex::new(()),
    });
    loop {
        let next = link.reader.lock().unwrap_or_else(|p| p.into_inner()).recv::<ToWorker>(None);
        let job = match next {
            Ok(Some(ToWorker::Call(job, stale))) => {
                if !stale.is_empty() {
                    engine::drop_modules(stale);
                }
                job
            }
            Ok(Some(ToWorker::Answer(_))) => continue,
            Ok(None) | Err(_) => return,
        };
        RUNNING.fetch_add(1, Ordering::AcqRel);
        LINKS.lock().unwrap_or_else(|p| p.into_inner()).insert(job.id, Arc::clone(&link));
        let callbacks = asking(&link, job.host);
        let mut result = engine.run(&job, callbacks, None);
        LINKS.lock().unwrap_or_else(|p| p.into_inner()).remove(&job.id);
        let closed = closed_standard_streams();
        if !closed.is_empty() {
            // The process is no longer what the next call expects: it is replaced.
            RETIRING.store(true, Ordering::Release);
            result.ok = false;
            result.error = Some(format!(
                "`{}` closed its process's standard streams (fd {}); lcp replaces its worker process",
                job.function,
                closed.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ));
        }
        let sent = link.send(&FromWorker::Done(result));
        if RUNNING.fetch_sub(1, Ordering::AcqRel) == 1 && RETIRING.load(Ordering::Acquire) {
            // SAFETY: ends the process at once; lcp sees the channel end and starts another.
            unsafe { libc::_exit(0) };
        }
        if sent.is_err() {
            return;
        }
    }
}

/// The callbacks of a call, those lcp has for it: each asks lcp over the call's link
/// and waits for the answer, or tells it and goes on.
fn asking(link: &Arc<Link>, offered: Offered) -> Callbacks {
    let ask = {
        let link = Arc::clone(link);
        move |request: HostRequest| -> HostAnswer {
            let _one_at_a_time = link.asking.lock().unwrap_or_else(|p| p.into_inner());
            if link.send(&FromWorker::Ask(request.clone())).is_err() {
                return refused(&request, "lcp could not be asked");
            }
            match link.reader.lock().unwrap_or_else(|p| p.into_inner()).recv::<ToWorker>(None) {
                Ok(Some(ToWorker::Answer(answer))) => answer,
                _ => refused(&request, "lcp did not answer"),
            }
        }
    };
    let tell = {
        let link = Arc::clone(link);
        move |notice: Notice| {
            let _ = link.send(&FromWorker::Notify(notice));
        }
    };
    let mut callbacks = Callbacks::default();
    if offered.confirm {
        let ask = ask.clone();
        callbacks.confirm = Some(Arc::new(move |request| match ask(HostRequest::Confirm(request.clone())) {
            HostAnswer::Confirm(answer) => answer,
            _ => Confirmation::reject("lcp answered something else"),
        }));
    }
    if offered.interact {
        let ask = ask.clone();
        callbacks.interact = Some(Arc::new(move |interaction| match ask(HostRequest::Interact(interaction.clone())) {
            HostAnswer::Interact(answer) => answer,
            _ => Answer::Unavailable("lcp answered something else".to_string()),
        }));
    }
    if offered.model {
        callbacks.model = Some(Model {
            generate: Arc::new(move |generation| match ask(HostRequest::Generate(generation.clone())) {
                HostAnswer::Generate(answer) => answer,
                _ => Err("lcp answered something else".to_string()),
            }),
            vision: offered.vision,
        });
    }
    if offered.progress {
        let tell = tell.clone();
        callbacks.progress = Some(Arc::new(move |progress| tell(Notice::Progress(progress.clone()))));
    }
    if offered.log {
        callbacks.log = Some(Arc::new(move |record| tell(Notice::Log(record.clone()))));
    }
    callbacks
}

/// `host.py`'s hook: what a call prints goes to lcp at once.
fn printed(call: u64, stream: &str, text: &str) {
    let link = LINKS.lock().unwrap_or_else(|p| p.into_inner()).get(&call).cloned();
    if let Some(link) = link {
        let _ = link.send(&FromWorker::Printed(stream.to_string(), text.to_string()));
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
