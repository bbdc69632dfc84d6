//! Source text: from a file's bytes to text the parser can take safely (SPEC §2).
//!
//! Owns the size limit, UTF-8 decoding (a BOM is allowed), CRLF / lone CR
//! normalisation and the nesting estimate that refuses files whose syntax tree would
//! be too deep to walk or free safely. A small file is parsed first and estimated on
//! the parser's tokens; a larger one is estimated lexically before it is parsed (a
//! parse holds memory in proportion to nesting), and on its tokens after parsing too
//! when part of its code was out of the lexical estimate's sight (long or nested
//! replacement fields of f-strings and t-strings). It never parses and never runs
//! Python.

use std::fmt;

use ruff_python_ast::token::{Token, TokenKind};
use ruff_text_size::Ranged;

/// Larger files are refused: no real tool library comes close, and parsing one
/// costs memory in proportion.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;

/// Deepest expression or block nesting accepted. CPython itself refuses more than
/// 200 nested brackets and 100 indentation levels.
pub const MAX_NESTING: usize = 1000;

/// Why a file's bytes cannot be parsed safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SourceError {
    /// Over [`MAX_FILE_BYTES`].
    TooLarge {
        /// The file's size.
        bytes: usize,
    },
    /// Not UTF-8, from this place on.
    NotUtf8 {
        /// The line of the first bad byte, from 1.
        line: u32,
        /// Its column, from 1.
        col: u32,
    },
    /// Nested deeper than [`MAX_NESTING`] here.
    TooDeep {
        /// The line where the bound is passed, from 1.
        line: u32,
        /// Its column, from 1.
        col: u32,
    },
}

impl SourceError {
    /// 1-based line and column of the problem.
    pub fn position(&self) -> (u32, u32) {
        match *self {
            SourceError::TooLarge { .. } => (1, 1),
            SourceError::NotUtf8 { line, col } | SourceError::TooDeep { line, col } => (line, col),
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::TooLarge { bytes } => {
                write!(f, "file is too large to be a tool library ({bytes} bytes, limit {MAX_FILE_BYTES})")
            }
            SourceError::NotUtf8 { .. } => f.write_str("file is not valid UTF-8"),
            SourceError::TooDeep { .. } => {
                write!(f, "code is nested too deeply to read safely (more than {MAX_NESTING} levels)")
            }
        }
    }
}

/// Replacement fields of f-strings and t-strings up to this long, holding no string
/// and no nested field, add at most this many levels to the tree (one per byte).
const FIELD_BYTES: usize = 64;

/// Files up to this size are parsed before their nesting is estimated, on the
/// parser's tokens: the parser grows its own stack as it needs, and what a file this
/// small can make it hold stays small (about 2 KiB per level, 70 MiB for a file of
/// nothing but brackets). Larger files are estimated lexically before parsing.
pub const PARSE_FIRST_BYTES: usize = 32 * 1024;

/// A file's text, ready for the parser.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// The text: UTF-8, without a BOM, lines ending in `\n`.
    pub text: String,
    /// The nesting is still to be checked on the parser's tokens
    /// ([`check_token_nesting`]) before the syntax tree is walked or freed: the file
    /// is small enough to parse first, or part of its code was out of the lexical
    /// estimate's sight. Otherwise the tree is at most a few times [`MAX_NESTING`]
    /// deep, which every walk in lcp handles.
    pub check_tokens: bool,
}

/// Decodes and normalises a file's bytes (in place when there is nothing to change),
/// then checks the nesting of a file too large to parse first.
pub(crate) fn prepare(mut bytes: Vec<u8>) -> Result<Prepared, SourceError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(SourceError::TooLarge { bytes: bytes.len() });
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    let text = String::from_utf8(bytes).map_err(|err| {
        let bytes = err.as_bytes();
        let (line, col) = line_col(&bytes[..err.utf8_error().valid_up_to()]);
        SourceError::NotUtf8 { line, col }
    })?;
    let text = normalise_newlines(text);
    let check_tokens = text.len() <= PARSE_FIRST_BYTES || check_nesting(&text)?;
    Ok(Prepared { text, check_tokens })
}

