//! The built-in tool libraries: found wherever the binary runs (SPEC §1).
//!
//! In order: `$LCP_DEFAULT_TOOLS`; the source tree's `default_tools/` when it still
//! exists; otherwise the copy embedded in the binary at build time, written once to
//! a per-version cache folder. Only this module knows where that folder is.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `(path relative to default_tools/, contents)` of every embedded file.
const EMBEDDED: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/default_tools.rs"));

/// The folder holding the built-in tool libraries.
pub fn folder() -> Result<PathBuf, DefaultToolsError> {
    if let Some(dir) = std::env::var_os("LCP_DEFAULT_TOOLS") {
        return Ok(PathBuf::from(dir));
    }
    let source_tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("default_tools");
    if source_tree.is_dir() {
        return Ok(source_tree);
    }
    materialise()
}

fn materialise() -> Result<PathBuf, DefaultToolsError> {
    let cache = cache_root().ok_or(DefaultToolsError::NoCacheFolder)?;
    materialise_in(&cache)
}

/// Writes the embedded copy under `cache` (once per content) and returns its folder.
pub fn materialise_in(cache: &Path) -> Result<PathBuf, DefaultToolsError> {
    let target = cache.join(format!("default_tools-{}-{:016x}", env!("CARGO_PKG_VERSION"), fingerprint()));
    if target.is_dir() {
        return Ok(target);
    }
    // Process-wide, as the names it numbers are: they hold the process id.
    static ATTEMPT: AtomicUsize = AtomicUsize::new(0);
    let attempt = ATTEMPT.fetch_add(1, Ordering::Relaxed);
    let staging = cache.join(format!(".default_tools-{}-{attempt}", std::process::id()));
    let write = || -> std::io::Result<()> {
        for (relative, contents) in EMBEDDED {
            let path = staging.join(relative);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(path, contents)?;
        }
        Ok(())
    };
    write().map_err(|err| DefaultToolsError::Write { path: staging.clone(), message: err.to_string() })?;
    // Another process may have won the race; its copy is identical.
    if fs::rename(&staging, &target).is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    Ok(target)
}

/// Why the built-in tools cannot be found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefaultToolsError {
    /// Neither `XDG_CACHE_HOME` nor `HOME` is set, so the embedded copy has nowhere to go.
    NoCacheFolder,
    /// The embedded copy could not be written.
    Write {
        /// The folder being written.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl fmt::Display for DefaultToolsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultToolsError::NoCacheFolder => {
                f.write_str("cannot find a cache folder for the built-in tools (set HOME or XDG_CACHE_HOME)")
            }
            DefaultToolsError::Write { path, message } => {
                write!(f, "{}: cannot write the built-in tools: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for DefaultToolsError {}

fn cache_root() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))?;
    Some(base.join("lcp"))
}

/// FNV-1a over the embedded files: a new build with changed tools gets a new folder.
fn fingerprint() -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for (relative, contents) in EMBEDDED {
        for byte in relative.bytes().chain(contents.iter().copied()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}
