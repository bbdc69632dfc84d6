//! Profiles chosen and checked (SPEC §11, seed 000): `--profile NAME | a,b,c | none` with
//! `--extra-tools` ([`Choice`]), and the check of a profile against the tools found
//! ([`select`]). Profiles as defined (config tables, kit files) are read by
//! `config::profiles` and re-exported here. It never runs Python and never decides what
//! a policy allows (`view` does).

use std::path::PathBuf;

use crate::discovery::registry::Registry;
pub use crate::host::config::profiles::{Entry, Origin, Profile};
pub(crate) use crate::host::config::profiles::{NONE, is_valid_name, kit_text};
use crate::located::ConfigError;

/// `--profile P` and `--extra-tools a,b`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// A profile name, `none`, or an inline list `a,b,c`.
    pub profile: String,
    /// `--extra-tools`: tools added under their own names.
    pub extra_tools: Vec<String>,
}

impl Choice {
    /// The profile chosen, as defined: a named one of the config, or an inline list.
    pub fn profile(&self, profiles: &[Profile]) -> Result<Profile, ConfigError> {
        let spec = self.profile.trim();
        let mut profile = if spec.contains(',') {
            let mut inline = Profile::new(spec, Origin::Option);
            for tool in spec.split(',').map(str::trim).filter(|tool| !tool.is_empty()) {
                inline.push(tool, tool, None);
            }
            inline
        } else if let Some(found) = profiles.iter().find(|profile| profile.name == spec) {
            found.clone()
        } else if spec == NONE {
            Profile::new(NONE, Origin::Option)
        } else {
            let known: Vec<&str> = profiles.iter().map(|profile| profile.name.as_str()).collect();
            let known =
                if known.is_empty() { "there are none".to_string() } else { format!("known: {}", known.join(", ")) };
            let message = format!("no profile `{spec}` ({known}); a list of tools is written `a,b,c`");
            return Err(ConfigError::Option { option: "--profile", message });
        };
        for tool in &self.extra_tools {
            profile.entries.push(Entry { alias: tool.clone(), tool: tool.clone(), line: None, extra: true });
        }
        Ok(profile)
    }
}

/// A profile checked against the tools found: the names the model sees, each with
/// its tool, in the profile's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// The profile's name.
    pub name: String,
    /// Documentation of the profile, if any.
    pub docs: Option<PathBuf>,
    /// `(alias, tool)`.
    pub routes: Vec<(String, String)>,
    /// The definition's problems, then the entries left out (naming no tool, or an
    /// alias that collides).
    pub problems: Vec<ConfigError>,
}

impl Selection {
    /// The tool an alias stands for.
    pub fn tool(&self, alias: &str) -> Option<&str> {
        self.routes.iter().find(|(name, _)| name == alias).map(|(_, tool)| tool.as_str())
    }
}

/// Checks a profile against the tools of `registry`.
pub fn select(profile: &Profile, registry: &Registry) -> Selection {
    let mut selection = Selection {
        name: profile.name.clone(),
        docs: profile.docs.clone(),
        routes: Vec::new(),
        problems: profile.problems.clone(),
    };
    for entry in &profile.entries {
        let (alias, tool) = (&entry.alias, &entry.tool);
        if !registry.has_member(tool) {
            let close: Vec<String> = registry.closest_names(tool).iter().map(|n| format!("`{n}`")).collect();
            let hint = if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.join(", ")) };
            let message = if alias == tool {
                format!("`{tool}` is not a tool{hint}")
            } else {
                format!("alias `{alias}` names `{tool}`, which is not a tool{hint}")
            };
            selection.problems.push(profile.error(entry, message));
            continue;
        }
        match selection.routes.iter().find(|(taken, _)| taken == alias) {
            Some((_, same)) if same == tool => continue,
            Some((_, other)) => {
                let message = format!("alias `{alias}` is already the name of `{other}` in this profile");
                selection.problems.push(profile.error(entry, message));
                continue;
            }
            None => {}
        }
        if alias != tool && registry.has_member(alias) {
            let message = format!("alias `{alias}` (for `{tool}`) is the name of another tool");
            selection.problems.push(profile.error(entry, message));
            continue;
        }
        selection.routes.push((alias.clone(), tool.clone()));
    }
    selection
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices() {
        let named = Profile::new("writer", Origin::Option);
        let choice = |spec: &str, extra: &[&str]| Choice {
            profile: spec.to_string(),
            extra_tools: extra.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(choice("writer", &[]).profile(std::slice::from_ref(&named)).unwrap().name, "writer");
        let inline = choice("a, b,", &[]).profile(&[]).unwrap();
        assert_eq!(inline.entries.iter().map(|e| e.tool.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        let none = choice("none", &["x"]).profile(&[]).unwrap();
        assert_eq!(none.entries, [Entry { alias: "x".into(), tool: "x".into(), line: None, extra: true }]);
        assert_eq!(
            choice("nope", &[]).profile(&[named]).unwrap_err().to_string(),
            "--profile: no profile `nope` (known: writer); a list of tools is written `a,b,c`"
        );
    }
}
