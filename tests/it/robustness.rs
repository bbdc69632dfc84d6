//! Garbage in any tools folder gives diagnostics, never a panic, a hang or a crash.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lcp::discovery::registry::{Options, Registry, Sources};

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
        assert!(!diagnostics_with(&registry, &[file, message]).is_empty(), "{file}: {:#?}", registry.diagnostics());
    }
    let output = check_cli(&dir);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn files_deleted_and_created_during_the_scan_never_break_it() {
    let dir = temp_dir("churn");
    for i in 0..200 {
        write(&dir.join(format!("f{i:03}.py")), format!("def tool_f{i:03}():\n    \"\"\"File {i}.\"\"\"\n"));
    }
    // Files the churner never touches: each scan must read every one of them.
    for i in 0..20 {
        write(&dir.join(format!("s{i:03}.py")), format!("def tool_s{i:03}():\n    \"\"\"Steady {i}.\"\"\"\n"));
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
                        let _ = std::fs::write(&path, format!("def tool_f{i:03}():\n    pass\n"));
                    }
                }
                round += 1;
            }
        })
    };
    for _ in 0..20 {
        let registry = load_dir(&dir);
        // A file contributes its own tool or a warning says it was removed, never both
        // and never twice; a file nobody touches always contributes its tool.
        let mut accounted = std::collections::HashSet::new();
        for (library, tool) in registry.tools() {
            assert_eq!(tool.name, format!("tool_{}", library.stem));
            assert!(accounted.insert(library.path.clone()), "{} counted twice", library.path.display());
        }
        for diagnostic in registry.diagnostics() {
            assert!(accounted.insert(diagnostic.path.clone()), "{} counted twice", diagnostic.path.display());
        }
        let names = tool_names(&registry);
        for i in 0..20 {
            assert!(names.contains(&format!("tool_s{i:03}")), "tool_s{i:03} missing: {names:?}");
        }
        assert!(
            registry
                .diagnostics()
                .iter()
                .all(|d| d.level == lcp::diag::Level::Warning
                    && d.message == lcp::discovery::scan::REMOVED_DURING_THE_SCAN),
            "{:#?}",
            registry.diagnostics()
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

/// A file up to `PARSE_FIRST_BYTES` is parsed before its nesting is measured: however
/// deep it is, parsing, refusing and freeing it never overflows an ordinary thread's
/// stack, whether it parses or not; the same code a little shallower is read.
#[test]
fn small_deep_files_are_refused_on_an_ordinary_stack() {
    let deep = [
        format!("x = {}1{}", "(".repeat(15_000), ")".repeat(15_000)),
        "(".repeat(lcp::discovery::source::PARSE_FIRST_BYTES),
        format!("x = {}1", "-".repeat(30_000)),
        format!("x = {}1", "not ".repeat(7_000)),
        format!("f = {}0", "lambda: ".repeat(4_000)),
        format!("x = {}1{}", "a[".repeat(10_000), "]".repeat(10_000)),
        format!("x = {}1{}", "f\"{".repeat(5_000), "}\"".repeat(5_000)),
        format!("match x:\n    case {}1{}:\n        pass\n", "[".repeat(10_000), "]".repeat(10_000)),
    ];
    let file = lcp::discovery::scan::SourceFile { path: "deep.py".into(), package: None };
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            for source in deep {
                assert!(source.len() <= lcp::discovery::source::PARSE_FIRST_BYTES, "{}", &source[..20]);
                let (library, diagnostics) = lcp::discovery::extract::extract(&file, source.clone().into_bytes(), &[]);
                assert!(library.is_none(), "{}", &source[..20]);
                assert!(diagnostics[0].to_string().starts_with("deep.py:"), "{}", diagnostics[0]);
                assert!(diagnostics[0].to_string().contains("nested too deeply"), "{}", diagnostics[0]);
            }
            let shallow = format!("x = {}1{}\ndef tool_a():\n    pass\n", "f\"{".repeat(900), "}\"".repeat(900));
            let (library, diagnostics) = lcp::discovery::extract::extract(&file, shallow.into_bytes(), &[]);
            assert!(library.is_some() && diagnostics.is_empty(), "{diagnostics:?}");
        })
        .unwrap()
        .join()
        .unwrap();
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
    let file = lcp::discovery::scan::SourceFile { path: "generated.py".into(), package: None };
    for _ in 0..3000 {
        let length = 1 + (next() % 40) as usize;
        let source: String = (0..length).map(|_| FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize]).collect();
        let (library, diagnostics) = lcp::discovery::extract::extract(&file, source.clone().into_bytes(), &[]);
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
    write(
        &folder.join(OsStr::from_bytes(b"\xfe.py")),
        "TOOL_POLICY = {\"docs\": \"docs/fe.md\"}\n\ndef tool_fe():\n    \"\"\"FE.\"\"\"\n",
    );
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
    // A declared documentation path is resolved against the file that declares it.
    assert_eq!(manifest["tools"][0]["policy"]["declared"]["docs"], format!("{dir_text}/%FE/docs/fe.md"));
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

const FORMATS: [&str; 6] = ["openai", "openai-responses", "anthropic", "gemini", "mcp", "manifest"];

/// Every command that reads schemas, on `dir`: none may panic, JSON output must parse
/// (serde_json refuses documents nested more than 128 levels), and `expected` tools
/// must be in every format.
fn every_command_reads(dir: &Path, expected: &[&str]) {
    let dir = dir.to_str().unwrap();
    for args in [&["check", dir][..], &["list", "--static", dir]] {
        let output = lcp(args);
        assert!(matches!(output.status.code(), Some(0 | 1)), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let output = lcp(&["check", "--format", "json", dir]);
    assert!(matches!(output.status.code(), Some(0 | 1)), "check --format json");
    stdout_json(&output);
    for format in FORMATS {
        // `--strict` is a usage error where the format has no strict mode.
        for strict in [false, true].into_iter().filter(|strict| !strict || format.starts_with("openai")) {
            let mut args = vec!["export", "--static", "--format", format, dir];
            args.extend(strict.then_some("--strict"));
            let output = lcp(&args);
            assert_eq!(output.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
            let exported = stdout_json(&output).to_string();
            for tool in expected.iter().filter(|_| !strict) {
                assert!(exported.contains(&format!("\"{tool}\"")), "{args:?} lacks {tool}");
            }
        }
    }
}

#[test]
fn deeply_nested_literal_defaults_are_omitted_with_a_warning() {
    let dir = temp_dir("deep-defaults");
    let list = format!("{}{}", "[".repeat(125), "]".repeat(125));
    let dict = format!("{}1{}", "{\"a\": ".repeat(200), "}".repeat(200));
    let shallow = format!("{}{}", "[".repeat(32), "]".repeat(32));
    write(
        &dir.join("deep.py"),
        format!(
            "def tool_list(p: list = {list}, q={list}):\n    \"\"\"Doc.\"\"\"\n\n\
             def tool_shallow(p: list = {shallow}):\n    \"\"\"Doc.\"\"\"\n"
        ),
    );
    // CPython itself refuses more than 200 nested brackets: a file of its own.
    write(&dir.join("deep_dict.py"), format!("def tool_dict(p: dict = {dict}):\n    \"\"\"Doc.\"\"\"\n"));
    let registry = load_dir(&dir);
    assert_eq!(tool_names(&registry), ["tool_list", "tool_shallow", "tool_dict"]);
    assert_eq!(property(&registry, "tool_list", "p"), &serde_json::json!({"type": "array"}));
    assert_eq!(property(&registry, "tool_list", "q"), &serde_json::json!({"type": "array"}));
    assert_eq!(property(&registry, "tool_dict", "p"), &serde_json::json!({"type": "object"}));
    assert!(property(&registry, "tool_shallow", "p")["default"].is_array());
    assert!(required(&registry, "tool_list").is_empty());
    for place in ["/deep.py:1:25", "/deep.py:1:279", "deep_dict.py:1:25"] {
        let found =
            diagnostics_with(&registry, &[place, "warning", "default nested more than 32 levels deep: omitted"]);
        assert_eq!(found.len(), 1, "{place}: {:#?}", registry.diagnostics());
    }
    assert!(!registry.diagnostics().iter().any(lcp::diag::Diagnostic::is_error), "{:#?}", registry.diagnostics());
    every_command_reads(&dir, &["tool_list", "tool_shallow", "tool_dict"]);
    let call = lcp(&["call", "tool_list", dir.to_str().unwrap(), "--args", "{}"]);
    assert_eq!(call.status.code(), Some(0), "{}", String::from_utf8_lossy(&call.stderr));
}

#[test]
fn typed_dict_chain_nested_too_deeply_is_a_warning_whether_names_are_strings_or_not() {
    let dir = temp_dir("typed-dict-chain");
    for (file, quote) in [("names.py", ""), ("strings.py", "\"")] {
        let mut source = String::from("from typing import TypedDict\n\n");
        for i in 0..62 {
            source.push_str(&format!("class T{i}(TypedDict):\n    a: {quote}T{}{quote}\n\n", i + 1));
        }
        let tool = file.trim_end_matches(".py");
        source
            .push_str(&format!("class T62(TypedDict):\n    z: int\n\ndef tool_{tool}(x: T0):\n    \"\"\"Doc.\"\"\"\n"));
        write(&dir.join(file), source);
    }
    write(
        &dir.join("shallow.py"),
        "from typing import TypedDict\n\nclass S(TypedDict):\n    a: int\n\ndef tool_shallow(x: S):\n    \"\"\"Doc.\"\"\"\n",
    );
    let registry = load_dir(&dir);
    for (tool, line) in [("tool_names", "names.py:192:"), ("tool_strings", "strings.py:192:")] {
        assert_eq!(property(&registry, tool, "x"), &serde_json::json!({}), "{tool}");
        assert_eq!(
            diagnostics_with(&registry, &[line, "warning", "nested too deeply"]).len(),
            1,
            "{:#?}",
            registry.diagnostics()
        );
    }
    assert_eq!(property(&registry, "tool_shallow", "x")["properties"]["a"], serde_json::json!({"type": "integer"}));
    every_command_reads(&dir, &["tool_names", "tool_strings", "tool_shallow"]);
}

/// `C0` has two fields of type `C1`, which has two of `C2`...: inlined, 2^24 objects.
#[test]
fn classes_that_double_at_every_step_stop_expanding_with_a_warning() {
    let dir = temp_dir("doubling-classes");
    let mut source = String::from("from typing import TypedDict\n\n");
    for i in 0..24 {
        source.push_str(&format!("class C{i}(TypedDict):\n    a: C{next}\n    b: C{next}\n\n", next = i + 1));
    }
    source.push_str("class C24(TypedDict):\n    z: int\n\ndef tool_doubling(x: C0):\n    \"\"\"Doc.\"\"\"\n");
    write(&dir.join("doubling.py"), source);
    let registry = load_dir(&dir);
    assert_eq!(tool_names(&registry), ["tool_doubling"]);
    let warning = "the types of this tool expand to more than 10000 schemas";
    assert_eq!(
        diagnostics_with(&registry, &["doubling.py", "warning", warning]).len(),
        1,
        "{:#?}",
        registry.diagnostics()
    );
    assert!(registry.tool("tool_doubling").unwrap().1.parameters.as_str().len() < 10_000_000);
}

/// Recursive definitions that use each other three times grow as 3^n when Gemini's
/// lowering inlines them; definitions deep enough add up past what JSON readers take.
#[test]
fn gemini_inlining_stays_bounded_and_a_tool_too_deep_for_a_format_is_left_out() {
    let dir = temp_dir("gemini-inlining");
    let mut source = String::from("from typing import Optional, TypedDict\n\n");
    for i in 0..20 {
        let next = format!("\"C{}\"", i + 1);
        source.push_str(&format!(
            "class C{i}(TypedDict):\n    me: Optional[\"C{i}\"]\n    a: {next}\n    b: {next}\n    c: {next}\n\n"
        ));
    }
    source.push_str("class C20(TypedDict):\n    z: int\n\ndef tool_tripling(x: C0):\n    \"\"\"Doc.\"\"\"\n\n");
    let nest = |inner: &str| format!("{}{inner}{}", "tuple[int, ".repeat(27), "]".repeat(27));
    source.push_str(&format!(
        "class A(TypedDict):\n    me: Optional[\"A\"]\n    x: {}\n\nclass B(TypedDict):\n    me: Optional[\"B\"]\n    y: {}\n\n",
        nest("\"B\""),
        nest("\"A\"")
    ));
    source.push_str("def tool_deep(a: A):\n    \"\"\"Doc.\"\"\"\n\ndef tool_fine(n: int):\n    \"\"\"Doc.\"\"\"\n");
    write(&dir.join("inlining.py"), source);
    let output = lcp(&["export", "--static", "--format", "gemini", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.len() < 50_000_000, "{} bytes", output.stdout.len());
    let names: Vec<String> = stdout_json(&output)["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["tool_tripling", "tool_fine"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "error: tool `tool_deep` cannot be exported to gemini: its schema would be nested more than 120 levels deep"
        ),
        "{stderr}"
    );
    every_command_reads(&dir, &["tool_tripling", "tool_fine"]);
}

/// Found by `examples/fuzz.rs`: reading `B = C.A` inside `class C(Enum)` read the
/// members of `C` again, without end (a stack overflow, the whole process gone).
#[test]
fn an_enum_member_naming_a_member_of_its_own_enum_does_not_recurse() {
    let dir = temp_dir("enum-self-reference");
    write(
        &dir.join("paint.py"),
        "from enum import Enum\n\nclass Color(str, Enum):\n    RED = \"red\"\n    LOOP = Color.RED\n    \
         ALSO = [Color.LOOP]\n\ndef tool_paint(color: Color = Color.LOOP, other: Color = Color.RED):\n    \
         \"\"\"Paints.\"\"\"\n",
    );
    let registry = load_dir(&dir);
    assert_eq!(property(&registry, "tool_paint", "color"), &serde_json::json!({"type": "string", "enum": ["red"]}));
    assert_eq!(
        property(&registry, "tool_paint", "other"),
        &serde_json::json!({"type": "string", "enum": ["red"], "default": "red"})
    );
    every_command_reads(&dir, &["tool_paint"]);
}
