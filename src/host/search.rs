//! Tool search over a catalog (SPEC §21): which tools of a registry answer a query.
//!
//! An [`Index`] is built from what a host shows ([`crate::host::view`]'s registry, so a
//! search never returns a tool the caller may not see) and ranks the tools for a
//! query with BM25F: each tool is five fields (its name split into words, its
//! description, its docstring's prose after the summary, its parameters' names, descriptions and
//! string values, its library's name and docstring), each with its own weight and
//! length normalisation, read through one tokeniser (words split at `_`, case changes
//! and digits, lowercased, common English words left out, Snowball's English stemmer).
//! On top of BM25F: a query word that is a prefix of a name's word (or the reverse)
//! counts for part of a match, and a tool whose name's words the query covers gains in
//! proportion to what it covers. Ranking is deterministic: the same catalog and query
//! give the same scores, summed in the same order, on every machine, and equal scores
//! are ordered by name.
//!
//! Owns the index: one segment per library (its tools' words, numbered in the index's
//! table of words, with their counts in each field), read on every core and laid in one
//! after the other, and [`Index::update`], which makes the index of a changed catalog
//! from the index before it, reading only the libraries that do not read the same. The
//! statistics of the ranking are counted over the whole catalog when the segments are
//! laid in, so an updated index ranks exactly as a fresh build.

use std::sync::{Arc, Mutex};

use rust_stemmers::{Algorithm, Stemmer};
use serde::Serialize;

use crate::discovery::extract::{Library, Tool};
use crate::discovery::registry::{Descriptions, FastMap, Registry};
use crate::sync;

/// The fields of a tool, in the order of [`Ranking::weights`] and [`Ranking::length_norms`].
const NAME: usize = 0;
const DESCRIPTION: usize = 1;
const DOCSTRING: usize = 2;
const PARAMETERS: usize = 3;
const LIBRARY: usize = 4;
const FIELDS: usize = 5;

/// The constants of the ranking.
#[derive(Debug, Clone, Copy)]
struct Ranking {
    /// How much a match in each field counts.
    weights: [f64; FIELDS],
    /// BM25's `b` of each field: how much a longer field dilutes its matches.
    length_norms: [f64; FIELDS],
    /// BM25's `k1`: how soon repeated matches stop counting.
    k1: f64,
    /// What a query word counts for when it only begins a word of the tool (or the
    /// tool's word begins it: `geo` and `geocode`), against a whole match.
    prefix_match: f64,
    /// What a tool gains when the query holds every word of its name, as a share of the
    /// best score of the search (see [`Index::search`]).
    name_coverage: f64,
}

/// The ranking's constants, as measured on a public benchmark's catalog (docs/search.md).
const RANKING: Ranking = Ranking {
    weights: [3.0, 2.0, 0.6, 1.0, 0.4],
    length_norms: [0.5, 0.6, 0.75, 0.75, 0.75],
    k1: 1.2,
    prefix_match: 0.4,
    name_coverage: 0.5,
};

/// The shortest word a prefix match is tried for.
const PREFIX_MIN: usize = 4;

/// Common English words a query or a description is read without.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does",
    "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "let",
    "me", "my", "of", "on", "or", "our", "please", "she", "so", "some", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "us", "was", "we", "were", "what", "when", "where", "which",
    "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// A map keyed by words, hashed as [`FastMap`]'s keys are (rustc-hash 2's FxHash ends
/// with a rotation, so a short word's hash does not depend on its first letters only).
type WordMap<K, V> = FastMap<K, V>;

/// A tool found by [`Index::search`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The tool's name, as the registry searched shows it.
    pub name: String,
    /// How well it answers the query; only the order of the scores of one search means
    /// anything.
    pub score: f64,
    /// Its library: the library's name, else its stem.
    pub library: String,
    /// Its description.
    pub description: String,
}

/// One tool of the index.
#[derive(Debug, Clone)]
struct Entry {
    /// Its library, by its number in [`Index::segments`].
    library: u32,
    /// Its place among its library's tools.
    tool: u32,
    /// Each field's length, in words.
    lengths: [u32; FIELDS],
    /// Where the distinct words of its name are in [`Index::name_words`].
    name_words: std::ops::Range<u32>,
}

/// The words of a tool in one field and how often each occurs.
#[derive(Debug, Clone, Copy, Default)]
struct Posting {
    tool: u32,
    counts: [u16; FIELDS],
}

/// The words of one library's tools, read once: an index made from another
/// ([`Index::update`]) keeps the segment of every library that reads the same.
#[derive(Debug)]
struct Segment {
    /// The library read.
    library: Arc<Library>,
    /// Each tool's description in the `Descriptions` it was read with, if it had one
    /// there (a prompt provider's).
    descriptions: Vec<Option<Box<str>>>,
    /// Each tool's words (by their numbers in [`Index::words`]) with their counts in
    /// each field, one tool after the other.
    counts: Vec<(u32, [u16; FIELDS])>,
    /// The distinct words of each tool's name, one tool after the other.
    name_words: Vec<u32>,
    /// Each tool, in order: its fields' lengths, and where its words end in `counts`
    /// and its name's in `name_words`.
    tools: Vec<ReadTool>,
}

#[derive(Debug, Clone, Copy)]
struct ReadTool {
    lengths: [u32; FIELDS],
    counts_end: u32,
    name_words_end: u32,
}

impl Segment {
    /// Whether this segment is what reading `library` with `descriptions` would give:
    /// the same library (the same one, or one of the same texts) with the same
    /// descriptions.
    fn reads(&self, library: &Library, descriptions: &Descriptions) -> bool {
        let same = |a: &Tool, b: &Tool| {
            a.name == b.name
                && a.description == b.description
                && a.docstring == b.docstring
                && a.parameters.as_str() == b.parameters.as_str()
        };
        let (mine, theirs) = (&*self.library, library);
        let texts = std::ptr::eq(mine, theirs)
            || (mine.name == theirs.name
                && mine.stem == theirs.stem
                && mine.description == theirs.description
                && mine.summary == theirs.summary
                && mine.tools.len() == theirs.tools.len()
                && mine.tools.iter().zip(&theirs.tools).all(|(a, b)| same(a, b)));
        texts
            && theirs
                .tools
                .iter()
                .zip(&self.descriptions)
                .all(|(tool, kept)| descriptions.get(&tool.name) == kept.as_deref())
    }
}

/// The search index of a catalog's tools; see the module's documentation.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Each library's segment, in the registry's order.
    segments: Vec<Arc<Segment>>,
    tools: Vec<Entry>,
    /// The distinct words of every tool's name, each tool's in a range of its own.
    name_words: Vec<u32>,
    /// Every word, stemmed, by its number: the words of this index's tools, and those
    /// of the indexes it was updated from (a word keeps its number from one update to
    /// the next, so that a kept segment's numbers stay right; a word no tool has any
    /// more has no postings, and is never asked for).
    words: Words,
    /// Where each word's tools are in `postings`: `starts[word]..starts[word + 1]`.
    starts: Vec<u32>,
    /// Each word's tools, in the order of `tools`, one word after the other.
    postings: Vec<Posting>,
    /// Every word some tool has, with its number, in order, for prefix matches.
    sorted: Vec<(Arc<str>, u32)>,
    /// The lengths in bytes of the words of `sorted`, each once, in order: the only
    /// lengths a query's word's start is looked up at.
    word_lengths: Vec<usize>,
    /// Each field's mean length over the tools.
    average: [f64; FIELDS],
}

/// About how many tools one piece of reading work takes (a run of whole libraries).
const RUN_TOOLS: usize = 64;

impl Index {
    /// The index of every tool of `registry`, each with its description in
    /// `descriptions` if it has one there. A host builds it from its view's registry
    /// ([`crate::host::view::View::registry`]), so that it holds only what the caller sees.
    ///
    /// Libraries are read on every core (lcp's ordered pool), each reader keeping
    /// the number of every word it meets (a word is stemmed once per reader, and no
    /// word is a `String` of its own until it is new to the reader); each library's
    /// words make a segment, and the segments are laid in one after the other.
    pub fn build(registry: &Registry, descriptions: &Descriptions) -> Index {
        Index::assemble(registry.libraries(), descriptions, None)
    }

