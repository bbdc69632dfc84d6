//! Text from outside lcp (a tool's confirmation, a file name) made safe to show a
//! person (SPEC §17): what is shown is what is there, with nothing hidden.
//!
//! Control characters, escape sequences and bidirectional or invisible marks are
//! written as escapes (`\x1b`, `\r`, `\u{202e}`), so a carriage return, a
//! cursor movement or a right-to-left override cannot make one command look like
//! another; line breaks are kept only where the text is shown as lines. Must never:
//! drop a character without saying so.

use std::borrow::Cow;
use std::fmt::Write;

#[cfg(feature = "python")]
/// Characters of a confirmation shown before the rest is summarised.
pub const CONFIRMATION_LIMIT: usize = 20_000;
#[cfg(feature = "python")]
/// Consecutive empty lines shown as they are; more are counted instead.
const EMPTY_LINES_SHOWN: usize = 2;

/// `text` on one line: every control character, line breaks included, escaped.
pub fn line(text: &str) -> Cow<'_, str> {
    escaped(text, false)
}

#[cfg(feature = "python")]
/// `text` as lines (`\n` kept, every other control character escaped), for texts
/// shown whole such as a file's content in a confirmation.
pub fn lines(text: &str) -> Cow<'_, str> {
    escaped(text, true)
}

#[cfg(feature = "python")]
/// A text a person is asked to approve: its lines escaped, runs of more than two
/// empty lines counted rather than shown (so they cannot push the start off the
/// screen), and past [`CONFIRMATION_LIMIT`] characters a count of what follows.
pub fn confirmation(text: &str) -> String {
    let (head, rest) = match text.char_indices().nth(CONFIRMATION_LIMIT) {
        Some((cut, _)) => (&text[..cut], text[cut..].chars().count()),
        None => (text, 0),
    };
    let mut shown = String::with_capacity(head.len() + 64);
    let mut empty = 0usize;
    let flush = |shown: &mut String, empty: &mut usize| {
        if *empty > EMPTY_LINES_SHOWN {
            let _ = writeln!(shown, "[{} empty lines]", *empty);
        } else {
            for _ in 0..*empty {
                shown.push('\n');
            }
        }
        *empty = 0;
    };
    for part in lines(head).split('\n') {
        if part.is_empty() {
            empty += 1;
            continue;
        }
        flush(&mut shown, &mut empty);
        shown.push_str(part);
        shown.push('\n');
    }
    if empty > 1 {
        empty -= 1; // the split's last piece after a final line break
        flush(&mut shown, &mut empty);
    }
    if shown.ends_with('\n') {
        shown.pop();
    }
    if rest > 0 {
        let _ = write!(shown, "\n[... {rest} more characters not shown]");
    }
    shown
}

fn escaped(text: &str, keep_lines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c, keep_lines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !hidden(c, keep_lines) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Whether a character changes how the text around it looks instead of showing.
fn hidden(c: char, keep_lines: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_lines,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional controls, invisible separators and joiners, line and
        // paragraph separators, the byte-order mark.
        '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::line;
    #[cfg(feature = "python")]
    use super::{confirmation, lines};

    #[test]
    fn control_characters_escape_sequences_and_bidi_marks_are_shown_escaped() {
        assert_eq!(line("touch pwned #\r\x1b[2K    git status"), "touch pwned #\\r\\x1b[2K    git status");
        assert_eq!(line("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(line("bad\nother.py:1:1: error: FORGED"), "bad\\nother.py:1:1: error: FORGED");
        #[cfg(feature = "python")]
        assert_eq!(lines("one\ntwo\r\n\x07"), "one\ntwo\\r\n\\x07");
        assert_eq!(line("\u{9b}31m \u{7f} \u{feff}"), "\\x9b31m \\x7f \\u{feff}");
        assert!(matches!(line("plain text, tabs\tno"), std::borrow::Cow::Owned(_)));
        #[cfg(feature = "python")]
        assert!(matches!(lines("plain\ttext\n"), std::borrow::Cow::Borrowed(_)));
    }

    #[cfg(feature = "python")]
    #[test]
    fn many_empty_lines_are_counted_so_they_cannot_push_the_start_away() {
        let text = format!("{}rm -rf ~", "\n".repeat(80));
        assert_eq!(confirmation(&text), "[80 empty lines]\nrm -rf ~");
        assert_eq!(confirmation("a\n\nb\n"), "a\n\nb");
        assert_eq!(confirmation("a\n\n\n\n\nb"), "a\n[4 empty lines]\nb");
    }

    #[cfg(feature = "python")]
    #[test]
    fn a_very_long_text_says_how_much_follows() {
        let text = "x".repeat(super::CONFIRMATION_LIMIT + 5);
        let shown = confirmation(&text);
        assert!(shown.ends_with("\n[... 5 more characters not shown]"), "{}", &shown[shown.len() - 60..]);
        assert_eq!(confirmation("short"), "short");
    }
}
