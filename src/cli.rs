//! The `lcp` command line (SPEC §7).
//!
//! Owns argument parsing, where output goes and exit codes: JSON for programs on
//! stdout, diagnostics and human messages on stderr; 0 success, 1 errors found (or
//! the tool failed), 2 usage or I/O error. It holds no logic of its own beyond
//! choosing what to print, and the terminal prompt of `lcp call`'s confirm handler.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};

use crate::diag::{Diagnostic, Level};
use crate::export::{self, Format};
use crate::mcp;
use crate::registry::{Options, Registry, Sources};
use crate::runtime::{self, CallOptions, ConfirmRequest, Confirmation, Decision, Runtime, RuntimeConfig};

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

#[derive(Subcommand)]
enum Command {
    /// List the tools found, as a table.
    List {
        #[command(flatten)]
        sources: SourceArgs,
        /// Never start Python (descriptions are the static ones).
        #[arg(long = "static")]
        static_only: bool,
    },
    /// Print the tools in an LLM API's format, as JSON on stdout.
    Export {
        #[command(flatten)]
        sources: SourceArgs,
        #[arg(long, value_enum, default_value_t = Format::Openai)]
        format: Format,
        /// OpenAI strict mode: every property required, closed objects, no defaults.
        #[arg(long)]
        strict: bool,
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
        /// The tool's working directory while it runs.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Configuration of the tool's library (a JSON object), for `init_tools_library`.
        #[arg(long, value_name = "JSON")]
        config: Option<String>,
        /// Autonomy level given to the libraries.
        #[arg(long, value_name = "LEVEL", default_value = "safe", value_parser = ["safe", "ask", "full_access"])]
        autonomy: String,
        /// Stop the tool after this many seconds.
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// Allow whatever the tool asks to confirm.
        #[arg(long, conflicts_with = "no")]
        yes: bool,
        /// Refuse whatever the tool asks to confirm.
        #[arg(long)]
        no: bool,
        /// A virtual environment whose packages tools may import [default: $VIRTUAL_ENV].
        #[arg(long, value_name = "DIR")]
        venv: Option<PathBuf>,
    },
    /// Report every problem in the tool files; exit 1 when one is an error.
    Check {
        #[command(flatten)]
        sources: SourceArgs,
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
    },
    /// Serve the tools to MCP clients (over stdio unless --http is given).
    Serve {
        #[command(flatten)]
        sources: SourceArgs,
        /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio; a bare port means 127.0.0.1.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Configuration of the libraries, JSON or TOML: `autonomy_level` and `[libraries.<name>]`.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The tools' working directory [default: the current directory].
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Longest a tool call may run, in seconds (default: no limit).
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// Allow what a tool asks to confirm when the client cannot ask the user.
        #[arg(long)]
        yes: bool,
        /// Cut results longer than this many bytes, with a marker.
        #[arg(long, value_name = "BYTES", default_value_t = mcp::DEFAULT_MAX_OUTPUT)]
        max_output: usize,
    },
}

