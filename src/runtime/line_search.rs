//! Regular expressions for the built-in tools (SPEC §17), in time linear in the text.
//!
//! `lcp_files.search_lines` (a built-in of the embedded Python) runs here: Python's
//! `re` backtracks, so a pattern such as `(a+)+$` can take longer than any budget and
//! cannot be interrupted inside a tool's thread. `regex_lite` never backtracks; what
//! it cannot do in linear time (look-around, back-references) it refuses to compile.
//! Must never: run Python.

use regex_lite::RegexBuilder;

/// Longest pattern accepted, in bytes.
const MAX_PATTERN: usize = 4096;

/// The lines of `text` (ended by `\n`) that `pattern` matches, as `(line number from
/// 1, character offset of the first match in the line)`, or why the pattern is refused.
pub fn matching_lines(
    pattern: &str,
    literal: bool,
    ignore_case: bool,
    text: &str,
) -> Result<Vec<(usize, usize)>, String> {
    if pattern.len() > MAX_PATTERN {
        return Err(format!("the pattern is {} bytes long; at most {MAX_PATTERN} are accepted", pattern.len()));
    }
    let escaped;
    let source = if literal {
        escaped = regex_lite::escape(pattern);
        &escaped
    } else {
        pattern
    };
    let regex = RegexBuilder::new(source)
        .case_insensitive(ignore_case)
        .size_limit(1 << 20)
        .build()
        .map_err(|err| describe(&err.to_string()))?;
    let mut found = Vec::new();
    for (index, line) in text.split_terminator('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(hit) = regex.find(line) {
            found.push((index + 1, line[..hit.start()].chars().count()));
        }
    }
    Ok(found)
}

fn describe(error: &str) -> String {
    let flat = error.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.contains("look-around") || flat.contains("backreference") {
        return format!("{flat} (look-around and back-references are refused: they can take exponential time)");
    }
    flat
}

#[cfg(test)]
mod tests {
    use super::matching_lines;

    #[test]
    fn catastrophic_patterns_match_in_linear_time() {
        let text = format!("{}b\nok aaa\n", "a".repeat(100_000));
        assert_eq!(matching_lines("(a+)+$", false, false, &text).unwrap(), vec![(2, 3)]);
    }

    #[test]
    fn literals_are_escaped_and_case_folded() {
        let text = "x = a.b\nA.B here\naxb\r\n";
        assert_eq!(matching_lines("a.b", true, true, text).unwrap(), vec![(1, 4), (2, 0)]);
        assert_eq!(matching_lines("a.b", false, false, text).unwrap(), vec![(1, 4), (3, 0)]);
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(matching_lines("x", true, false, "ééx").unwrap(), vec![(1, 2)]);
    }

    #[test]
    fn back_references_and_look_around_are_refused_saying_why() {
        for pattern in [r"(a)\1", "a(?=b)", "(?<!a)b"] {
            let error = matching_lines(pattern, false, false, "ab").unwrap_err();
            assert!(!error.is_empty(), "{pattern}");
        }
        assert!(matching_lines(&"a".repeat(5000), false, false, "a").unwrap_err().contains("at most 4096"));
    }
}
