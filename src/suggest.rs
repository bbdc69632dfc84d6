//! Names near a name: what "did you mean" offers for an unknown tool, argument,
//! library or profile. Pure string work on what the caller lists; runs no Python.

/// Up to three of `candidates` near `wanted`, nearest first: within an edit distance
/// of a third of its length (at least 2), ignoring case, or containing `wanted`
/// (less the prefix `strip` takes off, when that leaves three characters or more).
pub fn closest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    strip: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let wanted = wanted.to_lowercase();
    let bare = strip(&wanted).unwrap_or_else(|| wanted.clone());
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|name| {
            let candidate = name.to_lowercase();
            let distance = edit_distance(&wanted, &candidate);
            let contains = bare.len() >= 3 && candidate.contains(bare.as_str());
            (distance <= (wanted.chars().count() / 3).max(2) || contains).then_some((distance, name))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, name)| name.to_string()).collect()
}

/// ` (did you mean `a`, `b`?)` for the names given, nothing for none.
pub fn did_you_mean(names: &[String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    format!("; did you mean {}?", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current.push((previous[j] + cost).min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("tool_add", "tool_add"), 0);
        assert_eq!(edit_distance("tool_ad", "tool_add"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
