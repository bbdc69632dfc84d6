//! SPEC §18's allow-list: what every worker is kept from, whatever its tool declares
//! (capabilities, signals outside its own tree, lcp's descriptors, shared memory and
//! memory beyond `--memory-limit`), and what `read_only` and `open_world: false` add
//! (no metadata change or special file; no socket but `AF_UNIX`). Each rule is tried
//! as lcp runs for root and, when the tests run as root, again as a process without
//! root's capabilities (a normal user's lot: the worker makes its namespaces inside a
//! user namespace of its own). Fixture: `fixtures/sandbox_escape/escape.py`.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::*;

const FOLDER: &str = "fixtures/sandbox_escape";

/// How lcp is started: as the tests run, and, when they run as root, once more with
/// every capability taken away before lcp starts (`setpriv`), as a normal user has none.
fn users() -> Vec<(&'static str, Vec<&'static str>)> {
    // SAFETY: geteuid only reads this process's effective user id.
    let root = unsafe { libc::geteuid() } == 0;
    let mut users = vec![("as the tests run", Vec::new())];
    if root {
        users.push(("without root's capabilities", vec!["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"]));
    }
    users
}

/// `lcp call TOOL fixtures/sandbox_escape ...` started through `user`: the result and stderr.
fn call_as(user: &[&str], tool: &str, args: Value, workspace: &Path, flags: &[&str]) -> (Value, String) {
    let lcp = env!("CARGO_BIN_EXE_lcp");
    let mut command = match user.split_first() {
        Some((program, rest)) => {
            let mut command = Command::new(program);
            command.args(rest).arg(lcp);
            command
        }
        None => Command::new(lcp),
    };
    let args = args.to_string();
    let output = command
        .args(["call", tool, FOLDER, "--args", &args, "--workspace", workspace.to_str().unwrap()])
        .args(flags)
        .env("TMPDIR", temp_dir("escape-tmp"))
        .env_remove("VIRTUAL_ENV")
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("lcp runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let result = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{tool}: stdout is not JSON ({err}): {stderr}"));
    (result, stderr)
}

