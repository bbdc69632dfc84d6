//! The private channel between lcp and its worker processes (SPEC §8).
//!
//! Each worker has one *control* socket (`SOCK_SEQPACKET`: one JSON message per
//! packet, optionally carrying a file descriptor) and any number of *call*
//! connections (`SOCK_STREAM`: length-prefixed JSON frames), one per call running in
//! it at a time. A call connection is made by lcp and handed to the worker over the
//! control socket, so a call needs no lookup by id on either side: the thread that
//! makes the call reads its connection, and the worker thread that runs it writes it.
//!
//! Every descriptor is close-on-exec on both sides: a tool's subprocess never
//! inherits one, and a tool cannot reach the channel through fds 0, 1 and 2.
//! Writes never raise `SIGPIPE` (`MSG_NOSIGNAL`): a dead peer is an error, not a signal.
//!
//! A reader whose last frame came soon ([`SOON`]) looks for the next one for up to
//! [`SPIN`] before it sleeps: waking a sleeping process on an idle core costs tens of
//! microseconds, more than a quick call itself, and a short poll keeps both ends
//! awake while calls come quickly. A reader whose last frame took longer (a tool
//! that works, a host that calls now and then) sleeps at once.

use std::io::{self, BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A frame is at most this long; a longer length prefix means a broken stream.
const MAX_FRAME: usize = 1 << 30;
/// A control packet is at most this long.
const MAX_PACKET: usize = 64 * 1024;
/// How long a reader looks for a frame that is due soon before it sleeps.
const SPIN: Duration = Duration::from_micros(50);
/// A frame that came within this long of the read was due soon: the next one may be
/// too. (A sleeping reader takes up to about this long to wake on an idle core.)
const SOON: Duration = Duration::from_micros(250);
/// Looks in a row that miss a frame which still comes soon, before that counts as a
/// failed look.
const MISSES: u32 = 3;

/// A connected pair of `SOCK_SEQPACKET` sockets, both close-on-exec.
pub(crate) fn control_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `socketpair` writes.
    let done =
        unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and belong to nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends one control packet, with `fd` attached when given.
pub(crate) fn send_packet<T: Serialize>(socket: &OwnedFd, message: &T, fd: Option<RawFd>) -> io::Result<()> {
    let bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    if bytes.len() > MAX_PACKET {
        return Err(io::Error::other("a control message longer than the channel allows"));
    }
    let mut iov = libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
    // Room for one descriptor, aligned as `cmsghdr` wants.
    let mut space = [0u64; 4];
    // SAFETY: `msghdr` is plain data; every pointer set below outlives the call.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &raw mut iov;
    header.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE and CMSG_LEN are pure arithmetic; the buffer `space` is
        // larger than CMSG_SPACE(size of one int) and aligned for `cmsghdr`.
        unsafe {
            header.msg_control = space.as_mut_ptr().cast();
            header.msg_controllen = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as usize;
            let cmsg = libc::CMSG_FIRSTHDR(&header);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        }
    }
    loop {
        // SAFETY: `header` describes live buffers (see above).
        let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &header, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Receives one control packet and the descriptor it carries, if any; `None` at the
/// end of the stream (the peer closed its end or died). `bytes` is where it is read,
/// kept between calls.
pub(crate) fn recv_packet<T: DeserializeOwned>(
    socket: &OwnedFd,
    bytes: &mut Vec<u8>,
) -> io::Result<Option<(T, Option<OwnedFd>)>> {
    if bytes.len() < MAX_PACKET {
        bytes.resize(MAX_PACKET, 0);
    }
    let mut iov = libc::iovec { iov_base: bytes.as_mut_ptr().cast(), iov_len: bytes.len() };
    let mut space = [0u64; 4];
    // SAFETY: `msghdr` is plain data; every pointer set below outlives the call.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &raw mut iov;
    header.msg_iovlen = 1;
    header.msg_control = space.as_mut_ptr().cast();
    header.msg_controllen = size_of_val(&space);
    let received = loop {
        // SAFETY: `header` describes live buffers (see above); MSG_CMSG_CLOEXEC makes a
        // received descriptor close-on-exec at once.
        let received = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut header, libc::MSG_CMSG_CLOEXEC) };
        if received >= 0 {
            break received as usize;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    };
    let mut fd = None;
    // SAFETY: the kernel filled `header.msg_control` with `msg_controllen` bytes of
    // well-formed control messages; an SCM_RIGHTS one carries descriptors we now own.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let raw = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
                fd = Some(OwnedFd::from_raw_fd(raw));
            }
            cmsg = libc::CMSG_NXTHDR(&header, cmsg);
        }
    }
    if received == 0 && fd.is_none() {
        return Ok(None);
    }
    let message = serde_json::from_slice(&bytes[..received]).map_err(io::Error::other)?;
    Ok(Some((message, fd)))
}

