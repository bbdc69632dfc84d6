//! Garbage in any tools folder gives diagnostics, never a panic, a hang or a crash.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lcp::registry::{Options, Registry, Sources};

use crate::support::*;

fn load_dir(dir: &Path) -> Registry {
    Registry::load(&Sources { folders: vec![dir.to_path_buf()], files: vec![] }, &Options::default())
}

/// Runs `lcp check DIR`; fails if it takes minutes (a hang) or dies of a signal/panic.
fn check_cli(dir: &Path) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lcp"))
        .arg("check")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("lcp check hung on {}", dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        matches!(output.status.code(), Some(0) | Some(1)),
        "crashed: {:?}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
    output
}

fn garbage_folder() -> std::path::PathBuf {
    let dir = temp_dir("garbage");
    let mut noise = Vec::with_capacity(1 << 16);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..(1 << 16) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        noise.push(state as u8);
    }
    write(&dir.join("binary.py"), &noise);
    write(&dir.join("nul_bytes.py"), b"def tool_x():\n    pass\n\0\0\0");
    write(&dir.join("brackets.py"), format!("x = {}{}", "(".repeat(100_000), ")".repeat(100_000)));
    write(&dir.join("unclosed.py"), "(".repeat(100_000));
    write(&dir.join("lambdas.py"), format!("f = {}0", "lambda: ".repeat(20_000)));
    write(&dir.join("fstring.py"), format!("x = f\"{{{}1{}}}\"", "[".repeat(5_000), "]".repeat(5_000)));
    write(&dir.join("fstrings.py"), format!("x = {}1{}", "f\"{".repeat(3_000), "}\"".repeat(3_000)));
    write(&dir.join("indent.py"), (0..3000).map(|i| format!("{}if x:\n", " ".repeat(i))).collect::<String>());
    write(&dir.join("invalid_utf8.py"), b"def tool_y():\n    \"\"\"\xc3\x28\"\"\"\n");
    write(&dir.join("empty.py"), b"");
    write(&dir.join("huge.py"), vec![b'#'; 50 * 1024 * 1024]);
    std::fs::create_dir(dir.join("folder.py")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("loop")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("device.py")).unwrap();
    let fifo = dir.join("fifo.py");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    write(&dir.join("good.py"), "def tool_good(a: int):\n    \"\"\"Still found.\"\"\"\n");
    dir
}

