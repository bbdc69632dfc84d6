//! Keeps file descriptor 1 away from tools.
//!
//! While any call runs, fd 1 points at a pipe that lcp drains: what arrives there (a
//! raw `os.write(1, …)`, a subprocess, a C extension's `printf`) is added to the
//! stdout of the calls running at that moment (every one of them: bytes on a file
//! descriptor carry no thread). When no call runs, fd 1 is the host's again, unless
//! the host claimed the standard output for the whole process ([`claim`]); then fd 1
//! stays on the pipe. Bytes that arrive while no call runs go to stderr, never to
//! stdout: a tool's background process may still be writing.
//!
//! Text a tool prints through `sys.stdout` never comes here: `host.py` captures it
//! per thread.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::sync;

/// Bytes kept per call; the rest is counted.
const LIMIT: usize = 1_000_000;

struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    calls: Vec<Captured>,
    /// Calls running now.
    users: usize,
    /// The host's fd 1 while calls run (or for good once claimed).
    saved: Option<OwnedFd>,
    claimed: bool,
    /// Where `drain` reads into, kept between calls.
    buffer: Vec<u8>,
}

struct Captured {
    id: u64,
    bytes: Vec<u8>,
    dropped: usize,
}

/// The capture of fd 1: process-wide, as the descriptor it replaces is.
static PIPE: OnceLock<Option<Pipe>> = OnceLock::new();

// SAFETY: glibc and musl both define `stdout` as a `FILE *` variable with this exact
// name and type; it is only read (and passed to `fflush`), never written.
unsafe extern "C" {
    /// C's `stdout` stream (glibc and musl name the variable so).
    #[link_name = "stdout"]
    static c_stdout: *mut libc::FILE;
}

/// The pipe and its reader thread, made on first use. `None` when the system refused
/// (then only Python-level output is captured).
fn pipe() -> Option<&'static Pipe> {
    let mut made = false;
    let pipe = PIPE
        .get_or_init(|| {
            made = true;
            Pipe::new().ok()
        })
        .as_ref()?;
    if made {
        // Without the reader a call still gets its bytes when it ends; only output
        // larger than the pipe's buffer would then block the tool writing it.
        let _ = std::thread::Builder::new().name("lcp-stdout".into()).spawn(move || reader(pipe));
    }
    Some(pipe)
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe2` writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened and are owned by nothing else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: `read` is an open descriptor; F_GETFL / F_SETFL only read and set its flags.
        let nonblocking = unsafe {
            let flags = libc::fcntl(read.as_raw_fd(), libc::F_GETFL);
            flags >= 0 && libc::fcntl(read.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
        };
        if !nonblocking {
            // A blocking read end would hang `drain` on an empty pipe.
            return Err(io::Error::last_os_error());
        }
        Ok(Pipe { read, write, state: Mutex::new(State::default()) })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        sync::lock(&self.state)
    }

    /// Reads everything the pipe holds now and hands it out.
    fn drain(&self, state: &mut State) {
        let mut buffer = std::mem::take(&mut state.buffer);
        buffer.resize(16 * 1024, 0);
        loop {
            // SAFETY: reads into a buffer of the length given.
            let n = unsafe { libc::read(self.read.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            let Ok(n @ 1..) = usize::try_from(n) else { break };
            let bytes = &buffer[..n];
            if state.calls.is_empty() {
                write_fd(libc::STDERR_FILENO, bytes);
            }
            for call in &mut state.calls {
                let room = LIMIT.saturating_sub(call.bytes.len()).min(bytes.len());
                call.bytes.extend_from_slice(&bytes[..room]);
                call.dropped += bytes.len() - room;
            }
        }
        state.buffer = buffer;
    }

    /// Points fd 1 at the pipe, keeping the host's fd 1 in `state.saved`.
    fn redirect(&self, state: &mut State) {
        let _ = io::stdout().flush();
        // SAFETY: dup/dup2 on descriptor numbers; a failed dup (fd 1 closed) is kept as `None`.
        unsafe {
            let saved = libc::dup(libc::STDOUT_FILENO);
            state.saved = (saved >= 0).then(|| OwnedFd::from_raw_fd(saved));
            libc::dup2(self.write.as_raw_fd(), libc::STDOUT_FILENO);
        }
    }

    fn restore(&self, state: &mut State) {
        // SAFETY: dup2/close on descriptor numbers this module manages.
        unsafe {
            match state.saved.take() {
                Some(saved) => {
                    libc::dup2(saved.as_raw_fd(), libc::STDOUT_FILENO);
                }
                None => {
                    libc::close(libc::STDOUT_FILENO);
                }
            }
        }
    }
}

fn reader(pipe: &Pipe) {
    loop {
        let mut poll = libc::pollfd { fd: pipe.read.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, -1) };
        if ready < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
        let mut state = pipe.lock();
        pipe.drain(&mut state);
    }
}

fn write_fd(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a live slice of the length given.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        match usize::try_from(n) {
            Ok(n @ 1..) => bytes = &bytes[n..],
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}

/// What reached fd 1 during one call; ends when [`Capturing::finish`] is called or
/// when it is dropped.
pub struct Capturing {
    id: u64,
    active: bool,
}

/// Starts capturing fd 1 for the call `id`.
pub fn begin(id: u64) -> Capturing {
    let Some(pipe) = pipe() else { return Capturing { id, active: false } };
    let mut state = pipe.lock();
    if state.users == 0 && !state.claimed {
        pipe.redirect(&mut state);
    }
    state.users += 1;
    state.calls.push(Captured { id, bytes: Vec::new(), dropped: 0 });
    Capturing { id, active: true }
}

impl Capturing {
    /// The bytes written to fd 1 while the call ran, as text.
    pub fn finish(mut self) -> String {
        self.end()
    }

    fn end(&mut self) -> String {
        if !std::mem::replace(&mut self.active, false) {
            return String::new();
        }
        let Some(pipe) = pipe() else { return String::new() };
        // C stdio's buffer (a C extension's printf) reaches the pipe before it is read.
        // SAFETY: `stdout` is C's standard output stream, valid for the process's life.
        unsafe { libc::fflush(c_stdout) };
        let mut state = pipe.lock();
        pipe.drain(&mut state);
        let Some(index) = state.calls.iter().position(|call| call.id == self.id) else { return String::new() };
        let call = state.calls.swap_remove(index);
        state.users -= 1;
        if state.users == 0 && !state.claimed {
            pipe.restore(&mut state);
        }
        let mut text = String::from_utf8_lossy(&call.bytes).into_owned();
        if call.dropped > 0 {
            text.push_str(&format!("\n[lcp: {} more bytes were written and not kept]\n", call.dropped));
        }
        text
    }
}

impl Drop for Capturing {
    fn drop(&mut self) {
        self.end();
    }
}

/// Takes the standard output for the whole process: fd 1 stays on lcp's pipe from now
/// on (what reaches it outside calls goes to stderr) and the returned file is the only
/// way left to the real standard output. For hosts that write their own output while
/// tools may run, such as the command line and an MCP server.
pub fn claim() -> io::Result<File> {
    let pipe = pipe().ok_or_else(|| io::Error::other("cannot make a pipe for the standard output"))?;
    let mut state = pipe.lock();
    if !state.claimed {
        if state.users == 0 {
            pipe.redirect(&mut state);
        }
        state.claimed = true;
    }
    let saved = state.saved.as_ref().ok_or_else(|| io::Error::other("the standard output is closed"))?;
    Ok(File::from(saved.try_clone()?))
}
