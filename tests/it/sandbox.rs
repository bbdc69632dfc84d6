//! SPEC §18: the declarations the kernel enforces in workers. A read-only tool that
//! writes, a closed-world tool that connects, a tool that writes outside its
//! workspace: each is one failed call naming what it broke, with nothing written and
//! no connection made; what the declarations allow keeps working.
//! Fixture: `fixtures/sandbox/box.py`.

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

const FOLDER: &str = "fixtures/sandbox";

/// `lcp call TOOL fixtures/sandbox --args ARGS --workspace WORKSPACE FLAGS`: the result.
/// Its temp folder (`TMPDIR`) is a folder of its own, so that the other test folders
/// are outside everything it may write in, wherever the checkout is.
fn call_with(tool: &str, args: Value, workspace: &Path, flags: &[&str]) -> Value {
    let args = args.to_string();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["call", tool, FOLDER, "--args", &args, "--workspace", workspace.to_str().unwrap()])
        .args(flags)
        .env("TMPDIR", temp_dir("sandbox-tmp"))
        .current_dir(root())
        .stdin(std::process::Stdio::null())
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("lcp runs");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{tool}: stdout is not JSON ({err}): {}", String::from_utf8_lossy(&output.stderr)))
}

fn call(tool: &str, args: Value, workspace: &Path) -> Value {
    call_with(tool, args, workspace, &[])
}

fn error(result: &Value) -> &str {
    assert_eq!(result["ok"], false, "{result}");
    result["error"].as_str().unwrap_or_default()
}

/// A loopback listener, and whether anything connected to it within a moment.
fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    (listener, port)
}

fn connected(listener: &TcpListener) -> bool {
    // The call has returned: a connection it made is in the backlog already.
    std::thread::sleep(Duration::from_millis(50));
    listener.accept().is_ok()
}

#[test]
fn a_read_only_tool_that_writes_fails_naming_the_declaration_and_writes_nothing() {
    let workspace = temp_dir("sandbox-read-only");
    for target in [workspace.join("inside.txt"), temp_dir("sandbox-elsewhere").join("outside.txt")] {
        let result = call("tool_read_then_write", json!({"path": target}), &workspace);
        let expected = format!("tool_read_then_write declares read_only but tried to write {}", target.display());
        assert_eq!(error(&result), expected, "{result}");
        assert!(!target.exists(), "{} was written", target.display());
    }
}

#[test]
fn the_manifest_mcp_and_lcp_list_say_which_declarations_are_enforced() {
    let manifest = stdout_json(&lcp(&["export", "--format", "manifest", FOLDER]));
    let mcp = stdout_json(&lcp(&["export", "--format", "mcp", FOLDER]));
    let list = String::from_utf8(lcp(&["list", "--wide", FOLDER]).stdout).unwrap();
    for (tool, enforced, shown) in [
        ("tool_read_then_write", json!(["read_only"]), "[read_only]"),
        ("tool_offline_connect", json!(["open_world"]), "[open_world: false]"),
    ] {
        let of = |tools: &Value| tools.as_array().unwrap().iter().find(|t| t["name"] == tool).unwrap().clone();
        assert_eq!(of(&manifest["tools"])["policy"]["enforced"], enforced, "{manifest}");
        assert_eq!(of(&mcp["tools"])["_meta"]["lcp/enforced"], enforced, "{mcp}");
        assert!(list.lines().any(|line| line.starts_with(tool) && line.contains(shown)), "{list}");
    }
    let of = |tools: &Value| tools.as_array().unwrap().iter().find(|t| t["name"] == "tool_write").unwrap().clone();
    assert!(of(&mcp["tools"])["_meta"].get("lcp/enforced").is_none(), "{mcp}");
    assert!(of(&manifest["tools"])["policy"].get("enforced").is_none(), "{manifest}");

    // `lcp serve` says it too, and claims nothing when it runs tools in itself.
    for (flags, claims) in [(&[FOLDER][..], true), (&["--in-process", FOLDER][..], false)] {
        let mut server = crate::mcp::RawServer::start(flags);
        server.initialize();
        server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let tools = server.response(2)["result"]["tools"].clone();
        let of = |tools: &Value| tools.as_array().unwrap().iter().find(|t| t["name"] == "tool_pid_read_only").cloned();
        let meta = of(&tools).unwrap()["_meta"].clone();
        assert_eq!(meta.get("lcp/enforced") == Some(&json!(["read_only"])), claims, "{flags:?}: {tools}");
    }
}