fn normalise_newlines(text: String) -> String {
    if !text.contains('\r') {
        return text;
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// 1-based position just after `prefix`.
fn line_col(prefix: &[u8]) -> (u32, u32) {
    let line = prefix.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = prefix.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let col = String::from_utf8_lossy(&prefix[line_start..]).chars().count() + 1;
    (line.min(u32::MAX as usize) as u32, col.min(u32::MAX as usize) as u32)
}

/// An upper estimate of syntax-tree depth, computed from the bytes without parsing.
///
/// Every bracket, operator, dot or nesting keyword can add one level to the tree, but
/// a comma (or the end of a statement) at a bracket level closes everything opened
/// since, so long flat lists stay shallow. Indentation adds its levels. Strings and
/// comments are skipped. Returns whether some code was out of sight: a replacement
/// field of an f-string or t-string that is long or holds strings or fields.
fn check_nesting(text: &str) -> Result<bool, SourceError> {
    let bytes = text.as_bytes();
    let mut estimate = Estimate::default();
    let mut at_line_start = true;
    // The word just before a quote was an f-string or t-string prefix.
    let mut formatted = false;
    let mut hidden = false;
    let mut i = 0;
    let too_deep = |at: usize| {
        let (line, col) = line_col(&bytes[..at]);
        Err(SourceError::TooDeep { line, col })
    };
    while i < bytes.len() {
        if at_line_start && !estimate.in_brackets() {
            let start = i;
            while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
                i += 1;
            }
            // Indentation counted in units of one space or tab: a generous bound.
            estimate.indent = (i - start) / 2;
            at_line_start = false;
            continue;
        }
        let b = bytes[i];
        if WORD[b as usize] {
            // A whole word at once; it counts when the byte after it is handled, so a
            // word that ends the file never counts.
            let start = i;
            i = word_end(bytes, i);
            let word = &bytes[start..i];
            formatted = is_formatted_prefix(word);
            if i < bytes.len() && is_deepening_keyword(word) {
                estimate.deepen();
            }
            continue;
        }
        let prefixed = std::mem::take(&mut formatted);
        match b {
            // A run of spaces changes nothing: checked once, at its first space.
            b' ' => {
                if estimate.too_deep() {
                    return too_deep(i);
                }
                while bytes.get(i) == Some(&b' ') {
                    i += 1;
                }
                continue;
            }
            b'#' => {
                i = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |end| i + end);
                continue;
            }
            b'\'' | b'"' => {
                let end = skip_string(bytes, i);
                hidden |= prefixed && !fields_are_shallow(&bytes[i..end]);
                i = end;
                continue;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'(' | b'[' | b'{' => estimate.open(),
            b')' | b']' | b'}' => estimate.close(),
            b',' | b';' => estimate.separate(),
            b'\n' => at_line_start = estimate.end_of_line(),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'@' | b'&' | b'|' | b'^' | b'~' | b'<' | b'>' | b'=' | b'.' | b':' => {
                estimate.deepen()
            }
            _ => {}
        }
        if estimate.too_deep() {
            return too_deep(i);
        }
        i += 1;
    }
    Ok(hidden)
}

/// The estimate of `check_nesting`, taken on the tokens of a parsed file: strings
/// are single tokens and the code of their replacement fields is tokens too, so
/// nothing is out of sight; an operator counts once, an indentation level once.
pub(crate) fn check_token_nesting(text: &str, tokens: &[Token]) -> Result<(), SourceError> {
    let mut estimate = Estimate::default();
    for token in tokens {
        match nesting_step(token.kind()) {
            Step::Open => estimate.open(),
            Step::Deepen => estimate.deepen(),
            Step::Indent => estimate.indent += 1,
            Step::Close => estimate.close(),
            Step::Separate => estimate.separate(),
            Step::EndOfLine => {
                estimate.end_of_line();
            }
            Step::Dedent => estimate.indent = estimate.indent.saturating_sub(1),
            Step::Nothing => {}
        }
        if estimate.too_deep() {
            let (line, col) = line_col(&text.as_bytes()[..token.start().to_usize()]);
            return Err(SourceError::TooDeep { line, col });
        }
    }
    Ok(())
}

/// The running estimate of both checks: a bracket, operator or nesting keyword adds a
/// level, a separator gives back the levels added since the last one at its bracket
/// depth, and indentation adds its own.
#[derive(Default)]
struct Estimate {
    /// Levels added since the last separator at the current bracket depth.
    current: usize,
    /// The same count at each enclosing bracket depth, its bracket included.
    enclosing: Vec<usize>,
    /// All the levels added and not given back.
    depth_sum: usize,
    indent: usize,
}

impl Estimate {
    fn deepen(&mut self) {
        self.current += 1;
        self.depth_sum += 1;
    }

    fn open(&mut self) {
        self.depth_sum += 1;
        self.enclosing.push(self.current + 1);
        self.current = 0;
    }

    /// A closing bracket with none open changes nothing.
    fn close(&mut self) {
        if let Some(outer) = self.enclosing.pop() {
            self.depth_sum -= self.current;
            self.current = outer;
        }
    }

    fn separate(&mut self) {
        self.depth_sum -= std::mem::take(&mut self.current);
    }

    /// A line break ends a statement outside brackets only; says whether it did.
    fn end_of_line(&mut self) -> bool {
        let ends = !self.in_brackets();
        if ends {
            self.separate();
        }
        ends
    }

    fn in_brackets(&self) -> bool {
        !self.enclosing.is_empty()
    }

    fn too_deep(&self) -> bool {
        self.depth_sum + self.indent > MAX_NESTING
    }
}

/// What a token does to the nesting estimate.
enum Step {
    Open,
    Close,
    /// Closes what was opened since the last separator at the same bracket depth.
    Separate,
    EndOfLine,
    Deepen,
    Indent,
    Dedent,
    Nothing,
}

/// The tokens of the bytes [`check_nesting`] counts, the same keywords.
fn nesting_step(kind: TokenKind) -> Step {
    use TokenKind as K;
    match kind {
        K::Lpar | K::Lsqb | K::Lbrace => Step::Open,
        K::Rpar | K::Rsqb | K::Rbrace => Step::Close,
        K::Comma | K::Semi => Step::Separate,
        K::Newline => Step::EndOfLine,
        K::Indent => Step::Indent,
        K::Dedent => Step::Dedent,
        K::Colon
        | K::Plus
        | K::Minus
        | K::Star
        | K::Slash
        | K::Vbar
        | K::Amper
        | K::Less
        | K::Greater
        | K::Equal
        | K::Dot
        | K::Percent
        | K::EqEqual
        | K::NotEqual
        | K::LessEqual
        | K::GreaterEqual
        | K::Tilde
        | K::CircumFlex
        | K::LeftShift
        | K::RightShift
        | K::DoubleStar
        | K::DoubleStarEqual
        | K::PlusEqual
        | K::MinusEqual
        | K::StarEqual
        | K::SlashEqual
        | K::PercentEqual
        | K::AmperEqual
        | K::VbarEqual
        | K::CircumflexEqual
        | K::LeftShiftEqual
        | K::RightShiftEqual
        | K::DoubleSlash
        | K::DoubleSlashEqual
        | K::ColonEqual
        | K::At
        | K::AtEqual
        | K::Rarrow
        | K::Ellipsis
        | K::Not
        | K::Lambda
        | K::If
        | K::Else
        | K::Await
        | K::And
        | K::Or
        | K::In
        | K::Is
        | K::Yield => Step::Deepen,
        _ => Step::Nothing,
    }
}

/// `f`, `rf`, `t`, `Tr`…: a prefix whose string has replacement fields.
fn is_formatted_prefix(word: &[u8]) -> bool {
    word.len() <= 2
        && word.iter().any(|b| matches!(b, b'f' | b'F' | b't' | b'T'))
        && word.iter().all(|b| matches!(b, b'f' | b'F' | b't' | b'T' | b'r' | b'R'))
}

/// Whether every replacement field of a formatted literal (quotes included) closes
/// within it, is at most [`FIELD_BYTES`] long and holds no quote and no brace. A
/// literal that Python 3.12's nested quotes cut short ends inside a field: not shallow.
fn fields_are_shallow(literal: &[u8]) -> bool {
    let mut i = 0;
    while let Some(offset) = literal[i..].iter().position(|&b| b == b'{') {
        let start = i + offset + 1;
        if literal.get(start) == Some(&b'{') {
            i = start + 1;
            continue;
        }
        let Some(length) = literal[start..].iter().position(|&b| b == b'}') else { return false };
        if length > FIELD_BYTES || literal[start..start + length].iter().any(|b| matches!(b, b'{' | b'\'' | b'"')) {
            return false;
        }
        i = start + length + 1;
    }
    true
}

/// Bytes of identifiers, keywords and numbers (any non-ASCII byte included).
static WORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80;
        b += 1;
    }
    table
};