    /// The index of `registry` as [`Index::build`] makes it (the same tools, scores and
    /// order for every query), reading only the libraries this index does not hold as
    /// they are now: new or changed ones, or ones whose tools `descriptions` describes
    /// otherwise. For a host whose catalog changed (a rescan, a watcher's event, an MCP
    /// server's `list_changed`).
    pub fn update(&self, registry: &Registry, descriptions: &Descriptions) -> Index {
        // Words no tool has any more keep their numbers; when they are most of the
        // words, numbering starts again (every library is read again).
        let live = self.sorted.len();
        let previous = (self.words.len() <= 2 * live + 1024).then_some(self);
        Index::assemble(registry.libraries(), descriptions, previous)
    }

    /// The index of `libraries`, keeping the segments of `previous` that read the same.
    fn assemble(libraries: &[Arc<Library>], descriptions: &Descriptions, previous: Option<&Index>) -> Index {
        let mut kept: FastMap<(&std::path::Path, &str), Vec<&Arc<Segment>>> = FastMap::default();
        for segment in previous.iter().flat_map(|index| &index.segments) {
            let library = &*segment.library;
            kept.entry((library.path.as_path(), library.stem.as_str())).or_default().push(segment);
        }
        let mut segments: Vec<Option<Arc<Segment>>> = libraries
            .iter()
            .map(|library| {
                let candidates = kept.get(&(library.path.as_path(), library.stem.as_str()))?;
                let segment = candidates.iter().find(|segment| segment.reads(library, descriptions))?;
                Some(match Arc::ptr_eq(&segment.library, library) {
                    true => Arc::clone(segment),
                    // The same texts in another library value: the segment's words,
                    // with the library shown now.
                    false => Arc::new(Segment {
                        library: Arc::clone(library),
                        descriptions: segment.descriptions.clone(),
                        counts: segment.counts.clone(),
                        name_words: segment.name_words.clone(),
                        tools: segment.tools.clone(),
                    }),
                })
            })
            .collect();
        let missing: Vec<usize> = (0..libraries.len()).filter(|&at| segments[at].is_none()).collect();
        let words: Mutex<Words> = Mutex::new(previous.map(|index| index.words.clone()).unwrap_or_default());
        let read = read(libraries, &missing, descriptions, &words);
        for (at, segment) in missing.into_iter().zip(read) {
            segments[at] = Some(Arc::new(segment));
        }
        let words = words.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        let segments: Vec<Arc<Segment>> = segments.into_iter().flatten().collect();
        Index::lay_out(segments, words)
    }

    /// The index of `segments`, their words numbered in `words`.
    fn lay_out(segments: Vec<Arc<Segment>>, words: Words) -> Index {
        let count: usize = segments.iter().map(|segment| segment.tools.len()).sum();
        let mut tools = Vec::with_capacity(count);
        let mut name_words = Vec::with_capacity(segments.iter().map(|segment| segment.name_words.len()).sum());
        // Each word's number of tools, then where its tools start.
        let mut starts = vec![0u32; words.len() + 1];
        let mut totals = [0u64; FIELDS];
        for (library, segment) in segments.iter().enumerate() {
            for &(word, _) in &segment.counts {
                starts[word as usize + 1] += 1;
            }
            let mut name_start = 0;
            for (tool, read) in segment.tools.iter().enumerate() {
                let name_from = name_words.len() as u32;
                name_words.extend_from_slice(&segment.name_words[name_start..read.name_words_end as usize]);
                name_start = read.name_words_end as usize;
                for (total, length) in totals.iter_mut().zip(read.lengths) {
                    *total += u64::from(length);
                }
                tools.push(Entry {
                    library: library as u32,
                    tool: tool as u32,
                    lengths: read.lengths,
                    name_words: name_from..name_words.len() as u32,
                });
            }
        }
        for word in 0..words.len() {
            starts[word + 1] += starts[word];
        }
        let mut postings = vec![Posting::default(); starts[words.len()] as usize];
        let mut next: Vec<u32> = starts[..words.len()].to_vec();
        let mut number = 0u32;
        for segment in &segments {
            let mut counts_start = 0;
            for read in &segment.tools {
                for &(word, counts) in &segment.counts[counts_start..read.counts_end as usize] {
                    let at = &mut next[word as usize];
                    postings[*at as usize] = Posting { tool: number, counts };
                    *at += 1;
                }
                counts_start = read.counts_end as usize;
                number += 1;
            }
        }
        let mut sorted: Vec<(Arc<str>, u32)> = words
            .iter()
            .filter(|&(_, &id)| starts[id as usize + 1] > starts[id as usize])
            .map(|(word, &id)| (Arc::clone(word), id))
            .collect();
        sorted.sort_unstable();
        let mut word_lengths: Vec<usize> = sorted.iter().map(|(word, _)| word.len()).collect();
        word_lengths.sort_unstable();
        word_lengths.dedup();
        let n = tools.len().max(1) as f64;
        let average = totals.map(|total| (total as f64 / n).max(1.0));
        Index { segments, tools, name_words, words, starts, postings, sorted, word_lengths, average }
    }

    /// The tools that have the word numbered `id`, in order.
    fn postings(&self, id: u32) -> &[Posting] {
        let id = id as usize;
        &self.postings[self.starts[id] as usize..self.starts[id + 1] as usize]
    }

    /// The number of `word` if some tool has it.
    fn live(&self, word: &str) -> Option<u32> {
        self.words.get(word).copied().filter(|&id| !self.postings(id).is_empty())
    }

    /// The tool of `entry`, with its library.
    fn tool(&self, entry: &Entry) -> (&Library, &Tool) {
        let library = &self.segments[entry.library as usize].library;
        (library, &library.tools[entry.tool as usize])
    }

    /// The name of the tool of `entry`.
    fn name(&self, entry: &Entry) -> &str {
        &self.tool(entry).1.name
    }

