//! The inference rules, each on a small library written for it.

use std::collections::HashMap;
use std::path::PathBuf;

use super::{Capability, ToolAudit, audit};
use crate::discovery::registry::{Options, Registry, Sources};
use crate::host::config::Config;

/// A folder of one test's own under the temp folder, empty, removed when dropped
/// whether the test passes or fails.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let root = std::env::temp_dir().join(format!("lcp-audit-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("a temp folder");
        Scratch(root)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Audits a library folder `lib/` holding `files` (`lib.py` is the library's file).
fn audited(test: &str, files: &[(&str, &str)]) -> HashMap<String, ToolAudit> {
    let scratch = Scratch::new(test);
    let root = scratch.0.clone();
    let folder = root.join("lib");
    std::fs::create_dir_all(&folder).expect("a temp folder");
    for (name, text) in files {
        std::fs::write(folder.join(name), text).expect("a temp file");
    }
    let sources = Sources { folders: vec![root.clone()], files: Vec::new() };
    let registry = Registry::load(&sources, &Options::default());
    let found = audit(&registry, &Config::without_file(), &[]);
    read_with_discovery_agrees(&sources, &found);
    found.tools.into_iter().map(|t| (t.name.clone(), t)).collect()
}

/// The audit of the code discovery read ([`super::load_with_code`]) is the audit
/// of the code read apart, and its JSON text is its JSON value's, pretty-printed.
fn read_with_discovery_agrees(sources: &Sources, apart: &super::Audit) {
    let registry = super::load_with_code(sources, &Options::default());
    assert!(super::Code::of(&registry).is_some());
    let read = audit(&registry, &Config::without_file(), &[]);
    assert_eq!(super::report::json(&read), super::report::json(apart));
    let text = super::report::json_text(&read);
    assert_eq!(text, serde_json::to_string_pretty(&super::report::json(apart)).unwrap());
    // What listings show, from what following each tool found as discovery read it:
    // what the code read apart shows, with `[sandbox] infer` on and off.
    let listed = super::load_with_capabilities(sources, &Options::default());
    let code = super::Code::of(&listed).expect("the code was read");
    for library in listed.libraries() {
        assert!(code.of_file(&library.path).is_none(), "no package is kept");
        assert!(code.reached(&library.path).is_some(), "{}: its tools were followed", library.path.display());
    }
    let unread = Registry::load(sources, &Options::default());
    for infer in [false, true] {
        let mut config = Config::without_file();
        config.runtime.sandbox.infer = infer;
        let shown = super::found(&listed, &config, &[]);
        assert_eq!(shown, super::found(&unread, &config, &[]), "infer: {infer}");
        assert_eq!(shown.len(), apart.tools.len());
    }
}

fn one(test: &str, text: &str) -> HashMap<String, ToolAudit> {
    audited(test, &[("lib.py", text)])
}

fn capabilities(tool: &ToolAudit) -> Vec<&'static str> {
    tool.capabilities.keys().map(|c| c.as_str()).collect()
}

#[test]
fn a_network_call_in_a_sibling_helper_two_calls_deep_is_found_with_its_chain() {
    let tools = audited(
        "sibling",
        &[
            ("lib.py", "from ._net import fetch\n\ndef tool_get(url: str) -> str:\n    return fetch(url)\n"),
            (
                "_net.py",
                "import requests\n\ndef fetch(url):\n    return _raw(url)\n\ndef _raw(url):\n    return requests.get(url).text\n",
            ),
        ],
    );
    let evidence = &tools["tool_get"].capabilities[&Capability::Network][0];
    assert!(evidence.file.ends_with("_net.py"), "{evidence:?}");
    assert_eq!(evidence.line, 7);
    assert_eq!(evidence.via, "requests.get");
    assert_eq!(evidence.chain, ["tool_get", "_net.fetch", "_net._raw"]);
}

#[test]
fn a_module_imported_relatively_is_followed_through_its_attributes() {
    let tools = audited(
        "module",
        &[
            ("lib.py", "from . import _net\n\ndef tool_get(url: str) -> str:\n    return _net.fetch(url)\n"),
            ("_net.py", "import socket\n\ndef fetch(url):\n    return socket.create_connection((url, 80))\n"),
        ],
    );
    assert_eq!(capabilities(&tools["tool_get"]), ["network"]);
}