#[test]
fn garbage_gives_diagnostics_and_keeps_good_files() {
    let dir = garbage_folder();
    let registry = load_dir(&dir);
    assert_eq!(tool_names(&registry), ["tool_good"]);
    for (file, message) in [
        ("binary.py", "error"),
        ("brackets.py", "nested too deeply"),
        ("unclosed.py", "nested too deeply"),
        ("lambdas.py", "nested too deeply"),
        ("fstring.py", "nested too deeply"),
        ("fstrings.py", "nested too deeply"),
        ("invalid_utf8.py", "not valid UTF-8"),
        ("huge.py", "too large"),
        ("device.py", "not a regular file"),
        ("fifo.py", "not a regular file"),
        ("loop", "loop"),
    ] {
        assert!(!diagnostics_with(&registry, &[file, message]).is_empty(), "{file}: {:#?}", registry.diagnostics);
    }
    let output = check_cli(&dir);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn files_deleted_and_created_during_the_scan_never_break_it() {
    let dir = temp_dir("churn");
    for i in 0..200 {
        write(&dir.join(format!("f{i:03}.py")), format!("def tool_f{i}():\n    \"\"\"File {i}.\"\"\"\n"));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churner = {
        let dir = dir.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for i in (round % 2..200).step_by(2) {
                    let path = dir.join(format!("f{i:03}.py"));
                    if round % 4 < 2 {
                        let _ = std::fs::remove_file(&path);
                    } else {
                        let _ = std::fs::write(&path, format!("def tool_f{i}():\n    pass\n"));
                    }
                }
                round += 1;
            }
        })
    };
    for _ in 0..20 {
        let registry = load_dir(&dir);
        // Every file either contributes its tool or a diagnostic says why not.
        assert!(registry.tools().count() <= 200);
        assert!(
            registry.diagnostics.iter().all(|d| d.message.contains("No such file") || d.message.contains("cannot")),
            "{:#?}",
            registry.diagnostics
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churner.join().unwrap();
}

#[test]
fn deep_but_valid_code_within_the_limit_is_read() {
    let dir = temp_dir("deep-valid");
    let expression = format!("{}1{}", "(".repeat(150), ")".repeat(150));
    write(
        &dir.join("deep.py"),
        format!("X = {expression}\n\ndef tool_deep(a: int = {expression}):\n    \"\"\"Deep default.\"\"\"\n"),
    );
    let registry = load_dir(&dir);
    assert_eq!(tool_names(&registry), ["tool_deep"]);
    assert_eq!(property(&registry, "tool_deep", "a")["default"], 1);
}

/// Thousands of generated near-Python files through the extractor: every one gives a
/// library or a diagnostic, never a panic.
#[test]
fn generated_near_python_never_panics_the_extractor() {
    const FRAGMENTS: &[&str] = &[
        "def tool_x(",
        "a: ",
        "Optional[",
        "list[",
        "dict[str, ",
        "Literal[\"a\", 1",
        "Annotated[int, Field(ge=",
        "]",
        ")",
        "):\n",
        "    \"\"\"Doc.\n\n    Args:\n        a (int): x\n    \"\"\"\n",
        "= None",
        "= (1, -2.5, b'x')",
        ", ",
        "*, ",
        "/, ",
        "**kw",
        "class C(BaseModel):\n    a: int = Field(",
        "class E(Enum):\n    A = auto()\n",
        "@dataclass\n",
        "TOOL_LIBRARY_NAME = ",
        "\"n\" \"m\"",
        "type V = ",
        "V = ",
        "'list[\"V\"]'",
        "from typing import *\n",
        "import typing as t\n",
        "t.",
        "async ",
        "if x:\n    ",
        "try:\n    pass\nexcept E:\n    ",
        "\n",
        "    ",
        "é",
        "\\",
        "tuple[()]",
        "tuple[int, ...]",
        "|",
        "None",
        "C",
        "E.A",
        "lambda: 0",
        "'''",
        "#",
        "\t",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let file = lcp::scan::SourceFile { path: "generated.py".into(), package: None };
    for _ in 0..3000 {
        let length = 1 + (next() % 40) as usize;
        let source: String = (0..length).map(|_| FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize]).collect();
        let (library, diagnostics) = lcp::extract::extract(&file, source.clone().into_bytes(), &[]);
        assert!(library.is_some() || !diagnostics.is_empty(), "{source:?}");
    }
}

/// A file name is bytes: `\xff.py`, a library folder `\xfe/` with its `\xfe.py`, and a
/// file that does not parse. JSON gets their paths percent-encoded (`lcp::path_json`),
/// the registry keeps the real ones.
#[test]
fn file_and_folder_names_that_are_not_utf8_keep_their_paths_in_every_output() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir("non-utf8-names");
    let ff = dir.join(OsStr::from_bytes(b"\xff.py"));
    let folder = dir.join(OsStr::from_bytes(b"\xfe"));
    let broken = folder.join(OsStr::from_bytes(b"b\xfd.py"));
    write(&ff, "def tool_ff(a: int):\n    \"\"\"FF.\"\"\"\n");
    write(&folder.join(OsStr::from_bytes(b"\xfe.py")), "def tool_fe():\n    \"\"\"FE.\"\"\"\n");
    write(&folder.join("a.py"), "def tool_a():\n    \"\"\"A, after the folder's own file.\"\"\"\n");
    write(&broken, "def tool_broken(:\n");
    let registry = load_dir(&dir);
    assert_eq!(tool_names(&registry), ["tool_fe", "tool_a", "tool_ff"]);
    assert_eq!(registry.tool("tool_ff").unwrap().0.path, ff);
    let dir_text = dir.to_str().unwrap();

    let manifest = lcp(&["export", "--format", "manifest", "--static", dir_text]);
    assert_eq!(manifest.status.code(), Some(0), "{}", String::from_utf8_lossy(&manifest.stderr));
    let manifest = stdout_json(&manifest);
    let paths: Vec<std::path::PathBuf> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| lcp::path_json::decode(tool["path"].as_str().unwrap()))
        .collect();
    assert_eq!(paths[2], ff);
    assert_eq!(manifest["tools"][2]["path"], format!("{dir_text}/%FF.py"));
    assert_eq!(lcp::path_json::decode(manifest["diagnostics"][0]["path"].as_str().unwrap()), broken);

    let check = lcp(&["check", "--format", "json", dir_text]);
    assert_eq!(check.status.code(), Some(1), "{}", String::from_utf8_lossy(&check.stderr));
    let report = stdout_json(&check);
    assert_eq!(report["diagnostics"][0]["path"], format!("{dir_text}/%FE/b%FD.py"));
    assert!(report["diagnostics"][0]["message"].as_str().unwrap().contains("syntax error"), "{report}");

    let list = lcp(&["list", "--static", dir_text]);
    assert_eq!(list.status.code(), Some(0), "{}", String::from_utf8_lossy(&list.stderr));
    assert!(String::from_utf8_lossy(&list.stdout).contains("tool_ff"));
}
