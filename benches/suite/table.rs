//! The printed result: sections of rows, columns aligned, units chosen per value.

use crate::measure::Samples;

pub struct Table {
    lines: Vec<Line>,
}

enum Line {
    Text(String),
    Row([String; 6]),
}

const HEADER: [&str; 6] = ["measurement", "median", "spread (min-max)", "n", "ratio (medians, this run)", "target"];

impl Table {
    pub fn new() -> Table {
        Table { lines: Vec::new() }
    }

    pub fn text(&mut self, text: impl Into<String>) {
        self.lines.push(Line::Text(text.into()));
    }

    pub fn section(&mut self, title: &str) {
        self.lines.push(Line::Text(String::new()));
        self.lines.push(Line::Text(title.to_string()));
        self.lines.push(Line::Row(HEADER.map(String::from)));
    }

    /// A timing row: median and spread in seconds.
    pub fn time(&mut self, label: &str, samples: &Samples, ratio: &str, target: &str) {
        self.row(label, samples, duration, ratio, target);
    }

    /// A throughput row: median and spread in calls a second.
    pub fn rate(&mut self, label: &str, samples: &Samples, ratio: &str, target: &str) {
        self.row(label, samples, |per_second| format!("{per_second:.0}/s"), ratio, target);
    }

    /// A size row: median and spread in bytes.
    pub fn bytes(&mut self, label: &str, samples: &Samples, ratio: &str, target: &str) {
        self.row(label, samples, bytes, ratio, target);
    }

    /// A row of `samples`, each value shown by `unit`.
    fn row(&mut self, label: &str, samples: &Samples, unit: impl Fn(f64) -> String, ratio: &str, target: &str) {
        self.lines.push(Line::Row([
            format!("  {label}"),
            unit(samples.median()),
            format!("{}-{}", unit(samples.min()), unit(samples.max())),
            samples.len().to_string(),
            ratio.to_string(),
            target.to_string(),
        ]));
    }

    pub fn render(&self) -> String {
        let mut widths = [0usize; 6];
        for line in &self.lines {
            if let Line::Row(cells) = line {
                for (w, cell) in widths.iter_mut().zip(cells) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        let mut out = String::new();
        for line in &self.lines {
            match line {
                Line::Text(text) => out.push_str(text),
                Line::Row(cells) => {
                    let padded: Vec<String> = cells
                        .iter()
                        .zip(widths)
                        .enumerate()
                        .map(|(i, (cell, w))| {
                            let pad = w - cell.chars().count();
                            // Numbers right-aligned, words left-aligned.
                            if (1..=3).contains(&i) {
                                format!("{}{cell}", " ".repeat(pad))
                            } else {
                                format!("{cell}{}", " ".repeat(pad))
                            }
                        })
                        .collect();
                    out.push_str(padded.join("  ").trim_end());
                }
            }
            out.push('\n');
        }
        out
    }
}

pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "-".into();
    }
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else if seconds >= 1e-6 {
        format!("{:.1} µs", seconds * 1e6)
    } else {
        format!("{:.0} ns", seconds * 1e9)
    }
}

pub fn bytes(n: f64) -> String {
    if n >= 1024.0 * 1024.0 { format!("{:.1} MiB", n / (1024.0 * 1024.0)) } else { format!("{:.0} KiB", n / 1024.0) }
}

/// `a / b` as `12.3×` (two significant decimals below 10).
pub fn ratio(a: f64, b: f64) -> String {
    let r = a / b;
    if r >= 100.0 {
        format!("{r:.0}×")
    } else if r >= 10.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

/// `MET` / `NOT MET` with the condition spelled out.
pub fn verdict(met: bool, condition: &str) -> String {
    format!("{condition}: {}", if met { "MET" } else { "NOT MET" })
}
