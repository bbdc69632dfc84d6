//! Embeds `default_tools/` in the binary (every file: the tools, their `lcp_tests.toml`
//! and fixtures), so an installed `lcp` has its built-in tools, and can test them, even
//! when the source tree is gone, and records which CPython the binary is
//! linked against: its libpython is found through an rpath (no `LD_LIBRARY_PATH`) and
//! its executable path becomes the embedded interpreter's program name, from which
//! CPython derives `sys.prefix` and the standard library.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    #[cfg(feature = "python")]
    python();
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let folder = root.join("default_tools");
    println!("cargo:rerun-if-changed={}", folder.display());
    let mut files = Vec::new();
    collect(&folder, &folder, &mut files);
    files.sort();
    let mut code = String::from("&[\n");
    for (relative, absolute) in &files {
        println!("cargo:rerun-if-changed={}", absolute.display());
        writeln!(code, "    ({relative:?}, include_bytes!({:?})),", absolute.display().to_string()).unwrap();
    }
    code.push_str("]\n");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("default_tools.rs"), code).expect("OUT_DIR is writable");
}

fn collect(base: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(base, &path, files);
        } else {
            let relative = path.strip_prefix(base).expect("inside base").to_string_lossy().into_owned();
            files.push((relative, path));
        }
    }
}

/// (With the `python` feature.) The interpreter is the one pyo3 was configured with: `$PYO3_PYTHON`, which
/// `.cargo/config.toml` points at `.cargo/python3` (pyenv's, else the PATH's) unless the
/// environment sets it. An interpreter without a shared libpython cannot be embedded
/// by path, so it is refused here with what to do instead.
#[cfg(feature = "python")]
fn python() {
    let config = pyo3_build_config::get();
    let executable =
        config.executable().map(str::to_string).or_else(|| env::var("PYO3_PYTHON").ok()).unwrap_or_default();
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    // The extension module runs in whichever CPython >= 3.10 imports it: nothing is
    // linked or recorded here, the running interpreter is asked (src/runtime/python.rs).
    if env::var_os("CARGO_FEATURE_EXTENSION").is_some() {
        println!("cargo:rustc-env=LCP_PYTHON_EXECUTABLE=");
        println!("cargo:rustc-env=LCP_PYTHON_VERSION=");
        return;
    }
    if !config.shared() {
        panic!(
            "{executable} has no shared libpython, and lcp embeds CPython through one.\n\
             Install a CPython built with --enable-shared \
             (`env PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install 3.11`) \
             and build with PYO3_PYTHON=/path/to/that/python3, or unset PYO3_PYTHON \
             to let .cargo/python3 find one."
        );
    }
    pyo3_build_config::add_libpython_rpath_link_args();
    let version = config.version();
    println!("cargo:rustc-env=LCP_PYTHON_EXECUTABLE={executable}");
    println!("cargo:rustc-env=LCP_PYTHON_VERSION={}.{}", version.major, version.minor);
    println!("cargo:rerun-if-changed=.cargo/python3");
}
