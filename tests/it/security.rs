//! SPEC §17: nothing lost, nothing escapes. Writes survive a kill at any moment,
//! paths stay in the workspace while another process swaps folders for links,
//! stored secrets never reach a reading tool, what a person approves is what runs,
//! and names cannot forge output lines.
//! Tools: the built-in `workspace_files`, `interaction` and `shell` libraries.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lcp::discovery::registry::{Options, Registry, Sources};
use lcp::runtime::{CallOptions, Isolation, Runtime, RuntimeConfig, ToolResult, WorkerSettings};
use serde_json::{Value, json};

use crate::support::*;

fn built_in(libraries: &[&str]) -> Registry {
    let folders = libraries.iter().map(|name| root().join("default_tools").join(name)).collect();
    Registry::load(&Sources { folders, files: vec![] }, &Options::default())
}

/// A runtime with one worker whose libraries do what they are asked without asking.
fn trusting_worker() -> Runtime {
    let mut settings = WorkerSettings::new(env!("CARGO_BIN_EXE_lcp"));
    settings.workers = 1;
    let config = RuntimeConfig {
        venv: None,
        autonomy_level: lcp::runtime::Autonomy::FullAccess,
        isolation: Isolation::Workers(settings),
        ..RuntimeConfig::default()
    };
    Runtime::new(config).expect("a runtime with a worker process")
}

fn in_workspace(workspace: &Path) -> CallOptions {
    CallOptions { workspace: Some(workspace.to_path_buf()), ..CallOptions::default() }
}

fn output(result: &ToolResult) -> &Value {
    &result.output
}

/// The worker processes of this test process whose working directory is `workspace`:
/// the one running a call there (other tests' workers are elsewhere).
fn worker_in(workspace: &Path) -> Option<u32> {
    let workspace = workspace.canonicalize().ok()?;
    children_of(std::process::id())
        .into_iter()
        .map(|(pid, _)| pid)
        .find(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == workspace))
}

/// A small deterministic generator: the same delays on every run.
struct Delays(u64);

