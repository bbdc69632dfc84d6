//! Where a value of a config or kit file is, and the problems found there: the line
//! of each entry by JSON pointer ([`Located`]), and [`ConfigError`], a problem in a
//! file or a command-line option. Below both `config` and `profile`, which read files
//! with it; it reads none itself.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Level};

/// A problem with the configuration: in a file, or in a command-line option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// At a line of a file (`None`: the file as a whole, or a JSON file).
    At {
        /// The file.
        file: PathBuf,
        /// The line, when the problem has one.
        line: Option<u32>,
        /// What went wrong.
        message: String,
    },
    /// In the value of a command-line option such as `--profile`.
    Option {
        /// The option, as written (`--profile`).
        option: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl ConfigError {
    /// A problem at `line` of `file` (`None`: the file as a whole).
    pub fn at(file: &Path, line: Option<u32>, message: impl Into<String>) -> ConfigError {
        ConfigError::At { file: file.to_path_buf(), line, message: message.into() }
    }

    /// The problem as an error diagnostic (`lcp check`): line 1 when it has none.
    pub fn diagnostic(&self) -> Diagnostic {
        match self {
            ConfigError::At { file, line, message } => {
                Diagnostic::new(file, line.unwrap_or(1), 1, Level::Error, message)
            }
            ConfigError::Option { option, message } => {
                Diagnostic::new(Path::new(option), 1, 1, Level::Error, message.as_str())
            }
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::At { file, line: Some(line), message } => write!(f, "{}:{line}: {message}", file.display()),
            ConfigError::At { file, line: None, message } => write!(f, "{}: {message}", file.display()),
            ConfigError::Option { option, message } => write!(f, "{option}: {message}"),
        }
    }
}

/// Where the entries of a parsed file are: a line per JSON pointer (`/profiles/a/tools/0`).
#[derive(Debug, Clone, Default)]
pub struct Located {
    /// The file parsed.
    pub file: PathBuf,
    pub(crate) lines: HashMap<String, u32>,
}

impl Located {
    /// The line of the entry at `pointer`, else of the nearest entry holding it.
    pub fn line(&self, pointer: &str) -> Option<u32> {
        let mut pointer = pointer;
        loop {
            if let Some(&line) = self.lines.get(pointer) {
                return Some(line);
            }
            pointer = &pointer[..pointer.rfind('/')?];
        }
    }

    /// An error at the entry `pointer`.
    pub fn error(&self, pointer: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(&self.file, self.line(pointer), message)
    }
}

/// The pointer of a key inside the entry at `pointer` (JSON Pointer escaping).
pub fn pointer(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}