#[test]
fn a_read_only_tool_reads_and_writes_its_own_temporary_files() {
    let workspace = temp_dir("sandbox-read-only-ok");
    write(&workspace.join("notes.md"), "kept");
    let result = call("tool_read_and_scratch", json!({"name": "notes.md"}), &workspace);
    assert_eq!(result["output"], "kept", "{result}");
}

#[test]
fn a_closed_world_tool_that_connects_fails_naming_the_declaration_and_connects_nowhere() {
    let workspace = temp_dir("sandbox-offline");
    let (listener, port) = listener();
    let result = call("tool_offline_connect", json!({"port": port}), &workspace);
    assert_eq!(error(&result), "tool_offline_connect declares open_world: false but tried to open a network socket");
    assert!(!connected(&listener), "the closed-world tool reached the listener");

    // Unix sockets (lcp's own channel is one) keep working.
    let result = call("tool_offline_unix", json!({}), &workspace);
    assert_eq!(result["output"], "ping", "{result}");
}

#[test]
fn a_tool_that_declares_nothing_keeps_its_network_and_writes_only_in_its_workspace() {
    let workspace = temp_dir("sandbox-open");
    let (listener, port) = listener();
    let result = call("tool_connect", json!({"port": port}), &workspace);
    assert_eq!(result["output"], "connected", "{result}");
    assert!(connected(&listener), "the listener saw no connection");

    let inside = workspace.join("inside.txt");
    assert_eq!(call("tool_write", json!({"path": inside}), &workspace)["output"], "wrote");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "written");

    let outside = temp_dir("sandbox-open-elsewhere").join("outside.txt");
    let result = call("tool_write", json!({"path": outside}), &workspace);
    assert!(
        error(&result).starts_with(&format!(
            "tool_write may write only in its workspace, the temp folder and [sandbox] writable, but tried to write {}",
            outside.display()
        )),
        "{result}"
    );
    assert!(!outside.exists());

    // `[sandbox] writable` adds a folder.
    let config = workspace.join("lcp.toml");
    let allowed = outside.parent().unwrap();
    std::fs::write(&config, format!("[sandbox]\nwritable = [{:?}]\n", allowed.to_str().unwrap())).unwrap();
    let result = call_with("tool_write", json!({"path": outside}), &workspace, &["--config", config.to_str().unwrap()]);
    assert_eq!(result["output"], "wrote", "{result}");
    assert!(outside.exists());
}

#[test]
fn tools_of_different_sandboxes_never_share_a_worker() {
    use lcp::discovery::registry::{Options, Registry, Sources};
    use lcp::runtime::{CallOptions, Isolation, Runtime, RuntimeConfig, WorkerSettings};
    let mut settings = WorkerSettings::new(env!("CARGO_BIN_EXE_lcp"));
    settings.workers = 1;
    let config = RuntimeConfig { venv: None, isolation: Isolation::Workers(settings), ..RuntimeConfig::default() };
    let runtime = Runtime::new(config).expect("a runtime with worker processes");
    let registry =
        Registry::load(&Sources { folders: vec![root().join(FOLDER)], files: Vec::new() }, &Options::default());
    let options = CallOptions { workspace: Some(temp_dir("sandbox-pools")), ..CallOptions::default() };
    let pid = |tool: &str| {
        let result = runtime.call(&registry, tool, &json!({}), &options);
        assert!(result.ok(), "{tool}: {result:?}");
        result.output.as_u64().unwrap()
    };
    let (plain, read_only) = (pid("tool_pid"), pid("tool_pid_read_only"));
    assert_ne!(plain, read_only, "a read-only tool ran in the worker of a tool that declares nothing");
    // With one worker a pool, each tool keeps to its own.
    assert_eq!((pid("tool_pid"), pid("tool_pid_read_only")), (plain, read_only));
    runtime.shutdown();
}
