//! What a host decides before any tool runs: the runtime's configuration, where tools
//! run ([`Isolation`]), how worker processes are bounded, and why a runtime could not
//! start. Plain data, built without the `python` feature too (the config file reads
//! it); never starts an interpreter or a process.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::discovery::extract::{self, Library};

/// What the host sets up once. Every field has a default.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Configuration handed to each library's `init_tools_library`, by library key
    /// ([`library_key`]): the folder name of a library folder, else the file stem.
    /// `autonomy_level` and `confirm_handler` are added to it. Default: none.
    pub libraries: BTreeMap<String, Map<String, Value>>,
    /// `autonomy_level` given to every library. Default: [`Autonomy::Safe`].
    pub autonomy_level: Autonomy,
    /// A virtual environment whose site-packages tools may import. Default: the
    /// active one, `$VIRTUAL_ENV`, if set.
    pub venv: Option<PathBuf>,
    /// Parameter names the host injects (left out of schemas); a tool that requires
    /// one gets `None`. Default: [`extract::DEFAULT_INJECTED`].
    pub injected: Vec<String>,
    /// Time limit for each prompt provider in `Runtime::prompt_descriptions`. Default: 10 s.
    pub provider_timeout: Option<Duration>,
    /// Where tools run. Default: [`Isolation::InProcess`], since worker processes need
    /// a program that serves them ([`WorkerSettings::program`]); the `lcp` command
    /// line uses workers unless given `--in-process`.
    pub isolation: Isolation,
    /// Where workers may write, and whether a declaration the kernel cannot enforce
    /// refuses its tool (`[sandbox]`, SPEC §18).
    pub sandbox: SandboxSettings,
}

/// `[sandbox]`: every worker writes only in the workspace, its scratch folder, the
/// system's temp folder and `writable`; a tool whose `read_only` or `open_world: false`
/// the kernel cannot enforce is refused unless `require` is false.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, expecting = "a table")]
pub struct SandboxSettings {
    /// Folders every worker (but a read-only tool's) may write in too, absolute
    /// (`[sandbox] writable` is relative to the config file's folder).
    #[serde(deserialize_with = "super::folders")]
    pub writable: Vec<PathBuf>,
    /// Refuse a tool whose declarations the kernel cannot enforce. Default: true.
    pub require: bool,
    /// Give a tool that leaves `read_only` or `open_world` undeclared the sandbox its
    /// code allows, as `lcp audit` reads it (SPEC §20). Default: false.
    pub infer: bool,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings { writable: Vec::new(), require: true, infer: false }
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            libraries: BTreeMap::new(),
            autonomy_level: Autonomy::Safe,
            venv: std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()).map(PathBuf::from),
            injected: extract::default_injected(),
            provider_timeout: Some(Duration::from_secs(10)),
            isolation: Isolation::InProcess,
            sandbox: SandboxSettings::default(),
        }
    }
}

/// How much a library may do without asking (the reference's `autonomy_level`, given
/// to `init_tools_library`): every action asks, risky actions ask, or nothing asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// `strict`: every action asks.
    Strict,
    /// `safe` (the default): risky actions ask.
    #[default]
    Safe,
    /// `full_access`: nothing asks.
    FullAccess,
}

impl Autonomy {
    /// The names a config file and `lcp call --autonomy` take, in order.
    pub const NAMES: [&'static str; 3] = ["strict", "safe", "full_access"];

    /// The name Python receives.
    pub fn as_str(self) -> &'static str {
        match self {
            Autonomy::Strict => "strict",
            Autonomy::Safe => "safe",
            Autonomy::FullAccess => "full_access",
        }
    }
}

impl std::str::FromStr for Autonomy {
    type Err = String;

    fn from_str(name: &str) -> Result<Autonomy, String> {
        match name {
            "strict" => Ok(Autonomy::Strict),
            "safe" => Ok(Autonomy::Safe),
            "full_access" => Ok(Autonomy::FullAccess),
            other => Err(format!("`{other}` is no autonomy level; expected one of {}", Autonomy::NAMES.join(", "))),
        }
    }
}

impl fmt::Display for Autonomy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where tools run (SPEC §8).
#[derive(Debug, Clone, PartialEq)]
pub enum Isolation {
    /// In this process's interpreter: the fastest calls, for tools the host trusts. A
    /// tool that ends its process ends the host, and a time limit cannot stop a tool
    /// blocked in C code.
    InProcess,
    /// In supervised worker processes: whatever a tool does to its process is one
    /// failed call, and time limits and cancellation always stop it.
    Workers(WorkerSettings),
}

/// How worker processes are started and bounded.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerSettings {
    /// The program started as a worker, as `PROGRAM __worker`: an `lcp` binary, or a
    /// host binary that calls `runtime::worker::main` when given that argument.
    pub program: PathBuf,
    /// Arguments given before `__worker`: `-m lcp_tools` when the program is the
    /// Python of a host that imported lcp as its extension module. Default: none.
    pub arguments: Vec<std::ffi::OsString>,
    /// How many worker processes may run at once; calls beyond that share them (a
    /// worker runs several calls of the same workspace at a time). At least 1.
    pub workers: usize,
    /// Each worker's memory is capped at this many MiB: every page it and what it
    /// starts map, shared memory included (a memory cgroup where lcp may make one,
    /// else its address space).
    pub memory_limit_mib: Option<u64>,
    /// Keep one idle worker started ahead of need while there are fewer than
    /// `workers`: a call then does not wait for a worker to start, not even right after
    /// one died. Costs one idle interpreter; `lcp serve` keeps one, a single `lcp call`
    /// does not.
    pub standby: bool,
    /// Whether workers enter their sandbox (SPEC §18; default `true`). `false` starts
    /// them with nothing confined and no declaration enforced, and listings then claim
    /// none (`sandbox::enforcement`): what the bench
    /// measures the sandbox's cost against. lcp's commands never turn it off.
    pub sandboxed: bool,
}

