//! The `lcp` command line (SPEC §7).
//!
//! Owns argument parsing, where output goes and exit codes: JSON for programs on
//! stdout, diagnostics and human messages on stderr; 0 success, 1 errors found (or
//! the tool failed), 2 usage or I/O error. It holds no logic of its own beyond
//! choosing what to print, and the terminal prompts of `lcp call`'s confirm handler
//! and host objects (`cli/host.rs`).
//! Every command reads `--config` and `--profile` into the host's view
//! (`crate::host::view`); `cli/profiles.rs` prints `lcp profile`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};

use crate::diag::{Diagnostic, Level, print_to_stderr};
use crate::discovery::registry::{Descriptions, Options, Registry, Sources};
use crate::export::{self, Format, Layout};
use crate::host::config::{Config, ConfigError, Pos};
use crate::host::profile;
use crate::host::profile::{Choice, Profile};
use crate::host::view::{self, View};
#[cfg(feature = "python")]
use crate::mcp;
use crate::policy::Enforcement;
use crate::runtime;
#[cfg(feature = "python")]
use crate::runtime::{CallOptions, Isolation, WorkerSettings};
#[cfg(feature = "python")]
use crate::runtime::{Runtime, RuntimeConfig};

#[cfg(feature = "python")]
mod host;
mod profiles;
#[cfg(feature = "python")]
mod run;
#[cfg(feature = "python")]
pub(crate) mod testlane;

#[derive(Parser)]
#[command(
    name = "lcp",
    version,
    about = "Turn Python tool files into LLM tool schemas by reading them, and run a tool on demand."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `lcp export --format NAME`: every format, by its own name.
impl ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &Format::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

#[derive(Subcommand)]
enum Command {
    /// List the tools found, as a table fitted to the terminal's width.
    List {
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        /// Never start Python (descriptions are the static ones).
        #[arg(long = "static")]
        static_only: bool,
        /// Cells as wide as their text, whatever the terminal's width.
        #[arg(long)]
        wide: bool,
    },
    /// Print the tools in an LLM API's format, as JSON on stdout.
    Export {
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        #[arg(long, value_enum, default_value_t = Format::Openai { strict: false })]
        format: Format,
        /// OpenAI strict mode: every property required, closed objects, no defaults.
        #[arg(long)]
        strict: bool,
        /// Never start Python (descriptions are the static ones).
        #[arg(long = "static")]
        static_only: bool,
        /// Deferred loading (anthropic, openai-responses): every tool marked
        /// `defer_loading`, found by the model through the provider's tool search.
        #[arg(long)]
        defer: bool,
        /// Tools --defer keeps loaded (not deferred), besides `[export] always_loaded`.
        #[arg(long = "always-loaded", value_name = "TOOLS", value_delimiter = ',', requires = "defer")]
        always_loaded: Vec<String>,
    },
    /// Rank the tools for a query: a table fitted to the terminal, or JSON.
    Search {
        /// What the tool is for, in words (with --queries, the first folder).
        #[arg(value_name = "QUERY", required_unless_present = "queries")]
        query: Option<String>,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        /// How many tools to show at most (1 or more).
        #[arg(long, value_name = "N", default_value_t = 10, value_parser = at_least_one)]
        limit: usize,
        /// `text` (the default) or `json`; --queries writes JSON lines.
        #[arg(long, value_enum)]
        format: Option<CheckFormat>,
        /// Queries from a file (`-`: standard input), one a line, each answered with one
        /// line of JSON, in order, over one discovery.
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
        /// Never start Python (descriptions are the static ones).
        #[arg(long = "static")]
        static_only: bool,
    },
    /// Run one tool and print its result as JSON on stdout; exit 1 when the tool failed.
    Call {
        /// The tool's name, e.g. `tool_read_file`.
        tool: String,
        #[command(flatten)]
        sources: SourceArgs,
        /// The arguments, as a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
        /// The tool's working directory while it runs [default: the current directory, unless it is /].
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        #[command(flatten)]
        host: HostArgs,
        /// Autonomy level given to the libraries [default: the config file's, else safe].
        #[arg(long, value_name = "LEVEL", value_parser = autonomy_level)]
        autonomy: Option<runtime::Autonomy>,
        /// Stop the tool after this many seconds.
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// Allow whatever the tool asks to confirm.
        #[arg(long, conflicts_with = "no")]
        yes: bool,
        /// Refuse whatever the tool asks to confirm.
        #[arg(long)]
        no: bool,
        /// Answers to what the tool asks the user, in advance: a JSON list (in order)
        /// or object (by question title or prompt); `null` declines.
        #[arg(long, value_name = "JSON")]
        answers: Option<String>,
        /// A virtual environment whose packages tools may import [default: $VIRTUAL_ENV].
        #[arg(long, value_name = "DIR")]
        venv: Option<PathBuf>,
        #[command(flatten)]
        isolation: IsolationArgs,
    },
    /// Report every problem in the tool files; exit 1 when one is an error.
    Check {
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
        /// Record the tools' definitions the servers with `pin = true` list now as
        /// their pins (accepting the changes that hid them).
        #[arg(long)]
        accept: bool,
    },
    /// Serve the tools to MCP clients (over stdio unless --http is given).
    Serve {
        #[command(flatten)]
        sources: SourceArgs,
        /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio; a bare port means 127.0.0.1.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        #[command(flatten)]
        host: HostArgs,
        /// The tools' working directory [default: the current directory, unless it is /].
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Longest a tool call may run, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = DEFAULT_SERVE_TIMEOUT)]
        timeout: f64,
        /// Allow what a tool asks to confirm when the client cannot ask the user.
        #[arg(long)]
        yes: bool,
        /// Cut results longer than this many bytes, with a marker.
        #[arg(long, value_name = "BYTES", default_value_t = runtime::DEFAULT_MAX_OUTPUT)]
        max_output: usize,
        #[command(flatten)]
        isolation: IsolationArgs,
        /// Serve --http on an address other machines reach without [auth] (anyone who
        /// reaches it can call the tools).
        #[arg(long)]
        allow_unauthenticated: bool,
        /// A virtual environment whose packages tools may import [default: $VIRTUAL_ENV].
        #[arg(long, value_name = "DIR")]
        venv: Option<PathBuf>,
    },
    /// Call every tool once per representative payload (its `Examples:`, else one
    /// generated from its schema); exit 1 when a call failed.
    Test {
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        /// Only this tool; may be repeated.
        #[arg(long = "tool", value_name = "NAME")]
        tools: Vec<String>,
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
        /// Allow what a tool asks to confirm (otherwise it is refused).
        #[arg(long)]
        yes: bool,
        /// Stop a call after this many seconds.
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        #[command(flatten)]
        isolation: IsolationArgs,
        /// A virtual environment whose packages tools may import [default: $VIRTUAL_ENV].
        #[arg(long, value_name = "DIR")]
        venv: Option<PathBuf>,
    },
    /// What each tool's code can do (network, files, processes, ...), read from its
    /// source, and where that breaks what it declares; exit 1 on drift with --deny-drift.
    Audit {
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
        format: AuditFormat,
        /// Exit 1 when a tool's code breaks one of its declarations.
        #[arg(long)]
        deny_drift: bool,
        /// An earlier `lcp audit --format json`: report what each tool gained since.
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
    },
    /// List, show or create profiles: named selections of tools.
    Profile {
        #[command(subcommand)]
        action: ProfileAction,
    },
}