#[test]
fn an_aliased_import_is_seen_through() {
    let tools = one(
        "alias",
        "import subprocess as sp\nfrom os import system as run\n\n\
         def tool_a() -> str:\n    return sp.check_output(['ls']).decode()\n\n\
         def tool_b() -> int:\n    return run('true')\n",
    );
    assert_eq!(tools["tool_a"].capabilities[&Capability::Subprocess][0].via, "subprocess.check_output");
    assert_eq!(tools["tool_b"].capabilities[&Capability::Subprocess][0].via, "os.system");
}

#[test]
fn an_import_inside_the_function_is_seen() {
    let tools = one("local_import", "def tool_a(p: str) -> None:\n    import shutil as sh\n    sh.rmtree(p)\n");
    assert_eq!(capabilities(&tools["tool_a"]), ["fs_write"]);
    assert!(tools["tool_a"].capabilities[&Capability::FsWrite][0].deletes);
}

#[test]
fn a_dispatch_table_reaches_every_function_it_holds() {
    let tools = one(
        "dispatch",
        "import os, subprocess\n\ndef _rm(x):\n    os.remove(x)\n\ndef _sh(x):\n    subprocess.run(x)\n\n\
         ACTIONS = {'rm': _rm, 'sh': _sh}\n\ndef tool_do(action: str, x: str) -> None:\n    ACTIONS[action](x)\n",
    );
    assert_eq!(capabilities(&tools["tool_do"]), ["fs_write", "subprocess"]);
    assert_eq!(tools["tool_do"].capabilities[&Capability::Subprocess][0].chain, ["tool_do", "ACTIONS", "_sh"]);
}

#[test]
fn a_partial_reaches_the_function_it_wraps() {
    let tools = one(
        "partial",
        "import functools, os\n\ndef _env(name):\n    return os.environ[name]\n\n\
         def tool_home() -> str:\n    get = functools.partial(_env, 'HOME')\n    return get()\n",
    );
    assert_eq!(capabilities(&tools["tool_home"]), ["env"]);
}

#[test]
fn a_decorator_wrapper_is_reached_from_the_function_it_decorates() {
    let tools = one(
        "decorator",
        "def _audit(fn):\n    def wrapper(*a):\n        open('log', 'a').write('x')\n        return fn(*a)\n    return wrapper\n\n\
         @_audit\ndef tool_one(x: int) -> int:\n    return x\n\ndef tool_two(x: int) -> int:\n    return x\n",
    );
    assert_eq!(capabilities(&tools["tool_one"]), ["fs_write"]);
    assert!(tools["tool_two"].capabilities.is_empty(), "{:?}", tools["tool_two"].capabilities);
}

#[test]
fn a_method_of_a_class_of_the_library_is_reached_through_the_instance() {
    let tools = one(
        "method",
        "from pathlib import Path\n\nclass Notes:\n    def save(self, name, text):\n        self._write(name, text)\n\n\
         \x20   def _write(self, name, text):\n        Path(name).write_text(text)\n\n\
         def tool_note(name: str, text: str) -> None:\n    Notes().save(name, text)\n",
    );
    let evidence = &tools["tool_note"].capabilities[&Capability::FsWrite][0];
    assert_eq!(evidence.via, "Path.write_text");
    assert_eq!(evidence.line, 8);
}

#[test]
fn a_pure_tool_has_no_capability() {
    let tools = one(
        "pure",
        "import re, math, json\nfrom collections import Counter\n\n\
         def tool_count(text: str) -> dict:\n    return dict(Counter(re.findall(r'\\w+', text)))\n\n\
         def tool_root(x: float) -> str:\n    return json.dumps(math.sqrt(x))\n",
    );
    for tool in ["tool_count", "tool_root"] {
        assert!(tools[tool].capabilities.is_empty(), "{tool}: {:?}", tools[tool].capabilities);
        assert!(tools[tool].unknown.is_empty(), "{tool}: {:?}", tools[tool].unknown);
    }
}

#[test]
fn an_unknown_package_call_is_listed_not_taken_as_pure() {
    let tools = one(
        "unknown",
        "import acme_sdk as acme\nfrom northwind.api import send\n\n\
         def tool_a(x: str) -> str:\n    return acme.convert(x)\n\ndef tool_b(x: str) -> None:\n    send(x)\n",
    );
    assert_eq!(tools["tool_a"].unknown, ["acme_sdk.convert"]);
    assert_eq!(tools["tool_b"].unknown, ["northwind.api.send"]);
}