#[derive(Args)]
struct SourceArgs {
    /// Tool folders, scanned in the order given. None (and no --file): the built-in tools.
    folders: Vec<PathBuf>,
    /// An explicit tool file; may be repeated.
    #[arg(long = "file", value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum CheckFormat {
    Text,
    Json,
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::List { sources, static_only } => {
            let mut registry = load(&sources)?;
            print_diagnostics(&registry.diagnostics);
            if !static_only {
                describe(&mut registry);
            }
            print_stdout(&table(&registry))?;
            exit_without_freeing(registry);
            Ok(ExitCode::SUCCESS)
        }
        Command::Export { sources, format, strict, static_only } => {
            let mut registry = load(&sources)?;
            print_diagnostics(&registry.diagnostics);
            if !static_only {
                describe(&mut registry);
            }
            let (document, problems) = export::export(&registry, format, strict);
            print_diagnostics(&problems);
            print_stdout(&pretty(&document))?;
            exit_without_freeing((registry, document));
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, sources, args, workspace, config, autonomy, timeout, yes, no, venv } => {
            let registry = load(&sources)?;
            print_diagnostics(&registry.diagnostics.iter().filter(|d| d.is_error()).cloned().collect::<Vec<_>>());
            let Some((library, _)) = registry.tool(&tool) else { return Err(runtime::unknown_tool(&registry, &tool)) };
            let args: Value = serde_json::from_str(&args).map_err(|err| format!("--args is not JSON: {err}"))?;
            if !args.is_object() {
                return Err("--args must be a JSON object".to_string());
            }
            let mut settings = RuntimeConfig { autonomy_level: autonomy, ..RuntimeConfig::default() };
            if let Some(config) = config {
                let Ok(Value::Object(config)) = serde_json::from_str(&config) else {
                    return Err("--config must be a JSON object".to_string());
                };
                settings.libraries.insert(runtime::library_key(library), config);
            }
            if let Some(venv) = venv {
                settings.venv = Some(venv);
            }
            check_workspace(workspace.as_deref())?;
            let timeout = parse_timeout(timeout)?;
            let runtime = Runtime::new(settings).map_err(|err| format!("cannot start Python: {err}"))?;
            // From here on fd 1 belongs to lcp's capture: nothing a tool or its children
            // write can reach the result on stdout.
            let mut stdout =
                Runtime::claim_stdout().map_err(|err| format!("cannot keep stdout for the result: {err}"))?;
            print_diagnostics(&runtime.set_confirm_handler(move |request| confirm(request, yes, no)));
            let result = runtime.call(&registry, &tool, &args, &CallOptions { workspace, timeout });
            let text = serde_json::to_string_pretty(&result).map_err(|err| err.to_string())?;
            write_out(&mut stdout, &text)?;
            Ok(if result.ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Check { sources, format } => {
            let registry = load(&sources)?;
            let tools = registry.tools().count();
            let errors = registry.diagnostics.iter().filter(|d| d.is_error()).count();
            let warnings = registry.diagnostics.iter().filter(|d| d.level == Level::Warning).count();
            match format {
                CheckFormat::Text => {
                    print_diagnostics(&registry.diagnostics);
                    eprintln!(
                        "{} libraries, {tools} tools, {errors} errors, {warnings} warnings",
                        registry.libraries.len()
                    );
                }
                CheckFormat::Json => {
                    let report = json!({
                        "libraries": registry.libraries.len(),
                        "tools": tools,
                        "errors": errors,
                        "warnings": warnings,
                        "diagnostics": registry.diagnostics,
                    });
                    print_stdout(&pretty(&report))?;
                }
            }
            exit_without_freeing(registry);
            Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Serve { sources, http, config, workspace, timeout, yes, max_output } => {
            let http = http.as_deref().map(mcp::http::parse_address).transpose()?;
            check_workspace(workspace.as_deref())?;
            let runtime = config.as_deref().map(mcp::config::read).transpose()?.unwrap_or_default();
            let timeout = parse_timeout(timeout)?;
            let registry = load(&sources)?;
            print_diagnostics(&registry.diagnostics);
            eprintln!("lcp: {} tools in {} libraries", registry.tools().count(), registry.libraries.len());
            mcp::serve(registry, mcp::Settings { http, runtime, workspace, timeout, yes, max_output })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--workspace` must name an existing folder.
fn check_workspace(workspace: Option<&Path>) -> Result<(), String> {
    match workspace {
        Some(dir) if !dir.is_dir() => Err(format!("{}: the workspace is not a folder", dir.display())),
        _ => Ok(()),
    }
}

/// `--timeout SECS`: a positive number of seconds that a `Duration` can hold.
fn parse_timeout(timeout: Option<f64>) -> Result<Option<Duration>, String> {
    let Some(secs) = timeout else { return Ok(None) };
    match Duration::try_from_secs_f64(secs) {
        Ok(duration) if secs > 0.0 => Ok(Some(duration)),
        _ => Err(format!("--timeout {secs}: must be a positive number of seconds, at most {}", u64::MAX)),
    }
}

/// The process ends right after a one-shot command: freeing a registry of thousands
/// of tools piece by piece costs more than the operating system reclaiming it at once.
fn exit_without_freeing<T>(value: T) {
    std::mem::forget(value);
}

/// Loads the registry; a folder or file that does not exist is a usage error.
fn load(args: &SourceArgs) -> Result<Registry, String> {
    for path in args.folders.iter().chain(&args.files) {
        if !path.exists() {
            return Err(format!("{}: no such file or folder", path.display()));
        }
    }
    let mut sources = Sources { folders: args.folders.clone(), files: args.files.clone() };
    if sources.folders.is_empty() && sources.files.is_empty() {
        sources.folders.push(crate::default_tools::folder()?);
    }
    Ok(Registry::load(&sources, &Options::default()))
}

fn print_diagnostics(diagnostics: &[Diagnostic]) {
    let mut stderr = std::io::stderr().lock();
    for diagnostic in diagnostics {
        let _ = writeln!(stderr, "{diagnostic}");
    }
}

/// Lays the prompt providers' descriptions over the static ones. Python starts only
/// when a tool has a provider; when it cannot, the static descriptions stay.
fn describe(registry: &mut Registry) {
    if registry.tools().all(|(_, tool)| tool.prompt_provider.is_none()) {
        return;
    }
    match Runtime::new(RuntimeConfig::default()) {
        Ok(runtime) => {
            let descriptions = runtime.describe(registry, &CallOptions::default());
            print_diagnostics(&descriptions.diagnostics);
            descriptions.apply(registry);
        }
        Err(err) => eprintln!("lcp: warning: Python did not start, descriptions are the static ones: {err}"),
    }
}

/// The confirm handler of `lcp call`: `--yes`, `--no`, else the user at the terminal.
fn confirm(request: &ConfirmRequest, yes: bool, no: bool) -> Confirmation {
    if yes {
        return Confirmation::allow("allowed with --yes");
    }
    if no {
        return Confirmation::reject("refused with --no");
    }
    if !std::io::stdin().is_terminal() {
        return Confirmation::reject(
            "there is no terminal to ask the user; run `lcp call` with --yes to allow or --no to refuse",
        );
    }
    // One question at a time, even when calls run in parallel.
    static ASKING: Mutex<()> = Mutex::new(());
    let _asking = ASKING.lock().unwrap_or_else(|p| p.into_inner());
    let tool = request.tool.as_deref().unwrap_or("a tool");
    let label = if request.label.is_empty() { "confirm" } else { &request.label };
    eprintln!("\n{tool} ({}) asks: {label}", request.library);
    for line in request.content.lines() {
        eprintln!("    {line}");
    }
    eprint!("Allow? [y]es / [n]o / [a]lways: ");
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return Confirmation::reject("the answer could not be read");
    }
    match answer.trim().to_lowercase().as_str() {
        "y" | "yes" => Confirmation::allow("allowed by the user"),
        "a" | "always" => Confirmation { decision: Decision::Always, reason: "always allowed by the user".to_string() },
        _ => Confirmation::reject("refused by the user"),
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

/// `TOOL  LIBRARY  PARAMETERS  SOURCE  DESCRIPTION`, one row per tool; `?` marks
/// optional parameters. A cell longer than a line is cut (see [`cell`]), so one huge
/// name never widens every row.
fn table(registry: &Registry) -> String {
    let mut rows = vec![["TOOL", "LIBRARY", "PARAMETERS", "SOURCE", "DESCRIPTION"].map(|h| (h.to_string(), h.len()))];
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
        rows.push([
            cell(&tool.name, Cut::End),
            cell(library.name.as_deref().unwrap_or(&library.stem), Cut::End),
            cell(&parameters.join(", "), Cut::End),
            cell(&format!("{}:{}", library.path.display(), tool.line), Cut::Start),
            cell(&tool.description, Cut::End),
        ]);
    }
    let widths: Vec<usize> = (0..5).map(|c| rows.iter().map(|r| r[c].1).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, ((text, chars), width)) in row.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(text);
            line.extend(std::iter::repeat_n(' ', width - chars));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!("{} tools in {} libraries", registry.tools().count(), registry.libraries.len()));
    out
}

/// Which end of a long cell is cut: a source keeps its end (the file name and line).
#[derive(Clone, Copy)]
enum Cut {
    Start,
    End,
}

/// A table cell and its width in characters: control characters become spaces, and
/// text over [`CELL_CHARS`] characters is cut to that many, with `…` where it was cut.
fn cell(text: &str, cut: Cut) -> (String, usize) {
    const CELL_CHARS: usize = 72;
    let chars = text.chars().count();
    let shown: String = match cut {
        _ if chars <= CELL_CHARS => text.to_string(),
        Cut::End => text.chars().take(CELL_CHARS).chain(['…']).collect(),
        Cut::Start => ['…'].into_iter().chain(text.chars().skip(chars - CELL_CHARS)).collect(),
    };
    let shown: String = shown.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let width = chars.min(CELL_CHARS + 1);
    (shown, width)
}