impl WorkerSettings {
    /// Workers of `program`, one per core, without a memory cap or a standby.
    pub fn new(program: impl Into<PathBuf>) -> WorkerSettings {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        WorkerSettings {
            program: program.into(),
            arguments: Vec::new(),
            workers: cores,
            memory_limit_mib: None,
            standby: false,
            sandboxed: true,
        }
    }

    /// Workers of the running executable (which must serve `__worker`, as `lcp` does),
    /// or of the command [`WorkerSettings::serve_with`] set for this process.
    pub fn this_program() -> Result<WorkerSettings, RuntimeError> {
        if let Some((program, arguments)) = WORKER_COMMAND.get() {
            return Ok(WorkerSettings { arguments: arguments.clone(), ..WorkerSettings::new(program) });
        }
        let program = std::env::current_exe()
            .map_err(|err| RuntimeError::Workers(format!("cannot find lcp's own executable: {err}")))?;
        Ok(WorkerSettings::new(program))
    }
}

/// The command that starts this process's workers when its own executable is not one
/// (a Python host: `python -m lcp_tools`); set once, by whoever loaded lcp.
static WORKER_COMMAND: std::sync::OnceLock<(PathBuf, Vec<std::ffi::OsString>)> = std::sync::OnceLock::new();

impl WorkerSettings {
    /// Makes `program arguments… __worker` the worker command of
    /// [`WorkerSettings::this_program`] in this process. The first command set stays.
    pub fn serve_with(program: PathBuf, arguments: Vec<std::ffi::OsString>) {
        let _ = WORKER_COMMAND.set((program, arguments));
    }
}

/// The virtual environment beside a host's files, for when none is named (`--venv`,
/// `[python] venv`, `$VIRTUAL_ENV`): the first `.venv` holding a `pyvenv.cfg` beside
/// the config file, then in or beside each tools folder, then in or beside the folder
/// of each tool file, in the order given (SPEC §19). MCP clients start lcp without `$VIRTUAL_ENV`.
pub fn venv_beside(config: Option<&Path>, folders: &[PathBuf], files: &[PathBuf]) -> Option<PathBuf> {
    fn parent(path: &Path) -> Option<&Path> {
        path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p })
    }
    let mut places: Vec<&Path> = Vec::new();
    places.extend(config.and_then(parent));
    for folder in folders {
        places.push(folder);
        places.extend(parent(folder));
    }
    for folder in files.iter().filter_map(|file| parent(file)) {
        places.push(folder);
        places.extend(parent(folder));
    }
    places.into_iter().map(|place| place.join(".venv")).find(|venv| venv.join("pyvenv.cfg").is_file())
}

/// The key of a library's configuration: its folder's name for a library folder,
/// else the file stem.
pub fn library_key(library: &Library) -> String {
    library
        .package
        .as_deref()
        .and_then(Path::file_name)
        .map_or_else(|| library.stem.clone(), |name| name.to_string_lossy().into_owned())
}

/// Why a `Runtime` could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The working directory, which relative paths are taken from, cannot be read.
    WorkingDirectory(String),
    /// [`RuntimeConfig::venv`] is not a virtual environment for the embedded Python.
    Venv {
        /// The folder given.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The embedded interpreter or `host.py` could not start: the message, with
    /// Python's traceback when there is one.
    Python(String),
    /// Worker processes cannot be started ([`Isolation::Workers`]).
    Workers(String),
    /// `Runtime::eval`'s expression raised: Python's message.
    Evaluation(String),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::WorkingDirectory(message) => write!(f, "cannot read the working directory: {message}"),
            RuntimeError::Venv { path, message } => write!(f, "{}: {message}", path.display()),
            RuntimeError::Python(message) | RuntimeError::Workers(message) | RuntimeError::Evaluation(message) => {
                f.write_str(message)
            }
        }
    }
}

impl std::error::Error for RuntimeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_beside_the_config_then_the_tools_folder_is_found_without_virtual_env() {
        let root = std::env::temp_dir().join(format!("lcp-venv-beside-{}", std::process::id()));
        let tools = root.join("project/tools");
        std::fs::create_dir_all(&tools).unwrap();
        let config = root.join("host/lcp.toml");
        assert_eq!(venv_beside(Some(&config), std::slice::from_ref(&tools), &[]), None);
        // A `.venv` folder that is no virtual environment is not taken.
        std::fs::create_dir_all(root.join("project/.venv")).unwrap();
        assert_eq!(venv_beside(Some(&config), std::slice::from_ref(&tools), &[]), None);
        std::fs::write(root.join("project/.venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(venv_beside(Some(&config), std::slice::from_ref(&tools), &[]), Some(root.join("project/.venv")));
        std::fs::create_dir_all(root.join("host/.venv")).unwrap();
        std::fs::write(root.join("host/.venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(venv_beside(Some(&config), std::slice::from_ref(&tools), &[]), Some(root.join("host/.venv")));
        let file = tools.join("one.py");
        assert_eq!(venv_beside(None, &[], std::slice::from_ref(&file)), Some(root.join("project/.venv")));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