/// Index of the first byte from `i` on that is not a word byte ([`WORD`]), eight
/// bytes at a time: most words end within the first eight, without a loop to leave.
fn word_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        let others = !word_bytes(u64::from_le_bytes(eight)) & HIGHS;
        if others != 0 {
            return i + (others.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && WORD[bytes[i] as usize] {
        i += 1;
    }
    i
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `eight` that is a word byte ([`WORD`]). Each byte's
/// low seven bits are compared with a range by two additions that cannot carry into
/// the next byte.
fn word_bytes(eight: u64) -> u64 {
    let low = eight & !HIGHS;
    let between = |value: u64, first: u8, last: u8| {
        (value + ONES * u64::from(0x80 - first)) & !(value + ONES * u64::from(0x7F - last)) & HIGHS
    };
    // Setting bit 5 makes upper-case letters lower-case and leaves lower-case ones.
    let letters = between(low | (ONES * 0x20), b'a', b'z');
    let digits = between(low, b'0', b'9');
    let underscores = between(low, b'_', b'_');
    (eight & HIGHS) | letters | digits | underscores
}

fn is_deepening_keyword(word: &[u8]) -> bool {
    matches!(word, b"not" | b"lambda" | b"if" | b"else" | b"await" | b"and" | b"or" | b"in" | b"is" | b"yield")
}

/// Index just past the string literal whose opening quote is at `start`.
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let triple = bytes.get(start + 1) == Some(&quote) && bytes.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    while i < bytes.len() {
        // Jump to the next byte that can matter: a line break ends only a short string.
        let next = if triple {
            memchr::memchr2(quote, b'\\', &bytes[i..])
        } else {
            memchr::memchr3(quote, b'\\', b'\n', &bytes[i..])
        };
        match next {
            Some(offset) => i += offset,
            None => return bytes.len(),
        }
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            _ => {
                if !triple {
                    return i + 1;
                }
                if bytes.get(i + 1) == Some(&quote) && bytes.get(i + 2) == Some(&quote) {
                    return i + 3;
                }
                i += 1;
            }
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_and_crlf_are_normalised() {
        assert_eq!(prepare(b"\xEF\xBB\xBFx = 1\r\ny = 2\rz = 3".to_vec()).unwrap().text, "x = 1\ny = 2\nz = 3");
    }

    #[test]
    fn invalid_utf8_is_located() {
        assert_eq!(prepare(b"x = 1\ny = '\xff'".to_vec()), Err(SourceError::NotUtf8 { line: 2, col: 6 }));
    }

    /// The token estimate, as a file small enough to parse first gets it.
    fn tokens(code: &str) -> Result<(), SourceError> {
        let parsed = ruff_python_parser::parse_unchecked_source(code, ruff_python_ast::PySourceType::Python);
        let result = check_token_nesting(code, parsed.tokens());
        // Freeing a tree this deep needs more stack than a test thread has.
        std::mem::forget(parsed);
        result
    }

    #[test]
    fn deep_brackets_are_refused_and_flat_lists_are_not() {
        let deep = format!("x = {}{}", "[".repeat(5000), "]".repeat(5000));
        let chain = format!("x = {}1", "-".repeat(5000));
        let flat = format!("x = [{}]", "-1, ".repeat(100_000));
        assert!(matches!(check_nesting(&deep), Err(SourceError::TooDeep { line: 1, .. })));
        assert!(check_nesting(&chain).is_err());
        assert!(check_nesting(&flat).is_ok());
        // `=` is one level, the 1000th bracket (column 1004) the next.
        assert_eq!(tokens(&deep), Err(SourceError::TooDeep { line: 1, col: 1004 }));
        // `y = x = ` is two levels.
        assert_eq!(tokens(&format!("\n\ny = {chain}")), Err(SourceError::TooDeep { line: 3, col: 1007 }));
        assert_eq!(tokens(&flat), Ok(()));
        let closed = format!("x = [{}]", format!("{}1{}, ", "(".repeat(900), ")".repeat(900)).repeat(10));
        assert_eq!(tokens(&closed), Ok(()));
    }

    #[test]
    fn small_files_are_checked_on_their_tokens_and_large_ones_before_parsing() {
        let deep = format!("x = {}1", "-".repeat(5000));
        assert_eq!(prepare(deep.clone().into_bytes()).map(|p| p.check_tokens), Ok(true));
        let large_deep = format!("{}\n{deep}", "#".repeat(PARSE_FIRST_BYTES));
        assert!(matches!(prepare(large_deep.into_bytes()), Err(SourceError::TooDeep { line: 2, .. })));
        let large = format!("{}\nx = 1\n", "#".repeat(PARSE_FIRST_BYTES));
        assert_eq!(prepare(large.into_bytes()).map(|p| p.check_tokens), Ok(false));
    }

    #[test]
    fn indentation_counts_its_levels() {
        let nested = |levels: usize| {
            (0..levels).map(|i| format!("{}if x:\n", " ".repeat(i))).collect::<String>()
                + &" ".repeat(levels)
                + "pass\n"
        };
        assert_eq!(tokens(&nested(990)), Ok(()));
        assert!(matches!(tokens(&nested(1010)), Err(SourceError::TooDeep { .. })));
        // Once dedented, the levels are given back.
        assert_eq!(tokens(&nested(600).repeat(2)), Ok(()));
    }

    #[test]
    fn words_end_where_the_byte_table_says_at_any_offset() {
        for byte in 0..=255u8 {
            for at in 0..12 {
                let mut text = vec![b'w'; 12];
                text[at] = byte;
                let expected = if WORD[byte as usize] { 12 } else { at };
                assert_eq!(word_end(&text, 0), expected, "byte {byte:#x} at {at}");
            }
            let mut eight = [b'_'; 8];
            eight[3] = byte;
            assert_eq!(word_bytes(u64::from_le_bytes(eight)) & (0x80 << 24) != 0, WORD[byte as usize], "{byte:#x}");
        }
    }

    #[test]
    fn brackets_in_strings_and_comments_do_not_count() {
        let text = format!("s = '{}'\n# {}\nt = \"\"\"{}\"\"\"", "(".repeat(3000), "[".repeat(3000), "{".repeat(3000));
        assert_eq!(check_nesting(&text), Ok(false));
        assert_eq!(tokens(&text), Ok(()));
    }

    #[test]
    fn long_or_nested_replacement_fields_ask_for_a_token_check() {
        for shallow in [
            r#"x = f'{name} has {len(items)} items'"#,
            r#"x = rf"{a.b[0]:>10} {{literal}}""#,
            r#"x = b'{' + '{' + u"{{x}}""#,
            r#"x = 'plain {no prefix, and a field longer than sixty-four bytes, well beyond that}'"#,
            r#"x = f {1: 2}"#,
        ] {
            assert_eq!(check_nesting(shallow), Ok(false), "{shallow}");
        }
        let long = format!("x = f'{{{}}}'", "a + ".repeat(20) + "a");
        for hidden in [
            r#"x = f'{d["k"]}'"#,
            r#"x = f"{f"{f"{x}"}"}""#,
            r#"x = T'{a:{width}}'"#,
            "x = Rf'''{\n(((1)))\n'''",
            long.as_str(),
        ] {
            assert_eq!(check_nesting(hidden), Ok(true), "{hidden}");
        }
    }

    #[test]
    fn the_code_of_replacement_fields_counts_on_tokens() {
        let field = format!("x = f\"{{{}1{}}}\"", "[".repeat(2000), "]".repeat(2000));
        assert!(matches!(tokens(&field), Err(SourceError::TooDeep { line: 1, .. })));
        let nested = format!("x = {}1{}", "f\"{".repeat(1100), "}\"".repeat(1100));
        assert!(matches!(tokens(&nested), Err(SourceError::TooDeep { line: 1, .. })));
        let shallow = format!("x = {}1{}", "f\"{".repeat(100), "}\"".repeat(100));
        assert_eq!(tokens(&shallow), Ok(()));
    }
}