#[derive(Subcommand)]
enum ProfileAction {
    /// Every profile of the config file and of `kits/`: name, tools, grade, description.
    List {
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
    },
    /// One profile (a name, or a list of tools `a,b,c`): each name and its tool, the grade, the docs.
    Info {
        /// The profile [default: --profile].
        name: Option<String>,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
    },
    /// Write `kits/NAME.kit` beside the config file (beside the current directory without one).
    Create {
        name: String,
        /// The profile's tools.
        #[arg(long, value_name = "TOOL", num_args = 1.., required = true)]
        tools: Vec<String>,
        #[arg(long, value_name = "TEXT")]
        description: Option<String>,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        host: HostArgs,
    },
}

/// What the host configures: `--config`, `--profile`, `--extra-tools` (SPEC §11).
#[derive(Args)]
struct HostArgs {
    /// The host's config file (TOML, or JSON): libraries, profiles, tool declarations,
    /// policy. `lcp call` also takes a JSON object: the tool's library configuration.
    #[arg(long, value_name = "FILE")]
    config: Option<String>,
    /// Only this profile's tools: a profile's name, a list `a,b,c`, or `none`.
    #[arg(long, value_name = "PROFILE")]
    profile: Option<String>,
    /// Tools added to the profile; `--profile none --extra-tools a,b` is only those.
    #[arg(long = "extra-tools", value_name = "TOOLS", value_delimiter = ',', requires = "profile")]
    extra_tools: Vec<String>,
}

/// Where tools run (SPEC §8).
#[derive(Args)]
struct IsolationArgs {
    /// Run tools inside lcp's own process: faster calls, but a tool that crashes ends
    /// lcp, and a timeout cannot stop a tool blocked in C code.
    #[arg(long, conflicts_with_all = ["workers", "memory_limit"])]
    in_process: bool,
    /// How many worker processes run tools at once [default: the number of cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: Option<u32>,
    /// Cap each worker process's memory at this many MiB; a tool going over fails.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(16..=1 << 30))]
    memory_limit: Option<u64>,
}

#[derive(Args)]
struct SourceArgs {
    /// Tool folders, scanned in the order given. None (and no --file): the built-in tools.
    folders: Vec<PathBuf>,
    /// An explicit tool file; may be repeated.
    #[arg(long = "file", value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// `lcp audit --format`.
#[derive(Clone, Copy, ValueEnum)]
enum AuditFormat {
    Text,
    Json,
    Sarif,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckFormat {
    Text,
    Json,
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    #[cfg(feature = "python")]
    if runtime::worker::is_worker_invocation() {
        return runtime::worker::main();
    }
    main_with(std::env::args_os())
}

/// Runs the command line `args` (the program's name first), as the console script
/// `lcp` of the Python package does with `sys.argv`.
pub fn main_with(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli.command) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("lcp: {message}");
            ExitCode::from(2)
        }
    }
}

