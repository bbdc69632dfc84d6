//! Parses Python docstrings into what a tool schema needs: a one-paragraph summary,
//! per-parameter descriptions (with any written type) and the Returns text.
//! Google, NumPy, reST/Sphinx and Epydoc styles are understood, even mixed in one
//! docstring. Parsing is purely textual: Python is never run, and [`parse`] never
//! fails or panics; unusual input just yields fewer recognised parts.

use std::borrow::Cow;

/// A docstring split into the parts a tool schema uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Docstring {
    /// The cleaned docstring (inspect.cleandoc semantics: expand tabs to 8, strip the common
    /// indentation of lines after the first, strip leading/trailing blank lines).
    pub text: String,
    /// First paragraph: lines before the first blank line or the first section header, stripped
    /// and joined with single spaces. Empty if the docstring is empty.
    pub summary: String,
    /// Documented parameters in the order they appear.
    pub params: Vec<ParamDoc>,
    /// Documented attributes (Google `Attributes:`, NumPy `Attributes` + dashes, reST
    /// `:ivar name:` / `:var name:` / `:cvar name:`): a class's fields.
    pub attributes: Vec<ParamDoc>,
    /// Text of the Returns / Return / Yields section (Google `Returns:`, NumPy `Returns` + dashes,
    /// reST `:returns:` / `:return:`, Epydoc `@return:`), continuation lines joined with single
    /// spaces; None if absent.
    pub returns: Option<String>,
}

/// One documented parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamDoc {
    /// Name without leading `*` / `**`.
    pub name: String,
    /// Continuation lines joined with single spaces; may be empty.
    pub description: String,
    /// The type written in the docstring, if any ("str", "int, optional", ...).
    pub type_text: Option<String>,
    /// 0-based line index within [`Docstring::text`] where the entry starts.
    pub line: usize,
}

/// Parses a raw docstring (as written in the source, indentation included).
pub fn parse(raw: &str) -> Docstring {
    let expanded = expand_tabs(raw);
    let (text, lines) = clean(&expanded);
    let summary = summary(&lines);
    let mut parser = Parser::default();
    let mut skip_underline = false;
    for index in 0..lines.len() {
        // The dashes under a NumPy header carry no content of their own.
        if std::mem::take(&mut skip_underline) {
            continue;
        }
        skip_underline = parser.line(&lines, index);
    }
    let (params, attributes, returns) = parser.finish();
    Docstring { text, summary, params, attributes, returns }
}

impl Docstring {
    /// The paragraphs before the first section or field, each joined with single
    /// spaces, separated by a blank line: a class's description. Made on demand (a
    /// tool's description is its summary).
    pub fn prose(&self) -> String {
        prose(prose_text(&self.text))
    }
}

/// `inspect.cleandoc` of an already tab-expanded docstring, except that
/// whitespace-only lines become empty everywhere (Python keeps whatever spaces exceed
/// the margin), which simplifies blank-line checks; with the cleaned text's lines.
fn clean(expanded: &str) -> (String, Vec<Line<'_>>) {
    let mut lines: Vec<Line<'_>> = Vec::with_capacity(expanded.len() / 32 + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', expanded.as_bytes()).chain([expanded.len()]) {
        lines.push(Line::new(&expanded[start..end]));
        start = end + 1;
    }
    let margin = lines.iter().skip(1).filter(|line| !line.content.is_empty()).map(|line| line.indent).min();
    for (index, line) in lines.iter_mut().enumerate() {
        match (index, margin) {
            _ if line.content.is_empty() => *line = Line::BLANK,
            (0, _) | (_, None) => line.trim_start(),
            // The margin never exceeds a non-blank line's indent.
            (_, Some(margin)) => line.unindent(margin),
        }
    }
    let first = lines.iter().position(|line| !line.content.is_empty()).unwrap_or(lines.len());
    let last = lines.iter().rposition(|line| !line.content.is_empty()).map_or(first, |last| last + 1);
    lines.truncate(last.max(first));
    lines.drain(..first);
    // Sized exactly: the text is kept as long as the tool is.
    let length = lines.iter().map(|line| line.full.len() + 1).sum::<usize>().saturating_sub(1);
    let mut text = String::with_capacity(length);
    for (index, line) in lines.iter().enumerate() {
        if index > 0 {
            text.push('\n');
        }
        text.push_str(line.full);
    }
    (text, lines)
}

