//! Diagnostics: the one shape every problem takes, from a folder walk to an export.
//!
//! A diagnostic names a place (`path:line:col`, 1-based), a level and a message.
//! Nothing in `lcp` fails on bad input: every stage returns its value *plus* the
//! diagnostics it found, and the caller decides what an error means; a command or
//! server that shows them writes them to stderr with `print_to_stderr`.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::shown;

/// How bad a problem is: an error fails `lcp check`, a warning does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Something was left out or cannot work.
    Error,
    /// Something was read in a way the author may not expect.
    Warning,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Error => "error",
            Level::Warning => "warning",
        })
    }
}

/// One problem, at a place: printed as `path:line:col: level: message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The file or folder.
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub path: PathBuf,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1, in characters.
    pub col: u32,
    /// Error or warning.
    pub level: Level,
    /// What went wrong, lowercase.
    pub message: String,
}

impl Diagnostic {
    /// A problem at `line`:`col` of `path`.
    pub fn new(path: &Path, line: u32, col: u32, level: Level, message: impl Into<String>) -> Self {
        Diagnostic { path: path.to_path_buf(), line, col, level, message: message.into() }
    }

    /// A problem with a whole file or folder, placed at its first line.
    pub fn at_file(path: &Path, level: Level, message: impl Into<String>) -> Self {
        Diagnostic::new(path, 1, 1, level, message)
    }

    /// Whether this is an [`Level::Error`].
    pub fn is_error(&self) -> bool {
        self.level == Level::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A file name or a message quoting one cannot forge a line of its own.
        let path = self.path.to_string_lossy();
        write!(f, "{}:{}:{}: {}: {}", shown::line(&path), self.line, self.col, self.level, shown::line(&self.message))
    }
}

/// Every diagnostic on stderr, a line each, through one buffer: standard error is
/// unbuffered, and each line would take several writes of its own, thousands of them
/// for a catalog an export leaves many tools out of.
pub(crate) fn print_to_stderr<'d>(diagnostics: impl IntoIterator<Item = &'d Diagnostic>) {
    let mut stderr = std::io::BufWriter::with_capacity(1 << 16, std::io::stderr().lock());
    for diagnostic in diagnostics {
        let _ = writeln!(stderr, "{diagnostic}");
    }
    let _ = stderr.flush();
}