fn failed(result: &Value) -> String {
    assert_eq!(result["ok"], false, "{result}");
    result["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_read_only_tool_changes_no_files_metadata_and_makes_no_special_file() {
    use std::os::unix::fs::MetadataExt;
    for (user, wrapper) in users() {
        let workspace = temp_dir("escape-metadata");
        let file = workspace.join("kept.txt");
        write(&file, "kept");
        let before = std::fs::metadata(&file).unwrap();
        for how in ["chmod", "chown", "utime", "setxattr", "mkfifo"] {
            let (result, _) =
                call_as(&wrapper, "tool_change_metadata", json!({"path": file, "how": how}), &workspace, &[]);
            let error = failed(&result);
            assert!(
                error.contains("Operation not permitted") || error.contains("declares read_only"),
                "{user}, {how}: {error}"
            );
            let after = std::fs::metadata(&file).unwrap();
            assert_eq!(
                (after.mode(), after.uid(), after.gid(), after.mtime()),
                (before.mode(), before.uid(), before.gid(), before.mtime()),
                "{user}, {how}: the file's metadata changed"
            );
            assert!(xattr_names(&file).is_empty(), "{user}, {how}: an extended attribute was set");
            assert!(!workspace.join("kept.txt.fifo").exists(), "{user}, {how}: a fifo was made");
        }
        // A tool that declares nothing changes what it owns in its workspace.
        let (result, _) = call_as(&wrapper, "tool_chmod", json!({"path": file}), &workspace, &[]);
        assert_eq!(result["output"], "0o600", "{user}: {result}");
    }
}

/// The names of `path`'s extended attributes.
fn xattr_names(path: &Path) -> Vec<u8> {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut names = vec![0u8; 1024];
    // SAFETY: listxattr writes at most `names.len()` bytes into `names`.
    let got = unsafe { libc::listxattr(name.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    names.truncate(got.max(0) as usize);
    names
}

#[test]
fn every_worker_runs_without_capabilities_and_without_new_privileges() {
    for (user, wrapper) in users() {
        let workspace = temp_dir("escape-capabilities");
        let (result, _) = call_as(&wrapper, "tool_status", json!({}), &workspace, &[]);
        let none = "0000000000000000";
        assert_eq!(
            result["output"],
            json!({"CapInh": none, "CapPrm": none, "CapEff": none, "CapBnd": none, "CapAmb": none, "NoNewPrivs": "1"}),
            "{user}: {result}"
        );
        let before = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let (result, _) = call_as(&wrapper, "tool_set_hostname", json!({}), &workspace, &[]);
        failed(&result);
        assert_eq!(std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(), before, "{user}");
    }
}

#[test]
fn a_closed_world_tool_opens_no_socket_but_a_unix_one() {
    for (user, wrapper) in users() {
        let workspace = temp_dir("escape-sockets");
        for family in ["packet", "netlink", "inet6"] {
            let (result, _) = call_as(&wrapper, "tool_open_socket", json!({"family": family}), &workspace, &[]);
            assert_eq!(
                failed(&result),
                "tool_open_socket declares open_world: false but tried to open a network socket",
                "{user}, {family}"
            );
        }
        let (result, _) = call_as(&wrapper, "tool_open_socket", json!({"family": "unix"}), &workspace, &[]);
        assert_eq!(result["output"], "opened", "{user}: {result}");
    }
}

#[test]
fn a_tool_signals_neither_lcp_nor_another_worker() {
    for (user, wrapper) in users() {
        let workspace = temp_dir("escape-signals");
        // lcp itself: the call fails, and lcp lives to print its result.
        let (result, _) = call_as(&wrapper, "tool_signal_parent", json!({"signal": libc::SIGKILL}), &workspace, &[]);
        assert!(failed(&result).contains("Operation not permitted"), "{user}: {result}");
        // Nor any other process: even asking whether it may (signal 0) is refused.
        let args = json!({"pid": std::process::id(), "signal": 0});
        let (result, _) = call_as(&wrapper, "tool_signal", args, &workspace, &[]);
        assert!(failed(&result).contains("Operation not permitted"), "{user}: {result}");
    }
    // Another worker of the same lcp: it is still the one that answers afterwards.
    use lcp::discovery::registry::{Options, Registry, Sources};
    use lcp::runtime::{CallOptions, Isolation, Runtime, RuntimeConfig, WorkerSettings};
    let mut settings = WorkerSettings::new(env!("CARGO_BIN_EXE_lcp"));
    settings.workers = 1;
    let config = RuntimeConfig { venv: None, isolation: Isolation::Workers(settings), ..RuntimeConfig::default() };
    let runtime = Runtime::new(config).expect("a runtime with worker processes");
    let registry =
        Registry::load(&Sources { folders: vec![root().join(FOLDER)], files: Vec::new() }, &Options::default());
    let options = CallOptions { workspace: Some(temp_dir("escape-sibling")), ..CallOptions::default() };
    let call = |tool: &str, args: Value| runtime.call(&registry, tool, &args, &options);
    let sibling = call("tool_pid", json!({})).output.as_u64().unwrap();
    for signal in [libc::SIGKILL, libc::SIGSTOP] {
        let result = call("tool_signal", json!({"pid": sibling, "signal": signal}));
        assert!(
            !result.ok() && result.error.as_deref().unwrap_or_default().contains("Operation not permitted"),
            "{result:?}"
        );
    }
    let result = call("tool_signal_parent", json!({"signal": libc::SIGSTOP}));
    assert!(!result.ok(), "{result:?}");
    assert_eq!(call("tool_pid", json!({})).output.as_u64(), Some(sibling), "the other worker was ended or replaced");
    runtime.shutdown();
}

#[test]
fn a_worker_holds_no_descriptor_of_lcps_and_its_stderr_is_a_pipe_lcp_reads() {
    use std::os::unix::process::CommandExt;
    let workspace = temp_dir("escape-descriptors");
    let marker = workspace.join("lcp-only.log");
    let held = std::fs::File::create(&marker).unwrap();
    let log = std::fs::File::create(workspace.join("lcp-stderr.log")).unwrap();
    let raw = std::os::fd::AsRawFd::as_raw_fd(&held);
    let mut command = Command::new(env!("CARGO_BIN_EXE_lcp"));
    command
        .args(["call", "tool_descriptors", FOLDER, "--workspace", workspace.to_str().unwrap()])
        .current_dir(root())
        .stdin(Stdio::null())
        .stderr(log.try_clone().unwrap());
    // SAFETY: dup2 in the child, onto a descriptor number nothing else uses there;
    // lcp inherits it (no close-on-exec) as a descriptor of its own.
    unsafe {
        command.pre_exec(move || if libc::dup2(raw, 9) < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    let output = command.output().expect("lcp runs");
    let result: Value = serde_json::from_slice(&output.stdout).expect("a JSON result");
    let fds = result["output"]["fds"].as_object().expect("descriptors");
    let lcp_log = workspace.join("lcp-stderr.log");
    for (fd, target) in fds {
        let target = target.as_str().unwrap_or_default();
        assert!(!target.contains("lcp-only.log") && !target.contains("lcp-stderr.log"), "fd {fd} is lcp's: {target}");
    }
    assert!(fds["2"].as_str().unwrap_or_default().starts_with("pipe:"), "{result}");
    assert_eq!(result["output"]["pwrite"], "Illegal seek", "{result}");
    // What the worker printed reached lcp's log marked as the worker's, and nothing
    // was written over what lcp had logged.
    let logged = std::fs::read_to_string(&lcp_log).unwrap();
    assert!(logged.lines().all(|line| !line.starts_with("lcp: forged")), "{logged}");
}

#[test]
fn shared_memory_is_the_workers_own_and_a_read_only_worker_writes_none() {
    for (user, wrapper) in users() {
        let workspace = temp_dir("escape-shm");
        let name = format!("lcp-escape-{}", std::process::id());
        let host = Path::new("/dev/shm").join(&name);
        let (result, _) = call_as(&wrapper, "tool_shared_memory_read_only", json!({"name": name}), &workspace, &[]);
        failed(&result);
        assert!(!host.exists(), "{user}: a read-only worker wrote the system's /dev/shm");
        // Any other worker writes in a /dev/shm of its own (or in none): nothing is
        // left in the system's once the call is over.
        let (result, _) = call_as(&wrapper, "tool_shared_memory", json!({"name": name}), &workspace, &[]);
        assert!(!host.exists(), "{user}: {result}");
        let _ = std::fs::remove_file(&host);
    }
}

#[test]
fn a_memory_limit_counts_shared_memory() {
    for (user, wrapper) in users() {
        let workspace = temp_dir("escape-memory");
        let flags = ["--memory-limit", "128"];
        let (result, _) = call_as(&wrapper, "tool_map_shared", json!({"mib": 512}), &workspace, &flags);
        let error = failed(&result).to_lowercase();
        assert!(error.contains("memory"), "{user}: {error}");
        // Within the limit, shared memory works.
        let (result, _) =
            call_as(&wrapper, "tool_map_shared", json!({"mib": 8}), &workspace, &["--memory-limit", "512"]);
        assert_eq!(result["output"], "touched", "{user}: {result}");
    }
}

#[test]
fn lcp_call_applies_the_configs_declarations_as_lcp_serve_does() {
    let workspace = temp_dir("escape-config");
    let victim = workspace.join("victim.txt");
    write(&victim, "kept");
    let config = workspace.join("lcp.toml");
    std::fs::write(
        &config,
        "[tool_policies.tool_chmod]\nread_only = true\n\n\
         [[tools]]\nname = \"remove_file\"\nprovider = \"python\"\nmodule = \"os\"\nfunction = \"remove\"\n\
         description = \"Removes a file\"\nread_only = true\nargs = [{ name = \"path\", type = \"str\" }]\n",
    )
    .unwrap();
    let flags = ["--config", config.to_str().unwrap()];
    let (result, _) = call_as(&[], "tool_chmod", json!({"path": victim}), &workspace, &flags);
    assert!(failed(&result).contains("declares read_only"), "{result}");
    let (result, _) = call_as(&[], "remove_file", json!({"path": victim}), &workspace, &flags);
    assert!(failed(&result).contains("declares read_only"), "{result}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept");
}

#[test]
fn what_the_sandbox_refused_a_subprocess_is_named_in_the_result() {
    for (user, wrapper) in users() {
        let workspace = temp_dir("escape-refused");
        // A read-only tool's shell cannot write: the call returns, and says why.
        let (result, _) = call_as(&wrapper, "tool_shell_write", json!({"name": "out.txt"}), &workspace, &[]);
        assert_ne!(result["output"], "exit 0", "{user}: {result}");
        let refused = result["refused"].to_string();
        let written = workspace.join("out.txt");
        assert!(
            refused.contains("`tool_shell_write` declares read_only: the sandbox refused process")
                && refused.contains(&format!("(`sh`) a write to {}", written.display())),
            "{user}: {result}"
        );
        assert!(!written.exists(), "{user}");
        // An offline tool's child process cannot open a network socket.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (result, _) = call_as(&wrapper, "tool_subprocess_connect", json!({"port": port}), &workspace, &[]);
        assert_ne!(result["output"], "exit 0", "{user}: {result}");
        assert!(
            result["refused"].to_string().contains("declares open_world: false: the sandbox refused process"),
            "{user}: {result}"
        );
        // Any tool's shell writing outside its workspace.
        let outside = temp_dir("escape-refused-outside").join("far.txt");
        let (result, _) = call_as(&wrapper, "tool_shell_write_anywhere", json!({"path": outside}), &workspace, &[]);
        assert!(
            result["refused"].to_string().contains(
                "may write only in its workspace, the temp folder and [sandbox] writable: the sandbox refused process"
            ) && result["refused"].to_string().contains(&outside.display().to_string()),
            "{user}: {result}"
        );
        assert!(!outside.exists(), "{user}");
        // What it may do is not reported.
        let inside = workspace.join("near.txt");
        let (result, _) = call_as(&wrapper, "tool_shell_write_anywhere", json!({"path": inside}), &workspace, &[]);
        assert_eq!(result["output"], "exit 0", "{user}: {result}");
        assert!(result.get("refused").is_none(), "{user}: {result}");
    }
}