impl Delays {
    fn next_micros(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// Runs `call` in a thread while killing the worker at a random moment once it is in
/// the workspace; returns whether the call was ended by the kill.
fn kill_during(
    runtime: &Arc<Runtime>,
    workspace: &Path,
    delays: &mut Delays,
    call: impl FnOnce(&Runtime) -> ToolResult + Send + 'static,
) -> bool {
    let runtime_for_call = Arc::clone(runtime);
    let caller = std::thread::spawn(move || call(&runtime_for_call));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut killed = false;
    while !caller.is_finished() && Instant::now() < deadline {
        if let Some(pid) = worker_in(workspace) {
            std::thread::sleep(Duration::from_micros(delays.next_micros(40_000)));
            // SAFETY: a signal to a worker process this test's runtime started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let result = caller.join().expect("the call returns");
    killed && !result.ok()
}

#[test]
fn a_kill_at_any_moment_of_a_large_write_or_edit_leaves_the_old_content_or_the_new() {
    let registry = Arc::new(built_in(&["workspace_files"]));
    let runtime = Arc::new(trusting_worker());
    let workspace = temp_dir("security-atomic");
    let file = workspace.join("big.txt");
    let old = "a".repeat(3_500_000);
    let new = "b".repeat(3_500_000);
    let mut delays = Delays(22);
    let mut interrupted = 0;
    for attempt in 0..50 {
        write(&file, &old);
        let (registry, path) = (Arc::clone(&registry), workspace.clone());
        let content = new.clone();
        let edit = attempt % 2 == 1;
        interrupted += usize::from(kill_during(&runtime, &workspace, &mut delays, move |runtime| {
            if edit {
                let args =
                    json!({"path": "big.txt", "old_text": "a".repeat(3_499_999), "new_text": "b".repeat(3_499_999)});
                // The edit leaves the last `a`: its new content is 3,499,999 b's and an a.
                runtime.call(&registry, "tool_edit_file", &args, &in_workspace(&path))
            } else {
                let args = json!({"path": "big.txt", "content": content, "overwrite": true});
                runtime.call(&registry, "tool_write_file", &args, &in_workspace(&path))
            }
        }));
        let after = std::fs::read_to_string(&file).expect("the file is still there");
        let edited = format!("{}a", "b".repeat(3_499_999));
        assert!(
            after == old || after == new || after == edited,
            "attempt {attempt}: {} bytes, starting {:?}",
            after.len(),
            &after[..after.len().min(20)]
        );
    }
    // The kills landed during the calls, not only between them.
    assert!(interrupted >= 10, "only {interrupted} of 50 calls were ended by the kill");
    let leftovers: Vec<_> = std::fs::read_dir(&workspace).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(
        leftovers.iter().all(|name| name == "big.txt" || name.to_string_lossy().starts_with(".lcp-tmp-")),
        "{leftovers:?}"
    );
}

/// Exchanges `inside/` (a folder) with a link to `outside` (atomically: `inside`
/// always exists), again and again until `stop` is set.
fn swapper(workspace: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let link = workspace.join("link");
        symlink(&outside, &link).unwrap();
        let inside = std::ffi::CString::new(workspace.join("inside").into_os_string().into_encoded_bytes()).unwrap();
        let link = std::ffi::CString::new(link.into_os_string().into_encoded_bytes()).unwrap();
        while !stop.load(Ordering::Relaxed) {
            // SAFETY: two NUL-terminated paths this thread owns.
            let swapped = unsafe {
                libc::renameat2(libc::AT_FDCWD, inside.as_ptr(), libc::AT_FDCWD, link.as_ptr(), libc::RENAME_EXCHANGE)
            };
            assert_eq!(swapped, 0, "renameat2: {}", std::io::Error::last_os_error());
            std::thread::sleep(Duration::from_micros(300));
        }
    })
}

#[test]
fn a_folder_swapped_for_a_link_to_outside_is_never_read_or_written_through() {
    let registry = built_in(&["workspace_files"]);
    let runtime = trusting_worker();
    let base = temp_dir("security-race");
    let workspace = base.join("workspace");
    let outside = base.join("outside");
    std::fs::create_dir_all(workspace.join("inside")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    write(&workspace.join("inside/notes.txt"), "inside\n");
    write(&outside.join("notes.txt"), "SECRET outside\n");
    let stop = Arc::new(AtomicBool::new(false));
    let swapping = swapper(workspace.clone(), outside.clone(), Arc::clone(&stop));
    let options = in_workspace(&workspace);
    let (mut reads, mut writes) = (0, 0);
    for attempt in 0..300 {
        let read = runtime.call(&registry, "tool_read_file", &json!({"path": "inside/notes.txt"}), &options);
        assert!(!output(&read).to_string().contains("SECRET"), "attempt {attempt}: {:?}", read.output);
        reads += usize::from(read.ok());
        let name = format!("inside/new-{attempt}.txt");
        let args = json!({"path": name, "content": "x", "create_dirs": false});
        let written = runtime.call(&registry, "tool_write_file", &args, &options);
        writes += usize::from(written.ok());
        let searched = runtime.call(&registry, "tool_search_files", &json!({"query": "SECRET"}), &options);
        assert_eq!(searched.output["output"]["total_matches"], 0, "attempt {attempt}: {:?}", searched.output);
        let listed =
            runtime.call(&registry, "tool_list_files", &json!({"path": "inside", "recursive": true}), &options);
        assert!(!output(&listed).to_string().contains("SECRET"), "{:?}", listed.output);
    }
    stop.store(true, Ordering::Relaxed);
    swapping.join().unwrap();
    let escaped: Vec<_> = std::fs::read_dir(&outside).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(escaped, vec![std::ffi::OsString::from("notes.txt")], "files were created outside");
    assert_eq!(std::fs::read_to_string(outside.join("notes.txt")).unwrap(), "SECRET outside\n");
    // The race was real: some calls found the folder, some the link.
    assert!(reads > 0 && writes > 0, "reads {reads}, writes {writes}");
    assert!(reads < 300 || writes < 300, "the swap never showed: reads {reads}, writes {writes}");
}

#[test]
fn links_inside_the_workspace_are_followed_and_links_out_refused() {
    let registry = built_in(&["workspace_files"]);
    let runtime = trusting_worker();
    let base = temp_dir("security-links");
    let workspace = base.join("workspace");
    std::fs::create_dir_all(workspace.join("docs")).unwrap();
    write(&workspace.join("docs/a.txt"), "alpha\n");
    write(&base.join("secret.txt"), "SECRET\n");
    symlink("docs/a.txt", workspace.join("relative")).unwrap();
    symlink(workspace.join("docs"), workspace.join("absolute")).unwrap();
    symlink("../../secret.txt", workspace.join("docs/up")).unwrap();
    symlink(base.join("secret.txt"), workspace.join("out")).unwrap();
    let options = in_workspace(&workspace);
    for (path, content) in [("relative", "alpha"), ("absolute/a.txt", "alpha"), ("docs/../docs/a.txt", "alpha")] {
        let read = runtime.call(&registry, "tool_read_file", &json!({"path": path}), &options);
        assert_eq!(read.output["output"]["content"], content, "{path}: {:?}", read.output);
    }
    for path in ["docs/up", "out", "../secret.txt", "/etc/hostname", "docs/../../secret.txt"] {
        let read = runtime.call(&registry, "tool_read_file", &json!({"path": path}), &options);
        let error = read.error.clone().unwrap_or_default();
        assert!(error.contains("outside the workspace"), "{path}: {:?}", read.output);
    }
    let written = runtime.call(
        &registry,
        "tool_write_file",
        &json!({"path": "out", "content": "x", "overwrite": true}),
        &options,
    );
    assert!(!written.ok(), "{:?}", written.output);
    assert_eq!(std::fs::read_to_string(base.join("secret.txt")).unwrap(), "SECRET\n");
    let long = runtime.call(&registry, "tool_read_file", &json!({"path": "a/".repeat(2500)}), &options);
    assert!(long.error.unwrap_or_default().contains("at most 4096"), "{:?}", long.output);
}

#[test]
fn a_stored_secret_never_reaches_the_reading_and_searching_tools() {
    let registry = built_in(&["workspace_files", "interaction"]);
    let runtime = trusting_worker();
    runtime.set_user_interaction_handler(|_| lcp::runtime::host_objects::Answer::Given(json!("hunter2-TOKEN")));
    let workspace = temp_dir("security-secret");
    let options = in_workspace(&workspace);
    let stored =
        runtime.call(&registry, "tool_store_secret", &json!({"name": "API_KEY", "purpose": "the test"}), &options);
    assert!(stored.ok(), "{:?}", stored.output);
    assert!(!stored.output.to_string().contains("hunter2"));
    let env = std::fs::read_to_string(workspace.join(".env")).unwrap();
    assert_eq!(env, "API_KEY=\"hunter2-TOKEN\"\n");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(workspace.join(".env")).unwrap().permissions().mode() & 0o777, 0o600);
    let refused = runtime.call(
        &registry,
        "tool_store_secret",
        &json!({"name": "API_KEY", "purpose": "the test", "env_file": "notes.txt"}),
        &options,
    );
    assert!(refused.error.unwrap_or_default().contains("must be named .env"), "{:?}", refused.output);
    for (tool, args) in [
        ("tool_read_file", json!({"path": ".env"})),
        ("tool_read_file", json!({"path": "./sub/../.env"})),
        ("tool_edit_file", json!({"path": ".env", "old_text": "API", "new_text": "X"})),
        ("tool_search_files", json!({"query": "hunter2"})),
        ("tool_search_files", json!({"query": "hunter2", "path": ".env"})),
        ("tool_summarize_file", json!({"path": ".env"})),
        ("tool_describe_image", json!({"image": ".env"})),
    ] {
        let result = runtime.call(&registry, tool, &args, &options);
        let shown = result.output.to_string().replace(r#""query":"hunter2""#, "");
        assert!(!shown.contains("hunter2"), "{tool} {args}: {:?}", result.output);
        if tool == "tool_search_files" {
            assert_eq!(result.output["output"]["total_matches"], 0, "{tool} {args}: {:?}", result.output);
        } else {
            assert!(!result.ok(), "{tool} {args}: {:?}", result.output);
        }
    }
    // A link to the env file is the env file.
    symlink(".env", workspace.join("innocent.txt")).unwrap();
    let through_link = runtime.call(&registry, "tool_read_file", &json!({"path": "innocent.txt"}), &options);
    assert!(!through_link.ok() && !through_link.output.to_string().contains("hunter2"), "{:?}", through_link.output);
}

#[cfg(feature = "external")]
#[test]
fn a_catastrophic_regular_expression_is_answered_at_once() {
    let registry = built_in(&["workspace_files"]);
    let runtime = trusting_worker();
    let workspace = temp_dir("security-regex");
    write(&workspace.join("a.txt"), format!("{}b\n", "a".repeat(50_000)));
    // Backtracking would outlast any limit; a call that hangs times out and fails.
    let options = CallOptions { timeout: Some(Duration::from_secs(60)), ..in_workspace(&workspace) };
    let searched = runtime.call(&registry, "tool_search_files", &json!({"query": "(a+)+$", "regex": true}), &options);
    assert!(searched.ok(), "{:?}", searched.output);
    assert_eq!(searched.output["output"]["total_matches"], 0);
    let refused = runtime.call(&registry, "tool_search_files", &json!({"query": r"(a)\1", "regex": true}), &options);
    assert!(refused.error.unwrap_or_default().contains("Invalid regular expression"), "{:?}", refused.output);
}

#[cfg(feature = "external")]
/// A command that, printed raw, shows only `git status`.
const SPOOFED: &str = "touch pwned #\r\x1b[2K    git status";

#[cfg(feature = "external")]
#[test]
fn at_the_terminal_a_confirmation_shows_control_characters_escaped_and_what_runs() {
    let workspace = temp_dir("security-terminal");
    let command = format!("{}{SPOOFED}", "\n".repeat(80));
    let output = std::process::Command::new(test_python())
        .arg(root().join("tests/python/terminal_session.py"))
        .args(["Allow?", "n", "--", env!("CARGO_BIN_EXE_lcp"), "call", "tool_run_command", "default_tools/shell"])
        .args(["--workspace", workspace.to_str().unwrap(), "--args", &json!({"command": command}).to_string()])
        .current_dir(root())
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("python runs");
    let session: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {output:?}"));
    let terminal = session["terminal"].as_str().unwrap();
    assert!(terminal.contains(r"touch pwned #\r\x1b[2K    git status"), "{terminal:?}");
    assert!(!terminal.contains('\x1b'), "a raw escape reached the terminal: {terminal:?}");
    assert!(terminal.contains("[80 empty lines]"), "{terminal:?}");
    let result: Value = serde_json::from_str(session["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(result["ok"], false, "{result}");
    assert!(!workspace.join("pwned").exists());
}

#[cfg(feature = "external")]
#[test]
fn an_elicited_confirmation_carries_control_characters_escaped() {
    let workspace = temp_dir("security-elicit");
    let folder = workspace.to_str().unwrap();
    for mode in crate::mcp::MODES {
        let steps = json!([crate::mcp::call("tool_run_command", json!({"command": SPOOFED}))]);
        let report = crate::mcp::session_with(
            mode,
            &["--elicit", "decline"],
            &["default_tools/shell", "--workspace", folder],
            steps,
        );
        let message = report["elicitations"][0].as_str().unwrap_or_else(|| panic!("{mode}: {report}"));
        assert!(message.contains(r"touch pwned #\r\x1b[2K    git status"), "{mode}: {message:?}");
        assert!(!message.contains('\x1b') && !message.contains('\r'), "{mode}: {message:?}");
        assert!(!workspace.join("pwned").exists(), "{mode}");
    }
}

#[test]
fn a_file_name_cannot_forge_a_diagnostic_line() {
    let folder = temp_dir("security-forged");
    write(&folder.join("bad\nother.py:1:1: error: FORGED.py"), "def tool_x(:\n");
    let output = lcp(&["check", folder.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(r"bad\nother.py:1:1: error: FORGED.py:"), "{stderr}");
    assert!(!stderr.lines().any(|line| line.starts_with("other.py")), "{stderr}");
}

#[test]
fn with_no_workspace_given_the_root_folder_is_refused() {
    for args in [vec!["call", "tool_list_files"], vec!["serve"]] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
            .args(&args)
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("lcp runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("give --workspace DIR"), "{args:?}: {stderr}");
    }
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["call", "tool_list_files", "--workspace", "/"])
        .current_dir("/")
        .output()
        .expect("lcp runs");
    assert!(listed.status.success(), "an explicit --workspace / is the user's choice: {listed:?}");
}

fn security_fixture() -> Registry {
    Registry::load(&Sources { folders: vec![fixture("security")], files: vec![] }, &Options::default())
}

#[test]
fn a_crash_fails_only_its_own_call_reruns_declared_ones_and_names_the_crasher_to_the_others() {
    let registry = Arc::new(security_fixture());
    let runtime = Arc::new(trusting_worker());
    // Each says it started (as progress) before it sleeps for long.
    let (started, heard) = std::sync::mpsc::channel();
    let calls: Vec<_> = ["tool_steady", "tool_reader", "tool_fragile", "tool_steady", "tool_fragile"]
        .into_iter()
        .map(|tool| {
            let (runtime, registry) = (Arc::clone(&runtime), Arc::clone(&registry));
            let started = std::sync::Mutex::new(started.clone());
            let progress: lcp::runtime::host_objects::ProgressHandler = Arc::new(move |_| {
                let _ = started.lock().unwrap().send(());
            });
            let callbacks = lcp::runtime::host_objects::Callbacks { progress: Some(progress), ..Default::default() };
            let options = CallOptions { callbacks, ..CallOptions::default() };
            std::thread::spawn(move || (tool, runtime.call(&registry, tool, &json!({"seconds": 3}), &options)))
        })
        .collect();
    // The others are running in the one worker when this one crashes it.
    for _ in 0..calls.len() {
        heard.recv_timeout(Duration::from_secs(60)).expect("every call starts");
    }
    let crash = runtime.call(&registry, "tool_crash", &json!({}), &CallOptions::default());
    let crash_error = crash.error.unwrap_or_default();
    assert!(crash_error.contains("`tool_crash` failed") && crash_error.contains("SIGSEGV"), "{crash_error}");
    for call in calls {
        let (tool, result) = call.join().unwrap();
        match tool {
            "tool_steady" | "tool_reader" => assert!(result.ok(), "{tool} runs again: {:?}", result.error),
            _ => {
                let error = result.error.unwrap_or_default();
                assert!(
                    error.contains("`tool_fragile` was ended by another call's crash: `tool_crash` crashed"),
                    "{error}"
                );
                assert!(!error.contains("`tool_fragile` failed"), "{error}");
            }
        }
    }
}

#[test]
fn a_worker_ended_while_a_forked_child_holds_its_channel_is_reported_as_its_end() {
    let registry = security_fixture();
    let runtime = trusting_worker();
    // The forked child sleeps 20 s: a crash seen only when the channel ends would
    // come as a timeout.
    let options = CallOptions { timeout: Some(Duration::from_secs(8)), ..CallOptions::default() };
    let result = runtime.call(&registry, "tool_fork_then_exit", &json!({}), &options);
    let error = result.error.unwrap_or_default();
    assert!(error.contains("exited with status 3") && !error.contains("timed out"), "{error}");
    let next = runtime.call(&registry, "tool_steady", &json!({"seconds": 0}), &CallOptions::default());
    assert!(next.ok(), "{:?}", next.error);
}

/// Processes whose command line has `marker`, for processes started with unique
/// arguments.
fn processes_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let alive = std::fs::read_to_string(entry.path().join("stat"))
                .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')));
            (alive && String::from_utf8_lossy(&cmdline).contains(marker)).then_some(pid)
        })
        .collect()
}

/// Waits (bounded) until no live process has `marker` in its command line.
fn gone(marker: &str) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn processes_a_tool_leaves_behind_end_with_its_call_even_in_a_session_of_their_own() {
    let registry = security_fixture();
    let runtime = trusting_worker();
    let folder = temp_dir("security-leftovers");
    let pid_file = folder.join("pids");
    let result =
        runtime.call(&registry, "tool_leave_processes", &json!({"pid_file": pid_file}), &CallOptions::default());
    assert!(result.ok(), "{:?}", result.error);
    let pids = std::fs::read_to_string(&pid_file).unwrap();
    assert_eq!(pids.split_whitespace().count(), 2, "{pids}");
    for marker in ["61.5", "62.5"] {
        assert_eq!(gone(&format!("sleep\0{marker}")), Vec::<u32>::new(), "sleep {marker} outlived its call");
    }
}

#[test]
fn a_timed_out_shell_command_and_what_it_started_end_with_the_call() {
    let workspace = temp_dir("security-shell-timeout");
    let command = "setsid sleep 98.25 & sleep 97.25; touch after";
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["call", "tool_run_command", "default_tools/shell", "--yes", "--timeout", "2"])
        .args(["--workspace", workspace.to_str().unwrap(), "--args", &json!({"command": command}).to_string()])
        .current_dir(root())
        .output()
        .expect("lcp runs");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(result["error"].as_str().unwrap_or_default().contains("timed out"), "{result}");
    for marker in ["sleep\097.25", "sleep\098.25"] {
        assert_eq!(gone(marker), Vec::<u32>::new(), "{marker:?} outlived the call");
    }
    assert!(!workspace.join("after").exists());
}

/// Makes a FIFO at `path`.
fn fifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path this test owns.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "{}", std::io::Error::last_os_error());
}