    /// How many tools the index holds.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The `limit` tools that answer `query` best, best first; equal scores in the order
    /// of their names. A tool that matches no word of the query is never returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        self.search_with(query, limit, &RANKING)
    }

    fn search_with(&self, query: &str, limit: usize, ranking: &Ranking) -> Vec<Hit> {
        self.ranked(query, limit, ranking)
            .into_iter()
            .map(|(tool, score)| {
                let entry = &self.tools[tool];
                let (library, found) = self.tool(entry);
                let described = &self.segments[entry.library as usize].descriptions[entry.tool as usize];
                Hit {
                    name: found.name.clone(),
                    score: (score * 1e4).round() / 1e4,
                    library: library.name.clone().unwrap_or_else(|| library.stem.clone()),
                    description: described.as_deref().unwrap_or(&found.description).to_string(),
                }
            })
            .collect()
    }

    /// The `limit` tools that answer `query` best, by their numbers in `tools`, best
    /// first, with their scores.
    fn ranked(&self, query: &str, limit: usize, ranking: &Ranking) -> Vec<(usize, f64)> {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut asked = Asked::default();
        let mut seen = std::collections::HashSet::new();
        for word in tokens_with(&stemmer, query) {
            if seen.insert(word.clone()) {
                self.expand(&word, ranking.prefix_match, &mut asked);
            }
        }
        let asked = asked.words;
        if asked.is_empty() || limit == 0 {
            return Vec::new();
        }
        let n = self.tools.len() as f64;
        let mut scores = vec![0.0f64; self.tools.len()];
        let mut matched = vec![false; self.tools.len()];
        for &(id, share) in &asked {
            let postings = self.postings(id);
            let df = postings.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for posting in postings {
                let tool = posting.tool as usize;
                let lengths = &self.tools[tool].lengths;
                let mut weighted = 0.0;
                for (field, &count) in posting.counts.iter().enumerate() {
                    if count > 0 {
                        let b = ranking.length_norms[field];
                        let norm = 1.0 - b + b * f64::from(lengths[field]) / self.average[field];
                        weighted += ranking.weights[field] * f64::from(count) / norm;
                    }
                }
                scores[tool] += share * idf * weighted / (ranking.k1 + weighted);
                matched[tool] = true;
            }
        }
        // Name coverage: the share of a name's words the query holds (whole words only),
        // scaled to the best score so that it reorders near ties, never outweighs a
        // clearly better match.
        let best = scores.iter().copied().fold(0.0f64, f64::max);
        let whole: FastMap<u32, ()> =
            asked.iter().filter(|(_, share)| *share >= 1.0).map(|(id, _)| (*id, ())).collect();
        for (tool, entry) in self.tools.iter().enumerate() {
            let name_words = &self.name_words[entry.name_words.start as usize..entry.name_words.end as usize];
            if !matched[tool] || name_words.is_empty() {
                continue;
            }
            let covered = name_words.iter().filter(|id| whole.contains_key(id)).count();
            scores[tool] += ranking.name_coverage * best * covered as f64 / name_words.len() as f64;
        }
        let mut ranked: Vec<usize> = (0..self.tools.len()).filter(|&tool| matched[tool]).collect();
        let order = |&a: &usize, &b: &usize| {
            scores[b]
                .total_cmp(&scores[a])
                .then_with(|| self.name(&self.tools[a]).cmp(self.name(&self.tools[b])))
                .then(a.cmp(&b))
        };
        // The first `limit` found, then only those sorted: the order is total (two
        // tools of one name go in discovery order), so this is a full sort's first `limit`.
        if ranked.len() > limit {
            ranked.select_nth_unstable_by(limit, order);
            ranked.truncate(limit);
        }
        ranked.sort_unstable_by(order);
        ranked.into_iter().map(|tool| (tool, scores[tool])).collect()
    }

    /// The words of the index a query's `word` asks for, each with its share of a match,
    /// added to `asked` (a word asked twice counts once, at its larger share): the word
    /// itself, and the words it begins or that begin it.
    fn expand(&self, word: &str, prefix_match: f64, asked: &mut Asked) {
        let mut add = |id: u32, share: f64| match asked.at.get(&id) {
            Some(&at) => asked.words[at].1 = asked.words[at].1.max(share),
            None => {
                asked.at.insert(id, asked.words.len());
                asked.words.push((id, share));
            }
        };
        if let Some(id) = self.live(word) {
            add(id, 1.0);
        }
        if word.chars().count() < PREFIX_MIN {
            return;
        }
        let from = self.sorted.partition_point(|(other, _)| &**other < word);
        for (other, id) in &self.sorted[from..] {
            if !other.starts_with(word) {
                break;
            }
            if &**other != word {
                add(*id, prefix_match);
            }
        }
        // Each start of the word of `PREFIX_MIN` characters or more that is as long as
        // some word of the index: what a query's word costs is bounded by the catalog's
        // words, however long the query's word is.
        let Some((shortest, _)) = word.char_indices().nth(PREFIX_MIN) else { return };
        let from = self.word_lengths.partition_point(|&length| length < shortest);
        for &end in self.word_lengths[from..].iter().take_while(|&&length| length < word.len()) {
            if word.is_char_boundary(end)
                && let Some(id) = self.live(&word[..end])
            {
                add(id, prefix_match);
            }
        }
    }
}

/// The words of the index a query asks for, each once with its share of a match, in
/// the order first asked.
#[derive(Default)]
struct Asked {
    words: Vec<(u32, f64)>,
    at: FastMap<u32, usize>,
}

/// Calls `found` with each text of each field of `tool` but its library's (described
/// by `description`): its name without `tool_`, its description, the rest of its
/// docstring, its parameters' texts ([`parameter_texts`]).
fn tool_texts(tool: &Tool, description: &str, mut found: impl FnMut(usize, &str)) {
    found(NAME, tool.name.strip_prefix("tool_").unwrap_or(&tool.name));
    found(DESCRIPTION, description);
    if let Some(docstring) = &tool.docstring {
        // What the docstring says beyond its summary, without its sections: the
        // parameters' descriptions are read from the schema.
        let prose = crate::discovery::docstring::prose_text(docstring);
        found(DOCSTRING, prose.strip_prefix(description).unwrap_or(prose));
    }
    parameter_texts(tool.parameters.as_str(), &mut |text| found(PARAMETERS, text));
}

/// The texts of a library's field: the library's name, stem and summary (the first
/// paragraph of `TOOL_LIBRARY_DESC`, else of its docstring).
fn library_texts(library: &Library) -> [&str; 3] {
    [library.name.as_deref().unwrap_or_default(), &library.stem, library.summary.as_deref().unwrap_or_default()]
}

/// Calls `found` with the names, descriptions and string values of the properties of
/// the schema written as `text`, nested ones too (a few levels down). Found while the
/// text is parsed ([`schema_walk`]), or read from a `Value` ([`value_text`]) when the
/// schema has a shape the walk does not take.
fn parameter_texts(text: &str, found: &mut dyn FnMut(&str)) {
    match schema_walk::texts(text) {
        Some(texts) => texts.iter().for_each(|text| found(text)),
        None => value_text::properties(&serde_json::from_str(text).unwrap_or_default(), found, 0),
    }
}

/// The same texts as [`value_text`], found in one pass over the schema's compact JSON
/// text (as `serde_json` writes it: a `SchemaText`), with nothing built but the list
/// of texts (parsing a whole `Value` per tool was most of the index's cost). A text
/// of a shape it does not take (a keyword twice, a schema that is not an object,
/// whitespace, nesting past [`MAX_NESTING`]) fails to read, and [`value_text`] reads it.
mod schema_walk {
    use std::borrow::Cow;

    /// The keywords a schema's texts come from, once each.
    const KEYWORDS: [&str; 6] = ["properties", "description", "enum", "anyOf", "oneOf", "items"];

    /// The deepest a walked text nests (objects and lists); `serde_json` reads no
    /// deeper than 128.
    const MAX_NESTING: usize = 100;

