//! Diagnostics: the one shape every problem takes, from a folder walk to an export.
//!
//! A diagnostic names a place (`path:line:col`, 1-based), a level and a message.
//! Nothing in `lcp` fails on bad input: every stage returns its value *plus* the
//! diagnostics it found, and the caller decides what an error means.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Error,
    Warning,
    Info,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub path: PathBuf,
    pub line: u32,
    pub col: u32,
    pub level: Level,
    pub message: String,
}

impl Diagnostic {
    pub fn new(path: &Path, line: u32, col: u32, level: Level, message: impl Into<String>) -> Self {
        Diagnostic { path: path.to_path_buf(), line, col, level, message: message.into() }
    }

    /// A problem with a whole file or folder, placed at its first line.
    pub fn at_file(path: &Path, level: Level, message: impl Into<String>) -> Self {
        Diagnostic::new(path, 1, 1, level, message)
    }

    pub fn is_error(&self) -> bool {
        self.level == Level::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}: {}", self.path.display(), self.line, self.col, self.level, self.message)
    }
}
