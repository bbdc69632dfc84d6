//! Tool search over a catalog (SPEC §21): which tools of a registry answer a query.
//!
//! An [`Index`] is built from what a host shows ([`crate::view`]'s registry, so a
//! search never returns a tool the caller may not see) and ranks the tools for a
//! query with BM25F: each tool is five fields (its name split into words, its
//! description, the rest of its docstring, its parameters' names, descriptions and
//! string values, its library's name and docstring), each with its own weight and
//! length normalisation, read through one tokeniser (words split at `_`, case changes
//! and digits, lowercased, common English words left out, Snowball's English stemmer).
//! On top of BM25F: a query word that is a prefix of a name's word (or the reverse)
//! counts for part of a match, and a tool whose name's words the query covers gains in
//! proportion to what it covers. Ranking is deterministic: the same catalog and query
//! give the same scores, summed in the same order, on every machine, and equal scores
//! are ordered by name.

use std::collections::BTreeMap;

use rust_stemmers::{Algorithm, Stemmer};
use serde::Serialize;
use serde_json::Value;

use crate::extract::{Library, Tool};
use crate::registry::{Descriptions, FastMap, Registry};

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
    name: String,
    library: String,
    description: String,
    /// Each field's length, in words.
    lengths: [u32; FIELDS],
    /// The distinct words of its name, each once.
    name_words: Vec<u32>,
}

/// The words of a tool in one field and how often each occurs.
#[derive(Debug, Clone, Copy)]
struct Posting {
    tool: u32,
    counts: [u16; FIELDS],
}

/// The search index of a catalog's tools; see the module's documentation.
#[derive(Debug, Clone, Default)]
pub struct Index {
    tools: Vec<Entry>,
    /// Every word, stemmed, by its number.
    words: FastMap<String, u32>,
    /// Each word's tools, in the order of `tools`, by the word's number.
    postings: Vec<Vec<Posting>>,
    /// Every word in order, for prefix matches.
    sorted: BTreeMap<String, u32>,
    /// Each field's mean length over the tools.
    average: [f64; FIELDS],
}

