//! The check every call goes through before any code runs (SPEC §11, §12, §15): the
//! name must be one the profile shows, and the policy must allow its tool; what is
//! admitted is an [`Admitted`], everything a call needs without looking it up again.
//!
//! Must never: run Python, or admit what [`super::view`] would not show.

use std::sync::Arc;

use crate::discovery::extract::{Library, Tool};
use crate::discovery::registry::Registry;
use crate::host::config::Config;
use crate::host::profile::{self, Profile, Selection};

/// What a name stands for: a tool, a prompt or a resource (SPEC §15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Member {
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
pub(crate) struct Admitted {
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
pub(crate) enum Admission {
    /// Run this tool.
    Run(Admitted),
    /// The host's policy refuses it; the text names the rule.
    Refused(String),
    /// No tool shown has that name; the text says why, with the closest names.
    Unknown(String),
}

/// The check of one call, before any code runs (SPEC §11, §12): the name must be
/// one the profile shows, and the policy must allow its tool.
pub(crate) fn admit(registry: &Registry, config: &Config, profile: Option<&Profile>, name: &str) -> Admission {
    let selection = profile.map(|profile| profile::select(profile, registry));
    admit_member(registry, config, selection.as_ref(), name, Member::Tool)
}

/// [`admit`] for a tool, a prompt or a resource (SPEC §15), with the profile already
/// checked against `registry` ([`profile::select`], which a host that admits many calls
/// keeps): prompts and resources go through the profile's names and the policy as
/// tools do.
pub(crate) fn admit_member(
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