/// Python's `str.expandtabs(8)`: tab stops are per line, counted in characters.
fn expand_tabs(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\t') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut column = 0;
    for c in raw.chars() {
        match c {
            '\t' => {
                let width = 8 - column % 8;
                out.extend(std::iter::repeat_n(' ', width));
                column += width;
            }
            '\n' | '\r' => {
                out.push(c);
                column = 0;
            }
            _ => {
                out.push(c);
                column += 1;
            }
        }
    }
    Cow::Owned(out)
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `str::trim`, byte by byte over the ASCII whitespace (tab to carriage return, and
/// space) that surrounds nearly every line; `str::trim` finishes a non-ASCII edge.
fn trim(text: &str) -> &str {
    let bytes = text.as_bytes();
    let blank = |b: &u8| *b == b' ' || (b'\t'..=b'\r').contains(b);
    let start = bytes.iter().position(|b| !blank(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !blank(b)).map_or(start, |last| last + 1);
    // Both ends sit next to ASCII bytes (or the ends of the text): char boundaries.
    let trimmed = text.get(start..end).unwrap_or_default();
    match (trimmed.as_bytes().first(), trimmed.as_bytes().last()) {
        (Some(first), Some(last)) if !first.is_ascii() || !last.is_ascii() => trimmed.trim(),
        _ => trimmed,
    }
}

/// Collapses every whitespace run (line joins included) into one space and trims.
fn normalize(text: &str) -> String {
    if is_normal(text) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut push = |word: &str| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    };
    // ASCII text splits the same on ASCII whitespace, vertical tab aside, and far faster.
    if !text.bytes().any(|b| !b.is_ascii() || b == 0x0B) {
        text.split_ascii_whitespace().for_each(&mut push);
    } else {
        text.split_whitespace().for_each(&mut push);
    }
    out
}

/// [`normalize`], keeping `text` when it is already in that form.
fn normalize_owned(text: String) -> String {
    if is_normal(&text) { text } else { normalize(&text) }
}

/// Whether `text` is ASCII with single spaces between words and none around them,
/// as most descriptions are: then [`normalize`] changes nothing.
fn is_normal(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut after_space = true;
    for &b in bytes {
        match b {
            b' ' if after_space => return false,
            b' ' => after_space = true,
            _ if !b.is_ascii() || b.is_ascii_whitespace() || b == 0x0B => return false,
            _ => after_space = false,
        }
    }
    !after_space || bytes.is_empty()
}

fn is_dash_line(content: &str) -> bool {
    content.len() >= 3 && content.bytes().all(|b| b == b'-')
}

fn is_identifier(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// One line of a docstring.
#[derive(Clone, Copy)]
struct Line<'a> {
    /// The whole line.
    full: &'a str,
    /// Its leading spaces.
    indent: usize,
    /// The line without its surrounding whitespace.
    content: &'a str,
}

impl<'a> Line<'a> {
    const BLANK: Line<'static> = Line { full: "", indent: 0, content: "" };

    fn new(line: &'a str) -> Self {
        Line { full: line, indent: indent_of(line), content: trim(line) }
    }

    /// Drops `spaces` of the leading spaces (at most its indent).
    fn unindent(&mut self, spaces: usize) {
        let spaces = spaces.min(self.indent);
        self.full = &self.full[spaces..];
        self.indent -= spaces;
    }

    /// Drops all the leading whitespace.
    fn trim_start(&mut self) {
        self.full = self.full.trim_start();
        self.indent = 0;
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Params,
    Attributes,
    Returns,
    Other,
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Google,
    NumPy,
}

struct Header<'a> {
    kind: Kind,
    style: Style,
    /// Text after a Google `Returns:` on the same line (sloppy but common).
    inline: &'a str,
}

fn section_kind(name: &str) -> Option<Kind> {
    let name = trim(name);
    // Every header name is short ASCII: lower-case those on the stack (this runs for
    // most lines of every docstring); anything else takes the general path.
    let mut buffer = [0u8; 24];
    let lowered;
    let key = match buffer.get_mut(..name.len()) {
        Some(slot) if name.is_ascii() => {
            slot.copy_from_slice(name.as_bytes());
            slot.make_ascii_lowercase();
            std::str::from_utf8(slot).unwrap_or_default()
        }
        _ => {
            lowered = name.to_lowercase();
            lowered.as_str()
        }
    };
    match key {
        "args" | "arguments" | "parameters" | "params" | "keyword args" | "keyword arguments" | "other parameters" => {
            Some(Kind::Params)
        }
        "returns" | "return" | "yields" | "yield" => Some(Kind::Returns),
        "attributes" | "attrs" => Some(Kind::Attributes),
        "raises" | "examples" | "example" | "note" | "notes" | "warning" | "warnings" | "warns" | "see also"
        | "todo" | "references" | "methods" => Some(Kind::Other),
        _ => None,
    }
}

/// Recognises `Name:` (Google) or `Name` over a dashes line (NumPy) at `index`.
fn header_at<'a>(lines: &[Line<'a>], index: usize) -> Option<Header<'a>> {
    let line = lines.get(index)?;
    if lines.get(index + 1).is_some_and(|next| is_dash_line(next.content)) {
        let kind = section_kind(line.content.trim_end_matches(':'))?;
        return Some(Header { kind, style: Style::NumPy, inline: "" });
    }
    let (name, rest) = header_name(line.content)?;
    let kind = section_kind(name)?;
    let inline = rest.trim();
    (inline.is_empty() || kind == Kind::Returns).then_some(Header { kind, style: Style::Google, inline })
}

