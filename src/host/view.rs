//! What a host shows of its tools and lets run (SPEC §11, §12).
//!
//! Owns the combination of the tools found, the config file's `[tool_policies.NAME]`
//! declarations and `[policy]`, and the profile chosen: [`view`] is the registry every
//! listing and export is made from (the profile's tools under their aliases, minus
//! what the policy forbids, with their docs), and [`admit`] is the check every call
//! goes through before any code runs. It never runs Python and never changes the
//! registry it is given: calls still name the tools as they are.

use std::path::PathBuf;
use std::sync::Arc;

use crate::discovery::extract::{Library, Tool};
use crate::discovery::registry::Registry;
use crate::host::config::Config;
use crate::host::profile::{self, Profile, Selection};
use crate::policy::Grade;

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

/// What a name stands for: a tool, a prompt or a resource (SPEC §15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    /// A `tool_*` function, a config tool, a server's tool, a virtual tool.
    Tool,
    /// A `prompt_*` function.
    Prompt,
    /// A `resource_*` function.
    Resource,
}

impl Member {
    /// The function of `library` at `index` among its members of this kind.
    fn of(self, library: &Library, index: usize) -> &Tool {
        match self {
            Member::Tool => &library.tools[index],
            Member::Prompt => &library.prompts[index],
            Member::Resource => &library.resources[index].function,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Member::Tool => "tool",
            Member::Prompt => "prompt",
            Member::Resource => "resource",
        }
    }
}

/// A call the host's profile and policy let through: the name in the registry of
/// the tool, prompt or resource. Only [`admit`] and [`admit_member`] make one, so a
/// call made with it (`Runtime::call_admitted`) was checked before any code ran; the
/// compiler, not each caller's memory, keeps it so.
#[derive(Debug, Clone)]
pub struct Admitted {
    name: String,
    member: Member,
    declared: crate::policy::Declared,
    inferred: Vec<&'static str>,
    /// The library it was admitted from, and its place among the library's members
    /// of its kind: a call runs what was admitted, without looking it up again.
    library: Arc<Library>,
    index: usize,
}

impl PartialEq for Admitted {
    fn eq(&self, other: &Admitted) -> bool {
        (&self.name, self.member, &self.declared, &self.inferred, self.index)
            == (&other.name, other.member, &other.declared, &other.inferred, other.index)
            && Arc::ptr_eq(&self.library, &other.library)
    }
}

impl Eq for Admitted {}

impl Admitted {
    /// The name in the registry (the profile's alias resolved).
    pub fn tool(&self) -> &str {
        &self.name
    }

    /// The library it was admitted from, as the registry held it then.
    pub fn library(&self) -> &Library {
        &self.library
    }

    /// Its definition: the tool, the prompt's function or the resource's function.
    pub fn function(&self) -> &Tool {
        self.member.of(&self.library, self.index)
    }

    /// What it is.
    pub fn member(&self) -> Member {
        self.member
    }

    /// What it declares, the config's `[tool_policies]` laid over its source's
    /// ([`Config::declared`]): what the policy judged, and the sandbox of the worker
    /// that runs it (SPEC §18), the same under every command.
    pub fn declared(&self) -> &crate::policy::Declared {
        &self.declared
    }

    /// The declarations `[sandbox] infer` gave it from its code (SPEC §20), which its
    /// sandbox keeps as if it declared them.
    pub fn inferred(&self) -> &[&'static str] {
        &self.inferred
    }

    /// What its worker's sandbox keeps: its declarations with those inferred.
    pub fn confined(&self) -> crate::policy::Declared {
        let mut declared = self.declared.clone();
        if self.inferred.contains(&"read_only") {
            declared.read_only = Some(true);
        }
        if self.inferred.contains(&"open_world") {
            declared.open_world = Some(false);
        }
        declared
    }
}

/// What becomes of a call of `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Run this tool.
    Run(Admitted),
    /// The host's policy refuses it; the text names the rule.
    Refused(String),
    /// No tool shown has that name; the text says why, with the closest names.
    Unknown(String),
}

/// The check of one call, before any code runs (SPEC §11, §12): the name must be
/// one the profile shows, and the policy must allow its tool.
pub fn admit(registry: &Registry, config: &Config, profile: Option<&Profile>, name: &str) -> Admission {
    let selection = profile.map(|profile| profile::select(profile, registry));
    admit_member(registry, config, selection.as_ref(), name, Member::Tool)
}

