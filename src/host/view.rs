//! What a host shows of its tools and lets run (SPEC §11, §12).
//!
//! Owns the combination of the tools found, the config file's `[tool_policies.NAME]`
//! declarations and `[policy]`, and the profile chosen: [`view`] is the registry every
//! listing and export is made from (the profile's tools under their aliases, minus
//! what the policy forbids, with their docs), and `admit` (`admission`) is the check
//! every call goes through before any code runs. It never runs Python and never
//! changes the registry it is given: calls still name the tools as they are.

use std::path::PathBuf;
use std::sync::Arc;

use crate::discovery::extract::{Library, Tool};
use crate::discovery::registry::Registry;
use crate::host::config::Config;
use crate::host::profile::{self, Profile, Selection};
use crate::policy::Grade;

// What a call is checked against before it runs: built with what runs tools.
#[cfg(feature = "python")]
mod admission;
#[cfg(feature = "python")]
pub(crate) use admission::{Admission, Admitted, Member, admit, admit_member};

/// The tools a host shows.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The tools shown, under the names the model sees, each with its declarations
    /// as the config file leaves them. Libraries without a tool shown are left out
    /// when a profile is chosen.
    pub registry: Registry,
    /// `(name shown, tool)`, in the order of `registry`.
    pub routes: Vec<(String, String)>,
    /// `(name, rule)` of the tools the host's policy leaves out.
    pub refused: Vec<(String, String)>,
    /// The profile chosen, checked against the tools, with its problems.
    pub selection: Option<Arc<Selection>>,
    /// Documentation the host can serve, read only when asked.
    pub docs: Vec<Doc>,
}

/// A documentation file of a tool or of the profile (seed 000's docs index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// `docs://tools/NAME` or `docs://profiles/NAME`.
    pub uri: String,
    /// The tool's name as shown, or the profile's.
    pub name: String,
    /// The documentation file.
    pub path: PathBuf,
}

impl View {
    /// The tool a shown name stands for.
    pub fn tool(&self, shown: &str) -> Option<&str> {
        self.routes.iter().find(|(name, _)| name == shown).map(|(_, tool)| tool.as_str())
    }
}

/// The tools of `registry` a host with `config` shows, for `profile` if one is chosen.
pub fn view(registry: &Registry, config: &Config, profile: Option<&Profile>) -> View {
    view_selected(registry, config, profile.map(|profile| Arc::new(profile::select(profile, registry))))
}

/// [`view`] with the profile already checked against `registry` ([`profile::select`],
/// which a host that makes many views keeps).
pub fn view_selected(registry: &Registry, config: &Config, selection: Option<Arc<Selection>>) -> View {
    let mut view = View { selection, ..View::default() };
    let diagnostics = registry.diagnostics().to_vec();
    if view.selection.is_none() && config.tool_policies.is_empty() && config.policy.is_default() {
        // Nothing is left out, renamed or declared anew: the registry as it is.
        view.registry = Registry::from_libraries(registry.libraries().to_vec(), diagnostics).with_read_of(registry);
        view.routes = registry.tools().map(|(_, tool)| (tool.name.clone(), tool.name.clone())).collect();
        let members =
            registry.prompts().map(|(_, prompt)| prompt).chain(registry.resources().map(|(_, r)| &r.function));
        view.routes.extend(members.map(|member| (member.name.clone(), member.name.clone())));
        view.docs =
            registry.tools().filter_map(|(_, tool)| Some(tool_doc(&tool.name, tool.policy.docs.as_ref()?))).collect();
        return view;
    }
    if let Some(selection) = &view.selection
        && let Some(path) = &selection.docs
    {
        let uri = format!("docs://profiles/{}", selection.name);
        view.docs.push(Doc { uri, name: selection.name.clone(), path: path.clone() });
    }
    let mut libraries = Vec::new();
    for library in registry.libraries() {
        let mut shown = Vec::new();
        for tool in &library.tools {
            let names = shown_names(view.selection.as_deref(), &tool.name);
            if names.is_empty() {
                continue;
            }
            let declared = config.declared(tool);
            for name in names {
                if let Some(rule) = config.policy.forbids(name, &declared) {
                    view.refused.push((name.to_string(), rule));
                    continue;
                }
                if let Some(path) = &declared.docs {
                    view.docs.push(tool_doc(name, path));
                }
                let mut tool = tool.clone();
                view.routes.push((name.to_string(), std::mem::replace(&mut tool.name, name.to_string())));
                tool.policy = declared.clone();
                shown.push(tool);
            }
        }
        let prompts = shown_members(&mut view, config, &library.prompts, |prompt| prompt, |prompt| prompt);
        let resources = shown_members(&mut view, config, &library.resources, |r| &r.function, |r| &mut r.function);
        if shown.is_empty() && prompts.is_empty() && resources.is_empty() && view.selection.is_some() {
            continue;
        }
        if shown == library.tools && prompts == library.prompts && resources == library.resources {
            libraries.push(Arc::clone(library));
        } else {
            libraries.push(Arc::new(Library { tools: shown, prompts, resources, ..(**library).clone() }));
        }
    }
    view.registry = Registry::from_libraries(libraries, diagnostics).with_read_of(registry);
    view
}

/// The names the profile shows the tool, prompt or resource named `name` under.
fn shown_names<'s>(selection: Option<&'s Selection>, name: &'s str) -> Vec<&'s str> {
    match selection {
        Some(selection) => {
            selection.routes.iter().filter(|(_, t)| *t == name).map(|(alias, _)| alias.as_str()).collect()
        }
        None => vec![name],
    }
}

/// The prompts or resources of a library the view shows, under their aliases, with
/// the routes to them added to `view`: as tools are shown (SPEC §15).
fn shown_members<T: Clone>(
    view: &mut View,
    config: &Config,
    members: &[T],
    function: impl Fn(&T) -> &Tool,
    function_mut: impl Fn(&mut T) -> &mut Tool,
) -> Vec<T> {
    let mut shown = Vec::new();
    for member in members {
        let tool = function(member);
        let names: Vec<String> =
            shown_names(view.selection.as_deref(), &tool.name).into_iter().map(str::to_string).collect();
        let declared = config.declared(tool);
        for name in names {
            if let Some(rule) = config.policy.forbids(&name, &declared) {
                view.refused.push((name, rule));
                continue;
            }
            let mut member = member.clone();
            let renamed = function_mut(&mut member);
            view.routes.push((name.clone(), std::mem::replace(&mut renamed.name, name)));
            renamed.policy = declared.clone();
            shown.push(member);
        }
    }
    shown
}

fn tool_doc(name: &str, path: &std::path::Path) -> Doc {
    Doc { uri: format!("docs://tools/{name}"), name: name.to_string(), path: path.to_path_buf() }
}

/// The grade of a selection of tools: the element-wise maximum of theirs (an
/// undeclared grade counts as the highest); [`Grade::NONE`] for no tools.
pub fn grade<'t>(registry: &Registry, config: &Config, tools: impl IntoIterator<Item = &'t str>) -> Grade {
    tools
        .into_iter()
        .filter_map(|tool| registry.tool(tool))
        .map(|(_, tool)| config.declared(tool).grade())
        .fold(Grade::NONE, Grade::max)
}
