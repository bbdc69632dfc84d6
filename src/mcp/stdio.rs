//! The stdio transport, on file descriptors nothing else in the process can reach.
//!
//! [`take`] runs before anything else: it keeps private duplicates of fd 0 and fd 1
//! for the protocol, then points fd 0 at `/dev/null` and fd 1 at stderr. A tool that
//! prints (`print`, `os.write(1, ...)`, a C library writing to stdout) writes to
//! stderr, and one that reads stdin reads nothing, so the protocol stream can never
//! be corrupted or stolen. The duplicates are close-on-exec: a subprocess started by
//! a tool does not inherit them either.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

/// The protocol's ends of the process's original stdin and stdout.
pub struct ProtocolFds {
    input: OwnedFd,
    output: OwnedFd,
}

pub fn take() -> io::Result<ProtocolFds> {
    let input = dup_cloexec(0)?;
    let output = dup_cloexec(1)?;
    let null = File::open("/dev/null")?;
    dup2(null.as_raw_fd(), 0)?;
    dup2(2, 1)?;
    Ok(ProtocolFds { input, output })
}

pub type Reader = Pin<Box<dyn AsyncRead + Send>>;
pub type Writer = Pin<Box<dyn AsyncWrite + Send>>;

/// Async handles on the protocol descriptors. Pipes (how most clients start a
/// server) and sockets (Node's `child_process`) are driven by the IO reactor; a
/// terminal or a file goes through Tokio's blocking pool, as `tokio::io::stdin` does.
pub fn transport(fds: ProtocolFds) -> io::Result<(Reader, Writer)> {
    Ok((reader(fds.input)?, writer(fds.output)?))
}

fn reader(fd: OwnedFd) -> io::Result<Reader> {
    Ok(match kind(&fd)? {
        Kind::Fifo => Box::pin(tokio::net::unix::pipe::Receiver::from_owned_fd(reopen_nonblocking(&fd, false)?)?),
        Kind::Socket => Box::pin(socket(fd)?),
        Kind::Other => Box::pin(tokio::fs::File::from_std(File::from(fd))),
    })
}

fn writer(fd: OwnedFd) -> io::Result<Writer> {
    Ok(match kind(&fd)? {
        Kind::Fifo => Box::pin(tokio::net::unix::pipe::Sender::from_owned_fd(reopen_nonblocking(&fd, true)?)?),
        Kind::Socket => Box::pin(socket(fd)?),
        Kind::Other => Box::pin(tokio::fs::File::from_std(File::from(fd))),
    })
}

enum Kind {
    Fifo,
    Socket,
    Other,
}

fn kind(fd: &OwnedFd) -> io::Result<Kind> {
    use std::os::unix::fs::FileTypeExt;
    let file_type = File::from(fd.try_clone()?).metadata()?.file_type();
    Ok(if file_type.is_fifo() {
        Kind::Fifo
    } else if file_type.is_socket() {
        Kind::Socket
    } else {
        Kind::Other
    })
}

/// A FIFO reopened through `/proc/self/fd` gets its own open file description, so
/// `O_NONBLOCK` stays private to the transport instead of reaching whoever else
/// holds the pipe (the parent's shell, a tool's subprocess). Elsewhere than Linux
/// the duplicate itself is made non-blocking.
fn reopen_nonblocking(fd: &OwnedFd, write: bool) -> io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let reopened = std::fs::OpenOptions::new().read(!write).write(write).custom_flags(libc::O_NONBLOCK).open(path);
    match reopened {
        Ok(file) => Ok(file.into()),
        Err(_) => {
            let fd = fd.try_clone()?;
            set_nonblocking(&fd)?;
            Ok(fd)
        }
    }
}

/// A socket cannot be reopened; its description is the process's own (the client
/// holds the other end), and fd 0 and fd 1 no longer point at it.
fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(stream)
}

fn dup_cloexec(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor that nothing else owns.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh, open descriptor owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn dup2(from: RawFd, to: RawFd) -> io::Result<()> {
    // SAFETY: plain descriptor duplication; `to` (0 or 1) stays open, pointing elsewhere.
    if unsafe { libc::dup2(from, to) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: reading and setting the status flags of an open descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