    /// The texts of the schema written as `text` (those [`value_text`] finds, in the
    /// order they are written); `None` when it has a shape this walk does not take.
    pub(super) fn texts(text: &str) -> Option<Vec<Cow<'_, str>>> {
        let mut walk = Walk { text, at: 0, nesting: 0, texts: Vec::with_capacity(16) };
        walk.node(false, 0, true)?;
        (walk.at == text.len()).then_some(walk.texts)
    }

    /// Where the walk is in `text`, and the texts found so far.
    struct Walk<'a> {
        text: &'a str,
        at: usize,
        nesting: usize,
        texts: Vec<Cow<'a, str>>,
    }

    impl<'a> Walk<'a> {
        fn next_byte(&self) -> Option<u8> {
            self.text.as_bytes().get(self.at).copied()
        }

        fn eat(&mut self, byte: u8) -> Option<()> {
            (self.next_byte()? == byte).then(|| self.at += 1)
        }

        /// A schema as [`value_text`] reads it: the root (only its properties' texts
        /// are found), or a schema it describes at `depth` (its description and `enum`
        /// strings are found when `own`; its `anyOf`, `oneOf` and `items` are described
        /// at `depth + 1`, and its properties read at `depth + 1`, when that is at most 3).
        fn node(&mut self, own: bool, depth: usize, root: bool) -> Option<()> {
            // The depth its properties are read at, and whether their texts are found.
            let (properties_depth, inner) = if root { (0, false) } else { (depth + 1, own) };
            let found_properties = (root || own) && properties_depth <= 3;
            let own = own && !root;
            let mut seen = [false; KEYWORDS.len()];
            self.object(|walk, key| {
                let Some(keyword) = KEYWORDS.iter().position(|keyword| *keyword == key) else {
                    return walk.skip();
                };
                if std::mem::replace(&mut seen[keyword], true) {
                    return None;
                }
                match keyword {
                    // `properties`: each name, and each property described at `properties_depth`.
                    0 => walk.object(|walk, name| {
                        if found_properties {
                            walk.texts.push(name);
                        }
                        walk.node(found_properties, properties_depth, false)
                    }),
                    1 => walk.text(own),
                    2 => walk.list(|walk| walk.text(own)),
                    3 | 4 => walk.list(|walk| walk.node(inner, depth + 1, false)),
                    // `items`: a schema, or `null` (none).
                    _ if walk.next_byte()? == b'n' => walk.skip(),
                    _ => walk.node(inner, depth + 1, false),
                }
            })
        }

        /// Any value, its text kept when it is a string and `keep`.
        fn text(&mut self, keep: bool) -> Option<()> {
            if !keep || self.next_byte()? != b'"' {
                return self.skip();
            }
            let text = self.string(true)?;
            self.texts.push(text);
            Some(())
        }

        /// An object, `member` reading the value of each key.
        fn object(&mut self, mut member: impl FnMut(&mut Self, Cow<'a, str>) -> Option<()>) -> Option<()> {
            self.eat(b'{')?;
            self.nested(b'}', |walk| {
                let key = walk.string(false)?;
                walk.eat(b':')?;
                member(walk, key)
            })
        }

        /// A list, `element` reading each of its values.
        fn list(&mut self, element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
            self.eat(b'[')?;
            self.nested(b']', element)
        }

        /// The items of an object or list just opened, up to its `close`.
        fn nested(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
            self.nesting += 1;
            if self.nesting > MAX_NESTING {
                return None;
            }
            if self.eat(close).is_none() {
                loop {
                    item(self)?;
                    match self.next_byte()? {
                        b',' => self.at += 1,
                        byte if byte == close => break,
                        _ => return None,
                    }
                }
                self.at += 1;
            }
            self.nesting -= 1;
            Some(())
        }

        /// A value not read: a string, an object, a list, or a number, `true`,
        /// `false` or `null` (up to what ends it).
        fn skip(&mut self) -> Option<()> {
            match self.next_byte()? {
                b'"' => self.string_end(false).map(drop),
                b'{' => self.object(|walk, _| walk.skip()),
                b'[' => self.list(Self::skip),
                _ => {
                    let rest = &self.text.as_bytes()[self.at..];
                    let length = rest.iter().position(|byte| matches!(byte, b',' | b'}' | b']')).unwrap_or(rest.len());
                    let literal = &rest[..length];
                    let known = matches!(literal, b"true" | b"false" | b"null")
                        || (!literal.is_empty()
                            && literal
                                .iter()
                                .all(|byte| matches!(byte, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')));
                    self.at += length;
                    known.then_some(())
                }
            }
        }

        /// A string (`prose`, or a name: see [`Walk::string_end`]), borrowed from the
        /// text when it has no escape.
        fn string(&mut self, prose: bool) -> Option<Cow<'a, str>> {
            let start = self.at;
            let escaped = self.string_end(prose)?;
            let (text, inner) = (&self.text[start..self.at], &self.text[start + 1..self.at - 1]);
            match escaped {
                false => Some(Cow::Borrowed(inner)),
                true => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
            }
        }

        /// Moves past the string whose quote is next; whether it has an escape. A
        /// `prose` string (a description) is long, its end found faster with `memchr`;
        /// a name or a keyword's value is short, found sooner a byte at a time.
        fn string_end(&mut self, prose: bool) -> Option<bool> {
            self.eat(b'"')?;
            let bytes = self.text.as_bytes();
            let mut escaped = false;
            loop {
                let rest = bytes.get(self.at..)?;
                self.at += match prose {
                    true => memchr::memchr2(b'"', b'\\', rest)?,
                    false => rest.iter().position(|&byte| matches!(byte, b'"' | b'\\'))?,
                };
                if bytes[self.at] == b'"' {
                    self.at += 1;
                    return Some(escaped);
                }
                // An escape is a backslash and one character (`\uXXXX`'s digits are
                // neither a quote nor a backslash).
                escaped = true;
                self.at += 2;
            }
        }
    }
}

/// A schema's texts read from its parsed `Value`.
mod value_text {
    use serde_json::Value;

    /// The names, descriptions and string values of a schema's properties.
    pub(super) fn properties(schema: &Value, found: &mut dyn FnMut(&str), depth: usize) {
        if depth > 3 {
            return;
        }
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (name, property) in properties {
            found(name);
            describe(property, found, depth);
        }
    }

    /// A property's description and string values, and those of what it holds.
    fn describe(property: &Value, found: &mut dyn FnMut(&str), depth: usize) {
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            found(description);
        }
        for value in property.get("enum").and_then(Value::as_array).into_iter().flatten() {
            if let Some(value) = value.as_str() {
                found(value);
            }
        }
        for key in ["anyOf", "oneOf"] {
            for option in property.get(key).and_then(Value::as_array).into_iter().flatten() {
                describe(option, found, depth + 1);
            }
        }
        if let Some(items) = property.get("items") {
            describe(items, found, depth + 1);
        }
        properties(property, found, depth + 1);
    }
}

/// The words of `text` as the index reads them: split ([`words`]), common English words
/// and single letters left out, each stemmed (Snowball's English stemmer).
pub fn tokens(text: &str) -> Vec<String> {
    tokens_with(&Stemmer::create(Algorithm::English), text)
}

/// The segments of the libraries of `libraries` at `missing`, in that order: runs of
/// whole libraries of about [`RUN_TOOLS`] tools read on every core, new words numbered
/// in `words`.
fn read(
    libraries: &[Arc<Library>],
    missing: &[usize],
    descriptions: &Descriptions,
    words: &Mutex<Words>,
) -> Vec<Segment> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    let mut tools = 0;
    for (at, &library) in missing.iter().enumerate() {
        if runs.last().is_none_or(|_| tools >= RUN_TOOLS) {
            runs.push(at..at);
            tools = 0;
        }
        if let Some(run) = runs.last_mut() {
            run.end = at + 1;
        }
        tools += libraries[library].tools.len();
    }
    // The readers not at work, each with the words it met, taken up by the next run.
    let idle: Mutex<Vec<Reader>> = Mutex::new(Vec::new());
    let mut segments = Vec::with_capacity(missing.len());
    let work = |run: usize| {
        let mut reader = sync::lock(&idle).pop().unwrap_or_else(Reader::new);
        let read: Vec<Segment> = missing[runs[run].clone()]
            .iter()
            .map(|&library| reader.segment(&libraries[library], descriptions, words))
            .collect();
        sync::lock(&idle).push(reader);
        read
    };
    let taken = crate::ordered::run(runs.len(), work, |read| {
        segments.extend(read);
        Ok(())
    });
    taken.expect("taking a library's words does not fail");
    segments
}

/// The words of an index, numbered as they are first met.
type Words = WordMap<Arc<str>, u32>;

/// The number of `stem` in `words`, given one if it is new.
fn number(words: &mut Words, stem: &str) -> u32 {
    if let Some(&id) = words.get(stem) {
        return id;
    }
    let id = words.len() as u32;
    words.insert(Arc::from(stem), id);
    id
}

/// Reads libraries into segments, keeping the number of each word it met: a word is
/// stemmed and looked up in the index's words once, and no word is a `String` of its
/// own after that.
struct Reader {
    numbers: Numbers,
    /// A word's counts in the tool being read: `seen[word]` is `(tool, place)` when the
    /// word has a place in the tool's counts, so nothing is cleared between tools.
    seen: Vec<(u32, u32)>,
    /// The number of the tool being read, counted over every tool the reader read, from 1.
    tool: u32,
    /// The most distinct words a tool read had, for the room a library's counts take.
    widest: usize,
}

impl Reader {
    fn new() -> Reader {
        Reader { numbers: Numbers::new(), seen: Vec::new(), tool: 0, widest: 0 }
    }

