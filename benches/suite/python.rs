//! The bench's own Python environment: `<target>/bench-venv`, made from the interpreter
//! lcp embeds ([`lcp::runtime::python_build`]) with the pinned packages of `tests/python/requirements.txt`
//! (lollms-client among them). Rebuilt only when that file changes.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Python {
    pub executable: PathBuf,
    pub version: String,
    pub lollms_client: String,
}

pub fn ensure(root: &Path, target: &Path) -> Python {
    let venv = target.join("bench-venv");
    let executable = venv.join("bin/python");
    let requirements = root.join("tests/python/requirements.txt");
    let stamp = venv.join("requirements.stamp");
    let wanted = std::fs::read_to_string(&requirements).expect("tests/python/requirements.txt is readable");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) || !executable.exists() {
        // The interpreter lcp embeds (as `build.rs` recorded it).
        let base = PathBuf::from(lcp::runtime::python_build().0);
        eprintln!("creating {} from {} (once) ...", venv.display(), base.display());
        run(Command::new(&base).args(["-m", "venv", "--clear"]).arg(&venv));
        run(Command::new(&executable)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements));
        std::fs::write(&stamp, wanted).expect("venv stamp is writable");
    }
    let version = output(Command::new(&executable).args(["-c", "import platform; print(platform.python_version())"]));
    let lollms_client = output(
        Command::new(&executable)
            .args(["-c", "from importlib import metadata; print(metadata.version('lollms-client'))"]),
    );
    Python { executable, version, lollms_client }
}

fn run(command: &mut Command) {
    let out = command.output().unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn output(command: &mut Command) -> String {
    let out = command.output().unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    assert!(out.status.success(), "{command:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// No Python: for `--lcp-only` runs.
pub fn none() -> Python {
    Python { executable: PathBuf::from("python3"), version: "(not used)".into(), lollms_client: "(not used)".into() }
}
