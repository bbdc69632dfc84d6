//! `lcp profile list | info | create` (SPEC §11): what each prints. The profiles
//! themselves are `crate::host::profile`'s; grades and policy come from `crate::host::view`.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::{CheckFormat, ProfileAction, columns, load_host, pretty, print_problems, print_stdout};
use crate::host::profile::{self, Profile};
use crate::host::view;
use crate::policy::Grade;

/// `lcp profile list | info | create` (SPEC §11).
pub(super) fn run(action: ProfileAction) -> Result<ExitCode, String> {
    match action {
        ProfileAction::List { sources, host, format } => {
            let (registry, config, _) = load_host(&sources, &host)?;
            let mut listed = Vec::new();
            for profile in &config.profiles {
                let selection = profile::select(profile, &registry);
                print_problems(&selection.problems);
                let grade = view::grade(&registry, &config, selection.routes.iter().map(|(_, tool)| tool.as_str()));
                listed.push(json!({
                    "name": profile.name,
                    "description": profile.description,
                    "tools": selection.routes.iter().map(|(alias, _)| alias).collect::<Vec<_>>(),
                    "grade": grade,
                    "docs": profile.docs,
                    "source": profile.place(),
                    "problems": selection.problems.len(),
                }));
            }
            let text = match format {
                CheckFormat::Json => pretty(&Value::Array(listed)),
                CheckFormat::Text => {
                    let mut rows = vec![["PROFILE", "TOOLS", "GRADE", "SOURCE", "DESCRIPTION"].map(String::from)];
                    for entry in &listed {
                        let tools: Vec<&str> =
                            entry["tools"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                        let grade = format!("w{} d{}", entry["grade"]["w"], entry["grade"]["d"]);
                        let broken = if entry["problems"] != 0 { " (has problems)" } else { "" };
                        rows.push([
                            format!("{}{broken}", entry["name"].as_str().unwrap_or_default()),
                            tools.join(", "),
                            grade,
                            entry["source"].as_str().unwrap_or_default().to_string(),
                            entry["description"].as_str().unwrap_or_default().to_string(),
                        ]);
                    }
                    let mut text = columns(&rows);
                    text.push_str(&super::counted(listed.len(), "profile", "profiles"));
                    text
                }
            };
            print_stdout(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        ProfileAction::Info { name, sources, mut host, format } => {
            if let Some(name) = name {
                host.profile = Some(name);
            }
            if host.profile.is_none() {
                return Err("which profile? give its name, a list of tools `a,b,c`, or --profile".to_string());
            }
            let (registry, config, profile) = load_host(&sources, &host)?;
            let Some(profile) = profile else { return Err("no profile was chosen".to_string()) };
            let view = view::view(&registry, &config, Some(&profile));
            let selection = view.selection.as_deref().cloned().unwrap_or_default();
            print_problems(&selection.problems);
            let tools: Vec<Value> = selection
                .routes
                .iter()
                .filter_map(|(alias, tool)| {
                    let (_, found) = registry.tool(tool)?;
                    let declared = config.declared(found);
                    let refused = view.refused.iter().find(|(name, _)| name == alias).map(|(_, rule)| rule);
                    Some(json!({
                        "alias": alias,
                        "tool": tool,
                        "grade": declared.grade(),
                        "declared": declared,
                        "docs": declared.docs,
                        "refused": refused,
                    }))
                })
                .collect();
            let grade = view::grade(&registry, &config, selection.routes.iter().map(|(_, tool)| tool.as_str()));
            let info = json!({
                "name": profile.name,
                "description": profile.description,
                "source": profile.place(),
                "grade": grade,
                "docs": profile.docs,
                "tools": tools,
                "problems": selection.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            });
            let text = match format {
                CheckFormat::Json => pretty(&info),
                CheckFormat::Text => profile_text(&profile, grade, &tools),
            };
            print_stdout(&text)?;
            Ok(if selection.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) })
        }
        ProfileAction::Create { name, tools, description, sources, host } => {
            let (registry, config, _) = load_host(&sources, &host)?;
            if !profile::is_valid_name(&name) || name == profile::NONE {
                return Err(format!(
                    "`{name}` cannot name a profile: use ASCII letters, digits, `_` and `-`, starting with a letter (and not `none`)"
                ));
            }
            for tool in &tools {
                if registry.tool(tool).is_none() {
                    return Err(registry.unknown_tool(tool));
                }
            }
            let folder = config.kits_folder();
            let path = folder.join(format!("{name}.kit"));
            if path.exists() {
                return Err(format!("{}: already exists; edit it, or remove it first", path.display()));
            }
            std::fs::create_dir_all(&folder).map_err(|err| format!("{}: {err}", folder.display()))?;
            let text = profile::kit_text(&name, description.as_deref(), &tools);
            std::fs::write(&path, text).map_err(|err| format!("{}: {err}", path.display()))?;
            if config.profiles.iter().any(|p| p.name == name && !p.place().ends_with(".kit")) {
                eprintln!("lcp: warning: the config file's profile `{name}` takes precedence over this kit");
            }
            eprintln!("lcp: wrote {} ({} tools)", path.display(), tools.len());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `lcp profile info` as text: the profile, its grade and docs, then one row per tool.
fn profile_text(profile: &Profile, grade: Grade, tools: &[Value]) -> String {
    let mut text = format!("profile {} ({})\n", profile.name, profile.place());
    if let Some(description) = &profile.description {
        text.push_str(&format!("description: {description}\n"));
    }
    text.push_str(&format!("grade: {grade}\n"));
    if let Some(docs) = &profile.docs {
        text.push_str(&format!("docs: {}\n", docs.display()));
    }
    let mut rows = vec![["NAME", "TOOL", "GRADE", "DOCS", "POLICY"].map(String::from)];
    for tool in tools {
        // A part no declaration gives is marked `?` (as `Declared::grade_shown`).
        let declared = &tool["declared"];
        let graded = declared.get("grade").is_some();
        let w_known = graded || declared.get("open_world").is_some();
        let d_known = graded || declared["read_only"] == true || declared.get("destructive").is_some();
        let unknown = |known: bool| if known { "" } else { "?" };
        let grade = format!("w{}{} d{}{}", tool["grade"]["w"], unknown(w_known), tool["grade"]["d"], unknown(d_known));
        rows.push([
            tool["alias"].as_str().unwrap_or_default().to_string(),
            tool["tool"].as_str().unwrap_or_default().to_string(),
            grade,
            tool["docs"].as_str().unwrap_or("-").to_string(),
            tool["refused"].as_str().map_or("allowed".to_string(), |rule| format!("refused: {rule}")),
        ]);
    }
    text.push_str(&columns(&rows));
    text.push_str(&format!("{} tools", tools.len()));
    text
}