#[test]
fn a_config_or_kit_that_is_a_fifo_is_refused_never_read_from() {
    let folder = temp_dir("security-fifo");
    let config = folder.join("lcp.toml");
    fifo(&config);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"));
    command.args(["list", "--config", config.to_str().unwrap()]);
    // A reader that blocked would never end: the limit makes that a failure.
    let output = output_within(&mut command, b"", Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");

    std::fs::remove_file(&config).unwrap();
    write(&config, "[profiles.small]\ntools = [\"tool_list_files\"]\n");
    std::fs::create_dir_all(folder.join("kits")).unwrap();
    fifo(&folder.join("kits/stuck.kit"));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"));
    command.args(["list", "--config", config.to_str().unwrap(), "--profile", "small"]);
    let output = output_within(&mut command, b"", Duration::from_secs(60));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"));
    command.args(["check", "--config", config.to_str().unwrap()]);
    let output = output_within(&mut command, b"", Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("stuck.kit:1:1: error: cannot be read: not a regular file"), "{stderr}");
}

/// The peak resident memory of a process, in MiB (`VmHWM`).
fn peak_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// A session on `url`: its id, once `initialize` and `notifications/initialized` went.
fn open_session(url: &str) -> String {
    let (status, headers, reply) = crate::auth::post(url, None, None, crate::auth::initialize());
    assert_eq!(status, 200, "{reply}");
    let session = crate::auth::header(&headers, "mcp-session-id").to_string();
    crate::auth::post(url, None, Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    session
}

#[test]
fn four_results_of_100_mib_at_once_leave_the_servers_memory_bounded() {
    let server = crate::mcp::HttpServer::start(&["fixtures/security", "--workers", "2"]);
    let session = open_session(&server.url);
    let calls: Vec<_> = ["tool_huge_text", "tool_huge_dict", "tool_huge_text", "tool_huge_dict"]
        .into_iter()
        .enumerate()
        .map(|(id, tool)| {
            let (url, session) = (server.url.clone(), session.clone());
            std::thread::spawn(move || {
                let call = json!({"jsonrpc": "2.0", "id": id + 10, "method": "tools/call",
                                  "params": {"name": tool, "arguments": {}}});
                crate::auth::post(&url, None, Some(&session), call).2
            })
        })
        .collect();
    for call in calls {
        let reply = call.join().unwrap();
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{reply}"));
        assert!(text.len() < 2 * 1024 * 1024, "{} bytes sent", text.len());
        assert!(text.contains("[output cut: 1048576 of 10"), "{}", &text[text.len() - 120..]);
    }
    // Each worker made its 100 MiB; the server itself held a cut text of each.
    let peak = peak_mib(server.child.id());
    assert!(peak < 200, "lcp serve peaked at {peak} MiB");
}

#[test]
fn abandoned_sessions_stay_bounded_the_least_recently_used_idle_one_ending_past_the_cap() {
    let server = crate::mcp::HttpServer::start(&["fixtures/security"]);
    let mut statuses = std::collections::BTreeMap::new();
    let mut sessions = Vec::new();
    for _ in 0..lcp::mcp::http::MAX_SESSIONS + 20 {
        let (status, headers, _) = crate::auth::post(&server.url, None, None, crate::auth::initialize());
        *statuses.entry(status).or_insert(0) += 1;
        sessions.push(crate::auth::header(&headers, "mcp-session-id").to_string());
    }
    // Nobody is locked out: each new session is made, an idle abandoned one ending.
    assert_eq!(statuses, [(200, lcp::mcp::http::MAX_SESSIONS + 20)].into_iter().collect());
    let ping = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    let (oldest, _, _) = crate::auth::post(&server.url, None, Some(&sessions[0]), ping.clone());
    assert_eq!(oldest, 404, "the least recently used session was ended past the cap");
    let (newest, _, _) = crate::auth::post(&server.url, None, Some(sessions.last().unwrap()), ping);
    assert_ne!(newest, 404, "the newest session is kept");
}

#[test]
fn slow_and_idle_clients_are_cut_and_cannot_keep_others_out() {
    let server = crate::mcp::HttpServer::start(&["fixtures/security"]);
    let address = crate::auth::address_of(&server.url);
    // More idle connections than the server keeps, and one that trickles its headers.
    let idle: Vec<std::net::TcpStream> = (0..540).filter_map(|_| std::net::TcpStream::connect(&address).ok()).collect();
    let mut trickling = std::net::TcpStream::connect(&address).unwrap();
    use std::io::{Read, Write};
    // While they are held, a request is answered (at worst a 503), never left hanging.
    let (status, _, _) = crate::auth::post(&server.url, None, None, crate::auth::initialize());
    assert!(status == 200 || status == 503, "{status}");
    // Within the header timeout (10 s), the server closes every one of them.
    let started = Instant::now();
    for byte in b"POST /mcp HTTP/1.1\r\nhost: x".iter().take(15) {
        if trickling.write_all(&[*byte]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let deadline = Duration::from_secs(40);
    let mut closed = 0;
    for mut stream in idle {
        stream
            .set_read_timeout(Some(deadline.saturating_sub(started.elapsed()).max(Duration::from_millis(10))))
            .unwrap();
        let mut buffer = [0u8; 256];
        // A 503 and then the end, or the end at once: either way the server let go.
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => {
                    closed += 1;
                    break;
                }
                Ok(_) => continue,
                Err(_) => break,
            }
        }
    }
    assert_eq!(closed, 540, "idle connections still held after {:?}", started.elapsed());
    trickling.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut rest = Vec::new();
    let _ = trickling.read_to_end(&mut rest);
    let (status, _, _) = crate::auth::post(&server.url, None, None, crate::auth::initialize());
    assert_eq!(status, 200, "after the idle ones were cut, a client is served");
}

#[test]
fn the_database_tools_refuse_pragmas_that_point_sqlite_elsewhere_and_a_nul_in_a_command() {
    let registry = built_in(&["sqlite_database", "shell"]);
    let runtime = trusting_worker();
    let workspace = temp_dir("security-sqlite");
    let options = in_workspace(&workspace);
    let created = runtime.call(
        &registry,
        "tool_execute_statement",
        &json!({"database_name": "shop.db", "statement": "CREATE TABLE t(x)"}),
        &options,
    );
    assert!(created.ok(), "{:?}", created.output);
    for pragma in ["PRAGMA temp_store_directory = '/tmp'", "PRAGMA data_store_directory = '/tmp'"] {
        let refused =
            runtime.call(&registry, "tool_execute_query", &json!({"database_name": "shop", "query": pragma}), &options);
        assert!(refused.error.unwrap_or_default().contains("not allowed"), "{pragma}: {:?}", refused.output);
    }
    let counted = runtime.call(
        &registry,
        "tool_execute_query",
        &json!({"database_name": "shop", "query": "SELECT count(*) FROM t"}),
        &options,
    );
    assert!(counted.ok(), "{:?}", counted.output);
    let nul = runtime.call(&registry, "tool_run_command", &json!({"command": "echo a\u{0}b"}), &options);
    assert!(nul.error.unwrap_or_default().contains("NUL character"), "{:?}", nul.output);
}

#[test]
fn what_a_crashed_workers_tools_left_is_ended_by_lcp_which_adopted_it() {
    // Its output goes to a file: a pipe would stay open as long as the child lives.
    let result = temp_dir("security-adopted").join("result.json");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["call", "tool_crash_leaving_a_child", "fixtures/security"])
        .current_dir(root())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&result).unwrap())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("lcp runs");
    assert_eq!(status.code(), Some(1));
    let stdout = std::fs::read_to_string(&result).unwrap();
    assert!(stdout.contains("SIGSEGV"), "{stdout}");
    assert_eq!(gone("sleep\u{0}63.5"), Vec::<u32>::new(), "the crashed worker's child outlived lcp");
}