#[test]
fn open_with_a_literal_read_mode_reads_and_any_other_mode_writes() {
    let tools = one(
        "open",
        "def tool_r(p: str) -> str:\n    return open(p, 'rb').read().decode()\n\n\
         def tool_default(p: str) -> str:\n    return open(p).read()\n\n\
         def tool_w(p: str) -> None:\n    open(p, mode='a').write('x')\n\n\
         def tool_var(p: str, m: str) -> None:\n    open(p, m).write('x')\n",
    );
    assert_eq!(capabilities(&tools["tool_r"]), ["fs_read"]);
    assert_eq!(capabilities(&tools["tool_default"]), ["fs_read"]);
    assert_eq!(capabilities(&tools["tool_w"]), ["fs_write"]);
    assert_eq!(capabilities(&tools["tool_var"]), ["fs_write"]);
}

#[test]
fn os_open_with_read_flags_reads_and_with_write_flags_writes() {
    let tools = one(
        "os_open",
        "import os\n\ndef tool_r(p: str) -> int:\n    return os.open(p, os.O_RDONLY | os.O_NOFOLLOW)\n\n\
         def tool_w(p: str) -> int:\n    return os.open(p, os.O_WRONLY | os.O_CREAT)\n",
    );
    assert_eq!(capabilities(&tools["tool_r"]), ["fs_read"]);
    assert_eq!(capabilities(&tools["tool_w"]), ["fs_write"]);
}

#[test]
fn eval_computed_imports_getattr_on_a_module_and_unpickling_are_dynamic() {
    let tools = one(
        "dynamic",
        "import importlib, os, pickle\n\n\
         def tool_a(x: str) -> str:\n    return str(eval(x))\n\n\
         def tool_b(x: str) -> str:\n    return importlib.import_module(x).__name__\n\n\
         def tool_c(x: str) -> str:\n    return str(getattr(os, x))\n\n\
         def tool_d(x: str) -> str:\n    return repr(pickle.loads(x.encode()))\n\n\
         def tool_e(x: str) -> str:\n    return str(getattr(x, 'upper'))\n",
    );
    for tool in ["tool_a", "tool_b", "tool_c", "tool_d"] {
        assert_eq!(capabilities(&tools[tool]), ["dynamic"], "{tool}");
    }
    assert!(tools["tool_e"].capabilities.is_empty());
}

#[test]
fn the_environment_native_code_and_sockets_are_found() {
    let tools = one(
        "env_native_net",
        "import os, ctypes, mmap, socket\n\n\
         def tool_env() -> str:\n    return os.getenv('HOME', '')\n\n\
         def tool_native() -> int:\n    return ctypes.CDLL(None).getpid()\n\n\
         def tool_mmap() -> int:\n    return len(mmap.mmap(-1, 10))\n\n\
         def tool_net(h: str) -> None:\n    socket.socket().connect((h, 1))\n",
    );
    assert_eq!(capabilities(&tools["tool_env"]), ["env"]);
    assert_eq!(capabilities(&tools["tool_native"]), ["native"]);
    assert_eq!(capabilities(&tools["tool_mmap"]), ["native"]);
    assert_eq!(capabilities(&tools["tool_net"]), ["network"]);
}

#[test]
fn a_call_at_module_level_belongs_to_every_tool_of_the_module() {
    let tools =
        one("module_level", "import os\n\nTOKEN = os.environ.get('TOKEN')\n\ndef tool_a() -> int:\n    return 1\n");
    assert_eq!(capabilities(&tools["tool_a"]), ["env"]);
}

#[test]
fn a_read_only_tool_that_writes_is_drift() {
    let tools = one(
        "drift",
        "import os\nTOOL_POLICY = {'read_only': True, 'open_world': False, 'destructive': False}\n\n\
         def tool_tidy(p: str) -> None:\n    \"\"\"Only reads.\"\"\"\n    os.remove(p)\n\n\
         def tool_peek(u: str) -> str:\n    import urllib.request\n    return urllib.request.urlopen(u).read()\n\n\
         def tool_size(p: str) -> int:\n    return os.path.getsize(p)\n",
    );
    let drift: Vec<(&str, &str)> =
        tools["tool_tidy"].drift.iter().map(|d| (d.declaration, d.capability.as_str())).collect();
    assert_eq!(drift, [("read_only", "fs_write"), ("destructive", "fs_write")]);
    assert_eq!(tools["tool_tidy"].drift[0].evidence.line, 6);
    let drift: Vec<&str> = tools["tool_peek"].drift.iter().map(|d| d.declaration).collect();
    assert_eq!(drift, ["open_world"]);
    assert!(tools["tool_size"].drift.is_empty());
}