impl Index {
    /// The index of every tool of `registry`, each with its description in
    /// `descriptions` if it has one there. A host builds it from its view's registry
    /// ([`crate::view::View::registry`]), so that it holds only what the caller sees.
    pub fn build(registry: &Registry, descriptions: &Descriptions) -> Index {
        let tools: Vec<(&Library, &Tool)> = registry.tools().collect();
        // Each tool's words, read on every core; laid into the index in order.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(tools.len() / 64 + 1);
        let chunk = tools.len().div_ceil(threads.max(1)).max(1);
        let read: Vec<Vec<[Vec<String>; FIELDS]>> = std::thread::scope(|scope| {
            let workers: Vec<_> = tools
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut reader = Reader::new();
                        part.iter()
                            .map(|(library, tool)| {
                                fields(library, tool, descriptions.of(tool)).map(|text| reader.tokens(&text))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().map(|worker| worker.join().expect("reading a tool's words does not panic")).collect()
        });
        let mut index = Index::default();
        let mut totals = [0u64; FIELDS];
        // A word's counts in the tool being laid in: `seen[word]` is the tool's number + 1
        // when the word has a place in `counts` (`place[word]`), so nothing is cleared
        // between tools.
        let (mut seen, mut place): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        let mut counts: Vec<(u32, [u16; FIELDS])> = Vec::new();
        for ((library, tool), fields) in tools.iter().zip(read.into_iter().flatten()) {
            let number = index.tools.len() as u32;
            let mut lengths = [0u32; FIELDS];
            let mut name_words = Vec::new();
            for (field, words) in fields.into_iter().enumerate() {
                for word in words {
                    let id = index.word(word);
                    let at = id as usize;
                    if seen.len() <= at {
                        seen.resize(at + 1, 0);
                        place.resize(at + 1, 0);
                    }
                    if seen[at] != number + 1 {
                        seen[at] = number + 1;
                        place[at] = counts.len() as u32;
                        counts.push((id, [0; FIELDS]));
                    }
                    let count = &mut counts[place[at] as usize].1[field];
                    *count = count.saturating_add(1);
                    lengths[field] += 1;
                    if field == NAME && !name_words.contains(&id) {
                        name_words.push(id);
                    }
                }
            }
            for (field, length) in lengths.iter().enumerate() {
                totals[field] += u64::from(*length);
            }
            for (id, counts) in counts.drain(..) {
                index.postings[id as usize].push(Posting { tool: number, counts });
            }
            index.tools.push(Entry {
                name: tool.name.clone(),
                library: library.name.clone().unwrap_or_else(|| library.stem.clone()),
                description: descriptions.of(tool).to_string(),
                lengths,
                name_words,
            });
        }
        index.sorted = index.words.iter().map(|(word, &id)| (word.clone(), id)).collect();
        let n = index.tools.len().max(1) as f64;
        index.average = totals.map(|total| (total as f64 / n).max(1.0));
        index
    }

    /// The number of `word`, given one if it is new.
    fn word(&mut self, word: String) -> u32 {
        if let Some(&id) = self.words.get(&word) {
            return id;
        }
        let id = self.postings.len() as u32;
        self.postings.push(Vec::new());
        self.words.insert(word, id);
        id
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
            let postings = &self.postings[id as usize];
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
            if !matched[tool] || entry.name_words.is_empty() {
                continue;
            }
            let covered = entry.name_words.iter().filter(|id| whole.contains_key(id)).count();
            scores[tool] += ranking.name_coverage * best * covered as f64 / entry.name_words.len() as f64;
        }
        let mut ranked: Vec<usize> = (0..self.tools.len()).filter(|&tool| matched[tool]).collect();
        ranked.sort_by(|&a, &b| {
            scores[b].total_cmp(&scores[a]).then_with(|| self.tools[a].name.cmp(&self.tools[b].name))
        });
        ranked.truncate(limit);
        ranked
            .into_iter()
            .map(|tool| {
                let entry = &self.tools[tool];
                Hit {
                    name: entry.name.clone(),
                    score: (scores[tool] * 1e4).round() / 1e4,
                    library: entry.library.clone(),
                    description: entry.description.clone(),
                }
            })
            .collect()
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
        if let Some(&id) = self.words.get(word) {
            add(id, 1.0);
        }
        if word.chars().count() < PREFIX_MIN {
            return;
        }
        for (other, &id) in self.sorted.range::<str, _>((std::ops::Bound::Included(word), std::ops::Bound::Unbounded)) {
            if !other.starts_with(word) {
                break;
            }
            if other != word {
                add(id, prefix_match);
            }
        }
        let mut ends: Vec<usize> = word.char_indices().map(|(at, _)| at).skip(PREFIX_MIN).collect();
        ends.sort_unstable();
        for end in ends {
            if let Some(&id) = self.words.get(&word[..end]) {
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

/// The text of each field of a tool.
fn fields(library: &Library, tool: &Tool, description: &str) -> [String; FIELDS] {
    let name = tool.name.strip_prefix("tool_").unwrap_or(&tool.name).to_string();
    let docstring = match &tool.docstring {
        Some(docstring) => docstring.strip_prefix(description).unwrap_or(docstring).to_string(),
        None => String::new(),
    };
    let mut parameters = String::new();
    parameter_text(&tool.parameters.parse(), &mut parameters, 0);
    let mut library_text = String::new();
    for part in
        [library.name.as_deref(), Some(library.stem.as_str()), library.description.as_deref()].into_iter().flatten()
    {
        library_text.push_str(part);
        library_text.push(' ');
    }
    let mut fields: [String; FIELDS] = Default::default();
    fields[NAME] = name;
    fields[DESCRIPTION] = description.to_string();
    fields[DOCSTRING] = docstring;
    fields[PARAMETERS] = parameters;
    fields[LIBRARY] = library_text;
    fields
}

/// The names, descriptions and string values of a schema's properties, nested ones
/// too (a few levels down), added to `out`.
fn parameter_text(schema: &Value, out: &mut String, depth: usize) {
    if depth > 3 {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        out.push_str(name);
        out.push(' ');
        describe_property(property, out, depth);
    }
}

/// A property's description and string values, and those of what it holds.
fn describe_property(property: &Value, out: &mut String, depth: usize) {
    if let Some(description) = property.get("description").and_then(Value::as_str) {
        out.push_str(description);
        out.push(' ');
    }
    for value in property.get("enum").and_then(Value::as_array).into_iter().flatten() {
        if let Some(value) = value.as_str() {
            out.push_str(value);
            out.push(' ');
        }
    }
    for key in ["anyOf", "oneOf"] {
        for option in property.get(key).and_then(Value::as_array).into_iter().flatten() {
            describe_property(option, out, depth + 1);
        }
    }
    if let Some(items) = property.get("items") {
        describe_property(items, out, depth + 1);
    }
    parameter_text(property, out, depth + 1);
}

/// The words of `text` as the index reads them: split ([`words`]), common English words
/// and single letters left out, each stemmed (Snowball's English stemmer).
pub fn tokens(text: &str) -> Vec<String> {
    tokens_with(&Stemmer::create(Algorithm::English), text)
}

/// [`tokens`] with a stemmer kept, and each word's stem remembered: a catalog's texts
/// repeat their words.
struct Reader {
    stemmer: Stemmer,
    stems: FastMap<String, String>,
}

impl Reader {
    fn new() -> Reader {
        Reader { stemmer: Stemmer::create(Algorithm::English), stems: FastMap::default() }
    }

    fn tokens(&mut self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let (stemmer, stems) = (&self.stemmer, &mut self.stems);
        each_word(text, |word| {
            if word.chars().nth(1).is_none() || STOP_WORDS.contains(&word) {
                return;
            }
            match stems.get(word) {
                Some(stem) => out.push(stem.clone()),
                None => {
                    let stem = stemmer.stem(word).into_owned();
                    stems.insert(word.to_string(), stem.clone());
                    out.push(stem);
                }
            }
        });
        out
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

/// Calls `found` with each word of `text` as [`words`] splits them, in a buffer it reuses.
fn each_word(text: &str, mut found: impl FnMut(&str)) {
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
    use crate::registry::{Options, Sources};

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
    fn search_sees_only_what_the_profile_shows() {
        let registry = catalog();
        let config = crate::config::Config::without_file();
        let choice =
            crate::profile::Choice { profile: "tool_send_email,tool_file_hash".to_string(), extra_tools: Vec::new() };
        let profile = choice.profile(&config.profiles).unwrap();
        let view = crate::view::view(&registry, &config, Some(&profile));
        let index = Index::build(&view.registry, &Descriptions::default());
        assert_eq!(index.len(), 2);
        assert_eq!(names(&index.search("weather forecast email", 10)), ["tool_send_email"]);
    }
}