/// [`admit`] for a tool, a prompt or a resource (SPEC §15), with the profile already
/// checked against `registry` ([`profile::select`], which a host that admits many calls
/// keeps): prompts and resources go through the profile's names and the policy as
/// tools do.
pub fn admit_member(
    registry: &Registry,
    config: &Config,
    selection: Option<&Selection>,
    name: &str,
    member: Member,
) -> Admission {
    let noun = member.noun();
    let real = match selection {
        Some(selection) => match selection.tool(name) {
            Some(tool) => tool.to_string(),
            None => {
                let names: Vec<&str> = selection.routes.iter().map(|(alias, _)| alias.as_str()).collect();
                let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                let listed = if member == Member::Tool { "its tools" } else { "its names" };
                return Admission::Unknown(format!(
                    "`{name}` is not a {noun} of profile `{}` ({listed}: {names})",
                    selection.name
                ));
            }
        },
        None => name.to_string(),
    };
    let entry = match member {
        Member::Tool => registry.tool_entry(&real),
        Member::Prompt => registry.prompt_entry(&real),
        Member::Resource => registry.resource_entry(&real),
    };
    let Some((library, index)) = entry.map(|(library, index)| (Arc::clone(library), index)) else {
        return Admission::Unknown(match member {
            Member::Tool => registry.unknown_tool(name),
            _ => format!("there is no {noun} `{name}`"),
        });
    };
    let found = member.of(&library, index);
    let declared = config.declared(found);
    if let Some(rule) = config.policy.forbids(name, &declared) {
        return Admission::Refused(rule);
    }
    let inferred = match member {
        Member::Tool => inferred(config, &library, found, &real, &declared),
        Member::Prompt | Member::Resource => Vec::new(),
    };
    Admission::Run(Admitted { name: real, member, declared, inferred, library, index })
}

/// The declarations `[sandbox] infer` gives the tool `name` (`tool` of `library`) that
/// declares `declared` (SPEC §20): read from its library's code at each admission,
/// so a changed file is read as it is now; none when the config does not ask for
/// inference or the tool declares both keys.
fn inferred(
    config: &Config,
    library: &Library,
    tool: &Tool,
    name: &str,
    declared: &crate::policy::Declared,
) -> Vec<&'static str> {
    let undeclared = declared.read_only.is_none() || declared.open_world.is_none();
    if !config.runtime.sandbox.infer || !undeclared {
        return Vec::new();
    }
    crate::host::audit::inferred(&crate::host::audit::audit_tool(library, tool, name, declared.clone()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::registry::{Options, Sources};

    fn members() -> Registry {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/members");
        Registry::load(&Sources { folders: vec![folder], files: Vec::new() }, &Options::default())
    }

    #[test]
    fn an_admission_holds_what_it_admitted_so_a_call_looks_nothing_up() {
        let registry = members();
        let config = Config::default();
        let cases = [
            ("tool_count_notes", Member::Tool),
            ("prompt_greeting", Member::Prompt),
            ("resource_readme", Member::Resource),
        ];
        for (name, member) in cases {
            let Admission::Run(admitted) = admit_member(&registry, &config, None, name, member) else {
                panic!("{name} is admitted");
            };
            assert_eq!((admitted.tool(), admitted.member()), (name, member));
            assert_eq!(admitted.function().name, name, "the function of its kind");
            let found = match member {
                Member::Tool => registry.tool(name).map(|(library, _)| library),
                Member::Prompt => registry.prompt(name).map(|(library, _)| library),
                Member::Resource => registry.resource(name).map(|(library, _)| library),
            };
            assert!(std::ptr::eq(admitted.library(), found.unwrap()), "the registry's own library, not a copy");
        }
        let mut shown_as = Profile::new("shown", crate::host::config::profiles::Origin::Option);
        shown_as.push("count", "tool_count_notes", None);
        let Admission::Run(aliased) = admit(&registry, &config, Some(&shown_as), "count") else {
            panic!("the alias is admitted");
        };
        assert_eq!((aliased.tool(), aliased.function().name.as_str()), ("tool_count_notes", "tool_count_notes"));
    }
}