#[test]
fn an_undeclared_key_is_never_drift() {
    let tools = one("undeclared", "import os\n\ndef tool_tidy(p: str) -> None:\n    os.remove(p)\n");
    assert!(tools["tool_tidy"].drift.is_empty());
}

#[test]
fn a_baseline_reports_what_a_change_gained() {
    let mut found = super::Audit {
        tools: one("baseline", "import requests, os\n\ndef tool_fetch(u: str) -> str:\n    return requests.get(u).text + os.getcwd()\n\ndef tool_new() -> str:\n    return os.environ['X']\n").into_values().collect(),
        unreadable: Vec::new(),
    };
    let baseline = serde_json::json!({"tools": [{"name": "tool_fetch", "capabilities": {"fs_read": []}}]});
    super::compare(&mut found, &baseline).expect("a baseline");
    for tool in &found.tools {
        let gained: Vec<&str> = tool.gained.as_ref().expect("compared").keys().map(|c| c.as_str()).collect();
        match tool.name.as_str() {
            "tool_fetch" => assert_eq!(gained, ["network"]),
            _ => assert_eq!(gained, ["env"]),
        }
    }
    let text = super::report::json_text(&found);
    assert_eq!(text, serde_json::to_string_pretty(&super::report::json(&found)).unwrap(), "with what was gained");
    assert!(super::compare(&mut found, &serde_json::json!({"not": "an audit"})).is_err());
}

#[test]
fn a_function_local_name_is_not_taken_for_a_module_function() {
    let tools = one(
        "shadow",
        "import os\n\ndef remove(p):\n    os.remove(p)\n\ndef tool_a(remove: str) -> str:\n    return remove.upper()\n",
    );
    assert!(tools["tool_a"].capabilities.is_empty(), "{:?}", tools["tool_a"].capabilities);
}

#[test]
fn a_read_only_sqlite_uri_reads_and_a_plain_path_writes() {
    let tools = one(
        "sqlite",
        "import sqlite3\n\ndef tool_r(p: str) -> None:\n    uri = 'file:' + p + '?mode=ro'\n    sqlite3.connect(uri, uri=True)\n\n\
         def tool_w(p: str) -> None:\n    sqlite3.connect(p)\n\ndef tool_m() -> None:\n    sqlite3.connect(':memory:')\n",
    );
    assert_eq!(capabilities(&tools["tool_r"]), ["fs_read"]);
    assert_eq!(capabilities(&tools["tool_w"]), ["fs_write"]);
    assert!(tools["tool_m"].capabilities.is_empty());
}

#[test]
fn a_file_that_cannot_be_parsed_is_reported_not_taken_as_pure() {
    let tools = audited(
        "broken",
        &[("lib.py", "from ._h import f\n\ndef tool_a() -> int:\n    return f()\n"), ("_h.py", "def f(:\n")],
    );
    let _ = PathBuf::new();
    assert!(!tools["tool_a"].unknown.is_empty(), "{:?}", tools["tool_a"]);
}

#[test]
fn a_method_of_a_path_is_known_by_the_receiver_being_a_path() {
    let tools = one(
        "path",
        "from pathlib import Path\n\n\
         def tool_move(a: str, b: str) -> None:\n    p = Path(a)\n    p.rename(b)\n\n\
         def tool_open(a: str) -> str:\n    return (Path(a) / 'x').open('w').write('y')\n\n\
         def tool_exists(a: str) -> bool:\n    return Path(a).exists()\n\n\
         def tool_text(a: str) -> str:\n    return a.replace('x', 'y').strip()\n",
    );
    assert_eq!(capabilities(&tools["tool_move"]), ["fs_write"]);
    assert_eq!(tools["tool_move"].capabilities[&Capability::FsWrite][0].via, "Path.rename");
    assert_eq!(capabilities(&tools["tool_open"]), ["fs_write"]);
    assert_eq!(capabilities(&tools["tool_exists"]), ["fs_read"]);
    assert!(tools["tool_text"].capabilities.is_empty());
}