pub(crate) use crate::table::{Cut, cell, columns, counted, fit, terminal_width};

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::List { sources, host, static_only, wide } => {
            let (registry, config, profile, _servers) =
                load_host_reading(&sources, &host, servers(static_only), Code::Capabilities)?;
            print_to_stderr(registry.diagnostics());
            let view = expose(&registry, &config, profile.as_ref())?;
            let mut descriptions =
                if static_only { Descriptions::default() } else { prompt_descriptions(&view.registry) };
            vouch(&view, &config, enforced_by_default(), &mut descriptions);
            print_stdout(&table(&view.registry, &descriptions, if wide { None } else { terminal_width() }))?;
            exit_without_freeing((registry, view));
            Ok(ExitCode::SUCCESS)
        }
        Command::Export { sources, host, format, strict, static_only, defer, always_loaded } => {
            if strict && !format.has_strict_mode() {
                return Err(format!(
                    "--strict is OpenAI's strict mode: --format openai and openai-responses have it, {format} has not"
                ));
            }
            let code = match format {
                Format::Manifest | Format::Mcp { .. } => Code::Capabilities,
                _ => Code::Unread,
            };
            let (mut registry, config, profile, _servers) =
                load_host_reading(&sources, &host, servers(static_only), code)?;
            print_to_stderr(registry.diagnostics());
            let mut view = expose(&registry, &config, profile.as_ref())?;
            let descriptions = if static_only { Descriptions::default() } else { prompt_descriptions(&view.registry) };
            let descriptions = export_descriptions(&view, &config, format, enforced_by_default(), descriptions);
            // The code read for the audit has been vouched for: the export needs it no more.
            registry.forget_read();
            view.registry.forget_read();
            // Written one tool at a time: the document is never held whole.
            let format = match format {
                Format::Mcp { .. } => Format::Mcp { inline_refs: config.mcp.inline_refs },
                other => other.strict(strict),
            };
            if defer {
                // `[export] always_loaded` and `--always-loaded` together; `a, b` as `a,b`,
                // and `a,,b` as `a,b`.
                let given = always_loaded.iter().map(|name| name.trim()).filter(|name| !name.is_empty());
                let named: Vec<(&str, &str)> = given
                    .map(|name| ("--always-loaded", name))
                    .chain(config.export.always_loaded.iter().map(|name| ("`export.always_loaded`", name.as_str())))
                    .collect();
                warn_of_unshown(&view, &registry, &named);
                let always_loaded: Vec<String> = named.iter().map(|(_, name)| name.to_string()).collect();
                let deferred = export::export_deferred(&view.registry, &descriptions, format, &always_loaded)?;
                if deferred.deferred == 0 && deferred.loaded > 0 {
                    eprintln!(
                        "lcp: warning: --defer: every tool is always loaded, so nothing is deferred and no tool search tool is added"
                    );
                }
                print_stdout(&pretty(&deferred.document))?;
                print_to_stderr(&deferred.problems);
                exit_without_freeing((registry, view, deferred));
                return Ok(ExitCode::SUCCESS);
            }
            let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            let shown = &view.registry;
            let written = export::write(shown, &descriptions, format, Layout::Pretty, &mut stdout)
                .and_then(|problems| stdout.write_all(b"\n").and_then(|()| stdout.flush()).map(|()| problems));
            match written {
                Ok(problems) => print_to_stderr(&problems),
                // A closed pipe (`lcp export | head`) is the reader's choice, not an error.
                Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(err) => return Err(format!("cannot write to stdout: {err}")),
            }
            exit_without_freeing((registry, view, descriptions, config));
            Ok(ExitCode::SUCCESS)
        }
        Command::Search { query, mut sources, host, limit, format, queries, static_only } => {
            // With --queries, a positional argument is a folder.
            let query = match (query, &queries) {
                (Some(folder), Some(_)) => {
                    sources.folders.insert(0, PathBuf::from(folder));
                    None
                }
                (query, _) => query,
            };
            let asked = match &queries {
                Some(_) if format == Some(CheckFormat::Text) => {
                    return Err("--queries writes one line of JSON a query: --format text is for one query".to_string());
                }
                Some(file) => Some(read_queries(file)?),
                None if query.as_deref().is_none_or(|query| query.trim().is_empty()) => {
                    return Err("the query is empty: give the words to search for, or --queries FILE".to_string());
                }
                None => None,
            };
            let (registry, config, profile, _servers) = load_host_with(&sources, &host, servers(static_only))?;
            print_to_stderr(registry.diagnostics());
            let view = expose(&registry, &config, profile.as_ref())?;
            let descriptions = if static_only { Descriptions::default() } else { prompt_descriptions(&view.registry) };
            let index = crate::host::search::Index::build(&view.registry, &descriptions);
            match (asked, query) {
                (Some(asked), _) => {
                    let mut out = String::new();
                    for query in asked {
                        out.push_str(&json!({ "tools": index.search(&query, limit) }).to_string());
                        out.push('\n');
                    }
                    // No query, no line.
                    if !out.is_empty() {
                        write_out(&mut std::io::stdout().lock(), out.trim_end_matches('\n'))?;
                    }
                }
                (None, query) => {
                    let hits = index.search(query.as_deref().unwrap_or_default(), limit);
                    match format.unwrap_or(CheckFormat::Text) {
                        CheckFormat::Json => print_stdout(&pretty(&json!({ "tools": hits })))?,
                        CheckFormat::Text => print_stdout(&search_table(&hits, terminal_width()))?,
                    }
                }
            }
            exit_without_freeing((registry, view, index));
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(not(feature = "python"))]
        Command::Call { .. } => Err(without_python("call")),
        #[cfg(not(feature = "python"))]
        Command::Serve { .. } => Err(without_python("serve")),
        #[cfg(not(feature = "python"))]
        Command::Test { .. } => Err(without_python("test")),
        #[cfg(feature = "python")]
        command @ (Command::Call { .. } | Command::Serve { .. } | Command::Test { .. }) => run::command(command),
        Command::Check { sources, host, format, accept } => {
            let servers = if accept { Servers::Accept } else { Servers::Start };
            let (registry, config, profile, _servers) = load_host_with(&sources, &host, servers)?;
            let mut diagnostics = registry.diagnostics().to_vec();
            diagnostics.extend(config_problems(&registry, &config, profile.as_ref()));
            let tools = registry.tools().count();
            let (prompts, resources) = (registry.prompts().count(), registry.resources().count());
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let warnings = diagnostics.iter().filter(|d| d.level == Level::Warning).count();
            match format {
                CheckFormat::Text => {
                    print_to_stderr(&diagnostics);
                    let mut members = String::new();
                    if prompts + resources > 0 {
                        members = format!(
                            ", {}, {}",
                            counted(prompts, "prompt", "prompts"),
                            counted(resources, "resource", "resources")
                        );
                    }
                    eprintln!(
                        "{}, {}{members}, {}, {}",
                        counted(libraries_serving(&registry), "library", "libraries"),
                        counted(tools, "tool", "tools"),
                        counted(errors, "error", "errors"),
                        counted(warnings, "warning", "warnings")
                    );
                }
                CheckFormat::Json => {
                    let report = json!({
                        "libraries": registry.libraries().len(),
                        "tools": tools,
                        "prompts": prompts,
                        "resources": resources,
                        "errors": errors,
                        "warnings": warnings,
                        "diagnostics": diagnostics,
                    });
                    print_stdout(&pretty(&report))?;
                }
            }
            exit_without_freeing(registry);
            Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Audit { sources, host, format, deny_drift, baseline } => {
            audit(&sources, &host, format, deny_drift, baseline.as_deref())
        }
        Command::Profile { action } => profiles::run(action),
    }
}