/// The longest section name [`section_kind`] knows.
const LONGEST_SECTION_NAME: usize = "keyword arguments".len();

/// `content` cut at its first colon, if what comes before it can be a section name:
/// the scan stops at the first byte that cannot be part of one.
fn header_name(content: &str) -> Option<(&str, &str)> {
    for (index, &b) in content.as_bytes().iter().enumerate() {
        match b {
            b':' => return Some((&content[..index], &content[index + 1..])),
            b'a'..=b'z' | b'A'..=b'Z' if index < LONGEST_SECTION_NAME => {}
            b' ' | b'\t'..=b'\r' => {}
            // Lower-casing or trimming may still turn non-ASCII text into a name.
            0x80.. => return content.split_once(':'),
            _ => return None,
        }
    }
    None
}

/// A reST (`:param x: text`) or Epydoc (`@param x: text`) field line.
struct Field<'a> {
    kind: FieldKind,
    args: Vec<&'a str>,
    text: &'a str,
}

fn parse_field(content: &str) -> Option<Field<'_>> {
    let body = content.strip_prefix(':').or_else(|| content.strip_prefix('@'))?;
    let (head, text) = body.split_once(':')?;
    let mut words = head.split_whitespace();
    let kind = words.next()?;
    // A line opening with an inline role such as :class:`Foo` is prose, not a field.
    if !kind.chars().all(|c| c.is_ascii_alphabetic()) || text.starts_with('`') {
        return None;
    }
    Some(Field { kind: FieldKind::of(kind), args: words.collect(), text: text.trim() })
}

/// What a field documents, by its name in any case.
#[derive(Clone, Copy)]
enum FieldKind {
    Param,
    Attribute,
    Type,
    Returns,
    Other,
}

impl FieldKind {
    fn of(name: &str) -> FieldKind {
        let is = |names: &[&str]| names.iter().any(|known| name.eq_ignore_ascii_case(known));
        if is(&["param", "parameter", "arg", "argument", "key", "keyword", "kwarg", "kwparam"]) {
            FieldKind::Param
        } else if is(&["ivar", "var", "cvar"]) {
            FieldKind::Attribute
        } else if is(&["type"]) {
            FieldKind::Type
        } else if is(&["return", "returns"]) {
            FieldKind::Returns
        } else {
            FieldKind::Other
        }
    }
}

/// Google entry `name (type): text`, returning (name, type, text).
fn parse_google_entry(content: &str) -> Option<(&str, Option<&str>, &str)> {
    let unstarred = content.trim_start_matches('*');
    let name_end = unstarred.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(unstarred.len());
    let (name, rest) = unstarred.split_at(name_end);
    if name.is_empty() || content.len() - unstarred.len() > 2 {
        return None;
    }
    let rest = rest.trim_start();
    let (type_text, rest) = match rest.strip_prefix('(') {
        Some(inner) => {
            let close = closing_paren(inner)?;
            (Some(inner[..close].trim()), inner[close + 1..].trim_start())
        }
        None => (None, rest),
    };
    let text = rest.strip_prefix(':')?;
    Some((name, type_text, text.trim()))
}