#[test]
fn a_loose_file_reads_the_loose_files_it_imports() {
    let scratch = Scratch::new("loose-imports");
    let root = scratch.0.clone();
    std::fs::write(root.join("tools.py"), "import helpers\n\ndef tool_a(x: str) -> None:\n    helpers.run(x)\n")
        .unwrap();
    std::fs::write(root.join("helpers.py"), "import os\n\ndef run(x):\n    os.system(x)\n").unwrap();
    let sources = Sources { folders: vec![root.clone()], files: Vec::new() };
    let registry = Registry::load(&sources, &Options::default());
    let found = audit(&registry, &Config::without_file(), &[]);
    let tool = found.tools.iter().find(|t| t.name == "tool_a").expect("tool_a");
    assert_eq!(capabilities(tool), ["subprocess"]);
}

#[test]
fn exec_and_spawn_are_processes() {
    let tools = one(
        "exec",
        "import os\n\ndef tool_a(x: str) -> None:\n    os.execvp(x, [x])\n\ndef tool_b(x: str) -> int:\n    return os.spawnlp(os.P_WAIT, x, x)\n",
    );
    assert_eq!(capabilities(&tools["tool_a"]), ["subprocess"]);
    assert_eq!(capabilities(&tools["tool_b"]), ["subprocess"]);
}

#[test]
fn a_module_imported_by_a_literal_name_or_an_attribute_got_by_a_literal_is_seen_through() {
    let tools = one(
        "obfuscated",
        "import os\n\ndef tool_a(x: str) -> int:\n    return __import__('os').system(x)\n\n\
         def tool_b(x: str) -> int:\n    return getattr(os, 'system')(x)\n",
    );
    assert_eq!(tools["tool_a"].capabilities[&Capability::Subprocess][0].via, "os.system");
    assert_eq!(tools["tool_b"].capabilities[&Capability::Subprocess][0].via, "os.system");
}

#[test]
fn a_name_only_named_at_module_level_gives_no_tool_a_capability() {
    let tools = one(
        "named_at_import",
        "import os, subprocess\n\nPIPE = subprocess.PIPE\nHOME = os.environ.get('HOME')\n\n\
         def tool_a(x: int) -> int:\n    return x\n\ndef tool_b() -> int:\n    return subprocess.call(['true'], stdout=PIPE)\n",
    );
    assert_eq!(capabilities(&tools["tool_a"]), ["env"]);
    assert_eq!(capabilities(&tools["tool_b"]), ["subprocess", "env"]);
}

#[test]
fn a_branch_on_a_parameter_runs_only_with_the_value_a_literal_argument_gives() {
    let tools = one(
        "branch",
        "import os\n\ndef _open(p, read_only):\n    if read_only:\n        return open(p)\n    else:\n        return open(p, 'w')\n\n\
         def tool_read(p: str) -> str:\n    return _open(p, read_only=True).read()\n\n\
         def tool_write(p: str) -> None:\n    _open(p, False).write('x')\n\n\
         def tool_either(p: str, ro: bool) -> None:\n    _open(p, ro)\n\n\
         def _changed(p, read_only):\n    read_only = not read_only\n    if read_only:\n        return open(p)\n    return open(p, 'w')\n\n\
         def tool_changed(p: str) -> None:\n    _changed(p, read_only=True)\n",
    );
    assert_eq!(capabilities(&tools["tool_read"]), ["fs_read"]);
    assert_eq!(capabilities(&tools["tool_write"]), ["fs_write"]);
    assert_eq!(capabilities(&tools["tool_either"]), ["fs_read", "fs_write"]);
    assert_eq!(capabilities(&tools["tool_changed"]), ["fs_read", "fs_write"], "a parameter assigned is not a guard");
}