/// One end of a call connection: frames out, frames in.
pub(crate) struct Connection {
    reader: BufReader<UnixStream>,
    /// Where frames are built before one `send`.
    out: Vec<u8>,
    /// When to look for the next frame before sleeping.
    spin: Spin,
}

/// Whether a reader looks for its next frame before it sleeps: when the last frame
/// came soon ([`SOON`]), unless looking failed lately. Each failed look (the frame
/// came late anyway: a busy machine, a tool that works) doubles the number of reads
/// that sleep at once before the next look, so a loaded machine is left alone.
#[derive(Default)]
struct Spin {
    soon: bool,
    /// Looks in a row that missed a frame which still came soon.
    misses: u32,
    failures: u32,
    /// Reads left that sleep at once.
    skip: u32,
}

impl Spin {
    /// Whether to look before this read.
    fn now(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        self.soon
    }

    /// What the read that looked (or not) saw. A look that missed a frame which still
    /// came soon is no failure at once (the peer was asleep, and both ends stay awake
    /// once both look again); [`MISSES`] of them in a row are (both ends look, yet the
    /// frames come late: the machine is busy).
    fn seen(&mut self, looked: bool, arrived: bool, waited: Duration) {
        let soon = waited <= SOON;
        if looked {
            if arrived {
                self.failures = 0;
                self.misses = 0;
            } else {
                self.misses += 1;
                if !soon || self.misses >= MISSES {
                    self.misses = 0;
                    self.failures = (self.failures + 1).min(10);
                    self.skip = 1 << self.failures;
                }
            }
        }
        self.soon = soon;
    }
}

impl Connection {
    pub(crate) fn new(stream: UnixStream) -> Connection {
        Connection {
            reader: BufReader::with_capacity(64 * 1024, stream),
            out: Vec::with_capacity(1024),
            spin: Spin::default(),
        }
    }

    pub(crate) fn stream(&self) -> &UnixStream {
        self.reader.get_ref()
    }

    /// Writes one frame.
    pub(crate) fn send<T: Serialize>(&mut self, frame: &T) -> io::Result<()> {
        encode(&mut self.out, frame)?;
        send_all(self.stream(), &self.out)
    }

    /// Reads one frame; `None` at the end of the stream. With `deadline`, waits at
    /// most until then (`ErrorKind::TimedOut` after).
    pub(crate) fn recv<T: DeserializeOwned>(&mut self, deadline: Option<Instant>) -> io::Result<Option<T>> {
        if self.reader.buffer().is_empty() {
            let waited = Instant::now();
            let looked = self.spin.now();
            let arrived = looked && spin_until_readable(self.stream(), waited + SPIN);
            if !arrived
                && let Some(deadline) = deadline
                && let Err(err) = wait_readable(self.stream(), deadline)
            {
                self.spin.seen(looked, false, Duration::MAX);
                return Err(err);
            }
            // One read; it sleeps when nothing has arrived and there is no deadline.
            let filled = loop {
                match self.reader.fill_buf() {
                    Ok(bytes) => break bytes.len(),
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) if err.kind() == io::ErrorKind::ConnectionReset => break 0,
                    Err(err) => return Err(err),
                }
            };
            self.spin.seen(looked, arrived, waited.elapsed());
            if filled == 0 {
                return Ok(None);
            }
        }
        let mut prefix = [0u8; 4];
        match self.reader.read_exact(&mut prefix) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(err) if err.kind() == io::ErrorKind::ConnectionReset => return Ok(None),
            Err(err) => return Err(err),
        }
        let length = u32::from_le_bytes(prefix) as usize;
        if length > MAX_FRAME {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a frame longer than the channel allows"));
        }
        let frame = if self.reader.buffer().len() >= length {
            let frame = serde_json::from_slice(&self.reader.buffer()[..length]);
            self.reader.consume(length);
            frame
        } else {
            let mut body = vec![0u8; length];
            match self.reader.read_exact(&mut body) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(err) if err.kind() == io::ErrorKind::ConnectionReset => return Ok(None),
                Err(err) => return Err(err),
            }
            serde_json::from_slice(&body)
        };
        frame.map(Some).map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
    }
}

/// A frame: its length (4 bytes, little-endian), then its JSON.
pub(crate) fn encode<T: Serialize>(out: &mut Vec<u8>, frame: &T) -> io::Result<()> {
    out.clear();
    out.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut *out, frame).map_err(io::Error::other)?;
    let length = u32::try_from(out.len() - 4).map_err(|_| io::Error::other("a frame too long for the channel"))?;
    out[..4].copy_from_slice(&length.to_le_bytes());
    Ok(())
}