/// Byte index of the `)` that closes an already-opened parenthesis, if balanced.
fn closing_paren(inner: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (index, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 1 => return Some(index),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// NumPy entry `a, b : type`, returning (names, type).
fn parse_numpy_entry(content: &str) -> Option<(Vec<&str>, Option<&str>)> {
    let (names, type_text) = match content.split_once(':') {
        Some((names, type_text)) => (names, Some(type_text.trim())),
        None => (content, None),
    };
    let names: Vec<&str> = names.split(',').map(|name| name.trim().trim_start_matches('*')).collect();
    names.iter().all(|name| is_identifier(name)).then_some((names, type_text))
}

fn summary(lines: &[Line<'_>]) -> String {
    let paragraph: Vec<&str> = lines
        .iter()
        .enumerate()
        .take_while(|&(index, line)| {
            !line.content.is_empty()
                && !is_dash_line(line.content)
                && header_at(lines, index).is_none()
                && parse_field(line.content).is_none()
        })
        .map(|(_, line)| line.content)
        .collect();
    match paragraph.as_slice() {
        [line] => normalize(line),
        lines => normalize(&lines.join(" ")),
    }
}

/// The paragraphs of a docstring's [`prose_text`], each joined with single spaces.
fn prose(text: &str) -> String {
    let mut paragraphs: Vec<Vec<&str>> = vec![Vec::new()];
    for line in text.lines().map(Line::new) {
        match (line.content.is_empty(), paragraphs.last_mut()) {
            (true, Some(last)) if !last.is_empty() => paragraphs.push(Vec::new()),
            (false, Some(last)) => last.push(line.content),
            _ => {}
        }
    }
    let paragraphs: Vec<String> =
        paragraphs.iter().filter(|p| !p.is_empty()).map(|paragraph| normalize(&paragraph.join(" "))).collect();
    paragraphs.join("\n\n")
}

/// Whether the line at `index` ends a docstring's prose: a section header, a field or
/// a dash line.
fn ends_prose(lines: &[Line<'_>], index: usize) -> bool {
    let content = lines[index].content;
    is_dash_line(content) || header_at(lines, index).is_some() || parse_field(content).is_some()
}

/// The start of a cleaned docstring ([`Docstring::text`]) up to its first section
/// header, field or dash line: its prose as written, without what [`parse`] reads into
/// parameters and returns. Reads no line after that one's next.
pub fn prose_text(text: &str) -> &str {
    // Only a line holding a `:`, `@` or `-` (a header, a field, dashes), or the line
    // above one holding a `-` (a NumPy header), ends the prose: the lines before the
    // line above the first of those bytes are prose without a look.
    let Some(first) = memchr::memchr3(b':', b'@', b'-', text.as_bytes()) else {
        return text;
    };
    let line = text[..first].rfind('\n').map_or(0, |end| end + 1);
    let above = text[..line.saturating_sub(1)].rfind('\n').map_or(0, |end| end + 1);
    let mut lines = text[above..].lines().map(Line::new).peekable();
    while let Some(line) = lines.next() {
        // A line and the one after it (a NumPy header is underlined).
        let pair = [line, lines.peek().copied().unwrap_or(Line::BLANK)];
        let known = if lines.peek().is_some() { 2 } else { 1 };
        if ends_prose(&pair[..known], 0) {
            // `line` is a slice of `text`: it starts where the prose ends.
            return &text[..line.full.as_ptr() as usize - text.as_ptr() as usize];
        }
    }
    text
}

/// Where continuation text goes.
enum Target {
    /// The parameters at these indices of [`Parser::params`].
    Params(std::ops::Range<usize>),
    Returns,
    Ignored,
}

/// The entry (or section body) that more-indented lines continue.
struct Current {
    target: Target,
    indent: usize,
}

struct Section {
    kind: Kind,
    style: Style,
    indent: usize,
}

#[derive(Default)]
struct Parser {
    /// Parameters and attributes, in the order they appear.
    params: Vec<ParamDoc>,
    /// Whether each of `params` is a parameter or an attribute.
    kinds: Vec<Kind>,
    returns: Option<String>,
    /// `:type name:` / `@type name:` lines, applied at the end because they may precede `:param`.
    types: Vec<(String, String)>,
    section: Option<Section>,
    current: Option<Current>,
    saw_blank: bool,
}

impl Parser {
    /// Handles line `index`; returns true when the next line is a NumPy underline to skip.
    fn line(&mut self, lines: &[Line<'_>], index: usize) -> bool {
        let Some(line) = lines.get(index) else { return false };
        if line.content.is_empty() {
            self.saw_blank = true;
            return false;
        }
        let after_blank = std::mem::take(&mut self.saw_blank);
        let ends_section =
            after_blank && self.section.as_ref().is_some_and(|s| s.style == Style::Google && line.indent <= s.indent);
        if ends_section {
            self.section = None;
            self.current = None;
        }
        // Continuation wins over headers: "return: ..." inside a description stays text.
        if self.current.as_ref().is_some_and(|current| line.indent > current.indent) {
            self.append(line.content);
        } else if let Some(header) = header_at(lines, index).filter(|header| self.accepts_header(header, line.indent)) {
            self.start_section(&header, line.indent);
            return header.style == Style::NumPy;
        } else if let Some(field) = parse_field(line.content) {
            self.start_field(&field, index, line.indent);
        } else {
            match self.section.as_ref().map(|s| (s.kind, s.style)) {
                Some((kind @ (Kind::Params | Kind::Attributes), style)) => {
                    self.param_entry(line, index, style, after_blank, kind)
                }
                Some((Kind::Returns, _)) => self.append(line.content),
                Some((Kind::Other, _)) => {}
                // Free text outside any section ends a reST/Epydoc field.
                None => self.current = None,
            }
        }
        false
    }

    /// Inside a parameter section a header-like line may be an entry for a parameter that
    /// happens to be called `returns` or `note`.
    fn accepts_header(&self, header: &Header<'_>, indent: usize) -> bool {
        match &self.section {
            Some(section) if section.style == Style::Google => indent <= section.indent,
            // NumPy entries read `returns : bool`, so only a bare `Returns:` counts there.
            Some(_) => header.style == Style::NumPy || header.inline.is_empty(),
            None => true,
        }
    }

    fn start_section(&mut self, header: &Header<'_>, indent: usize) {
        self.section = Some(Section { kind: header.kind, style: header.style, indent });
        // Parameter entries must not be swallowed as continuations of the header itself.
        self.current = match header.kind {
            Kind::Params | Kind::Attributes => None,
            Kind::Returns => Some(Current { target: self.claim_returns(header.inline), indent }),
            Kind::Other => Some(Current { target: Target::Ignored, indent }),
        };
    }

    fn start_field(&mut self, field: &Field<'_>, index: usize, indent: usize) {
        self.section = None;
        let target = match field.kind {
            FieldKind::Param | FieldKind::Attribute => match field.args.split_last() {
                Some((name, type_words)) => {
                    let type_text = type_words.join(" ");
                    let kind = if matches!(field.kind, FieldKind::Param) { Kind::Params } else { Kind::Attributes };
                    self.add_params(&[name], Some(type_text.as_str()), field.text, index, kind)
                }
                None => Target::Ignored,
            },
            FieldKind::Type => {
                if let [name] = field.args[..] {
                    self.types.push((name.trim_start_matches('*').to_string(), field.text.to_string()));
                }
                Target::Ignored
            }
            FieldKind::Returns => self.claim_returns(field.text),
            FieldKind::Other => Target::Ignored,
        };
        self.current = Some(Current { target, indent });
    }

    fn param_entry(&mut self, line: &Line<'_>, index: usize, style: Style, after_blank: bool, kind: Kind) {
        let target = match style {
            Style::Google => parse_google_entry(line.content)
                .map(|(name, type_text, text)| self.add_params(&[name], type_text, text, index, kind)),
            Style::NumPy => parse_numpy_entry(line.content)
                .map(|(names, type_text)| self.add_params(&names, type_text, "", index, kind)),
        };
        match target {
            Some(target) => self.current = Some(Current { target, indent: line.indent }),
            // After a blank line it is a new paragraph of prose: drop it and what it wraps.
            None if after_blank => {
                self.current = Some(Current { target: Target::Ignored, indent: line.indent });
            }
            // Otherwise it is most likely a badly wrapped description.
            None => self.append(line.content),
        }
    }

    /// Adds the names not documented yet as `kind` (parameters or attributes); a
    /// repeated name keeps its first entry.
    fn add_params(&mut self, names: &[&str], type_text: Option<&str>, text: &str, line: usize, kind: Kind) -> Target {
        let start = self.params.len();
        for name in names {
            let name = name.trim_start_matches('*');
            let known = self.params.iter().zip(&self.kinds).any(|(param, &known)| param.name == name && known == kind);
            if name.is_empty() || known {
                continue;
            }
            self.kinds.push(kind);
            self.params.push(ParamDoc {
                name: name.to_string(),
                description: text.to_string(),
                type_text: type_text.map(str::to_string),
                line,
            });
        }
        Target::Params(start..self.params.len())
    }

    /// The first Returns wins; later ones are read but dropped.
    fn claim_returns(&mut self, text: &str) -> Target {
        if self.returns.is_some() {
            return Target::Ignored;
        }
        self.returns = Some(text.to_string());
        Target::Returns
    }

    fn append(&mut self, text: &str) {
        let Some(current) = &self.current else { return };
        let push = |buffer: &mut String| {
            buffer.push(' ');
            buffer.push_str(text);
        };
        match &current.target {
            Target::Params(ids) => {
                if let Some(params) = self.params.get_mut(ids.clone()) {
                    params.iter_mut().map(|param| &mut param.description).for_each(push);
                }
            }
            Target::Returns => self.returns.iter_mut().for_each(push),
            Target::Ignored => {}
        }
    }

    /// The parameters, the attributes and the Returns text.
    fn finish(mut self) -> (Vec<ParamDoc>, Vec<ParamDoc>, Option<String>) {
        for param in &mut self.params {
            param.description = normalize_owned(std::mem::take(&mut param.description));
            param.type_text = param.type_text.take().map(normalize_owned).filter(|ty| !ty.is_empty());
        }
        for (name, type_text) in &self.types {
            let type_text = normalize(type_text);
            if let Some(param) = self
                .params
                .iter_mut()
                .zip(&self.kinds)
                .find(|(param, kind)| &param.name == name && **kind == Kind::Params)
                .map(|(param, _)| param)
                && param.type_text.is_none()
                && !type_text.is_empty()
            {
                param.type_text = Some(type_text);
            }
        }
        // A copy sized exactly: the tool keeps it.
        let returns = self.returns.as_deref().map(normalize).filter(|text| !text.is_empty());
        // Most docstrings document no attribute: their parameters are kept as they are.
        if !self.kinds.contains(&Kind::Attributes) {
            return (self.params, Vec::new(), returns);
        }
        let (attributes, params): (Vec<_>, Vec<_>) =
            self.params.into_iter().zip(self.kinds).partition(|(_, kind)| *kind == Kind::Attributes);
        (params.into_iter().map(|(p, _)| p).collect(), attributes.into_iter().map(|(p, _)| p).collect(), returns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_trim_and_normalize_agree_with_the_standard_library() {
        let cases = [
            "",
            " ",
            "a",
            "  a b  ",
            "\ta\x0B",
            "\u{a0}a\u{a0}",
            " \u{2003}a b\u{3000} ",
            "é",
            " é ",
            "a  b",
            "a\tb",
            "a\x0Bb",
            "a\u{85}b",
            "\r\n x \x0C",
        ];
        for case in cases {
            assert_eq!(trim(case), case.trim(), "trim {case:?}");
            assert_eq!(normalize(case), case.split_whitespace().collect::<Vec<_>>().join(" "), "normalize {case:?}");
        }
    }

    fn check(doc: &str, summary: &str, params: &[(&str, &str)], returns: Option<&str>) {
        let parsed = parse(doc);
        assert_eq!(parsed.summary, summary, "summary of {doc:?}");
        let got: Vec<_> = parsed.params.iter().map(|p| (p.name.as_str(), p.description.as_str())).collect();
        assert_eq!(got, params, "params of {doc:?}");
        assert_eq!(parsed.returns.as_deref(), returns, "returns of {doc:?}");
    }

    fn types(doc: &str) -> Vec<Option<String>> {
        parse(doc).params.into_iter().map(|p| p.type_text).collect()
    }

    #[test]
    fn attributes_sections_document_a_classs_fields_apart_from_its_parameters() {
        let google = parse(
            "A reading.\n\nMore prose.\n\nAttributes:\n    sensor (str): Which one.\n    value: How much,\n        in units.\n\nArgs:\n    sensor: A parameter.\n",
        );
        assert_eq!(google.prose(), "A reading.\n\nMore prose.");
        let attributes: Vec<_> = google.attributes.iter().map(|a| (a.name.as_str(), a.description.as_str())).collect();
        assert_eq!(attributes, [("sensor", "Which one."), ("value", "How much, in units.")]);
        let params: Vec<_> = google.params.iter().map(|p| (p.name.as_str(), p.description.as_str())).collect();
        assert_eq!(params, [("sensor", "A parameter.")]);
        let numpy = parse("Point.\n\nAttributes\n----------\nx : int\n    Across.\n");
        assert_eq!(
            numpy.attributes.iter().map(|a| (a.name.as_str(), a.description.as_str())).collect::<Vec<_>>(),
            [("x", "Across.")]
        );
        assert_eq!(numpy.prose(), "Point.");
        let rest = parse("Point.\n\n:ivar x: Across.\n:param y: Down.\n");
        assert_eq!(rest.attributes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["x"]);
        assert_eq!(rest.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["y"]);
    }

    #[test]
    fn prose_text_is_the_text_before_the_first_section() {
        let cases = [
            ("Sends mail.\n\nThrough the relay.\n\nArgs:\n    to: Whom.", "Sends mail.\n\nThrough the relay.\n\n"),
            ("Point.\n\nAttributes\n----------\nx : int", "Point.\n\n"),
            ("Reads.\n:param x: The x.", "Reads.\n"),
            ("Only prose.\n\nTwo paragraphs.", "Only prose.\n\nTwo paragraphs."),
            ("Args:\n    x: The x.", ""),
            ("", ""),
            // The line above the first `-`, `:` or `@` is read too.
            ("One.\nTwo.\nNotes\n-----\nx", "One.\nTwo.\n"),
            ("One.\nTwo.\nThree\n-----\nx", "One.\nTwo.\nThree\n"),
            ("One.\nTwo.\n\nNotes:\n    x", "One.\nTwo.\n\n"),
            ("A well-known tool.\nSee: this.\n\nArgs:\n    x: X.", "A well-known tool.\nSee: this.\n\n"),
            ("One.\n@param x: X.", "One.\n"),
            ("No marks at all\nin two lines", "No marks at all\nin two lines"),
        ];
        for (text, prose) in cases {
            assert_eq!(prose_text(text), prose, "{text:?}");
        }
    }

    #[test]
    fn summaries() {
        check("", "", &[], None);
        check("   \n\t\n  ", "", &[], None);
        check("Do a thing.", "Do a thing.", &[], None);
        let doc = "\n    First line\n    continues  here.\n\n    More.\n    ";
        check(doc, "First line continues here.", &[], None);
        check("Ends at header\nArgs:\n    x: The x.", "Ends at header", &[("x", "The x.")], None);
        check("Ends at field\n:param x: The x.", "Ends at field", &[("x", "The x.")], None);
        check("Summary.\nNote:\n    x: not a param.", "Summary.", &[], None);
        check(":class:`Foo` does things.", ":class:`Foo` does things.", &[], None);
        check("Title\n-----\nbody", "Title", &[], None);
    }

    #[test]
    fn google_headers() {
        let headers = "Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|ARGS";
        for header in headers.split('|').chain(["Other Parameters"]) {
            check(&format!("S.\n\n{header}:\n    x: The x."), "S.", &[("x", "The x.")], None);
        }
    }

    #[test]
    fn google_entries() {
        let doc = "Sum.

        Args:
            a (int): First.
            b (int, optional): Second
                value.
            c:
                Only on the next line.

            d: After a blank line.

        Trailing prose: not a param.
        ";
        let (a, b) = (("a", "First."), ("b", "Second value."));
        let (c, d) = (("c", "Only on the next line."), ("d", "After a blank line."));
        check(doc, "Sum.", &[a, b, c, d], None);
        assert_eq!(types(doc), [Some("int".into()), Some("int, optional".into()), None, None]);
        let stars = "S.\nArgs:\n    *args: Extra.\n    **kwargs (dict): Options.";
        check(stars, "S.", &[("args", "Extra."), ("kwargs", "Options.")], None);
        check("S.\nArgs:\nx: Flush.\ny: Also.", "S.", &[("x", "Flush."), ("y", "Also.")], None);
        check("S.\nArgs:\n    x: One\n    two.", "S.", &[("x", "One two.")], None);
        let twice = "S.\nArgs:\n    x: First.\n    x: Again.\n        more.";
        check(twice, "S.", &[("x", "First.")], None);
        let nested_parens = "S.\nArgs:\n    f (Callable[(int), str]): Fn: maps.";
        check(nested_parens, "S.", &[("f", "Fn: maps.")], None);
        let nested = "S.\nArgs:\n    mode: One of\n        return: give back.";
        check(nested, "S.", &[("mode", "One of return: give back.")], None);
        let named = "S.\nArgs:\n    returns: Flag.\n    note:\n        Text.\nReturns:\n    R.";
        check(named, "S.", &[("returns", "Flag."), ("note", "Text.")], Some("R."));
        let prose = "S.\nArgs:\n    x: X.\n\n    All args are\n        optional.\n    y: Y.";
        check(prose, "S.", &[("x", "X."), ("y", "Y.")], None);
    }

    #[test]
    fn google_returns_and_other_sections() {
        let doc = "S.

        Args:
            x: X.

        Returns:
            bool: True if
                it worked.

        Raises:
            ValueError: bad.
        ";
        check(doc, "S.", &[("x", "X.")], Some("bool: True if it worked."));
        check("S.\nReturn:\n    The value.", "S.", &[], Some("The value."));
        check("S.\nYields:\n    Items.", "S.", &[], Some("Items."));
        check("Compute.\nReturns: the count.", "Compute.", &[], Some("the count."));
        check("S.\nArgs:\n    x: X.\nRaises:\n    y: no param.", "S.", &[("x", "X.")], None);
        check("S.\nReturns:\n    One.\nYields:\n    Two.", "S.", &[], Some("One."));
        check("S.\nReturns:\n", "S.", &[], None);
    }

    #[test]
    fn numpy_style() {
        let doc = "Add.

        Parameters
        ----------
        a, b : int
            The operands,
            added.
        *args
            Extra.
        c : str, optional

        Returns
        -------
        int
            The sum.

        Raises
        ------
        ValueError
            Never.
        ";
        let ab = "The operands, added.";
        let expected = [("a", ab), ("b", ab), ("args", "Extra."), ("c", "")];
        check(doc, "Add.", &expected, Some("int The sum."));
        let int = Some("int".to_string());
        assert_eq!(types(doc), [int.clone(), int, None, Some("str, optional".into())]);
        let other = "S.\nOther Parameters\n----------------\nx : float\n    Scale.\nNotes\n-----\ny";
        check(other, "S.", &[("x", "Scale.")], None);
        let keyword = "S.\nKeyword Arguments\n-----------------\nk\n    Key.";
        check(keyword, "S.", &[("k", "Key.")], None);
        let named = "S.\nParameters\n----------\nreturns : bool\n    Flag.\n\nSee the docs.\nReturns:";
        check(named, "S.", &[("returns", "Flag.")], None);
    }

    #[test]
    fn rest_style() {
        let doc = "Fetch.

        :param url: The URL
            to fetch.
        :type url: str
        :param int timeout: Seconds.
        :type ghost: int
        :returns: The body.
        :rtype: str
        ";
        let expected = [("url", "The URL to fetch."), ("timeout", "Seconds.")];
        check(doc, "Fetch.", &expected, Some("The body."));
        assert_eq!(types(doc), [Some("str".into()), Some("int".into())]);
        assert_eq!(types(":type x: Dict[str, int]\n:param x: X."), [Some("Dict[str, int]".into())]);
        let aliases = "S.\n:parameter a: A.\n:arg b: B.\n:argument c: C.\n:key d: D.\n:keyword e: E.";
        let expected = [("a", "A."), ("b", "B."), ("c", "C."), ("d", "D."), ("e", "E.")];
        check(&format!("{aliases}\n:return: R."), "S.", &expected, Some("R."));
        let raises = "S.\n:param x: `code` here.\n:raises ValueError: x\n    still raises.";
        check(raises, "S.", &[("x", "`code` here.")], None);
    }

    #[test]
    fn epydoc_style() {
        let doc = "Run.\n@param cmd: The cmd.\n@type cmd: str\n@keyword env: Env.\n@return: Code.";
        check(doc, "Run.", &[("cmd", "The cmd."), ("env", "Env.")], Some("Code."));
        assert_eq!(types(doc), [Some("str".into()), None]);
        check("S.\n@returns: Done.", "S.", &[], Some("Done."));
    }

    #[test]
    fn mixed_styles() {
        let doc = "S.
        Args:
            x: From Google.
        :param y: From reST.
        @param x: Duplicate.

        Parameters
        ----------
        z : int
            From NumPy.
        ";
        let expected = [("x", "From Google."), ("y", "From reST."), ("z", "From NumPy.")];
        check(doc, "S.", &expected, None);
    }

    #[test]
    fn unicode_tabs_and_weird_input() {
        let german = "Grüße 🌍.\n\nArgs:\n    größe (int): Die Größe – in 🍕.";
        check(german, "Grüße 🌍.", &[("größe", "Die Größe – in 🍕.")], None);
        let tabs = "Tabs.\n\tArgs:\n\t\tx: Tabbed\n\t\t\tmore.";
        check(tabs, "Tabs.", &[("x", "Tabbed more.")], None);
        check("S.\nArgs:", "S.", &[], None);
        check("S.\nArgs:\n    x (int: unbalanced\n    y (: z", "S.", &[], None);
        check("S.\nArgs:\n    ***x: too many stars", "S.", &[], None);
        check(":param: no name\n:type: nothing\n::\n@:", "", &[], None);
        check("S.\n\n:param *args: Stars.", "S.", &[("args", "Stars.")], None);
    }

    #[test]
    fn text_and_lines() {
        let parsed = parse("  Summary.\n\n      Args:\n          x: X.\n      ");
        assert_eq!(parsed.text, "Summary.\n\nArgs:\n    x: X.");
        assert_eq!(parsed.params[0].line, 3);
        assert_eq!(expand_tabs("ab\tc\n\td"), "ab      c\n        d");
    }

    #[test]
    fn never_panics() {
        let fragments: Vec<&str> = "Args:|  |x (|:|\n|----|:param|@param|é|Returns|\t|x: y| *|)\
            |Parameters\n----------\n|a, b : int|`|::|:type x:|🦀|\r\n|(|Note:|    "
            .split('|')
            .collect();
        let mut docs = Vec::new();
        for a in &fragments {
            for b in &fragments {
                for c in &fragments {
                    docs.push(format!("{a}{b}{c}"));
                }
            }
        }
        // Longer deterministic pseudo-random mixes (xorshift) reach states triples cannot.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..500 {
            let doc: String = (0..16)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let index = usize::try_from(state % fragments.len() as u64).unwrap_or(0);
                    fragments[index]
                })
                .collect();
            docs.push(doc);
        }
        let mut documented = 0;
        for doc in &docs {
            let parsed = parse(doc);
            let line_count = parsed.text.split('\n').count();
            assert!(parsed.params.iter().all(|p| !p.name.is_empty() && p.line < line_count));
            documented += usize::from(!parsed.params.is_empty());
        }
        // The inputs reach the parameter parsers, not only the summary.
        assert!(documented > 0);
    }
}