/// `lcp audit` (SPEC §20): every tool of the sources and the config, the profile's
/// when one is chosen.
fn audit(
    sources: &SourceArgs,
    host: &HostArgs,
    format: AuditFormat,
    deny_drift: bool,
    baseline: Option<&Path>,
) -> Result<ExitCode, String> {
    let baseline = match baseline {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
            let value: Value = serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?;
            Some((path, value))
        }
        None => None,
    };
    let (registry, config, profile, _servers) = load_host_reading(sources, host, Servers::Start, Code::Whole)?;
    print_to_stderr(registry.diagnostics());
    let view = expose(&registry, &config, profile.as_ref())?;
    let mut audit = crate::host::audit::audit(&view.registry, &config, &view.routes);
    if let Some((path, value)) = baseline {
        crate::host::audit::compare(&mut audit, &value).map_err(|err| format!("{}: {err}", path.display()))?;
    }
    let text = match format {
        AuditFormat::Text => crate::host::audit::report::text(&audit, terminal_width()),
        AuditFormat::Json => crate::host::audit::report::json_text(&audit),
        AuditFormat::Sarif => pretty(&crate::host::audit::report::sarif(&audit)),
    };
    print_stdout(&text)?;
    let drift = audit.has_drift();
    exit_without_freeing((registry, view));
    Ok(if deny_drift && drift { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `--autonomy LEVEL`: one of [`runtime::Autonomy::NAMES`].
fn autonomy_level(name: &str) -> Result<runtime::Autonomy, String> {
    name.parse()
}

/// The usage error of a command that runs tools, in a build without Python.
#[cfg(not(feature = "python"))]
fn without_python(command: &str) -> String {
    format!(
        "`lcp {command}` runs Python tools, and this lcp was built without the `python` feature \
         (`cargo build --no-default-features`); build it with the feature (the default) to run tools"
    )
}

/// The registry, the config (from `--config`, else none) and the profile chosen.
/// A config file or profile that cannot be read is a usage error naming where.
fn load_host(sources: &SourceArgs, host: &HostArgs) -> Result<(Registry, Config, Option<Profile>), String> {
    let (registry, config, profile, _) = load_host_with(sources, host, Servers::Static)?;
    Ok((registry, config, profile))
}

/// Whether the config's MCP servers are started to list their tools (SPEC §14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Servers {
    /// Started: their tools are listed (and callable while the value lives).
    Start,
    /// Started, and the definitions the servers with `pin = true` list are recorded
    /// as their pins (`lcp check --accept`).
    Accept,
    /// Not started (`--static`): their tools are left out, with one note naming them.
    Static,
}

/// The connected MCP servers of a config, while their tools are listed or called.
#[cfg(feature = "python")]
pub(crate) type Upstreams = Option<std::sync::Arc<crate::mcp::upstream::Upstreams>>;
/// Without the MCP client there are never any.
#[cfg(not(feature = "python"))]
pub(crate) type Upstreams = Option<std::convert::Infallible>;

/// The registry with every source of the config (SPEC §14): its `[[tools]]`, the
/// folders and files, then its MCP servers' tools when `servers` says to start them.
fn load_host_with(
    sources: &SourceArgs,
    host: &HostArgs,
    servers: Servers,
) -> Result<(Registry, Config, Option<Profile>, Upstreams), String> {
    load_host_reading(sources, host, servers, Code::Unread)
}

/// [`load_host_with`], reading as much of the files' code for the audit as `code`
/// says as they are parsed, for a command that audits its tools.
fn load_host_reading(
    sources: &SourceArgs,
    host: &HostArgs,
    servers: Servers,
    code: Code,
) -> Result<(Registry, Config, Option<Profile>, Upstreams), String> {
    let mut config = match &host.config {
        Some(path) => Config::read(Path::new(path)).map_err(|errors| problems_text(&errors))?,
        None => Config::without_file(),
    };
    // The standalone binary finds a `.venv` beside the tools; the extension module runs
    // tools in its host's environment.
    if cfg!(not(feature = "extension")) && config.runtime.venv.is_none() {
        config.runtime.venv = runtime::venv_beside(config.file(), &sources.folders, &sources.files);
    }
    let profile = match choice(host) {
        Some(choice) => Some(choice.profile(&config.profiles).map_err(|err| err.to_string())?),
        None => None,
    };
    // The servers start while the folders are read: neither waits for the other.
    let (loaded, started) = std::thread::scope(|scope| {
        let started = scope.spawn(|| start_servers(&config, servers));
        let loaded = load(sources, code);
        (loaded, started.join().expect("starting the MCP servers does not panic"))
    });
    let mut registry = loaded?;
    if !config.tools.is_empty() || !config.virtual_tools.is_empty() {
        let (libraries, diagnostics) = config.defined_libraries(&registry.options().injected);
        registry.define(libraries, diagnostics);
    }
    // The command line has no resolver: every virtual tool is hidden (`lcp check` says so).
    let mut registry = if config.virtual_tools.is_empty() { registry } else { registry.resolved(|_| false) };
    let upstreams = attach_servers(&mut registry, started);
    Ok((registry, config, profile, upstreams))
}

/// The registry, config, profile and MCP servers of a Python `Toolbox`
/// (src/pymodule.rs): the sources, `--config` and `--profile` of the command line.
#[cfg(feature = "extension")]
pub(crate) fn load_for_python(
    folders: Vec<PathBuf>,
    files: Vec<PathBuf>,
    config: Option<String>,
    profile: Option<String>,
) -> Result<(Registry, Config, Option<Profile>, Upstreams), String> {
    let host = HostArgs { config, profile, extra_tools: Vec::new() };
    load_host_with(&SourceArgs { folders, files }, &host, Servers::Start)
}

/// The config's MCP servers, started and listed, with their tools and problems.
#[cfg(feature = "python")]
type Started =
    Option<(crate::mcp::upstream::Upstreams, Vec<crate::discovery::extract::Library>, Vec<crate::diag::Diagnostic>)>;
/// Without the MCP client none are ever started.
#[cfg(not(feature = "python"))]
type Started = ();

#[cfg(feature = "python")]
fn start_servers(config: &Config, servers: Servers) -> Started {
    if config.servers.is_empty() {
        return None;
    }
    if servers == Servers::Static {
        eprintln!(
            "lcp: note: the MCP servers {} are not started (--static): their tools are left out",
            crate::host::config::server_names(&config.servers)
        );
        return None;
    }
    Some(crate::mcp::upstream::Upstreams::connect_with(&config.servers, servers == Servers::Accept))
}

/// The started servers' tools added after every other source's (SPEC §14).
#[cfg(feature = "python")]
fn attach_servers(registry: &mut Registry, started: Started) -> Upstreams {
    let (upstreams, libraries, diagnostics) = started?;
    registry.set_server_tools(libraries, diagnostics);
    Some(std::sync::Arc::new(upstreams))
}

#[cfg(not(feature = "python"))]
fn start_servers(config: &Config, _: Servers) -> Started {
    if !config.servers.is_empty() {
        eprintln!(
            "lcp: note: the MCP servers {} are not started: this lcp is built without the `python` feature, which has the MCP client",
            crate::host::config::server_names(&config.servers)
        );
    }
}

#[cfg(not(feature = "python"))]
fn attach_servers(_: &mut Registry, (): Started) -> Upstreams {
    None
}

fn servers(static_only: bool) -> Servers {
    if static_only { Servers::Static } else { Servers::Start }
}

fn choice(host: &HostArgs) -> Option<Choice> {
    let profile = host.profile.clone()?;
    Some(Choice { profile, extra_tools: host.extra_tools.clone() })
}

/// The view of the tools; a profile with problems is a usage error listing them.
pub(crate) fn expose(registry: &Registry, config: &Config, profile: Option<&Profile>) -> Result<View, String> {
    let view = view::view(registry, config, profile);
    match &view.selection {
        Some(selection) if !selection.problems.is_empty() => Err(problems_text(&selection.problems)),
        _ => Ok(view),
    }
}

fn problems_text(errors: &[ConfigError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\nlcp: ")
}

fn print_problems(errors: &[ConfigError]) {
    for error in errors {
        eprintln!("lcp: {error}");
    }
}

/// Warns of each name `(where, name)` that names no tool `view` shows: a tool it
/// shows under another name (a profile's), one the policy or the profile leaves out,
/// or one that does not exist.
fn warn_of_unshown(view: &View, registry: &Registry, named: &[(&str, &str)]) {
    for &(given, name) in named.iter().filter(|(_, name)| view.registry.tool(name).is_none()) {
        let shown_as = view.routes.iter().find(|(_, tool)| tool == name).map(|(shown, _)| shown);
        let refused = view.refused.iter().find(|(tool, _)| tool == name);
        let why = match (shown_as, refused, registry.tool(name)) {
            (Some(shown), _, _) => format!("the tool is shown as `{shown}`"),
            (None, Some((_, rule)), _) => format!("the policy leaves the tool out ({rule})"),
            (None, None, Some(_)) => "the profile leaves the tool out".to_string(),
            (None, None, None) => {
                format!("no tool has that name{}", crate::suggest::did_you_mean(&view.registry.closest_names(name)))
            }
        };
        eprintln!(
            "lcp: warning: {given} `{name}` names no tool of this export, so nothing is kept loaded for it: {why}"
        );
    }
}

/// A warning about the config file's entry at `at` (its first line when unknown).
fn placed(file: &Path, at: Option<Pos>, message: String) -> Diagnostic {
    let (line, column) = at.map_or((1, 1), |at| (at.line, at.column));
    Diagnostic::new(file, line, column, Level::Warning, message)
}

/// `lcp check`'s view of the config: every profile's problems (the chosen one's
/// only, with --profile) as errors, and `[tool_policies.NAME]` tables, `[export]
/// always_loaded` and `[mcp] always_list` names naming no tool.
pub(crate) fn config_problems(registry: &Registry, config: &Config, chosen: Option<&Profile>) -> Vec<Diagnostic> {
    let profiles: Vec<&Profile> = match chosen {
        Some(profile) => vec![profile],
        None => config.profiles.iter().collect(),
    };
    let mut found: Vec<Diagnostic> =
        profiles.into_iter().flat_map(|p| profile::select(p, registry).problems).map(|e| e.diagnostic()).collect();
    let keys: Vec<String> = registry.libraries().iter().map(|library| runtime::library_key(library)).collect();
    let file = config.file().unwrap_or(Path::new("--config"));
    for name in config.runtime.libraries.keys() {
        if !keys.contains(name) {
            let close = crate::suggest::closest(name, keys.iter().map(String::as_str), |_| None);
            let message = format!(
                "`libraries.{name}` names no library (a library folder's name, else its file's stem), so no library gets it{}",
                crate::suggest::did_you_mean(&close)
            );
            found.push(placed(file, config.place_of(&["libraries", name], None), message));
        }
    }
    for entry in &config.tool_policies {
        if registry.tool(&entry.name).is_none() {
            let message =
                format!("`tool_policies.{}` names no tool: {}", entry.name, registry.unknown_tool(&entry.name));
            found.push(placed(file, config.place_of(&["tool_policies", &entry.name], None), message));
        }
    }
    // A name a profile gives a tool is a name too (`always_list` names served tools).
    let named = |name: &str| {
        registry.tool(name).is_some()
            || config.profiles.iter().flat_map(|profile| &profile.entries).any(|entry| entry.alias == name)
    };
    let lists = [
        (["export", "always_loaded"], &config.export.always_loaded),
        (["mcp", "always_list"], &config.mcp.always_list),
    ];
    for (keys, names) in lists {
        for (item, name) in names.iter().enumerate().filter(|(_, name)| !named(name)) {
            let message = format!("`{}` names no tool: {}", keys.join("."), registry.unknown_tool(name));
            found.push(placed(file, config.place_of(&keys, Some(item)), message));
        }
    }
    if let Some(first) = config.virtual_tools.first() {
        let names: Vec<String> = config.virtual_tools.iter().map(|tool| format!("`{}`", tool.name)).collect();
        let message = format!(
            "the virtual tools {} are hidden: the command line has no resolver for them (a Rust host passes one, `Runtime::set_resolver`)",
            names.join(", ")
        );
        found.push(Diagnostic::new(file, first.line, 1, Level::Warning, message));
    }
    found
}

/// Libraries that contribute a tool, a prompt or a resource: a library folder is one
/// library, whatever its files, and a helper module is none.
fn libraries_serving(registry: &Registry) -> usize {
    let mut keys: Vec<String> = registry
        .libraries()
        .iter()
        .filter(|library| !(library.tools.is_empty() && library.prompts.is_empty() && library.resources.is_empty()))
        .map(|library| runtime::library_key(library))
        .collect();
    keys.sort();
    keys.dedup();
    keys.len()
}

/// `6 tools in 4 libraries`.
fn tools_in_libraries(registry: &Registry) -> String {
    format!(
        "{} in {}",
        counted(registry.tools().count(), "tool", "tools"),
        counted(libraries_serving(registry), "library", "libraries")
    )
}

/// `lcp serve`'s `--timeout` unless given: a call that never ends cannot hold a
/// worker for good (SPEC §17).
const DEFAULT_SERVE_TIMEOUT: f64 = 300.0;

/// The process ends right after a one-shot command: freeing a registry of thousands
/// of tools piece by piece costs more than the operating system reclaiming it at once.
fn exit_without_freeing<T>(value: T) {
    std::mem::forget(value);
}

/// How much of the tools' code a command reads as discovery parses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    /// None: the command does not audit.
    Unread,
    /// What each tool can do, as listings show it (`audit::load_with_capabilities`).
    Capabilities,
    /// The call graphs, for every question of `lcp audit` (`audit::load_with_code`).
    Whole,
}

/// Loads the registry, reading as much of its code as `code` says; a folder or file
/// that does not exist is a usage error.
fn load(args: &SourceArgs, code: Code) -> Result<Registry, String> {
    for path in args.folders.iter().chain(&args.files) {
        if !path.exists() {
            return Err(format!("{}: no such file or folder", path.display()));
        }
    }
    let mut sources = Sources { folders: args.folders.clone(), files: args.files.clone() };
    if sources.folders.is_empty() && sources.files.is_empty() {
        sources.folders.push(crate::discovery::default_tools::folder().map_err(|err| err.to_string())?);
    }
    let options = Options::default();
    Ok(match code {
        Code::Unread => Registry::load(&sources, &options),
        Code::Capabilities => crate::host::audit::load_with_capabilities(&sources, &options),
        Code::Whole => crate::host::audit::load_with_code(&sources, &options),
    })
}

/// The prompt providers' descriptions, to lay over the static ones. Python starts
/// only when a tool has a provider; when it cannot, the static descriptions stay.
fn prompt_descriptions(registry: &Registry) -> Descriptions {
    if !registry.has_prompt_providers() {
        return Descriptions::default();
    }
    #[cfg(not(feature = "python"))]
    {
        eprintln!("lcp: warning: built without Python: the prompt providers' descriptions are the static ones");
        Descriptions::default()
    }
    #[cfg(feature = "python")]
    prompt_descriptions_from_python(registry)
}

#[cfg(feature = "python")]
fn prompt_descriptions_from_python(registry: &Registry) -> Descriptions {
    let isolation = WorkerSettings::this_program().map_or(Isolation::InProcess, Isolation::Workers);
    match Runtime::new(RuntimeConfig { isolation, ..RuntimeConfig::default() }) {
        Ok(runtime) => {
            let (descriptions, diagnostics) = runtime.prompt_descriptions(registry, &CallOptions::default());
            print_to_stderr(&diagnostics);
            descriptions
        }
        Err(err) => {
            eprintln!("lcp: warning: Python did not start, descriptions are the static ones: {err}");
            Descriptions::default()
        }
    }
}

fn print_stdout(text: &str) -> Result<(), String> {
    write_out(&mut std::io::stdout().lock(), text)
}

fn write_out(stdout: &mut impl Write, text: &str) -> Result<(), String> {
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        // A closed pipe (`lcp export | head`) is the reader's choice, not an error.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(format!("cannot write to stdout: {err}")),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|err| format!("{{\"error\": \"{err}\"}}"))
}

/// What `lcp list` and `lcp export` vouch for beside the declarations: what the
/// kernel keeps where the tools run (`enforced`, SPEC §18; the caller's to say), and
/// what each tool's code can do (SPEC §20).
fn vouch(view: &View, config: &Config, enforced: Enforcement, descriptions: &mut Descriptions) {
    descriptions.set_enforcement(enforced);
    crate::host::audit::lay_over(&view.registry, config, &view.routes, descriptions);
}

/// What the kernel keeps for the tools `lcp list` and `lcp export` describe: those of
/// `lcp serve` and `lcp call`, which run them in sandboxed workers by default.
fn enforced_by_default() -> Enforcement {
    crate::runtime::sandbox::offered()
}

/// The descriptions `lcp export --format FORMAT` writes the tools with (the prompt
/// providers' given): for the manifest and MCP, with what lcp vouches for, the kernel
/// keeping `enforced`. One place for the command and the Python `Toolbox.export`.
pub(crate) fn export_descriptions(
    view: &View,
    config: &Config,
    format: Format,
    enforced: Enforcement,
    given: Descriptions,
) -> Descriptions {
    let mut descriptions = given;
    if matches!(format, Format::Manifest | Format::Mcp { .. }) {
        vouch(view, config, enforced, &mut descriptions);
    }
    descriptions
}

/// `TOOL  LIBRARY  PARAMETERS  GRADE  CAN  SOURCE  DESCRIPTION`, one row per tool; `?`
/// marks optional parameters and undeclared grades, and in `CAN` (what the tool's
/// code can do, SPEC §20) calls lcp cannot see into. A cell longer than a line is cut
/// (see [`cell`]), so one huge name never widens every row; with a `width`, the
/// columns are narrowed to fit it (see [`fit`]). A tool's description is the one in
/// `descriptions` if it has one there.
fn table(registry: &Registry, descriptions: &Descriptions, width: Option<usize>) -> String {
    let mut rows = vec![["TOOL", "LIBRARY", "PARAMETERS", "GRADE", "CAN", "SOURCE", "DESCRIPTION"].map(String::from)];
    for (library, tool) in registry.tools() {
        let schema = tool.parameters.parse();
        let required: Vec<&str> =
            schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let parameters: Vec<String> = schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| if required.contains(&name.as_str()) { name.clone() } else { format!("{name}?") })
            .collect();
        let mut grade = tool.policy.grade_shown();
        // What the kernel enforces, in brackets (SPEC §18), marked when `[sandbox]
        // infer` gave it; what a server or the host only says of its tools, marked as
        // theirs.
        let found = descriptions.found(&tool.name);
        let inferred = found.map_or(&[][..], |found| &found.inferred[..]);
        let enforced = descriptions.enforced(library, tool);
        let (said, by) = match library.origin {
            crate::discovery::extract::Origin::Mcp { .. } => {
                (crate::runtime::sandbox::Sandbox::of(&tool.policy).enforced(), "declared by the server: ")
            }
            crate::discovery::extract::Origin::Virtual => {
                (crate::runtime::sandbox::Sandbox::of(&tool.policy).enforced(), "declared: ")
            }
            crate::discovery::extract::Origin::File | crate::discovery::extract::Origin::Config { .. } => {
                (enforced, "")
            }
        };
        if !said.is_empty() {
            let shown: Vec<String> = said
                .iter()
                .map(|name| {
                    let shown = if *name == "open_world" { "open_world: false" } else { name };
                    if inferred.contains(name) { format!("{shown} (inferred)") } else { shown.to_string() }
                })
                .collect();
            grade.push_str(&format!(" [{by}{}]", shown.join(", ")));
        }
        let can = match found {
            Some(found) => {
                let mut can = found.capabilities.clone();
                if !found.unknown.is_empty() {
                    can.push("?");
                }
                if can.is_empty() { "-".to_string() } else { can.join(", ") }
            }
            None => String::new(),
        };
        rows.push([
            cell(&tool.name, Cut::End),
            cell(library.name.as_deref().unwrap_or(&library.stem), Cut::End),
            cell(&parameters.join(", "), Cut::End),
            grade,
            cell(&can, Cut::End),
            cell(&source_cell(library, tool), Cut::Start),
            cell(descriptions.of(tool), Cut::End),
        ]);
    }
    if let Some(width) = width {
        // Which columns may give way, down to how narrow, and which end each loses;
        // on a tie, the later one gives way first.
        let narrowing = [
            (3, 6, Cut::End),
            (4, 6, Cut::End),
            (0, 14, Cut::End),
            (1, 10, Cut::End),
            (5, 12, Cut::Start),
            (2, 12, Cut::End),
            (6, 10, Cut::End),
        ];
        fit(&mut rows, width, &narrowing);
    }
    let mut out = columns(&rows);
    out.push_str(&members_table(registry));
    out.push_str(&tools_in_libraries(registry));
    out
}

