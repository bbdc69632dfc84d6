//! The commands that run tools (the `python` feature): `lcp call`, `lcp serve` and
//! `lcp test`, with what only they need: where tools run and for how long, the
//! working directory, and `lcp call`'s terminal prompts (`host.rs`).

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use super::*;
use crate::host::view::Admission;
use crate::runtime::{ConfirmRequest, Confirmation, Decision};
use crate::shown;
use crate::sync;

/// Runs `lcp call`, `lcp serve` or `lcp test`.
pub(super) fn command(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Call {
            tool,
            sources,
            args,
            workspace,
            mut host,
            autonomy,
            timeout,
            yes,
            no,
            answers,
            venv,
            isolation,
        } => {
            // `--config {...}`: the library's configuration, not a file (SPEC §7).
            let library_config = match host.config.as_deref().map(str::trim_start) {
                Some(json) if json.starts_with('{') => {
                    let Ok(Value::Object(object)) = serde_json::from_str(json) else {
                        return Err("--config must be a file or a JSON object".to_string());
                    };
                    host.config = None;
                    Some(object)
                }
                _ => None,
            };
            let (registry, config, profile, upstreams) = load_host_with(&sources, &host, Servers::Start)?;
            print_to_stderr(registry.diagnostics().iter().filter(|d| d.is_error()));
            let args: Value = serde_json::from_str(&args).map_err(|err| format!("--args is not JSON: {err}"))?;
            if !args.is_object() {
                return Err("--args must be a JSON object".to_string());
            }
            let answers = answers.as_deref().map(host::Answers::parse).transpose()?.unwrap_or_default();
            // The policy is checked before Python starts: a refused call runs no code.
            let tool = match view::admit(&registry, &config, profile.as_ref(), &tool) {
                Admission::Run(tool) => tool,
                Admission::Unknown(message) => return Err(message),
                Admission::Refused(rule) => {
                    print_stdout(&pretty(
                        &serde_json::to_value(runtime::ToolResult::failure(rule)).unwrap_or_default(),
                    ))?;
                    return Ok(ExitCode::from(1));
                }
            };
            let library = tool.library();
            let mut settings = config.runtime.clone();
            settings.isolation = isolation.isolation()?;
            let in_process = settings.isolation == Isolation::InProcess;
            if let Some(level) = autonomy {
                settings.autonomy_level = level;
            }
            if let Some(object) = library_config {
                settings.libraries.insert(runtime::library_key(library), object);
            }
            if let Some(venv) = venv {
                settings.venv = Some(venv);
            }
            let workspace = Some(workspace_folder(workspace)?);
            let timeout = parse_timeout(timeout)?;
            if !in_process {
                Runtime::adopt_orphans();
            }
            let runtime = Runtime::new(settings).map_err(|err| format!("cannot start Python: {err}"))?;
            // In-process, fd 1 belongs to lcp's capture from here on: nothing a tool or
            // its children write can reach the result on stdout. A worker has its own.
            let mut stdout: Box<dyn Write> = if in_process {
                Box::new(Runtime::claim_stdout().map_err(|err| format!("cannot keep stdout for the result: {err}"))?)
            } else {
                Box::new(std::io::stdout())
            };
            print_to_stderr(&runtime.set_confirm_handler(move |request| confirm(request, yes, no)));
            runtime.set_user_interaction_handler(move |interaction| host::interact(interaction, &answers));
            runtime.set_model(host::generate, false);
            runtime.set_progress_handler(host::progress);
            if let Some(upstreams) = &upstreams {
                runtime.set_forwarder(upstreams.forwarder());
            }
            let options = CallOptions { workspace, timeout, ..CallOptions::default() };
            let result = runtime.call_admitted(&tool, &args, &options);
            let text = serde_json::to_string_pretty(&result).map_err(|err| err.to_string())?;
            write_out(&mut stdout, &text)?;
            Ok(if result.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Serve {
            sources,
            http,
            host,
            workspace,
            timeout,
            yes,
            max_output,
            isolation,
            allow_unauthenticated,
            venv,
        } => {
            let http =
                http.as_deref().map(mcp::http::parse_address).transpose().map_err(|err| format!("--http {err}"))?;
            let workspace = Some(workspace_folder(workspace)?);
            let mut isolation = isolation.isolation()?;
            if let Isolation::Workers(workers) = &mut isolation {
                // A server lives long: the call after a crash should not wait for a start.
                workers.standby = true;
                Runtime::adopt_orphans();
            }
            let timeout = parse_timeout(Some(timeout))?;
            let (registry, config, profile, upstreams) = load_host_with(&sources, &host, Servers::Start)?;
            print_to_stderr(registry.diagnostics());
            let view = expose(&registry, &config, profile.as_ref())?;
            eprintln!("lcp: {}", tools_in_libraries(&view.registry));
            let settings = mcp::Settings {
                http,
                runtime: RuntimeConfig {
                    isolation,
                    venv: venv.or(config.runtime.venv.clone()),
                    ..config.runtime.clone()
                },
                workspace,
                timeout,
                yes,
                max_output,
                config: std::sync::Arc::new(crate::host::config::Watched::new(config)),
                profile: choice(&host),
                allow_unauthenticated,
                upstreams,
            };
            mcp::serve(registry, settings).map_err(|err| err.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Test { sources, host, tools, format, yes, timeout, isolation, venv } => {
            let timeout = parse_timeout(timeout)?;
            let (registry, config, profile, upstreams) = load_host_with(&sources, &host, Servers::Start)?;
            print_to_stderr(registry.diagnostics().iter().filter(|d| d.is_error()));
            let view = expose(&registry, &config, profile.as_ref())?;
            for name in &tools {
                if view.registry.tool(name).is_none() {
                    return Err(match view::admit(&registry, &config, profile.as_ref(), name) {
                        Admission::Refused(rule) => rule,
                        Admission::Unknown(message) => message,
                        Admission::Run(_) => view.registry.unknown_tool(name),
                    });
                }
            }
            let venv = venv.or(config.runtime.venv.clone());
            // What a test file's setup command finds as `$LCP_TEST_PYTHON`.
            let python = match &venv {
                Some(venv) if venv.join("bin/python").exists() => venv.join("bin/python"),
                _ => PathBuf::from(runtime::python_build().0),
            };
            let settings = RuntimeConfig { isolation: isolation.isolation()?, venv, ..config.runtime.clone() };
            let in_process = settings.isolation == Isolation::InProcess;
            let runtime = Runtime::new(settings).map_err(|err| format!("cannot start Python: {err}"))?;
            if let Some(upstreams) = &upstreams {
                runtime.set_forwarder(upstreams.forwarder());
            }
            let mut stdout: Box<dyn Write> = if in_process {
                Box::new(Runtime::claim_stdout().map_err(|err| format!("cannot keep stdout for the report: {err}"))?)
            } else {
                Box::new(std::io::stdout())
            };
            let options = testlane::Options { timeout, yes, only: tools, python: Some(python) };
            let terminal = std::io::stderr().is_terminal();
            let outcomes = testlane::run(&view, &registry, &runtime, &options, |done, total, tool| {
                if terminal {
                    let line = if tool.is_empty() { String::new() } else { format!("[{}/{total}] {tool}", done + 1) };
                    eprint!("\r\x1b[2K{line}");
                }
            })?;
            let report = match format {
                CheckFormat::Text => testlane::table(&outcomes, terminal_width()),
                CheckFormat::Json => pretty(&serde_json::to_value(&outcomes).map_err(|err| err.to_string())?),
            };
            write_out(&mut stdout, &report)?;
            Ok(if outcomes.iter().all(|outcome| outcome.ok) { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        _ => Err("not a command that runs tools".to_string()),
    }
}

impl IsolationArgs {
    fn isolation(&self) -> Result<Isolation, String> {
        if self.in_process {
            return Ok(Isolation::InProcess);
        }
        let mut workers = WorkerSettings::this_program().map_err(|err| err.to_string())?;
        if let Some(count) = self.workers {
            workers.workers = count as usize;
        }
        workers.memory_limit_mib = self.memory_limit;
        Ok(Isolation::Workers(workers))
    }
}

/// The tools' workspace (SPEC §17): `--workspace`, an existing folder, else the
/// current directory unless that is `/`, which confines nothing (MCP clients start
/// servers there).
fn workspace_folder(workspace: Option<PathBuf>) -> Result<PathBuf, String> {
    match workspace {
        Some(dir) if !dir.is_dir() => Err(format!("{}: the workspace is not a folder", dir.display())),
        Some(dir) => Ok(dir),
        None => {
            let current = std::env::current_dir().map_err(|err| {
                format!("the current directory cannot be the workspace ({err}); give --workspace DIR")
            })?;
            if current.parent().is_none() {
                return Err(format!(
                    "the current directory is {}, which would give tools the whole machine as their workspace; \
                     give --workspace DIR (MCP clients often start servers in /)",
                    current.display()
                ));
            }
            Ok(current)
        }
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
    let _asking = sync::lock(&ASKING);
    let tool = request.tool.as_deref().unwrap_or("a tool");
    let label = if request.label.is_empty() { "confirm" } else { &request.label };
    eprintln!("\n{} ({}) asks: {}", shown::line(tool), shown::line(&request.library), shown::line(label));
    for line in shown::confirmation(&request.content).split('\n') {
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