#[test]
#[cfg(feature = "python")]
fn one_tool_of_a_loose_file_is_audited_as_the_whole_audit_audits_it() {
    let scratch = Scratch::new("loose-one-tool");
    let root = scratch.0.clone();
    let files = [
        (
            "runner.py",
            "import shell_helpers\n\ndef tool_run(command: str) -> str:\n    return shell_helpers.run(command)\n",
        ),
        (
            "shell_helpers.py",
            "import subprocess\n\ndef run(command):\n    return subprocess.run(command, shell=True).returncode\n",
        ),
        ("other.py", "import os\n\ndef tool_clean(path: str) -> None:\n    os.remove(path)\n"),
    ];
    for (name, text) in files {
        std::fs::write(root.join(name), text).expect("a temp file");
    }
    let sources = Sources { folders: vec![root.clone()], files: Vec::new() };
    let registry = Registry::load(&sources, &Options::default());
    let whole = audit(&registry, &Config::without_file(), &[]);
    for (library, tool) in registry.tools() {
        let alone = super::audit_tool(library, tool, &tool.name, tool.policy.clone());
        let listed = whole.tools.iter().find(|t| t.name == tool.name).expect("audited");
        assert_eq!(alone.capabilities, listed.capabilities, "{}", tool.name);
        assert_eq!(alone.unknown, listed.unknown, "{}", tool.name);
    }
    let run = whole.tools.iter().find(|t| t.name == "tool_run").expect("audited");
    assert_eq!(capabilities(run), ["subprocess"], "through the sibling it imports");
}

#[test]
fn the_code_discovery_read_is_audited_as_the_code_read_apart() {
    let scratch = Scratch::new("discovery");
    let root = scratch.0.clone();
    let files = [
        (
            "runner.py",
            "import shell_helpers\n\ndef tool_run(command: str) -> str:\n    return shell_helpers.run(command)\n",
        ),
        ("shell_helpers.py", "import subprocess\n\ndef run(command):\n    return subprocess.run(command).returncode\n"),
        ("dotted.py", "import importlib\n\ndef tool_load() -> None:\n    importlib.import_module('odd.name')\n"),
        ("odd.name.py", "import os\n\nos.remove('x')\n"),
        ("relative.py", "from . import helper_init\n\ndef tool_rel() -> None:\n    helper_init()\n"),
        ("__init__.py", "import requests\n\ndef helper_init():\n    requests.get('u')\n"),
        ("broken.py", "def tool_broken(:\n"),
        ("lib/lib.py", "from ._net import fetch\n\ndef tool_get(url: str) -> str:\n    return fetch(url)\n"),
        ("lib/_net.py", "import requests\n\ndef fetch(url):\n    return requests.get(url).text\n"),
        ("lib/__init__.py", "import os\nX = os.environ['X']\n"),
        ("lib/bad.py", "def tool_bad(:\n"),
        ("other/other.py", "import os\n\ndef tool_clean(path: str) -> None:\n    os.remove(path)\n"),
        ("other/.hidden.py", "import os\n\nos.remove('x')\n"),
        ("other/__pycache__/cached.py", "import os\n"),
    ];
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).expect("a temp folder");
        std::fs::write(path, text).expect("a temp file");
    }
    std::os::unix::fs::symlink(root.join("shell_helpers.py"), root.join("other/linked.py")).expect("a link");
    std::os::unix::fs::symlink(root.join("missing.py"), root.join("other/dangling.py")).expect("a link");
    let sources = Sources { folders: vec![root.clone()], files: Vec::new() };
    // The walk lists each folder as the audit would list it apart.
    let listings = crate::discovery::scan::discover_with(&sources.folders, &[], true).listings.expect("asked for");
    let mut folders: Vec<&PathBuf> = listings.keys().collect();
    folders.sort();
    assert_eq!(folders, [&root, &root.join("lib"), &root.join("other")]);
    for (folder, files) in &listings {
        assert_eq!(files, &super::python_files(folder), "{}", folder.display());
    }
    assert_eq!(listings[&root.join("other")], [root.join("other/linked.py"), root.join("other/other.py")]);
    let apart = audit(&Registry::load(&sources, &Options::default()), &Config::without_file(), &[]);
    read_with_discovery_agrees(&sources, &apart);
    let tools: HashMap<&str, &ToolAudit> = apart.tools.iter().map(|t| (t.name.as_str(), t)).collect();
    assert_eq!(capabilities(tools["tool_run"]), ["subprocess"]);
    assert_eq!(capabilities(tools["tool_get"]), ["network"]);
    assert_eq!(capabilities(tools["tool_load"]), ["fs_write"]);
    assert_eq!(capabilities(tools["tool_rel"]), ["network"]);
    let unreadable: Vec<&str> = apart.unreadable.iter().map(|(file, _)| file.rsplit('/').next().unwrap()).collect();
    assert_eq!(unreadable, ["broken.py", "bad.py"]);
}