    /// The segment of `library`, its tools described by `descriptions`.
    fn segment(&mut self, library: &Arc<Library>, descriptions: &Descriptions, words: &Mutex<Words>) -> Segment {
        let Reader { numbers, seen, tool: number, widest } = self;
        // The words of the library's field with their counts, read once for all its tools.
        let mut library_words: Vec<(u32, u16)> = Vec::new();
        for text in library_texts(library) {
            numbers.each(words, text, |word| match library_words.iter_mut().find(|(known, _)| *known == word) {
                Some((_, count)) => *count = count.saturating_add(1),
                None => library_words.push((word, 1)),
            });
        }
        let mut segment = Segment {
            library: Arc::clone(library),
            descriptions: Vec::with_capacity(library.tools.len()),
            counts: Vec::with_capacity(library.tools.len() * *widest),
            name_words: Vec::new(),
            tools: Vec::with_capacity(library.tools.len()),
        };
        for tool in &library.tools {
            *number += 1;
            let number = *number;
            let first = segment.counts.len();
            let mut lengths = [0u32; FIELDS];
            let name_first = segment.name_words.len();
            let (counts, name_words) = (&mut segment.counts, &mut segment.name_words);
            // Counts `times` more of `word` in `field`.
            let mut count = |field: usize, word: u32, times: u16| {
                let at = word as usize;
                if seen.len() <= at {
                    seen.resize(at + 1, (0, 0));
                }
                let (tool, place) = &mut seen[at];
                if *tool != number {
                    (*tool, *place) = (number, (counts.len() - first) as u32);
                    counts.push((word, [0; FIELDS]));
                }
                let count = &mut counts[first + *place as usize].1[field];
                *count = count.saturating_add(times);
                lengths[field] += u32::from(times);
                if field == NAME && !name_words[name_first..].contains(&word) {
                    name_words.push(word);
                }
            };
            tool_texts(tool, descriptions.of(tool), |field, text| {
                numbers.each(words, text, |word| count(field, word, 1))
            });
            for &(word, times) in &library_words {
                count(LIBRARY, word, times);
            }
            *widest = (*widest).max(segment.counts.len() - first);
            segment.tools.push(ReadTool {
                lengths,
                counts_end: segment.counts.len() as u32,
                name_words_end: segment.name_words.len() as u32,
            });
            segment.descriptions.push(descriptions.get(&tool.name).map(Box::from));
        }
        segment
    }
}

/// The bit that makes an ASCII capital lowercase, in each of a `u128`'s bytes.
const LOWERCASE: u128 = u128::from_le_bytes([0x20; 16]);

/// The bits of a `u128`'s first `n` bytes, at `n` (a table: a shift of a `u128` by
/// a variable amount takes a dozen instructions, and every word met takes one).
const MASKS: [u128; 17] = {
    let mut masks = [0; 17];
    let mut n = 1;
    while n <= 16 {
        masks[n] = u128::MAX >> (8 * (16 - n));
        n += 1;
    }
    masks
};

/// What a word met was found to be, in [`Numbers`]: the number of its stem, or
/// [`LEFT_OUT`].
const LEFT_OUT: u32 = u32::MAX;

/// The number of each word a [`Reader`] met.
struct Numbers {
    stemmer: Stemmer,
    /// Words of 16 bytes or fewer (most words), lowercased and packed in a `u128`.
    short: Short,
    /// Longer words and words not ASCII, lowercased.
    long: WordMap<Box<str>, u32>,
    /// A word being lowercased.
    buffer: String,
}

impl Numbers {
    fn new() -> Numbers {
        let stemmer = Stemmer::create(Algorithm::English);
        Numbers { stemmer, short: Short::default(), long: WordMap::default(), buffer: String::new() }
    }

    /// Calls `found` with the number in `words` of each word of `text` the index keeps,
    /// as [`tokens`] reads them; a word is stemmed and numbered the first time it is
    /// met. An ASCII text is split a byte at a time, and a word of up to 16 bytes is
    /// looked up by its bytes packed in a `u128`, without a string.
    fn each(&mut self, words: &Mutex<Words>, text: &str, mut found: impl FnMut(u32)) {
        let Numbers { stemmer, short, long, buffer } = self;
        let number_of = |word: &str| {
            if word.chars().nth(1).is_some() && !STOP_WORDS.contains(&word) {
                number(&mut sync::lock(words), &stemmer.stem(word))
            } else {
                LEFT_OUT
            }
        };
        if !text.is_ascii() {
            each_char_word(text, |word| {
                let number = match long.get(word) {
                    Some(&number) => number,
                    None => {
                        let number = number_of(word);
                        long.insert(Box::from(word), number);
                        number
                    }
                };
                if number != LEFT_OUT {
                    found(number);
                }
            });
            return;
        }
        let bytes = text.as_bytes();
        ascii_spans(bytes, |from, to| {
            let word = &bytes[from..to];
            let number = if word.len() <= 16 {
                // The word's bytes and what follows them (16 bytes read at once when the
                // text has them), the rest masked off.
                let read = match bytes.get(from..from + 16).and_then(|read| <[u8; 16]>::try_from(read).ok()) {
                    Some(read) => read,
                    None => {
                        let mut read = [0u8; 16];
                        read[..word.len()].copy_from_slice(word);
                        read
                    }
                };
                let mask = MASKS[word.len()];
                // A word's bytes are ASCII letters and digits: setting the 0x20 bit of
                // each lowercases it (a digit has the bit set already).
                let key = (u128::from_le_bytes(read) & mask) | (LOWERCASE & mask);
                match short.get(key) {
                    Some(number) => number,
                    None => {
                        let lowered = key.to_le_bytes();
                        let number = number_of(std::str::from_utf8(&lowered[..word.len()]).unwrap_or_default());
                        short.insert(key, number);
                        number
                    }
                }
            } else {
                buffer.clear();
                buffer.extend(word.iter().map(|byte| char::from(byte.to_ascii_lowercase())));
                match long.get(buffer.as_str()) {
                    Some(&number) => number,
                    None => {
                        let number = number_of(buffer);
                        long.insert(Box::from(buffer.as_str()), number);
                        number
                    }
                }
            };
            if number != LEFT_OUT {
                found(number);
            }
        });
    }
}

/// A table of words of up to 16 bytes, each the key of its bytes packed in a `u128`
/// (little-endian, the rest zeros: a word has no zero byte, so no two words share a
/// key, and no word's key is 0), with a `u32` each; open addressing, looked for from
/// the place of the key's hash on.
#[derive(Default)]
struct Short {
    /// The keys, 0 where a place is free; a power of two long (or empty).
    keys: Vec<u128>,
    values: Vec<u32>,
    used: usize,
}

impl Short {
    /// Where `key` is looked for first, in a table of `len` places.
    fn place(key: u128, len: usize) -> usize {
        let mixed = ((key as u64) ^ ((key >> 64) as u64).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> (64 - len.trailing_zeros())) as usize
    }