/// `lcp search`'s table: `TOOL  SCORE  LIBRARY  DESCRIPTION`, best first, narrowed to
/// `width` as `lcp list`'s is; a line saying so when no tool matched.
fn search_table(hits: &[crate::host::search::Hit], width: Option<usize>) -> String {
    if hits.is_empty() {
        return "no tool matches".to_string();
    }
    let mut rows = vec![["TOOL", "SCORE", "LIBRARY", "DESCRIPTION"].map(String::from)];
    for hit in hits {
        rows.push([
            cell(&hit.name, Cut::End),
            format!("{:.2}", hit.score),
            cell(&hit.library, Cut::End),
            cell(&hit.description, Cut::End),
        ]);
    }
    if let Some(width) = width {
        fit(&mut rows, width, &[(0, 16, Cut::End), (2, 10, Cut::End), (3, 12, Cut::End)]);
    }
    columns(&rows).trim_end().to_string()
}

/// A count of 1 or more, as a command line gives it.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n @ 1..) => Ok(n),
        Err(err) if *err.kind() == std::num::IntErrorKind::PosOverflow => {
            Err(format!("`{text}` is too large: at most {}", usize::MAX))
        }
        _ => Err(format!("`{text}` is not a whole number of 1 or more")),
    }
}

/// The queries of `--queries FILE` (`-`: standard input), one a line, an empty line
/// included (it is answered with no tools, so answers stay in line with queries).
fn read_queries(file: &Path) -> Result<Vec<String>, String> {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|err| format!("cannot read the queries from standard input: {err}"))?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|err| format!("{}: cannot read the queries: {err}", file.display()))?
    };
    Ok(text.lines().map(str::to_string).collect())
}