/// Writes all of `bytes` without ever raising `SIGPIPE`.
pub(crate) fn send_all(stream: &UnixStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: sends from a buffer of the length given.
        let sent = unsafe { libc::send(stream.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
        if sent < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        bytes = &bytes[sent as usize..];
    }
    Ok(())
}

/// Looks (without sleeping) until `stream` has something to read or its peer closed
/// it, at most until `until`; whether it has.
fn spin_until_readable(stream: &UnixStream, until: Instant) -> bool {
    let mut byte = 0u8;
    loop {
        // SAFETY: peeks at most one byte into `byte`; nothing is consumed.
        let seen =
            unsafe { libc::recv(stream.as_raw_fd(), (&raw mut byte).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        if seen >= 0 {
            return true;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::WouldBlock && err.kind() != io::ErrorKind::Interrupted {
            // An error is for the read that follows to report.
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// Waits until `stream` has something to read (or its peer closed it), at most until
/// `deadline`.
fn wait_readable(stream: &UnixStream, deadline: Instant) -> io::Result<()> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let millis = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        let mut poll = libc::pollfd { fd: stream.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid `pollfd`.
        let ready = unsafe { libc::poll(&raw mut poll, 1, millis) };
        if ready > 0 {
            return Ok(());
        }
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}

/// The shortest of an optional deadline and `now + slice`.
pub(crate) fn slice_of(deadline: Option<Instant>, slice: Duration) -> Instant {
    let next = Instant::now() + slice;
    deadline.map_or(next, |deadline| deadline.min(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: Duration = Duration::from_micros(10);
    const SLOW: Duration = Duration::from_millis(5);

    /// Whether each of the next `reads` reads looks first, when every look misses a
    /// frame that then comes late, and every read that sleeps gets one soon.
    fn looks_while_failing(spin: &mut Spin, reads: usize) -> Vec<bool> {
        (0..reads)
            .map(|_| {
                let looked = spin.now();
                spin.seen(looked, false, if looked { SLOW } else { QUICK });
                looked
            })
            .collect()
    }

    #[test]
    fn a_reader_looks_only_after_a_frame_that_came_soon() {
        let mut spin = Spin::default();
        assert!(!spin.now(), "the first read sleeps at once");
        spin.seen(false, false, SLOW);
        assert!(!spin.now(), "a frame that took long: the next read sleeps at once");
        spin.seen(false, false, QUICK);
        assert!(spin.now(), "a frame that came soon: the next read looks first");
        spin.seen(true, true, QUICK);
        assert!(spin.now(), "a look that found the frame: the next read looks too");
        spin.seen(true, false, QUICK);
        assert!(spin.now(), "a look that missed a frame that still came soon (its peer slept): no failure");
        spin.seen(true, false, QUICK);
        assert!(spin.now(), "two such misses: still none");
        spin.seen(true, false, QUICK);
        assert!(!spin.now(), "three in a row: the machine is busy, the next reads sleep at once");
    }

    #[test]
    fn each_failed_look_doubles_the_reads_that_sleep_at_once() {
        let mut spin = Spin { soon: true, ..Spin::default() };
        let looks = looks_while_failing(&mut spin, 1 + 2 + 1 + 4 + 1);
        let expected = [true, false, false, true, false, false, false, false, true];
        assert_eq!(looks, expected);
        // A look that finds its frame forgives the failures.
        assert_eq!(looks_while_failing(&mut spin, 8), [false; 8]);
        assert!(spin.now());
        spin.seen(true, true, QUICK);
        assert_eq!(looks_while_failing(&mut spin, 2), [true, false]);
        // The backoff is bounded: a reader never stops looking for good.
        let mut spin = Spin { soon: true, ..Spin::default() };
        let looks = looks_while_failing(&mut spin, 20_000);
        assert!(looks.iter().skip(4096).any(|&looked| looked));
    }

    #[test]
    fn frames_arrive_whole_whether_the_reader_looked_or_slept() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (mut ours, mut theirs) = (Connection::new(ours), Connection::new(theirs));
        let writer = std::thread::spawn(move || {
            for n in 0..200u32 {
                if n % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                theirs.send(&n).unwrap();
                assert_eq!(theirs.recv::<u32>(None).unwrap(), Some(n + 1));
            }
        });
        for n in 0..200u32 {
            assert_eq!(ours.recv::<u32>(None).unwrap(), Some(n));
            ours.send(&(n + 1)).unwrap();
        }
        writer.join().unwrap();
        assert_eq!(ours.recv::<u32>(Some(Instant::now() + Duration::from_millis(50))).unwrap(), None);
    }
}