    fn get(&self, key: u128) -> Option<u32> {
        if self.keys.is_empty() {
            return None;
        }
        let mask = self.keys.len() - 1;
        let mut at = Short::place(key, self.keys.len());
        loop {
            match self.keys[at] {
                found if found == key => return Some(self.values[at]),
                0 => return None,
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Adds `key`, which the table does not hold.
    fn insert(&mut self, key: u128, value: u32) {
        if (self.used + 1) * 2 > self.keys.len() {
            let len = (self.keys.len() * 2).max(256);
            let keys = std::mem::replace(&mut self.keys, vec![0; len]);
            let values = std::mem::replace(&mut self.values, vec![0; len]);
            self.used = 0;
            for (key, value) in keys.into_iter().zip(values).filter(|(key, _)| *key != 0) {
                self.insert(key, value);
            }
        }
        let mask = self.keys.len() - 1;
        let mut at = Short::place(key, self.keys.len());
        while self.keys[at] != 0 {
            at = (at + 1) & mask;
        }
        self.keys[at] = key;
        self.values[at] = value;
        self.used += 1;
    }
}

fn tokens_with(stemmer: &Stemmer, text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|word| word.chars().nth(1).is_some() && !STOP_WORDS.contains(&word.as_str()))
        .map(|word| stemmer.stem(&word).into_owned())
        .collect()
}

/// The words of `text`, lowercased: split at every character that is not a letter or a
/// digit (`_`, spaces, punctuation), at a lowercase letter followed by a capital
/// (`getWeather`), before the last capital of a run followed by a lowercase letter
/// (`HTTPServer`: `http`, `server`), and between letters and digits (`sha256`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_word(text, |word| out.push(word.to_string()));
    out
}

/// Calls `found` with each word of `text` as [`words`] splits them, in a buffer it
/// reuses: [`each_ascii_word`] when `text` is ASCII (most of a catalog's texts), else
/// [`each_char_word`].
fn each_word(text: &str, found: impl FnMut(&str)) {
    if text.is_ascii() { each_ascii_word(text.as_bytes(), found) } else { each_char_word(text, found) }
}

/// What an ASCII byte is to [`each_ascii_word`].
const OTHER: u8 = 0;
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 3;

/// Each ASCII byte's [`OTHER`], [`LOWER`], [`UPPER`] or [`DIGIT`].
const CLASSES: [u8; 128] = {
    let mut classes = [OTHER; 128];
    let mut b = 0;
    while b < 128 {
        classes[b] = match b as u8 {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            _ => OTHER,
        };
        b += 1;
    }
    classes
};

/// [`each_char_word`] of an ASCII text, a byte at a time.
fn each_ascii_word(text: &[u8], mut found: impl FnMut(&str)) {
    let mut word = String::new();
    ascii_spans(text, |from, to| {
        word.clear();
        word.extend(text[from..to].iter().map(|byte| char::from(byte.to_ascii_lowercase())));
        found(&word);
    });
}

/// Calls `found` with where each word of the ASCII text `text` starts and ends, split
/// as [`each_char_word`] splits it (not lowercased).
fn ascii_spans(text: &[u8], mut found: impl FnMut(usize, usize)) {
    let mut start = 0;
    let mut before = OTHER;
    let mut at = 0;
    while let Some(&b) = text.get(at) {
        let class = CLASSES[usize::from(b & 0x7f)];
        if class == before && class != UPPER && class != OTHER {
            at += 1;
            continue;
        }
        if class == OTHER {
            if before != OTHER {
                found(start, at);
            }
            before = OTHER;
            at += 1;
            continue;
        }
        let split = match (before, class) {
            (OTHER, _) => {
                start = at;
                false
            }
            (LOWER, UPPER) | (LOWER | UPPER, DIGIT) | (DIGIT, LOWER | UPPER) => true,
            (UPPER, UPPER) => text.get(at + 1).is_some_and(u8::is_ascii_lowercase),
            _ => false,
        };
        if split {
            found(start, at);
            start = at;
        }
        before = class;
        at += 1;
        // The lowercase letters after a letter go on its word: most of a word's bytes.
        if class != DIGIT {
            let run = lowercase_run(&text[at..]);
            if run > 0 {
                (before, at) = (LOWER, at + run);
            }
        }
    }
    if before != OTHER {
        found(start, text.len());
    }
}

/// How many of the first bytes of `text` are lowercase letters (as [`CLASSES`] reads
/// a byte: its low seven bits), eight at a time.
fn lowercase_run(text: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut run = 0;
    while let Some(chunk) = text.get(run..run + 8).and_then(|chunk| <[u8; 8]>::try_from(chunk).ok()) {
        let bytes = u64::from_le_bytes(chunk) & !HIGH;
        // A byte's high bit, after adding to each byte (none carries: each is below
        // 0x80): set from `a` on, and set from the byte after `z` on.
        let from_a = bytes + ONES * (0x80 - u64::from(b'a'));
        let after_z = bytes + ONES * (0x80 - u64::from(b'z') - 1);
        let lower = from_a & !after_z & HIGH;
        if lower != HIGH {
            return run + ((!lower & HIGH).trailing_zeros() / 8) as usize;
        }
        run += 8;
    }
    run + text[run..].iter().take_while(|&&byte| CLASSES[usize::from(byte & 0x7f)] == LOWER).count()
}

/// [`each_word`] of any text, a character at a time.
fn each_char_word(text: &str, mut found: impl FnMut(&str)) {
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    let mut before: Option<char> = None;
    while let Some(c) = chars.next() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                found(&word);
                word.clear();
            }
            before = None;
            continue;
        }
        if let Some(before) = before {
            let split = if before.is_ascii() && c.is_ascii() {
                (before.is_ascii_lowercase() && c.is_ascii_uppercase())
                    || (before.is_ascii_uppercase()
                        && c.is_ascii_uppercase()
                        && chars.peek().is_some_and(char::is_ascii_lowercase))
                    || (before.is_ascii_alphabetic() && c.is_ascii_digit())
                    || (before.is_ascii_digit() && c.is_ascii_alphabetic())
            } else {
                (before.is_lowercase() && c.is_uppercase())
                    || (before.is_uppercase() && c.is_uppercase() && chars.peek().is_some_and(|c| c.is_lowercase()))
                    || (before.is_alphabetic() && c.is_numeric())
                    || (before.is_numeric() && c.is_alphabetic())
            };
            if split {
                found(&word);
                word.clear();
            }
        }
        if c.is_ascii() {
            word.push(c.to_ascii_lowercase());
        } else {
            word.extend(c.to_lowercase());
        }
        before = Some(c);
    }
    if !word.is_empty() {
        found(&word);
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::discovery::registry::{Options, Sources};

    fn catalog() -> Registry {
        let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/search/catalog");
        Registry::load(&Sources { folders: vec![folder], files: Vec::new() }, &Options::default())
    }

    fn names(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|hit| hit.name.as_str()).collect()
    }

    #[test]
    fn words_split_at_underscores_case_changes_and_digits() {
        assert_eq!(words("tool_get_weather"), ["tool", "get", "weather"]);
        assert_eq!(words("getWeatherForecast"), ["get", "weather", "forecast"]);
        assert_eq!(words("HTTPServer2go"), ["http", "server", "2", "go"]);
        assert_eq!(words("sha256sum, and: Ünïcode"), ["sha", "256", "sum", "and", "ünïcode"]);
        assert_eq!(words("  "), Vec::<String>::new());
    }

    #[test]
    fn a_lowercase_run_is_counted_eight_bytes_at_a_time_as_one_at_a_time() {
        let one_at_a_time = |text: &[u8]| text.iter().take_while(|&&byte| (byte & 0x7f).is_ascii_lowercase()).count();
        let alphabet: Vec<u8> = (0u8..=255).collect();
        for start in 0..alphabet.len() {
            for length in [0, 1, 7, 8, 9, 16, 17, 30] {
                let text = &alphabet[start..(start + length).min(alphabet.len())];
                assert_eq!(lowercase_run(text), one_at_a_time(text), "{text:?}");
                let letters: Vec<u8> = b"abcdefghijklmnopqrstuvwxyz".repeat(2)[..length]
                    .iter()
                    .copied()
                    .chain(text.iter().copied())
                    .collect();
                assert_eq!(lowercase_run(&letters), one_at_a_time(&letters), "{letters:?}");
            }
        }
    }

    #[test]
    fn ascii_texts_split_a_byte_at_a_time_as_a_character_at_a_time() {
        /// A way of splitting a text, calling back with each word.
        type Splitter = fn(&str, &mut dyn FnMut(&str));
        let split = |text: &str, each: Splitter| {
            let mut out = Vec::new();
            each(text, &mut |word| out.push(word.to_string()));
            out
        };
        let texts = [
            "tool_get_weather",
            "getHTTPStatus2 parseXMLFile_v2 ABC abc9Def 9lives x",
            "  multiple   spaces, punctuation! and-dashes (parens) [brackets] {braces} 'quotes' \"double\"",
            "CamelCaseWordsHere andURLsToo HTTPServer2go sha256sum A1B2c3",
            "",
            "_",
            "aB",
            "ABc",
            "internationalization_runs_past_eightbytes and`braces{ wordsXYZabcdefghijklmnop7qrstuvwxyz",
            "abcdefgh abcdefghi abcdefg Abcdefgh ABcdefghij",
        ];
        for text in texts {
            let ascii = split(text, |text, found| each_ascii_word(text.as_bytes(), found));
            let chars = split(text, |text, found| each_char_word(text, found));
            assert_eq!(ascii, chars, "{text:?}");
        }
        let catalog = catalog();
        for (library, tool) in catalog.tools() {
            let mut texts = Vec::new();
            tool_texts(tool, &tool.description, |_, text| texts.push(text.to_string()));
            texts.extend(library_texts(library).map(str::to_string));
            for text in texts.iter().filter(|text| text.is_ascii()) {
                let ascii = split(text, |text, found| each_ascii_word(text.as_bytes(), found));
                assert_eq!(ascii, split(text, |text, found| each_char_word(text, found)), "{text:?}");
            }
        }
    }

    #[test]
    fn a_schemas_texts_read_from_its_text_are_those_read_from_its_value() {
        let texts = |schema: &str| {
            let (mut fast, mut plain) = (Vec::new(), Vec::new());
            parameter_texts(schema, &mut |text| fast.push(text.to_string()));
            value_text::properties(&serde_json::from_str(schema).unwrap(), &mut |text| plain.push(text.to_string()), 0);
            fast.sort();
            plain.sort();
            (fast, plain)
        };
        let schemas = [
            r#"{"type":"object","properties":{"city":{"type":"string","description":"The city, e.g. \"Paris\""},"unit":{"enum":["celsius","fahrenheit",3,null]}}}"#,
            r#"{"properties":{"when":{"anyOf":[{"type":"string","description":"a date"},{"type":"null"}]},"tags":{"type":"array","items":{"type":"object","properties":{"name":{"description":"tag name"}}}}}}"#,
            r#"{"properties":{"a":{"properties":{"b":{"properties":{"c":{"properties":{"d":{"properties":{"e":{"description":"deep"}}}}}}}}}}}"#,
            r#"{"properties":{"odd":{"description":5,"items":[{"description":"tuple"}],"oneOf":[true]}}}"#,
            r#"{"type":"object"}"#,
            r#"{"properties":{"a":{"items":null,"description":"x","enum":[]}}}"#,
            r#"{"description":"root","enum":["r"],"anyOf":[{"properties":{"z":{"description":"no"}}}],"items":{"description":"no"},"properties":{"k":{"description":"yes","items":{"items":{"description":"deep items","properties":{"m":{"anyOf":[{"description":"m's"}]}}}}}}}"#,
            r#"{"properties":{"a":{"description":"one","description":"two"}}}"#,
            r#"{"properties":{"a":{"properties":{"b":{"properties":{"c":{"properties":{"d":{"description":"d","properties":{"e":{"description":"e"}}}}}}}}}}}"#,
            r#"{"properties":{"esc\u0061ped":{"descr\u0069ption":"with \"quotes\"","enum":["x\ny"]}}}"#,
            r#"{"properties":{"n":{"default":{"a":[1,-2.5e3,true,false,null,"s\\",{"b":[[]]}]},"description":"num"}}}"#,
            r#"{ "properties": { "spaced": { "description": "not compact" } } }"#,
        ];
        for schema in schemas {
            let (fast, plain) = texts(schema);
            assert_eq!(fast, plain, "{schema}");
        }
        // Where the walk reads a schema, it finds what the reader of its `Value` finds.
        let walked = |schema: &str| {
            let mut walked: Vec<String> = schema_walk::texts(schema)?.into_iter().map(String::from).collect();
            walked.sort();
            Some(walked)
        };
        let read = |schema: &str| {
            let mut read = Vec::new();
            value_text::properties(&serde_json::from_str(schema).ok()?, &mut |text| read.push(text.to_string()), 0);
            read.sort();
            Some(read)
        };
        for schema in schemas {
            if let Some(walked) = walked(schema) {
                assert_eq!(Some(walked), read(schema), "{schema}");
            }
        }
        assert!(walked(schemas[7]).is_none(), "a keyword twice is not walked");
        // A text cut short or not JSON is not walked (nor read), and nothing panics.
        let nested = format!("{{\"properties\":{{\"a\":{{\"default\":{}{}}}}}}}", "[".repeat(200), "]".repeat(200));
        for broken in [r#"{"properties":{"a":{"description":"x\"#, r#"{"properties":{"a":{"default":tru}}}"#, &nested] {
            assert_eq!(walked(broken), None, "{broken}");
        }
        assert_eq!(walked(schemas[6]).unwrap(), ["deep items", "k", "m", "m's", "yes"]);
        for (_, tool) in catalog().tools() {
            let (fast, plain) = texts(tool.parameters.as_str());
            assert!(!fast.is_empty());
            assert!(walked(tool.parameters.as_str()).is_some(), "{}", tool.name);
            assert_eq!(fast, plain, "{}", tool.name);
        }
    }

    #[test]
    fn a_reader_numbers_the_words_tokens_reads() {
        let texts = [
            "What is the weather forecasting for Paris?",
            "internationalization internationalizations abcdefghijklmnop abcdefghijklmnopq",
            "getHTTPStatus2 parseXMLFile_v2 a b c the of",
            "Ünïcode wörds and ASCII words, naïvely mixed: Ünïcode",
            "sixteen_letters_ sixteenletterss sixteenletterss",
        ];
        let words = Mutex::new(Words::default());
        let mut numbers = Numbers::new();
        for _ in 0..2 {
            for text in texts {
                let mut found = Vec::new();
                numbers.each(&words, text, |number| found.push(number));
                let words = sync::lock(&words);
                let mut stems = vec![""; words.len()];
                for (word, &number) in words.iter() {
                    stems[number as usize] = word;
                }
                let found: Vec<&str> = found.iter().map(|&number| stems[number as usize]).collect();
                assert_eq!(found, tokens(text), "{text:?}");
            }
        }
    }

    #[test]
    fn tokens_are_stemmed_without_common_words() {
        assert_eq!(tokens("What is the weather forecasting for Paris?"), ["weather", "forecast", "pari"]);
        assert_eq!(tokens("converts currencies"), tokens("convert currency"));
        assert_eq!(tokens("a b c"), Vec::<String>::new());
    }

    #[test]
    fn ranking_on_a_fixed_catalog_puts_the_tool_asked_for_first() {
        let index = Index::build(&catalog(), &Descriptions::default());
        let first = |query: &str| index.search(query, 1).first().map(|hit| hit.name.clone());
        assert_eq!(
            first("what's the weather going to be in Paris tomorrow").as_deref(),
            Some("tool_get_weather_forecast")
        );
        assert_eq!(first("convert 100 dollars to euros").as_deref(), Some("tool_convert_currency"));
        assert_eq!(first("send an email to my boss").as_deref(), Some("tool_send_email"));
        assert_eq!(first("list files in a folder").as_deref(), Some("tool_list_directory"));
        assert_eq!(first("sha256 checksum of a file").as_deref(), Some("tool_file_hash"));
    }

    #[test]
    fn a_docstrings_sections_are_read_as_parameters_not_as_docstring() {
        let source = "def tool_send(to: str) -> str:\n    \"\"\"Sends a note.\n\n    Through the relay.\n\n    Args:\n        to: The recipient's mailbox.\n\n    Returns:\n        A receipt.\n    \"\"\"\n    return to\n";
        let file = crate::discovery::scan::SourceFile { path: PathBuf::from("notes.py"), package: None };
        let (library, _) = crate::discovery::extract::extract(&file, source.as_bytes().to_vec(), &[]);
        let library = library.expect("the source parses");
        let mut fields: Vec<(usize, String)> = Vec::new();
        tool_texts(&library.tools[0], &library.tools[0].description, |field, text| {
            fields.push((field, text.to_string()))
        });
        let docstring: Vec<&str> =
            fields.iter().filter(|(field, _)| *field == DOCSTRING).map(|(_, text)| text.trim()).collect();
        assert_eq!(docstring, ["Through the relay."]);
        let parameters: Vec<&str> =
            fields.iter().filter(|(field, _)| *field == PARAMETERS).map(|(_, text)| text.as_str()).collect();
        assert_eq!(parameters, ["to", "The recipient's mailbox."]);
    }

    #[test]
    fn ranking_weighs_a_name_above_a_parameter() {
        // `email` is in tool_send_email's name and only in tool_create_contact's parameters.
        let index = Index::build(&catalog(), &Descriptions::default());
        let hits = index.search("email", 10);
        let at = |name: &str| names(&hits).iter().position(|n| *n == name);
        assert!(at("tool_send_email").unwrap() < at("tool_create_contact").unwrap(), "{hits:?}");
    }

    #[test]
    fn ranking_is_deterministic_and_ties_go_by_name() {
        let index = Index::build(&catalog(), &Descriptions::default());
        let hits = index.search("twin", 10);
        assert_eq!(names(&hits), ["tool_twin_a", "tool_twin_b"]);
        assert_eq!(hits[0].score, hits[1].score);
        assert_eq!(
            index.search("weather file email", 20),
            Index::build(&catalog(), &Descriptions::default()).search("weather file email", 20)
        );
    }

    #[test]
    fn a_tool_matching_no_word_is_not_returned() {
        let index = Index::build(&catalog(), &Descriptions::default());
        assert!(index.search("zzzz qqqq", 10).is_empty());
        assert!(index.search("the of and", 10).is_empty());
        assert_eq!(index.search("weather", 1).len(), 1);
    }

    #[test]
    fn a_word_that_begins_another_matches_in_part() {
        let index = Index::build(&catalog(), &Descriptions::default());
        // `temp` begins `temperature` (a word of tool_get_current_conditions's description).
        assert_eq!(names(&index.search("temp", 1)), ["tool_get_current_conditions"]);
        // `address` begins `addressbook`.
        assert!(names(&index.search("addressbook", 5)).contains(&"tool_geocode_address"));
        assert_eq!(names(&index.search("geocoding", 1)), ["tool_geocode_address"]);
    }

    #[test]
    fn a_catalog_word_that_begins_a_query_word_of_any_length_matches_in_part() {
        let index = Index::build(&catalog(), &Descriptions::default());
        // Its starts are looked up at the catalog's word lengths alone, each on a
        // character boundary (`é` is two bytes).
        for tail in ["é".repeat(200_000), "x".repeat(200_000)] {
            let word = format!("address{tail}");
            assert_eq!(names(&index.search(&word, 1)), ["tool_geocode_address"]);
        }
    }

    /// Every tool each query finds in `index`, with its score as computed (not rounded).
    fn ranked(index: &Index, queries: &[&str]) -> Vec<Vec<(String, u64)>> {
        let ranked = |query: &str| {
            let ranked = index.ranked(query, usize::MAX, &RANKING);
            ranked.into_iter().map(|(tool, score)| (index.name(&index.tools[tool]).to_string(), score.to_bits()))
        };
        queries.iter().map(|query| ranked(query).collect()).collect()
    }

    /// How many of `updated`'s segments are `index`'s own (kept, not read again).
    fn kept(index: &Index, updated: &Index) -> usize {
        updated.segments.iter().filter(|segment| index.segments.iter().any(|own| Arc::ptr_eq(own, segment))).count()
    }

    const QUERIES: [&str; 8] = [
        "weather forecast in Paris",
        "convert currency dollars",
        "send an email",
        "list files in a folder",
        "tide times harbour",
        "geocoding address",
        "twin",
        "temp sha256 checksum mail",
    ];

    #[test]
    fn an_update_reads_only_changed_libraries_and_ranks_as_a_fresh_build() {
        let dir = std::env::temp_dir().join(format!("lcp-search-update-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/search/catalog");
        for file in std::fs::read_dir(&fixtures).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, dir.join(file.file_name().unwrap())).unwrap();
        }
        let sources = Sources { folders: vec![dir.clone()], files: Vec::new() };
        let mut registry = Registry::load(&sources, &Options::default());
        let none = Descriptions::default();
        let index = Index::build(&registry, &none);
        let libraries = registry.libraries().len();
        // Nothing changed: every segment is kept.
        let same = index.update(&registry, &none);
        assert_eq!(kept(&index, &same), libraries);
        assert_eq!(ranked(&same, &QUERIES), ranked(&index, &QUERIES));

        // A library added, one changed, one removed.
        let tide = "def tool_tide_table(harbour: str) -> str:\n    \"\"\"High and low tide times for a harbour.\"\"\"\n    return harbour\n";
        std::fs::write(dir.join("tide.py"), tide).unwrap();
        let mail = "def tool_post_letter(to: str, weather: str) -> str:\n    \"\"\"Posts a paper letter, sent whatever the weather.\n\n    Args:\n        to: Who the mail goes to.\n        weather: The weather it is sent in.\n    \"\"\"\n    return to\n";
        std::fs::write(dir.join("mail.py"), mail).unwrap();
        std::fs::remove_file(dir.join("twins.py")).unwrap();
        let changes = registry.rescan();
        assert_eq!((changes.added.len(), changes.changed.len(), changes.removed.len()), (1, 1, 1), "{changes:?}");
        let updated = index.update(&registry, &none);
        let fresh = Index::build(&registry, &none);
        assert_eq!(kept(&index, &updated), libraries - 2, "only the changed and the added library are read");
        assert_eq!(updated.len(), fresh.len());
        assert_eq!(ranked(&updated, &QUERIES), ranked(&fresh, &QUERIES));
        for query in QUERIES {
            assert_eq!(updated.search(query, 10), fresh.search(query, 10), "{query}");
        }
        assert_eq!(names(&updated.search("tide times harbour", 1)), ["tool_tide_table"]);
        assert!(updated.search("twin", 10).is_empty(), "a removed library's tools are gone");
        assert!(!names(&updated.search("send an email", 50)).contains(&"tool_send_email"));

        // Updated again from the update: still the same as a fresh build.
        std::fs::copy(fixtures.join("twins.py"), dir.join("twins.py")).unwrap();
        registry.rescan();
        let again = updated.update(&registry, &none);
        assert_eq!(kept(&updated, &again), libraries);
        assert_eq!(ranked(&again, &QUERIES), ranked(&Index::build(&registry, &none), &QUERIES));
        assert_eq!(names(&again.search("twin", 10)), ["tool_twin_a", "tool_twin_b"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_update_reads_a_library_again_when_its_descriptions_change() {
        let registry = catalog();
        let index = Index::build(&registry, &Descriptions::default());
        let mut described = Descriptions::default();
        described.insert("tool_send_email".to_string(), "Posts a paper letter to a harbour".to_string());
        let updated = index.update(&registry, &described);
        assert_eq!(kept(&index, &updated), registry.libraries().len() - 1);
        let fresh = Index::build(&registry, &described);
        assert_eq!(ranked(&updated, &QUERIES), ranked(&fresh, &QUERIES));
        assert_eq!(names(&updated.search("paper letter harbour", 1)), ["tool_send_email"]);
        assert_eq!(updated.search("paper letter", 1)[0].description, "Posts a paper letter to a harbour");
        // Libraries of the same texts in other values (as a view copies them): their
        // words are kept, and the libraries shown are the new ones.
        let copies = registry.libraries().iter().map(|library| Arc::new((**library).clone())).collect();
        let copies = Registry::from_libraries(copies, Vec::new());
        let copied = index.update(&copies, &Descriptions::default());
        assert!(
            copied
                .segments
                .iter()
                .zip(copies.libraries())
                .all(|(segment, library)| Arc::ptr_eq(&segment.library, library))
        );
        assert_eq!(ranked(&copied, &QUERIES), ranked(&index, &QUERIES));
        // A profile's view: its copy of a library with fewer tools is read again.
        let config = crate::host::config::Config::without_file();
        let choice = crate::host::profile::Choice {
            profile: "tool_send_email,tool_read_text".to_string(),
            extra_tools: Vec::new(),
        };
        let profile = choice.profile(&config.profiles).unwrap();
        let view = crate::host::view::view(&registry, &config, Some(&profile));
        let shown = index.update(&view.registry, &Descriptions::default());
        assert_eq!(ranked(&shown, &QUERIES), ranked(&Index::build(&view.registry, &Descriptions::default()), &QUERIES));
        assert_eq!(names(&shown.search("weather forecast email", 10)), ["tool_send_email"]);
        assert_eq!(shown.len(), 2);
    }

    #[test]
    fn search_sees_only_what_the_profile_shows() {
        let registry = catalog();
        let config = crate::host::config::Config::without_file();
        let choice = crate::host::profile::Choice {
            profile: "tool_send_email,tool_file_hash".to_string(),
            extra_tools: Vec::new(),
        };
        let profile = choice.profile(&config.profiles).unwrap();
        let view = crate::host::view::view(&registry, &config, Some(&profile));
        let index = Index::build(&view.registry, &Descriptions::default());
        assert_eq!(index.len(), 2);
        assert_eq!(names(&index.search("weather forecast email", 10)), ["tool_send_email"]);
    }
}