/// The prompts and resources of `registry` (SPEC §15), a table each after the tools'
/// (`PROMPT  ARGUMENTS  SOURCE  DESCRIPTION`, `RESOURCE  URI  MIME TYPE  SOURCE
/// DESCRIPTION`); empty when it has neither.
fn members_table(registry: &Registry) -> String {
    let mut out = String::new();
    let mut prompts = vec![["PROMPT", "ARGUMENTS", "SOURCE", "DESCRIPTION"].map(String::from)];
    for (library, prompt) in registry.prompts() {
        let schema = prompt.parameters.value();
        let required = crate::discovery::extract::required_names(prompt);
        let arguments: Vec<String> = schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| if required.contains(name) { name.clone() } else { format!("{name}?") })
            .collect();
        prompts.push([
            cell(&prompt.name, Cut::End),
            cell(&arguments.join(", "), Cut::End),
            cell(&source_cell(library, prompt), Cut::Start),
            cell(&prompt.description, Cut::End),
        ]);
    }
    if prompts.len() > 1 {
        out.push('\n');
        out.push_str(&columns(&prompts));
    }
    let mut resources = vec![["RESOURCE", "URI", "MIME TYPE", "SOURCE", "DESCRIPTION"].map(String::from)];
    for (library, resource) in registry.resources() {
        resources.push([
            cell(&resource.function.name, Cut::End),
            cell(&resource.uri, Cut::End),
            cell(resource.mime_type.as_deref().unwrap_or("-"), Cut::End),
            cell(&source_cell(library, &resource.function), Cut::Start),
            cell(resource.description(), Cut::End),
        ]);
    }
    if resources.len() > 1 {
        out.push('\n');
        out.push_str(&columns(&resources));
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Where a tool is: its file and line, with the source named when it is not a file
/// (`config:lcp.toml:4`).
fn source_cell(library: &crate::discovery::extract::Library, tool: &crate::discovery::extract::Tool) -> String {
    match library.origin {
        crate::discovery::extract::Origin::File => format!("{}:{}", library.path.display(), tool.line),
        ref other => format!("{}:{}:{}", other.source(), library.path.display(), tool.line),
    }
}
